#include "host_plan.hpp"

#include <algorithm>

namespace chopsim::sim_detail {

HostPlan HostPlan::of(const Program& program) {
  HostPlan plan;
  plan.position.resize(program.streams.size());
  plan.waits_of_stream.resize(program.streams.size());
  for (std::size_t s = 0; s < program.streams.size(); ++s) plan.position[s].resize(program.streams[s].ops.size());
  plan.launches_before.assign(program.issue_order.size() + 1, 0.0);
  for (std::size_t i = 0; i < program.issue_order.size(); ++i) {
    const IssueStep& step = program.issue_order[i];
    plan.position[step.stream][step.op] = static_cast<std::uint32_t>(i);
    plan.launches_before[i + 1] = plan.launches_before[i] + step.launches;
    if (step.host_waits) {
      plan.waits.push_back(static_cast<std::uint32_t>(i));
      plan.waits_of_stream[step.stream].push_back(step.op);
    }
  }
  for (auto& ops : plan.waits_of_stream) std::sort(ops.begin(), ops.end());
  return plan;
}

double HostPlan::launches_before_position(std::uint64_t g) const {
  const std::uint64_t n = launches_before.size() - 1;
  return static_cast<double>(g / n) * launches_before[n] + launches_before[g % n];
}

std::uint64_t HostPlan::segment_begin(std::uint64_t k) const {
  if (k == 0) return 0;
  const std::uint64_t n = launches_before.size() - 1;
  const std::uint64_t w = waits.size();
  return (k - 1) / w * n + waits[(k - 1) % w] + 1;
}

std::uint64_t HostPlan::segment_of(std::uint16_t stream, std::uint32_t op, std::uint32_t iteration) const {
  const std::uint32_t at = position[stream][op];
  // Waits of earlier iterations, and this iteration's waits before `at`.
  const auto waits_before =
      static_cast<std::uint64_t>(std::lower_bound(waits.begin(), waits.end(), at) - waits.begin());
  return std::uint64_t{iteration} * waits.size() + waits_before;
}

std::pair<double, double> HostPlan::issue_times(std::uint16_t stream, std::uint32_t op, std::uint32_t iteration,
                                                double segment_start_s, double host_launch_s) const {
  const std::uint64_t n = launches_before.size() - 1;
  const std::uint32_t at = position[stream][op];
  const std::uint64_t g = std::uint64_t{iteration} * n + at;
  const double before =
      launches_before_position(g) - launches_before_position(segment_begin(segment_of(stream, op, iteration)));
  const double launches = launches_before[at + 1] - launches_before[at];
  return {segment_start_s + host_launch_s * (before + (launches > 0.0 ? 1.0 : 0.0)),
          segment_start_s + host_launch_s * (before + launches)};
}

double HostPlan::wait_issued_s(std::uint64_t segment, double segment_start_s, double host_launch_s) const {
  const std::uint64_t wait = segment_begin(segment + 1) - 1;
  return segment_start_s +
         host_launch_s * (launches_before_position(wait + 1) - launches_before_position(segment_begin(segment)));
}

}  // namespace chopsim::sim_detail
