#!/usr/bin/env bash
# Builds chopsim and runs every test (unit, golden, and the checks against ../shared/data).
# The tests run with TMPDIR set to a folder of their own; whatever a test leaves there fails the suite (issue 16:
# every test and command cleans up what it creates), and the folder is removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
bash scripts/build.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/chopsim-tests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
TMPDIR=$tmp ctest --test-dir build --output-on-failure -j "$(nproc)"
left=$(find "$tmp" -mindepth 1 -maxdepth 1 | head -20)
if [ -n "$left" ]; then
  echo "tests left files in their temp folder (each test must remove what it creates):"
  echo "$left"
  exit 1
fi
