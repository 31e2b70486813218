#pragma once
// The host's timeline of one program (docs/design.md, "The host"), shared by both engines. Between two host waits
// the launching thread issues ops without pause, so the issue time of the op at global issue position g (iteration *
// issue steps + position) is the start of its host-wait segment plus host_launch_s times the launches issued since
// that start: prefix sums over the issue order. A segment starts when its host wait is released, at the later of
// the waited op's completion and the host having issued it.

#include <cstdint>
#include <utility>
#include <vector>

#include "chopsim/models/workload.hpp"

namespace chopsim::sim_detail {

struct HostPlan {
  std::vector<std::vector<std::uint32_t>> position;         ///< per stream and op: index in the issue order
  std::vector<double> launches_before;                      ///< per issue index (and the end): launches before it
  std::vector<std::uint32_t> waits;                         ///< issue indices of the host waits, in order
  std::vector<std::vector<std::uint32_t>> waits_of_stream;  ///< per stream: its ops the host waits for, in order

  /// The plan of `program` (its issue order must have passed issue_order_problem()).
  [[nodiscard]] static HostPlan of(const Program& program);

  /// Launches issued before global issue position `g`, all iterations.
  [[nodiscard]] double launches_before_position(std::uint64_t g) const;
  /// Global issue position of the first op of host-wait segment `k` (segment 0 starts the run; segment k the step
  /// after the k-th wait).
  [[nodiscard]] std::uint64_t segment_begin(std::uint64_t k) const;
  /// The host-wait segment that op `op` of `stream` in `iteration` is issued in.
  [[nodiscard]] std::uint64_t segment_of(std::uint16_t stream, std::uint32_t op, std::uint32_t iteration) const;
  /// (first launch, last launch) of op `op` of `stream` in `iteration`, whose segment started at `segment_start_s`.
  [[nodiscard]] std::pair<double, double> issue_times(std::uint16_t stream, std::uint32_t op, std::uint32_t iteration,
                                                      double segment_start_s, double host_launch_s) const;
  /// When segment `segment` (started at `segment_start_s`) has issued its closing wait op: the earliest start of the
  /// next segment.
  [[nodiscard]] double wait_issued_s(std::uint64_t segment, double segment_start_s, double host_launch_s) const;
};

}  // namespace chopsim::sim_detail
