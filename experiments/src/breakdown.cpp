#include <algorithm>
#include <numeric>

#include "observers.hpp"

namespace chopsim {

double TimeBreakdown::exposed_comm_total_s() const {
  return std::accumulate(exposed_comm_s.begin(), exposed_comm_s.end(), 0.0);
}

double TimeBreakdown::total_s() const { return compute_s + exposed_comm_total_s() + pipeline_bubble_s + idle_s; }

double LossBreakdown::total_s() const {
  return ideal_s + efficiency_loss_s + frequency_s + launch_s + comm_contention_s + exposed_comm_s + pipeline_bubble_s +
         idle_s;
}

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
  state.gap_s += elapsed;
}

void BreakdownObserver::charge_gap(RankState& state, bool pipeline_wait) {
  (pipeline_wait ? state.accumulated.pipeline_bubble_s : state.accumulated.idle_s) += state.gap_s;
  state.gap_s = 0.0;
}

void BreakdownObserver::on_op_event(const OpEvent& event) {
  auto& state = ranks_[event.rank];
  advance(state, event.time_s);
  const Op& op = workload_.program(static_cast<int>(event.rank)).streams[event.stream].ops[event.op];
  if (op.kind == OpKind::delay) return;  // a host gap: the GPU is idle unless another stream runs
  // A pipeline send or receive starts when its peer posts the other side (docs/design.md): a gap it ends was the
  // wait for the other stage. Any other op that ends a gap started late because its host launched it late.
  if (!event.is_end && state.gap_s > 0.0)
    charge_gap(state, pipelined_ && (op.kind == OpKind::send || op.kind == OpKind::recv));
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

void BreakdownObserver::on_fold_window_begin(double time_s) {
  for (RankState& state : ranks_) {
    advance(state, time_s);
    state.at_window_begin = state.accumulated;
  }
}

void BreakdownObserver::on_fold(double time_s, double span_s) {
  for (RankState& state : ranks_) {
    advance(state, time_s);
    // What the window charged; a gap open at either end is charged later, so the parts may fall short of the window
    // or exceed it by a gap: scaled to add up to the span, the left-out windows take the window's proportions.
    TimeBreakdown window;
    window.compute_s = state.accumulated.compute_s - state.at_window_begin.compute_s;
    for (std::size_t c = 0; c < kCommCategoryCount; ++c)
      window.exposed_comm_s[c] = state.accumulated.exposed_comm_s[c] - state.at_window_begin.exposed_comm_s[c];
    window.pipeline_bubble_s = state.accumulated.pipeline_bubble_s - state.at_window_begin.pipeline_bubble_s;
    window.idle_s = state.accumulated.idle_s - state.at_window_begin.idle_s;
    const double charged = window.total_s();
    // A GPU with nothing charged in the window (none simulated) idles through the span, as it did.
    const double k = charged > 0.0 ? span_s / charged : 0.0;
    state.accumulated.compute_s += k * window.compute_s;
    for (std::size_t c = 0; c < kCommCategoryCount; ++c)
      state.accumulated.exposed_comm_s[c] += k * window.exposed_comm_s[c];
    state.accumulated.pipeline_bubble_s += k * window.pipeline_bubble_s;
    state.accumulated.idle_s += k * window.idle_s;
    if (charged > 0.0) state.last_time_s = time_s + span_s;
  }
}

std::vector<double> rank_weights(const std::vector<std::uint32_t>& representative, std::size_t ranks) {
  std::vector<double> weights(ranks, representative.empty() ? 1.0 : 0.0);
  for (const std::uint32_t r : representative)
    if (r < ranks) weights[r] += 1.0;
  return weights;
}

TimeBreakdown BreakdownObserver::finish(double end_s, int iterations) {
  TimeBreakdown mean;
  if (ranks_.empty()) return mean;
  const std::vector<double> weights = rank_weights(representative_, ranks_.size());
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const double w = weights[r];
    if (w == 0.0) continue;
    RankState& state = ranks_[r];
    advance(state, end_s);
    charge_gap(state, pipelined_);  // done before the slowest rank: its pipeline's drain, or idle
    mean.compute_s += w * state.accumulated.compute_s;
    for (std::size_t c = 0; c < kCommCategoryCount; ++c)
      mean.exposed_comm_s[c] += w * state.accumulated.exposed_comm_s[c];
    mean.pipeline_bubble_s += w * state.accumulated.pipeline_bubble_s;
    mean.idle_s += w * state.accumulated.idle_s;
  }
  const double scale = 1.0 / (static_cast<double>(ranks_.size()) * std::max(iterations, 1));
  mean.compute_s *= scale;
  for (auto& value : mean.exposed_comm_s) value *= scale;
  mean.pipeline_bubble_s *= scale;
  mean.idle_s *= scale;
  return mean;
}

// ---- the Chopper-style loss breakdown --------------------------------------------------------------------------

LossBreakdownObserver::LossBreakdownObserver(const Workload& workload, const ComputeModel& compute, double clock_hz,
                                             double max_clock_hz)
    : workload_(workload),
      compute_(compute),
      max_clock_hz_(max_clock_hz),
      slowdown_(compute.params().comm_compute_slowdown),
      ranks_(static_cast<std::size_t>(workload.layout.world_size())) {
  for (Rank& rank : ranks_) rank.clock_hz = clock_hz;
}

