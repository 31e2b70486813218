#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz; issue 16) with clang, ASan and UBSan in the sanitizer tree build-asan/
# (scripts/configure-sanitizers.sh, shared with scripts/test-asan.sh), and runs each on its seed corpus
# (tests/fuzz/corpus/<input>/, plus the matching files of ../shared/data when present) with its dictionary.
# Any crash, sanitizer report, untyped exception, timeout (10 s) or memory blow-up (2 GiB) fails; the input that
# caused it is kept in build-asan/findings/. The repository's corpus is not modified.
#
# Two modes:
#   scripts/fuzz.sh --ci [TARGET...]       a fixed number of executions per target (16-77 s each alone, at
#                                          most 150 s; one target per core at a time) with a fixed seed (.ci/run
#                                          uses this). The inputs reached follow the coverage feedback, which a
#                                          code change alters, and so does the address-space layout: the same
#                                          commit in another folder reached other inputs (a fresh clone, 2026-11-28). A CI finding is reproduced from the
#                                          input CI printed, not by rerunning.
#   scripts/fuzz.sh [SECONDS] [TARGET...]  exploratory: each target for SECONDS (default 60), seed 1. New findings
#                                          go to build-asan/findings/; fix them and add the input to the corpus.
# Targets: kineto rocprof_csv rocprof_json telemetry nsys store run_config sweep study power_runs
set -euo pipefail
cd "$(dirname "$0")/.."
# Executions per target in --ci mode: 16-77 s each, 425 s for the ten one after another (2026-12-02; the counts were
# set for about 15 s each on 2026-11-28, when the parsers were cheaper); two at a time on CI's 2 cores, about 4 of
# CI's 45 minutes.
declare -A ci_runs=(
  [kineto]=2000 [rocprof_csv]=10000 [rocprof_json]=2000 [telemetry]=12000 [nsys]=12000
  [store]=650 [run_config]=15000 [sweep]=50000 [study]=35000 [power_runs]=35000
)
# The time cap only guards CI's wall time: on a machine where the fuzzer reaches slower inputs (another address-space
# layout where setarch -R is refused, another CPU) a target stops there and says so.
ci_cap_s=150
ci=0
seconds=60
if [ "${1:-}" = "--ci" ]; then
  ci=1
  shift
elif [ $# -gt 0 ]; then
  seconds=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kineto rocprof_csv rocprof_json telemetry nsys store run_config sweep study power_runs)

bash scripts/configure-sanitizers.sh
cmake --build build-asan -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

# Extra seeds from the measured data (read in place, never copied into the repository).
shared=../shared/data
declare -A extra=(
  [kineto]="$shared/traces/kineto"
  [rocprof_csv]="$shared/traces/rocprof"
  [rocprof_json]="$shared/traces/rocprof"
  [telemetry]="$shared/power"
)
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=0"  # SimGrid's process-wide state (tests/sanitizers/lsan.supp) is not our leak
mkdir -p build-asan/findings
# The targets write each input to a file under TMPDIR: a folder of this run's own, removed at the end.
TMPDIR=$(mktemp -d)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
# Repeatable runs, as far as they go: libFuzzer's choices follow the coverage each input reaches, and some of it
# depends on where the allocator puts things (two runs of one binary with seed 1 differed after 1,500 executions with
# address-space randomisation, and agreed without it), so the targets run with it off where the kernel allows
# (setarch -R), and without reloading the corpus folder mid-run (-reload=0: what another run added would change the
# choices). Two runs in one folder agree; a run in another folder (other paths in the environment and the stack) may
# not.
norandom=()
if setarch "$(uname -m)" -R true 2> /dev/null; then
  norandom=(setarch "$(uname -m)" -R)
else
  echo "fuzz: setarch -R is refused here: address-space randomisation stays on, so the inputs reached may differ"
fi
status=0
# One target's run; what it prints goes to build-asan/fuzz_$target.report, which the loop below shows in order. Targets
# run side by side, one per core (each libFuzzer process is single-threaded; its budget is a count of executions, so
# running beside another changes neither its inputs nor its verdict). Exit status 1 on a finding.
run_target() {
  local target=$1 target_start=$SECONDS target_ok=1 work seeds="" executed
  local dirs dict budget
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$target/." "$work/"
  dirs=("$work")
  if [ -n "${extra[$target]:-}" ] && [ -d "${extra[$target]}" ]; then
    seeds=$(mktemp -d)
    # Small files only: the seeds are read whole for every mutation.
    find "${extra[$target]}" -type f -size -64k \( -name '*.json' -o -name '*.csv' -o -name '*.txt' \) \
      -exec cp {} "$seeds/" \; 2>/dev/null || true
    dirs+=("$seeds")
  fi
  dict=()
  [ -f "tests/fuzz/dict/$target.dict" ] && dict=(-dict="tests/fuzz/dict/$target.dict")
  if [ $ci = 1 ]; then
    budget=(-runs="${ci_runs[$target]}" -max_total_time=$ci_cap_s)
    echo "fuzz: $target for ${ci_runs[$target]} executions (at most $ci_cap_s s)"
  else
    budget=(-max_total_time="$seconds")
    echo "fuzz: $target for ${seconds}s"
  fi
  # -seed=1: the same mutations on every run of the same build in the same folder (see above).
  if ! "${norandom[@]}" "./build-asan/tests/fuzz/fuzz_$target" "${dirs[@]}" "${dict[@]}" -seed=1 "${budget[@]}" \
      -reload=0 -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="build-asan/findings/$target-" \
      2> "build-asan/fuzz_$target.log"; then
    target_ok=0
    echo "fuzz: $target FAILED (build-asan/fuzz_$target.log, input in build-asan/findings/)"
    tail -40 "build-asan/fuzz_$target.log"
    # The input itself, so that a finding on a CI machine can be rebuilt here: base64 -d > finding.
    for finding in build-asan/findings/"$target"-*; do
      [ -f "$finding" ] || continue
      echo "fuzz: $finding, base64:"
      head -c 65536 "$finding" | base64 -w 120
    done
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-asan/fuzz_$target.log" | sed "s/^/fuzz: $target /"
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-asan/fuzz_$target.log")
  if [ $ci = 1 ] && [ "$target_ok" = 1 ] && [ -n "$executed" ] && [ "$executed" -lt "${ci_runs[$target]}" ]; then
    echo "fuzz: $target stopped at the $ci_cap_s s cap after $executed of ${ci_runs[$target]} executions"
  fi
  echo "fuzz: $target took $((SECONDS - target_start)) s"
  rm -rf "$work" ${seeds:+"$seeds"}
  [ "$target_ok" = 1 ]
}

jobs_max=$(nproc)
declare -A pid_of=()
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_target "$target" > "build-asan/fuzz_$target.report" 2>&1 &
  pid_of[$target]=$!
done
for target in "${targets[@]}"; do
  wait "${pid_of[$target]}" || status=1
  cat "build-asan/fuzz_$target.report"
done
exit $status
