#!/usr/bin/env bash
# `chopsim calibrate` end to end.
#   calibrate_cli_test.sh CHOPSIM PROJECT_DIR
# Exit codes (0 ok, 2 bad input) with no output file on errors, byte-identical profiles for the same inputs, and the
# shipped profiles in calibration/profiles up to date with scripts/calibrate-shipped.sh. Skips (77) without
# ../shared/data.
set -uo pipefail
chopsim=$1
project=$2
data=${CHOPSIM_SHARED_DATA:-$project/../shared/data}
gemm=$data/kernels/tracelens_h100_qwen/GEMM.csv
if [ ! -f "$gemm" ]; then
  echo "SKIP: shared data not found at $data (set CHOPSIM_SHARED_DATA)"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_test_lib.sh"
configs=$project/configs
mkdir -p "$work/out"

# Good runs, twice: same bytes.
expect_exit 0 "calibrate" calibrate "$gemm" "$data/collectives/vidur_h100_dgx/all_reduce.csv" \
  --hardware H100-SXM5-80GB --configs "$configs" -o "$work/out/a.yaml" --report "$work/out/a.md"
expect_exit 0 "calibrate again" calibrate "$gemm" "$data/collectives/vidur_h100_dgx/all_reduce.csv" \
  --hardware H100-SXM5-80GB --configs "$configs" -o "$work/out/b.yaml" --report "$work/out/a.md"
cmp -s <(tail -n +2 "$work/out/a.yaml") <(tail -n +2 "$work/out/b.yaml") || fail "the same inputs gave different profiles"
grep -q "^  efficiency: " "$work/out/a.yaml" || fail "profile lacks intra_node_link.efficiency"
grep -q "bandwidth_gb_s:" "$work/out/a.yaml" && fail "profile overrides the nominal link bandwidth (double derating)"
grep -q "$(sha256sum "$gemm" | cut -c1-64)" "$work/out/a.yaml" || fail "profile header lacks the input's SHA-256"
rm -f "$work/out/"*

# Bad inputs: exit 2, the problem named, nothing in the output folder.
printf 'a,b,c\n1,2,3\n' >"$work/unknown.csv"
head -1 "$gemm" >"$work/header_only.csv"
: >"$work/empty.csv"
for case in "unknown.csv:tracelens-gemm" "header_only.csv:no rows" "empty.csv:empty"; do
  file=${case%%:*}
  needle=${case#*:}
  expect_exit 2 "$file" calibrate "$work/$file" --hardware H100-SXM5-80GB --configs "$configs" -o "$work/out/p.yaml"
  grep -q "$file" "$work/err.txt" || fail "$file: message does not name the file"
  grep -q "$needle" "$work/err.txt" || fail "$file: message lacks '$needle'"
done
expect_exit 2 "good then bad" calibrate "$gemm" "$work/unknown.csv" --hardware H100-SXM5-80GB --configs "$configs" \
  -o "$work/out/p.yaml" --report "$work/out/p.md"
expect_exit 2 "missing --hardware" calibrate "$gemm" -o "$work/out/p.yaml"
grep -q -- "--hardware" "$work/err.txt" || fail "missing --hardware: message does not say so"
expect_exit 2 "unknown hardware" calibrate "$gemm" --hardware H101 --configs "$configs" -o "$work/out/p.yaml"
grep -q "H100-SXM5-80GB" "$work/err.txt" || fail "unknown hardware: message does not list the names"
expect_exit 2 "no input" calibrate --hardware H100-SXM5-80GB -o "$work/out/p.yaml"
expect_exit 2 "no output" calibrate "$gemm" --hardware H100-SXM5-80GB --configs "$configs"
expect_exit 2 "bad option" calibrate "$gemm" --hardware H100-SXM5-80GB -o "$work/out/p.yaml" --node-links ring
# --power-runs: a window the telemetry inputs do not cover, and a runs file given as the output.
smi=$data/measured/h200_llama32_1b/nvidia-smi.csv
if [ -f "$smi" ]; then
  mkdir -p "$work/runs"
  cp "$configs/validation/h200-llama3.2-1b-eager-mb1.yaml" "$work/runs/mb1.yaml"
  printf 'runs:\n  - {name: mb1, config: mb1.yaml, from: "2020-01-01 00:00:00", to: "2020-01-01 00:00:01"}\n' \
    >"$work/runs/runs.yaml"
  expect_exit 2 "power runs outside the telemetry" calibrate "$smi" --hardware H200-SXM-141GB --configs "$configs" \
    -o "$work/out/p.yaml" --report "$work/out/p.md" --power-runs "$work/runs/runs.yaml"
  grep -q "runs\[0\].from" "$work/err.txt" || fail "power runs: message does not name runs[0].from"
  grep -q "no telemetry reading" "$work/err.txt" || fail "power runs: message does not say what is missing"
  expect_exit 2 "power runs as the output" calibrate "$smi" --hardware H200-SXM-141GB --configs "$configs" \
    -o "$work/runs/runs.yaml" --power-runs "$work/runs/runs.yaml"
  grep -q "^runs:" "$work/runs/runs.yaml" || fail "power runs: the runs file was overwritten"
fi
if [ -n "$(ls -A "$work/out")" ]; then
  fail "files left behind after failed calibrations: $(ls -A "$work/out")"
fi

# The shipped profiles are what scripts/calibrate-shipped.sh makes from ../shared/data today. A freshness check of the
# profiles, not of memory safety: the sanitizer suite (scripts/test-asan.sh) skips it with
# CHOPSIM_SKIP_PROFILE_CHECK=1, because its three calibrations of the full traces take six of that suite's eight
# minutes under ASan; the normal suite runs it.
if [ -z "${CHOPSIM_SHARED_DATA:-}" ] && [ "${CHOPSIM_SKIP_PROFILE_CHECK:-0}" != 1 ]; then
  bash "$project/scripts/calibrate-shipped.sh" --check "$chopsim" >"$work/check.txt" 2>&1 ||
    { fail "shipped profiles out of date"; cat "$work/check.txt"; }
fi

[ $failures -eq 0 ] && echo "PASS: calibrate command line" && exit 0
exit 1