void LossBreakdownObserver::advance(Rank& rank, double time_s) const {
  const double dt = time_s - rank.time_s;
  rank.time_s = std::max(rank.time_s, time_s);
  if (dt <= 0.0 || rank.kernels.empty()) return;
  // n kernels running together share the GPU (the engines' max-min sharing): each is given dt / n of its time, so
  // that the kernels' parts add up to the GPU's busy time. Sharing among kernels is not a loss; what communication
  // takes from them (comm_compute_slowdown) is.
  const double comm_slowdown = rank.communications > 0 ? slowdown_ : 0.0;
  const double given = dt / static_cast<double>(rank.kernels.size());
  for (Kernel& k : rank.kernels) {
    if (k.clock_hz != rank.clock_hz) {
      const double duration = compute_.duration_s(kernel_work(*k.op), rank.clock_hz);
      k.ratio = duration > 0.0 ? k.max_clock.duration_s / duration : 1.0;
      k.clock_hz = rank.clock_hz;
    }
    k.given_s += given;
    k.frequency_s += (1.0 - k.ratio) * given;
    k.contention_s += k.ratio * comm_slowdown * given;
  }
}

void LossBreakdownObserver::on_op_event(const OpEvent& event) {
  Rank& rank = ranks_[event.rank];
  advance(rank, event.time_s);
  const Op& op = workload_.program(static_cast<int>(event.rank)).streams[event.stream].ops[event.op];
  if (op.kind == OpKind::delay) return;
  if (op.kind != OpKind::compute) {
    rank.communications += event.is_end ? -1 : 1;
    return;
  }
  if (!event.is_end) {
    Kernel k;
    k.op = &op;
    k.max_clock = compute_.timing(kernel_work(op), max_clock_hz_);
    rank.kernels.push_back(k);
    return;
  }
  const auto it = std::find_if(rank.kernels.begin(), rank.kernels.end(), [&](const Kernel& k) { return k.op == &op; });
  if (it == rank.kernels.end()) return;
  const Kernel k = *it;
  rank.kernels.erase(it);
  const KernelTiming& timing = k.max_clock;
  const double duration = k.given_s;
  // The integrals are exact up to rounding; make the two stretch parts add up to the measured stretch.
  const double stretch = duration - timing.duration_s;
  const double parts = k.frequency_s + k.contention_s;
  const double scale = parts > 0.0 ? stretch / parts : 0.0;
  rank.sums.ideal_s += timing.ideal_s;
  rank.sums.efficiency_s += timing.duration_s - timing.launch_s - timing.ideal_s;
  rank.sums.launch_s += timing.launch_s;
  rank.sums.frequency_s += parts > 0.0 ? k.frequency_s * scale : stretch;
  rank.sums.contention_s += parts > 0.0 ? k.contention_s * scale : 0.0;
  rank.sums.kernel_s += duration;
}

void LossBreakdownObserver::on_fold_window_begin(double time_s) {
  window_begin_s_ = time_s;
  for (Rank& rank : ranks_) {
    advance(rank, time_s);
    rank.at_window_begin = rank.sums;
  }
}

void LossBreakdownObserver::on_fold(double time_s, double span_s) {
  const double window = time_s - window_begin_s_;
  const double k = window > 0.0 ? span_s / window : 0.0;
  for (Rank& rank : ranks_) {
    advance(rank, time_s);
    extrapolate_window(rank.sums, rank.at_window_begin, k, &KernelSums::ideal_s, &KernelSums::efficiency_s,
                       &KernelSums::launch_s, &KernelSums::frequency_s, &KernelSums::contention_s,
                       &KernelSums::kernel_s);
    rank.time_s = time_s + span_s;  // kernels running across the fold are given no time for the span
  }
}

void LossBreakdownObserver::on_telemetry(const GpuStateSample& sample) {
  if (sample.gpu >= ranks_.size()) return;
  Rank& rank = ranks_[sample.gpu];
  advance(rank, sample.time_s);
  rank.clock_hz = sample.clock_hz;
}

LossBreakdown LossBreakdownObserver::finish(const TimeBreakdown& time, int iterations) const {
  LossBreakdown out;
  if (ranks_.empty()) return out;
  double ideal = 0.0, efficiency = 0.0, launch = 0.0, frequency = 0.0, contention = 0.0, kernel = 0.0;
  const std::vector<double> weights = rank_weights(representative_, ranks_.size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = ranks_[i];
    const double w = weights[i];
    ideal += w * r.sums.ideal_s;
    efficiency += w * r.sums.efficiency_s;
    launch += w * r.sums.launch_s;
    frequency += w * r.sums.frequency_s;
    contention += w * r.sums.contention_s;
    kernel += w * r.sums.kernel_s;
  }
  const double per_gpu_iteration = 1.0 / (static_cast<double>(ranks_.size()) * std::max(iterations, 1));
  const double scale = kernel > 0.0 ? time.compute_s / (kernel * per_gpu_iteration) : 0.0;
  const double k = per_gpu_iteration * scale;
  out.ideal_s = ideal * k;
  out.efficiency_loss_s = efficiency * k;
  out.launch_s = launch * k;
  out.frequency_s = frequency * k;
  out.comm_contention_s = contention * k;
  out.exposed_comm_s = time.exposed_comm_total_s();
  out.pipeline_bubble_s = time.pipeline_bubble_s;
  out.idle_s = time.idle_s;
  return out;
}

}  // namespace detail
}  // namespace chopsim
