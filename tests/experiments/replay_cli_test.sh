#!/usr/bin/env bash
# `chopsim replay` end to end.
#   replay_cli_test.sh CHOPSIM PROJECT_DIR
# Exit codes (0 ok, 2 bad input) with no output files on errors, valid summary.json / timeline.json on success, and the
# replay listed in --help. Skips (77) without ../shared/data.
set -uo pipefail
chopsim=$1
project=$2
data=${CHOPSIM_SHARED_DATA:-$project/../shared/data}
trace=$data/traces/kineto/tracelens_h100_qwen05b.json.gz
if [ ! -f "$trace" ]; then
  echo "SKIP: shared data not found at $data (set CHOPSIM_SHARED_DATA)"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_test_lib.sh"
configs=$project/configs
"$chopsim" ingest "$trace" -o "$work/qwen.h5" >/dev/null 2>&1 || fail "ingest of the trace"
"$chopsim" ingest "$project/tests/traces/fixtures/nvidia_smi.csv" -o "$work/telemetry.h5" >/dev/null 2>&1 ||
  fail "ingest of the telemetry fixture"

# Bad inputs: exit 2, the problem named, no output folder.
expect_exit 2 "no store" replay
expect_exit 2 "two stores" replay "$work/qwen.h5" "$work/qwen.h5"
expect_exit 2 "missing store" replay "$work/nope.h5" --out "$work/out"
grep -q "nope.h5" "$work/err.txt" || fail "missing store: message does not name the file"
expect_exit 2 "no kernels" replay "$work/telemetry.h5" --out "$work/out"
grep -q "no GPU records" "$work/err.txt" || fail "no kernels: message does not say so"
expect_exit 2 "unknown hardware" replay "$work/qwen.h5" --hardware H101 --configs "$configs" --out "$work/out"
grep -q "H100-SXM5-80GB" "$work/err.txt" || fail "unknown hardware: message does not list the names"
expect_exit 2 "unknown cluster" replay "$work/qwen.h5" --cluster dgx-h101 --configs "$configs" --out "$work/out"
expect_exit 2 "profile of another GPU" replay "$work/qwen.h5" --configs "$configs" --out "$work/out" \
  --calibration "$project/calibration/profiles/mi300x.yaml"
grep -q "fitted on MI300X" "$work/err.txt" || fail "profile of another GPU: message does not say so"
expect_exit 2 "bad option" replay "$work/qwen.h5" --hardwear H100-SXM5-80GB
expect_exit 2 "bad window" replay "$work/qwen.h5" --dependency-window-us -1
[ -e "$work/out" ] && fail "output written after a bad input: $(ls -A "$work/out")"
# Output paths are checked before any work: --out through a file, validate's table in a missing folder.
expect_exit 2 "out through a file" replay "$work/qwen.h5" --configs "$configs" --out "$work/qwen.h5/out"
grep -q -- "--out $work/qwen.h5/out: cannot create the directory" "$work/err.txt" || fail "out through a file: message"
expect_exit 2 "validate into a missing folder" validate --data "$data" --configs "$configs" --out "$work/no/v.md"
grep -q "its folder $work/no does not exist" "$work/err.txt" || fail "validate into a missing folder: message"
grep -q "predicting" "$work/err.txt" && fail "validate predicted before checking its output path"

# A good replay: both files, valid JSON, the measured span reproduced within 5 %.
expect_exit 0 "replay" replay "$work/qwen.h5" --configs "$configs" --out "$work/out"
grep -q "span" "$work/out.txt" || fail "the terminal report has no span line"
for file in summary.json timeline.json; do
  [ -f "$work/out/$file" ] || fail "no $file"
done
if command -v python3 >/dev/null 2>&1; then
  python3 - "$work/out" <<'PY' || fail "summary.json / timeline.json"
import json, sys
out = sys.argv[1]
summary = json.load(open(out + "/summary.json"))
assert abs(summary["span_s"]["error"]) < 0.05, summary["span_s"]
assert summary["target"]["same_hardware"] is True
events = json.load(open(out + "/timeline.json"))["traceEvents"]
assert sum(1 for e in events if e.get("ph") == "X") > 1000
PY
fi
help=$("$chopsim" --help)  # captured first: grep -q would close the pipe early (SIGPIPE under pipefail)
grep -q "replay STORE.h5" <<<"$help" || fail "--help does not list replay"

[ $failures -eq 0 ] && echo "PASS: replay command line" && exit 0
exit 1
