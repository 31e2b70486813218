#!/usr/bin/env bash
# Configures and builds chopsim in ./build (Release with debug info): every target, or only those named with
# --target (e.g. --target chopsim: the command line tool alone). Further arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ $# -gt 0 ] && [ "$1" = "--target" ]; do
  [ $# -ge 2 ] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
  targets+=(--target "$2")
  shift 2
done
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
