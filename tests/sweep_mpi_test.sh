#!/usr/bin/env bash
# chopsim sweep --mpi under a real MPI job (Open MPI's mpirun, 3 ranks on this machine): the merged store and
# results.csv equal the single-process run's byte for byte, the ranks' shard folders are gone, and a rank that fails
# leaves no merged output and makes the job fail. Skipped (77) without mpirun or without an MPI build.
# Usage: sweep_mpi_test.sh CHOPSIM SOURCE_DIR
set -euo pipefail
chopsim=$(realpath "$1")
source_dir=$(realpath "$2")
command -v mpirun > /dev/null || { echo "sweep --mpi: skipped: no mpirun (apt install openmpi-bin)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
sweep="$source_dir/configs/sweeps/llama3-8b-microbatch.yaml"
fail() { echo "sweep --mpi: FAILED: $*"; exit 1; }
if "$chopsim" sweep "$sweep" --mpi --out probe 2>&1 | grep -q "built without MPI"; then
  echo "sweep --mpi: skipped: chopsim was built without MPI"
  exit 77
fi
rm -rf probe probe.mpi-shards
# Root in a container needs both flags; --oversubscribe: 3 ranks on fewer cores.
mpi=(mpirun -n 3 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA between the ranks in containers
# Under AddressSanitizer (scripts/test-asan.sh): Open MPI's runtime keeps allocations past MPI_Finalize, partly in
# components without frame pointers; LeakSanitizer's fast unwinder stops there, so its suppressions
# (tests/sanitizers/lsan.supp: libmpi, libopen-pal, ...) could not match. The slow unwinder sees the whole stack.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"; fi

"$chopsim" sweep "$sweep" --out single --jobs 1 > single.log 2>&1 || fail "single process: $(tail -3 single.log)"
"${mpi[@]}" "$chopsim" sweep "$sweep" --out viampi --jobs 1 --mpi > mpi.log 2>&1 || fail "mpirun: $(tail -5 mpi.log)"
cmp -s single/results.csv viampi/results.csv || fail "results.csv differs from the single-process run"
cmp -s single/sweep.sqlite viampi/sweep.sqlite || fail "sweep.sqlite differs from the single-process run"
[ ! -e viampi.mpi-shards ] || fail "the ranks' shard folders were left behind"
grep -q "merged the MPI ranks' shards" mpi.log || fail "rank 0 did not report the merge"

# Rank 1 cannot write its shard (a file stands where its folder goes): the job fails and nothing is merged.
mkdir -p broken.mpi-shards
touch broken.mpi-shards/rank-1
if "${mpi[@]}" "$chopsim" sweep "$sweep" --out broken --jobs 1 --mpi > broken.log 2>&1; then
  fail "a failed rank did not fail the job"
fi
grep -q "rank 1 of 3" broken.log || fail "the failing rank did not say why: $(tail -5 broken.log)"
[ ! -e broken/results.csv ] || fail "a merged results.csv was written although a rank failed"
echo "sweep --mpi: ok (3 ranks equal one process byte for byte; a failed rank merges nothing)"
