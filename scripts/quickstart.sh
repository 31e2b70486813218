#!/usr/bin/env bash
# From a fresh Debian 12 machine to a prediction: install dependencies, build, and run
# `chopsim run configs/llama3-8b-fsdp.yaml` with its outputs (and report.html) in out/llama3-8b-fsdp/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/build.sh --target chopsim  # what `chopsim run` needs; scripts/test.sh builds the tests
./build/app/chopsim run configs/llama3-8b-fsdp.yaml --out out/llama3-8b-fsdp --report
