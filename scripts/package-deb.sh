#!/usr/bin/env bash
# Builds the Debian package of chopsim (CPack, cmake/ChopsimInstall.cmake) from build/ and checks what it holds: the
# command, the shipped configs and profiles, the Python module, and dependencies on the runtime libraries' packages.
# Usage: scripts/package-deb.sh   (after scripts/build.sh; .ci/run runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/app/chopsim ] || bash scripts/build.sh
(cd build && cpack -G DEB > cpack.log 2>&1) || { cat build/cpack.log; exit 1; }
deb=$(ls build/chopsim_*_*.deb | head -1)
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/chopsim ./usr/lib/chopsim/libchopsim_simgrid_engine.so \
    ./usr/share/chopsim/configs/llama3-8b-fsdp.yaml \
    ./usr/share/chopsim/configs/hardware/H100-SXM5-80GB.yaml ./usr/share/chopsim/calibration/profiles/h100.yaml \
    ./usr/share/doc/chopsim/README.md ./usr/lib/python3/dist-packages/chopsim/__init__.py \
    ./usr/share/man/man1/chopsim.1 ./usr/share/bash-completion/completions/chopsim \
    ./usr/share/zsh/vendor-completions/_chopsim; do
  grep -q " $path\$" <<< "$contents" || { echo "package-deb: $deb lacks $path"; exit 1; }
done
depends=$(dpkg-deb -f "$deb" Depends)
for package in libsimgrid3.32 libhdf5-cpp-103-1 libjs-chart.js libopenmpi3; do
  grep -q "$package" <<< "$depends" || { echo "package-deb: $deb does not depend on $package ($depends)"; exit 1; }
done
echo "package-deb: $deb ($(du -h "$deb" | cut -f1)), depends on: $depends"
