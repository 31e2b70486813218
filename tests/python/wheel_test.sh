#!/usr/bin/env bash
# `pip install .` (issue 18): builds the wheel from the source tree with the extension of an existing build
# (CHOPSIM_BUILD_DIR, so chopsim is not built twice), installs it into a fresh folder without network or index, and
# runs a shipped config by name from there, outside the source tree. Exit 77 (skipped) without pip, setuptools or
# wheel (python3-pip, python3-setuptools, python3-wheel).
# Usage: wheel_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
python=/usr/bin/python3
"$python" -c "import setuptools, wheel, pip" 2>/dev/null || { echo "skipped: needs python3-pip, python3-setuptools, python3-wheel"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CHOPSIM_BUILD_DIR=$build "$python" -m pip wheel --quiet --no-build-isolation --no-deps --no-index \
  --wheel-dir "$work/wheels" "$source_dir"
wheel=$(ls "$work"/wheels/chopsim-*.whl)
echo "wheel_test: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
"$python" -m pip install --quiet --root-user-action=ignore --no-deps --no-index --target "$work/site" "$wheel"
cd "$work"
PYTHONPATH="$work/site" "$python" - "$work/site" <<'PY'
import os
import sys

import chopsim

site = sys.argv[1]
assert os.path.realpath(chopsim.__file__).startswith(os.path.realpath(site)), chopsim.__file__
packaged = os.path.join(os.path.dirname(chopsim.__file__), "configs")
assert os.path.isdir(os.path.join(packaged, "hardware")), "the wheel carries no configs"
assert packaged in os.environ["CHOPSIM_CONFIG_PATH"].split(os.pathsep)
r = chopsim.run("llama3-8b-fsdp")  # a shipped run config by name, from a folder outside the source tree
assert r.status == "ok" and r.tokens_per_s > 0
print("wheel_test: installed chopsim", chopsim.__version__, "ran", r)
PY
