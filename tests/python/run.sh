#!/usr/bin/env bash
# Runs the Python API tests with pytest in a temporary folder removed afterwards (exit 77: no pytest).
# Usage: run.sh PYTHONPATH SOURCE_DIR CHOPSIM
set -u
/usr/bin/python3 -c "import pytest" 2>/dev/null || { echo "skipped: no pytest (python3-pytest)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
PYTHONPATH=$1 CHOPSIM_SOURCE_DIR=$2 CHOPSIM_BINARY=$3 /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  --basetemp="$work/pytest" "$2/tests/python/test_api.py"
