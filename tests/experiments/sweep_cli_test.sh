#!/usr/bin/env bash
# `chopsim sweep` end to end (issue 17): SIGKILL in the middle of a sweep, then the same command again: the store is
# readable, finished points are not recomputed, none is lost or duplicated; and a bad sweep file exits 2 naming its
# line, with no store. Usage: sweep_cli_test.sh CHOPSIM SOURCE_DIR   (exit 77: no python3 to read the store)
set -u
chopsim=$1
source_dir=$2
source "$source_dir/tests/support/cli_test_lib.sh"
command -v python3 >/dev/null || { echo "skipped: python3 is needed to read the store"; exit 77; }
rows() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*), count(distinct key) from points').fetchone()[0])" "$1"; }

# Six points of the 64-GPU Llama-3-70B run, seconds each: the kill lands between points.
cat > "$work/sweep.yaml" <<YAML
base: $source_dir/configs/llama3-70b-h100-3d.yaml
axes:
  training.micro_batch: [1, 2]
  training.recompute: [none, selective, full]
YAML
out="$work/out"
"$chopsim" sweep "$work/sweep.yaml" --out "$out" --jobs 1 >/dev/null 2>"$work/progress" &
pid=$!
for _ in $(seq 1200); do
  [ -f "$out/sweep.sqlite" ] && [ "$(rows "$out/sweep.sqlite" 2>/dev/null || echo 0)" -ge 1 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$(rows "$out/sweep.sqlite") || fail "the store is unreadable after SIGKILL"
[ "$before" -ge 1 ] && [ "$before" -lt 6 ] || fail "after the kill the store holds $before points (expected 1-5)"
[ -f "$out/results.csv" ] && fail "results.csv was written before the sweep ended"

expect_exit 0 "the rerun" sweep "$work/sweep.yaml" --out "$out" --jobs 2
grep -q "($before from an earlier run)" "$work/out.txt" || fail "the rerun did not resume $before points: $(head -1 "$work/out.txt")"
[ "$(rows "$out/sweep.sqlite")" -eq 6 ] || fail "the store holds $(rows "$out/sweep.sqlite") points, not 6"
[ "$(wc -l < "$out/results.csv")" -eq 7 ] || fail "results.csv has $(wc -l < "$out/results.csv") lines, not 7"
python3 - "$out/sweep.sqlite" <<'PY' || fail "duplicate keys in the store"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, distinct = db.execute("select count(*), count(distinct key) from points").fetchone()
assert n == distinct == 6, (n, distinct)
PY

# A bad sweep file: exit 2, file and line named, nothing written.
printf 'base: %s\naxes:\n  training.micro_batch: []\n' "$source_dir/configs/llama3-8b-fsdp.yaml" > "$work/bad.yaml"
expect_exit 2 "an empty axis" sweep "$work/bad.yaml" --out "$work/bad-out"
grep -q "bad.yaml:3" "$work/err.txt" || fail "the message does not name bad.yaml:3: $(cat "$work/err.txt")"
[ -e "$work/bad-out" ] && fail "a bad sweep file created its output folder"

# Shards run against a copy of the configs (--configs, the MI300X at 600 W) merge with the same --configs: a point's
# key covers the files its config read, so a merge that reads the shipped ones finds no point.
cp -r "$source_dir/configs" "$work/configs"
sed -i 's/^  tdp: 750 /  tdp: 600 /' "$work/configs/hardware/MI300X.yaml"
grep -q '^  tdp: 600 ' "$work/configs/hardware/MI300X.yaml" || fail "could not lower the copy's MI300X TDP"
printf 'base: %s\naxes:\n  training.micro_batch: [1, 2]\n' "$source_dir/configs/llama3-8b-fsdp.yaml" > "$work/small.yaml"
for shard in 0 1; do
  expect_exit 0 "shard $shard/2 with --configs" sweep "$work/small.yaml" --shard "$shard/2" --configs "$work/configs" \
    --out "$work/shard-$shard" --jobs 1 --quiet
done
expect_exit 2 "a merge without the shards' --configs" sweep merge "$work/small.yaml" --out "$work/merged-shipped" \
  "$work/shard-0" "$work/shard-1"
grep -q "same --configs" "$work/err.txt" || fail "the merge's message does not mention --configs: $(cat "$work/err.txt")"
expect_exit 0 "a merge with the shards' --configs" sweep merge "$work/small.yaml" --configs "$work/configs" \
  --out "$work/merged" "$work/shard-0" "$work/shard-1"
[ "$(wc -l < "$work/merged/results.csv")" -eq 3 ] || fail "the merged results.csv has $(wc -l < "$work/merged/results.csv") lines, not 3"

[ "$failures" -eq 0 ] || exit 1
echo "sweep: resumed $before of 6 points after SIGKILL; bad file refused; shards with --configs merged"
