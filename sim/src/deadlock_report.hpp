#pragma once
// The deadlock report of both engines (streams that never finished): one wording, so that a workload's error reads
// the same whichever engine found it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "host_plan.hpp"
#include "prepared_workload.hpp"

namespace chopsim::sim_detail {

/// What a stream is waiting for (both engines' stream states hold one).
enum class Wait : std::uint8_t { none, dependency, barrier, kernel, transfers, sync, send, recv, host, sleep };

/// Where a stream is in its program and what it is waiting for: the SimGrid engine's actors keep one (ActorState),
/// and the deadlock report lists those of the streams that never finished.
struct StreamPosition {
  int rank = 0;
  std::uint16_t stream = 0;
  std::uint32_t iteration = 0;
  std::uint32_t op = 0;
  Wait wait = Wait::none;
  std::uint16_t wait_stream = 0;  ///< dependency, barrier: the stream waited for
  std::uint64_t wait_count = 0;   ///< dependency: its completed ops needed (all iterations)
  std::size_t step = 0;           ///< transfers, sync: the collective plan's step
  int peer = -1;                  ///< send, recv: the other rank
};

/// A rank's progress as the report reads it.
struct RankProgress {
  std::uint32_t program = 0;
  const std::vector<std::uint64_t>* completed = nullptr;  ///< ops completed per stream, all iterations
  const std::vector<std::uint64_t>* lengths = nullptr;    ///< ops per stream and iteration
  std::uint64_t waits_released = 0;                       ///< host waits released, all iterations
};

/// Throws the EngineError that lists the first stuck streams (`stuck`: where each stopped) (of `streams` in all, at
/// `now_s`) and why each is stuck; `progress` gives a rank's counters and `host_plans` each program's host plan (empty
/// when the host is not modelled). Returns when nothing is stuck.
void report_deadlock(const PreparedWorkload& prepared, const std::vector<HostPlan>& host_plans, double now_s,
                     std::size_t streams, const std::vector<StreamPosition>& stuck,
                     const std::function<RankProgress(int rank)>& progress);

}  // namespace chopsim::sim_detail
