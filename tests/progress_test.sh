#!/usr/bin/env bash
# Progress of long commands (app/progress.cpp): on a terminal a bar with counts and the time left, rewritten in place;
# otherwise plain lines (the first, then at most one every 10 s, and the last); nothing with --quiet. Checked on
# chopsim ingest of two fixtures (stderr to a file is not a terminal; `script` gives it one).
set -euo pipefail
chopsim=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/chopsim_progress.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixtures="$root/tests/traces/fixtures"
inputs=("$fixtures/rocprofv3_kernel_trace.csv" "$fixtures/nvidia_smi.csv")
fail() { echo "progress test: FAILED: $*"; exit 1; }

"$chopsim" ingest "${inputs[@]}" --summary > /dev/null 2> "$work/plain.err"
grep -q "^chopsim ingest: 1/2 inputs" "$work/plain.err" || fail "no plain line for the first input: $(cat "$work/plain.err")"
grep -q "^chopsim ingest: 2/2 inputs" "$work/plain.err" || fail "no plain line for the last input"
if grep -q $'\r' "$work/plain.err"; then fail "carriage returns in plain (non-terminal) output"; fi

"$chopsim" ingest "${inputs[@]}" --summary --quiet > /dev/null 2> "$work/quiet.err"
[ ! -s "$work/quiet.err" ] || fail "--quiet still writes to stderr: $(cat "$work/quiet.err")"

if command -v script > /dev/null; then
  script -qec "\"$chopsim\" ingest ${inputs[*]} --summary" /dev/null > "$work/tty.out"
  grep -q "\[########################\] 2/2 inputs" "$work/tty.out" || fail "no full bar on a terminal"
  grep -q "ETA" "$work/tty.out" || fail "no ETA on a terminal"
else
  echo "progress test: 'script' (util-linux) not found: the terminal case is skipped"
fi
echo "progress: ok"
