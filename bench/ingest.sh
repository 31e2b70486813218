#!/usr/bin/env bash
# Ingest throughput and peak memory of `chopsim ingest` on large synthetic Kineto traces.
#
#   bench/ingest.sh [CHOPSIM] [SIZES_MB...]     (defaults: build/app/chopsim, 100 300 1000)
#
# Each trace is made by bench/make_synthetic_kineto.py from a real Kineto trace in ../shared/data
# (hta_a100_rank0of16.json.gz, recorded with record_shapes: CPU ops with input shapes, launches, kernels, memcpys,
# NCCL) replicated until the file reaches the size, ids and timestamps shifted per replica. Throughput is the plain
# JSON size over the wall time of the whole command (SHA-256, both passes, HDF5 writing); peak memory is the maximum
# resident set size from /usr/bin/time -v. The largest size is also measured gzip-compressed (-1).
# Needs ~2.5x the largest size in free space under ${BENCH_TMP:-/tmp}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=$(dirname "$here")
chopsim=${1:-$project/build/app/chopsim}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 300 1000)
data=${CHOPSIM_SHARED_DATA:-$project/../shared/data}
source_trace=$data/traces/kineto/hta_a100_rank0of16.json.gz
[ -x "$chopsim" ] || { echo "bench: no chopsim binary at $chopsim (build it, or pass its path)" >&2; exit 2; }
[ -f "$source_trace" ] || { echo "bench: $source_trace not found (set CHOPSIM_SHARED_DATA)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time not found (Debian package 'time')" >&2; exit 2; }
work=$(mktemp -d "${BENCH_TMP:-/tmp}/chopsim-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

measure() {  # measure LABEL FILE JSON_BYTES
  local label=$1 file=$2 bytes=$3
  # Warm the page cache so that the disk is not measured.
  cat "$file" >/dev/null
  /usr/bin/time -v "$chopsim" ingest "$file" -o "$work/store.h5" >"$work/out.txt" 2>"$work/time.txt"
  local seconds rss records
  seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
  records=$(grep -o '[0-9]* GPU records' "$work/time.txt" | head -1 | cut -d' ' -f1)
  awk -v l="$label" -v b="$bytes" -v s="$seconds" -v r="$rss" -v k="$records" -v f="$(stat -c %s "$file")" \
    'BEGIN {printf "| %-14s | %8.0f | %8.0f | %7.2f | %8.0f | %9.0f | %9s |\n", l, b / 1e6, f / 1e6, s, b / 1e6 / s, r / 1024, k}'
  rm -f "$work/store.h5"
}

echo "chopsim ingest on synthetic Kineto traces (replicas of $(basename "$source_trace")), $(nproc) cores"
echo
echo "| input          | JSON MB  | file MB  | wall s  | MB/s     | peak MiB  | GPU recs  |"
echo "|----------------|----------|----------|---------|----------|-----------|-----------|"
largest=${sizes[${#sizes[@]}-1]}
for size in "${sizes[@]}"; do
  python3 "$here/make_synthetic_kineto.py" "$source_trace" "$work/trace.json" "$size" >/dev/null
  bytes=$(stat -c %s "$work/trace.json")
  measure "${size} MB json" "$work/trace.json" "$bytes"
  if [ "$size" = "$largest" ]; then
    gzip -1 -c "$work/trace.json" >"$work/trace.json.gz"
    rm -f "$work/trace.json"
    measure "${size} MB json.gz" "$work/trace.json.gz" "$bytes"
    rm -f "$work/trace.json.gz"
  fi
  rm -f "$work/trace.json"
done
echo
echo "MB/s = uncompressed JSON bytes / wall time of the whole command; target >= 100 MB/s, memory flat in the size."
