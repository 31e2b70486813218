#!/usr/bin/env bash
# Configures build-asan/: the one sanitizer tree that both the test suite under AddressSanitizer +
# UndefinedBehaviorSanitizer (scripts/test-asan.sh) and the libFuzzer targets (scripts/fuzz.sh) use (issue 16: "build
# the sanitizer tree once"). clang, -fsanitize=address,undefined with libFuzzer's coverage hooks in every library
# (fuzzer-no-link: the test executables link without libFuzzer, whose hooks the sanitizer runtime then answers with
# no-ops). -O1, the sanitizers' usual level, and line tables only: what a sanitizer report's stack needs, at a
# fraction of full debug information's compile and link time. One tree instead of two (GCC for the suite, clang for
# the fuzzers) saves a full build of the libraries.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/apt-install.sh sanitizers clang libfuzzer-14-dev
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCHOPSIM_FUZZ=ON -DCHOPSIM_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  >/dev/null
