#!/usr/bin/env bash
# The fast engine under ThreadSanitizer: several engines simulating at once in one process (what an in-process sweep
# does) must share nothing. Builds the engine libraries and their tests into build-tsan/ with -fsanitize=thread and
# runs the fast engine's tests (the SimGrid engine forks and switches ucontexts, which TSan does not follow; its tests
# run in the normal build). Any report fails (halt_on_error). -Wno-tsan: GCC 12 warns that TSan does not see
# std::atomic_thread_fence, which SimGrid's headers use through libstdc++ (the fast engine uses no atomics).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-debian.sh
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread -Wno-tsan" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" -DCHOPSIM_PYTHON=OFF \
  >/dev/null
cmake --build build-tsan -j "$(nproc)" --target chopsim_sim_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/sim/chopsim_sim_tests \
  --gtest_filter='FastEngine.*:FlowNetwork.*:Symmetry.*:ObserverThread.*:*/fast' --gtest_brief=1
