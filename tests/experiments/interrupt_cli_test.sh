#!/usr/bin/env bash
# Ctrl-C during `chopsim run --out` (issue 16): the run's temporary output files are removed, no partial output is
# left, and the process ends as SIGINT ends it (status 130 in a shell). Before, timeline.json.tmp.<pid> stayed
# behind and kept growing until the process died.
# Usage: interrupt_cli_test.sh CHOPSIM SOURCE_DIR
set -u
chopsim=$1
source_dir=$2
source "$source_dir/tests/support/cli_test_lib.sh"

for signal in INT TERM; do
  out="$work/run-$signal"
  # The 64-GPU Llama-3-70B run takes seconds and streams its timeline while it simulates.
  "$chopsim" run "$source_dir/configs/llama3-70b-h100-3d.yaml" --out "$out" >/dev/null 2>&1 &
  pid=$!
  # Wait until a temporary output exists (the run is writing), at most 60 s.
  for _ in $(seq 600); do
    compgen -G "$out/*.tmp.*" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  compgen -G "$out/*.tmp.*" >/dev/null || fail "SIG$signal: no temporary output appeared while the run was going"
  kill -s "$signal" "$pid"
  wait "$pid"
  status=$?
  expected=$((128 + $(kill -l "$signal")))
  [ "$status" -eq "$expected" ] || fail "SIG$signal: exit status $status, expected $expected (killed by the signal)"
  left=$(find "$out" -type f 2>/dev/null)
  [ -z "$left" ] || fail "SIG$signal: files left behind: $left"
done

[ "$failures" -eq 0 ] || exit 1
echo "interrupt: temporary outputs removed on SIGINT and SIGTERM"
