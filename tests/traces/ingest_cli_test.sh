#!/usr/bin/env bash
# `chopsim ingest` end to end.
#   ingest_cli_test.sh CHOPSIM SOURCE_TESTS_DIR PROJECT_DIR [cli|h5py]
# cli:  exit codes (0 ok, 2 bad input), no partial store on errors, byte-identical stores for the same inputs.
# h5py: the store opens in h5py and holds what the traces hold (exit 77 = skipped when no python3 has h5py).
# Both skip (77) when ../shared/data is absent.
set -uo pipefail
chopsim=$1
tests_dir=$2
project=$3
mode=${4:-cli}
data=${CHOPSIM_SHARED_DATA:-$project/../shared/data}
nccl=$data/traces/kineto/hta_a100_2rank_nccl.json.gz
power=$data/power/mi300x_rocm_smi_inference/gpu_power_Llama-3.1-8B_latency_bs8_in128_out128_float16_mem0.9_20250807_191332.csv
if [ ! -f "$nccl" ]; then
  echo "SKIP: shared data not found at $data (set CHOPSIM_SHARED_DATA)"
  exit 77
fi
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_test_lib.sh"

if [ "$mode" = h5py ]; then
  python=""
  for candidate in python3 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import h5py" >/dev/null 2>&1; then
      python=$candidate
      break
    fi
  done
  if [ -z "$python" ]; then
    echo "SKIP: no python3 with h5py (Debian: apt-get install python3-h5py)"
    exit 77
  fi
  "$chopsim" ingest "$nccl" "$power" "$tests_dir/fixtures/nvidia_smi.csv" -o "$work/store.h5" >/dev/null 2>&1 ||
    fail "ingest failed"
  "$python" "$tests_dir/read_store.py" "$work/store.h5" || fail "h5py check"
  [ $failures -eq 0 ] && echo "PASS: h5py reads the store" && exit 0
  exit 1
fi

# A good ingest, twice: same bytes.
mkdir -p "$work/out"
expect_exit 0 "ingest" ingest "$nccl" "$power" -o "$work/out/a.h5" --summary
grep -q "top kernel:  28.3 % of GPU time  ncclKernel_AllReduce" "$work/out.txt" || fail "summary lacks the top kernel"
expect_exit 0 "ingest again" ingest "$nccl" "$power" -o "$work/out/b.h5"
cmp -s "$work/out/a.h5" "$work/out/b.h5" || fail "the same inputs gave different stores"
rm -f "$work/out/a.h5" "$work/out/b.h5"

# Bad inputs: exit 2, the file named in the message, nothing left in the output directory.
head -c 300000 "$nccl" >"$work/cut.json.gz"
printf 'not a trace\n' >"$work/notes.txt"
: >"$work/empty.json"
for case in "cut.json.gz:truncated" "notes.txt:supported formats" "empty.json:empty"; do
  file=${case%%:*}
  needle=${case#*:}
  expect_exit 2 "$file" ingest "$work/$file" -o "$work/out/store.h5"
  grep -q "$file" "$work/err.txt" || fail "$file: message does not name the file"
  grep -q "$needle" "$work/err.txt" || fail "$file: message lacks '$needle'"
done
# A good trace followed by a bad one: still no store, no temporary file.
expect_exit 2 "good then truncated" ingest "$nccl" "$work/cut.json.gz" -o "$work/out/store.h5"
expect_exit 2 "mixed ranks" ingest "$nccl" "$data/traces/kineto/hta_a100_rank0of16.json.gz" -o "$work/out/store.h5"
grep -q "rank 0 is also the rank of" "$work/err.txt" || fail "mixed ranks: unexpected message"
expect_exit 2 "no trace" ingest -o "$work/out/store.h5"
expect_exit 2 "unknown format name" ingest "$nccl" --format no-such-format -o "$work/out/store.h5"
if [ -n "$(ls -A "$work/out")" ]; then
  fail "files left behind after failed ingests: $(ls -A "$work/out")"
fi

# The output may not be an input (issue 16: `ingest T -o T` replaced the trace with the store): exit 2, the trace
# unchanged, for the same name and through a link; calibrate likewise.
cp "$nccl" "$work/trace.json.gz"
ln -s "$work/trace.json.gz" "$work/link.json.gz"
before=$(sha256sum "$work/trace.json.gz" | cut -d' ' -f1)
expect_exit 2 "output is the input" ingest "$work/trace.json.gz" -o "$work/trace.json.gz"
grep -q "is the input" "$work/err.txt" || fail "output is the input: unexpected message"
expect_exit 2 "output is a link to the input" ingest "$work/trace.json.gz" -o "$work/link.json.gz"
expect_exit 2 "calibrate output is the input" calibrate "$work/trace.json.gz" --hardware A100-SXM4-80GB \
  --configs "$project/configs" -o "$work/trace.json.gz"
grep -q "is the input" "$work/err.txt" || fail "calibrate output is the input: unexpected message"
[ "$(sha256sum "$work/trace.json.gz" | cut -d' ' -f1)" = "$before" ] || fail "the input trace was changed"

if [ $failures -eq 0 ]; then
  echo "PASS: chopsim ingest command line"
  exit 0
fi
echo "$failures failure(s)"
exit 1
