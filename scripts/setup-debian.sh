#!/usr/bin/env bash
# Installs chopsim's build and test dependencies from Debian 12's packages.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev          # discrete-event engine and network models (SimGrid 3.32)
  libboost-graph-dev      # topology graphs
  libyaml-cpp-dev         # configs
  libeigen3-dev           # calibration fits
  libtbb-dev              # parallel sweeps
  libhdf5-dev             # op tables and trace stores
  libgtest-dev            # tests
  libsimdjson-dev         # trace ingest: Kineto and rocprofv3 JSON (simdjson On-Demand)
  libsqlite3-dev          # trace ingest: Nsight Systems SQLite exports
  libtomlplusplus-dev     # chopsim import: torchtitan's TOML job configs (toml++ 3.3)
  zlib1g-dev              # trace ingest: .json.gz traces
  libssl-dev              # trace ingest: SHA-256 of every source file (OpenSSL libcrypto)
  python3-h5py            # tests/traces reads the kernel store back with h5py (skipped when absent)
  libjs-chart.js          # chopsim report inlines Chart.js 3.9 (/usr/share/javascript/chart.js/chart.min.js)
  libopenmpi-dev openmpi-bin  # chopsim sweep --mpi: a sweep across machines under mpirun (Open MPI 4.1)
  pybind11-dev            # the Python module (python/)
  python3-dev             # its headers
  python3-pytest          # tests/python
  python3-pip python3-setuptools python3-wheel  # pip install . (tests/python/wheel_test.sh)
  time                    # bench/ingest.sh measures peak memory with /usr/bin/time -v
  python3                 # test scripts read outputs back
  clang-format            # scripts/check-format.sh (a ctest) checks the style
  zsh                     # the zsh completion's test (tests/completion_zsh_test.zsh)
)

bash "$(dirname "$0")/apt-install.sh" setup "${packages[@]}"
