#include <algorithm>
#include <numeric>

#include "observers.hpp"

namespace chopsim {

double TimeBreakdown::exposed_comm_total_s() const {
  return std::accumulate(exposed_comm_s.begin(), exposed_comm_s.end(), 0.0);
}

double TimeBreakdown::total_s() const { return compute_s + exposed_comm_total_s() + pipeline_bubble_s + idle_s; }

namespace detail {

BreakdownObserver::BreakdownObserver(const Workload& workload)
    : workload_(workload),
      pipelined_(workload.layout.parallelism().pp > 1),
      ranks_(static_cast<std::size_t>(workload.layout.world_size())) {}

void BreakdownObserver::advance(RankState& state, double time_s) const {
  const double elapsed = time_s - state.last_time_s;
  state.last_time_s = time_s;
  if (elapsed <= 0.0) return;
  if (state.active_compute > 0) {
    state.accumulated.compute_s += elapsed;
    return;
  }
  std::uint32_t running_categories = 0;
  for (auto count : state.active_comm) running_categories += count > 0 ? 1U : 0U;
  if (running_categories > 0) {
    const double share = elapsed / running_categories;
    for (std::size_t c = 0; c < kCommCategoryCount; ++c)
      if (state.active_comm[c] > 0) state.accumulated.exposed_comm_s[c] += share;
    return;
  }
  if (pipelined_)
    state.accumulated.pipeline_bubble_s += elapsed;
  else
    state.accumulated.idle_s += elapsed;
}

void BreakdownObserver::on_op_event(const OpEvent& event) {
  auto& state = ranks_[event.rank];
  advance(state, event.time_s);
  const Op& op = workload_.program(static_cast<int>(event.rank)).streams[event.stream].ops[event.op];
  if (op.kind == OpKind::compute) {
    if (event.is_end)
      --state.active_compute;
    else
      ++state.active_compute;
  } else {
    auto& count = state.active_comm[static_cast<std::size_t>(op.category)];
    if (event.is_end)
      --count;
    else
      ++count;
  }
}

TimeBreakdown BreakdownObserver::finish(double end_s, int iterations) {
  TimeBreakdown mean;
  if (ranks_.empty()) return mean;
  for (auto& state : ranks_) {
    advance(state, end_s);
    mean.compute_s += state.accumulated.compute_s;
    for (std::size_t c = 0; c < kCommCategoryCount; ++c) mean.exposed_comm_s[c] += state.accumulated.exposed_comm_s[c];
    mean.pipeline_bubble_s += state.accumulated.pipeline_bubble_s;
    mean.idle_s += state.accumulated.idle_s;
  }
  const double scale = 1.0 / (static_cast<double>(ranks_.size()) * std::max(iterations, 1));
  mean.compute_s *= scale;
  for (auto& value : mean.exposed_comm_s) value *= scale;
  mean.pipeline_bubble_s *= scale;
  mean.idle_s *= scale;
  return mean;
}

}  // namespace detail
}  // namespace chopsim
