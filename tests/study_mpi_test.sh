#!/usr/bin/env bash
# chopsim study --mpi under a real MPI job (Open MPI's mpirun, 3 ranks on this machine): every candidate's sweep is
# spread over the ranks and merged by rank 0, which prices the candidates: results.csv and each candidate's
# sweep.sqlite equal the single-process study's byte for byte, no rank's shard folder is left, and the other ranks
# print nothing of the summary. Skipped (77) without mpirun or without an MPI build.
# Usage: study_mpi_test.sh CHOPSIM SOURCE_DIR
set -euo pipefail
chopsim=$(realpath "$1")
source_dir=$(realpath "$2")
command -v mpirun > /dev/null || { echo "study --mpi: skipped: no mpirun (apt install openmpi-bin)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "study --mpi: FAILED: $*"; exit 1; }
# Two candidates (the quick start's node of 8x MI300X and the same node of MI325X) over the 12-point micro-batch and
# recomputation sweep of the quick start, priced from the shipped catalog.
cat > study.yaml <<STUDY
sweep: $source_dir/configs/sweeps/llama3-8b-microbatch.yaml
goal: {tokens: 1.0e10}
catalog: $source_dir/configs/studies/catalog.yaml
candidates:
  - {name: MI300X node, set: {hardware: MI300X}}
  - {name: MI325X node, set: {hardware: MI325X}}
STUDY
if "$chopsim" study study.yaml --mpi --out probe 2>&1 | grep -q "built without MPI"; then
  echo "study --mpi: skipped: chopsim was built without MPI"
  exit 77
fi
rm -rf probe
mpi=(mpirun -n 3 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA between the ranks in containers
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"; fi

"$chopsim" study study.yaml --out single --jobs 1 --quiet > single.log 2>&1 || fail "single process: $(tail -3 single.log)"
"${mpi[@]}" "$chopsim" study study.yaml --out viampi --jobs 1 --mpi --quiet > mpi.log 2>&1 || fail "mpirun: $(tail -5 mpi.log)"
cmp -s single/results.csv viampi/results.csv || fail "results.csv differs from the single-process study"
for candidate in MI300X_node MI325X_node; do
  cmp -s "single/$candidate/sweep.sqlite" "viampi/$candidate/sweep.sqlite" ||
    fail "$candidate's sweep.sqlite differs from the single-process study"
  [ ! -e "viampi/$candidate.mpi-shards" ] || fail "$candidate's rank shard folders were left behind"
done
[ "$(grep -c '^Study ' mpi.log)" -eq 1 ] || fail "the summary was printed $(grep -c '^Study ' mpi.log) times, not once"
echo "study --mpi: ok (3 ranks equal one process byte for byte, one summary)"
