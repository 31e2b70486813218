#!/usr/bin/env bash
# `cmake --install` and running from anywhere (issue 18; docs/install.md): install the build into a temporary prefix;
# the installed chopsim runs a shipped run config by name from a folder without configs; a hardware file that exists
# only in the installed share folder is found by a run file elsewhere (the installed configs are read, not the source
# tree's), one in a CHOPSIM_CONFIG_PATH folder only when the variable names it; --engine simgrid loads the installed
# SimGrid engine module, and says so clearly when it is missing; the installed Python module runs a config by name.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install test: FAILED: $*"; exit 1; }
# Every command of the installed tree runs under a time limit, so that a hang fails at once and names its command
# (one CI run spent this test's whole 300 s without saying where); each takes under 2 s when alone.
limit() {
  local status=0
  timeout --kill-after=5 60 "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    fail "'$*' did not finish within 60 s"
  fi
  return "$status"
}
limit cmake --install "$build" --prefix "$prefix" > "$prefix/install.log"
for file in bin/chopsim share/chopsim/configs/llama3-8b-fsdp.yaml share/chopsim/configs/hardware/H100-SXM5-80GB.yaml \
    share/chopsim/calibration/profiles/h100.yaml share/doc/chopsim/README.md share/doc/chopsim/configs.md \
    share/bash-completion/completions/chopsim share/zsh/vendor-completions/_chopsim share/man/man1/chopsim.1; do
  [ -e "$prefix/$file" ] || fail "$file was not installed"
done
# The manual page renders without a groff warning (where man is installed).
if command -v man > /dev/null; then
  warnings=$(LC_ALL=C.UTF-8 limit man --warnings -l "$prefix/share/man/man1/chopsim.1" 2>&1 > /dev/null || true)
  [ -z "$warnings" ] || fail "man chopsim: $warnings"
fi

mkdir "$prefix/elsewhere"
cd "$prefix/elsewhere"
limit "$prefix/bin/chopsim" run llama3-8b-fsdp --out out > run.log || fail "chopsim run llama3-8b-fsdp: $(cat run.log)"
grep -q "chopsim run llama3-8b-fsdp: llama3-8b on 8 x MI300X" run.log || fail "unexpected output: $(head -3 run.log)"
[ -f out/summary.json ] || fail "no summary.json"

# A GPU only the installed share folder knows (a hardware file's name is its file name).
cp "$prefix/share/chopsim/configs/hardware/MI300X.yaml" "$prefix/share/chopsim/configs/hardware/INSTALLED-ONLY.yaml"
sed 's/^hardware: .*/hardware: INSTALLED-ONLY/' "$prefix/share/chopsim/configs/llama3-8b-fsdp.yaml" > mine.yaml
limit "$prefix/bin/chopsim" run mine.yaml > mine.log 2>&1 || fail "the installed hardware file was not found: $(cat mine.log)"
if limit "$build/app/chopsim" run mine.yaml > build.log 2>&1; then fail "the build tree's chopsim found an installed file"; fi

# A GPU in a CHOPSIM_CONFIG_PATH folder.
mkdir -p extra/hardware
cp "$prefix/share/chopsim/configs/hardware/MI300X.yaml" extra/hardware/FROM-CONFIG-PATH.yaml
sed 's/^hardware: .*/hardware: FROM-CONFIG-PATH/' mine.yaml > path.yaml
set +e
limit "$prefix/bin/chopsim" run path.yaml > path.log 2>&1
status=$?
set -e
[ "$status" -eq 2 ] || fail "a hardware file outside the search path: exit $status, expected 2"
CHOPSIM_CONFIG_PATH="/nonexistent:$PWD/extra" limit "$prefix/bin/chopsim" run path.yaml > path.log 2>&1 ||
  fail "CHOPSIM_CONFIG_PATH was not searched: $(cat path.log)"

# The SimGrid engine from its installed module (PREFIX/lib/chopsim), and a clear error when the module is missing.
[ -f "$prefix/lib/chopsim/libchopsim_simgrid_engine.so" ] || fail "the SimGrid engine's module was not installed"
limit "$prefix/bin/chopsim" run llama3-8b-fsdp --engine simgrid > simgrid.log 2>&1 ||
  fail "chopsim run --engine simgrid from the install: $(cat simgrid.log)"
grep -q "iteration time" simgrid.log || fail "unexpected --engine simgrid output: $(head -3 simgrid.log)"
mv "$prefix/lib/chopsim" "$prefix/lib/chopsim.away"
set +e
limit "$prefix/bin/chopsim" run llama3-8b-fsdp --engine simgrid > missing.log 2>&1
status=$?
set -e
mv "$prefix/lib/chopsim.away" "$prefix/lib/chopsim"
[ "$status" -ne 0 ] || fail "--engine simgrid ran without its module"
grep -q "libchopsim_simgrid_engine.so was not found" missing.log || fail "no clear error without the module: $(cat missing.log)"

# The installed Python module, by name.
if [ -d "$prefix/lib/python3/dist-packages/chopsim" ] && /usr/bin/python3 -c "import sys" 2>/dev/null; then
  PYTHONPATH="$prefix/lib/python3/dist-packages" limit /usr/bin/python3 -c "
import chopsim
r = chopsim.run('llama3-8b-fsdp')
assert r.iteration_time_s > 0, r
print('install test: python run by name:', round(r.iteration_time_s, 4), 's')
" || fail "the installed Python module"
fi
echo "install test: passed (prefix $prefix)"
