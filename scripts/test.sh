#!/usr/bin/env bash
# Builds chopsim and runs every test (unit, golden, and the checks against ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
