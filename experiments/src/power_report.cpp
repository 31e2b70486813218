#include "power_report.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "observers.hpp"

namespace chopsim::detail {

namespace {
constexpr double kWindow1ms = 1e-3;
constexpr double kWindow25ms = 0.025;  // the NVML sensor's averaging window (PowerReport::peak_25ms_w)
constexpr double kWindow100ms = 0.1;
/// The functionals PowerObserver::Gpu::windows tracks, in the order it tracks them.
constexpr std::size_t kAverage1ms = 0, kAverage25ms = 1, kAverage100ms = 2, kRise1ms = 3;
/// "Time below 90 % of the max clock" (the brief's clock metric).
constexpr double kLowClockFraction = 0.9;
}  // namespace

// ---- setup ---------------------------------------------------------------------------------------------------

int chips_of(const RunSpec& run) {
  const int dies = std::max(run.hardware.dies_per_package, 1);
  return (run.cluster.gpu_count() + dies - 1) / dies;
}

PowerSetup make_power_setup(const RunSpec& run, const ModelRegistries& registries) {
  PowerSetup setup;
  if (!run.power.dynamics) return setup;
  const HardwareSpec& hw = run.hardware;
  setup.power = registries.power.create(run.power.power_model, power_params_for(hw));
  setup.thermal = registries.thermal.create(run.power.thermal_model, hw.thermal);
  setup.governor = registries.governor.create(run.power.governor, hw.governor);

  PowerInput& in = setup.input;
  in.power = setup.power.get();
  in.thermal = setup.thermal.get();
  in.governor = setup.governor.get();
  in.cap_w_per_gpu = run.power.cap_w > 0.0 ? run.power.cap_w : hw.tdp_w;
  // A governor that never moves the clock holds the rated clock (where the datasheet peaks hold: the engine before
  // power dynamics); a governing one boosts to the max clock. A lock is the ceiling of either.
  in.ceiling_hz = run.power.lock_clock_hz > 0.0   ? run.power.lock_clock_hz
                  : setup.governor->fixed_clock() ? hw.compute.peak_clock_hz()
                                                  : hw.compute.boost_clock_hz;
  in.floor_hz = std::min(hw.min_clock_hz, in.ceiling_hz);
  in.dies_per_package = std::max(hw.dies_per_package, 1);
  const CoolingSpec cooling = run.power.cooling.value_or(hw.cooling);
  const int gpus = run.cluster.gpu_count();
  // The job waits for its slowest chip (a package of dies shares one power limit and one clock).
  in.governed_dynamic_scale = slowest_chip_dynamic_scale(run.power.chip_variation, chips_of(run));
  const double start_w = std::max(hw.idle_power_w, run.power.start_power_fraction * in.cap_w_per_gpu);
  in.inlet_c.resize(static_cast<std::size_t>(gpus));
  in.initial_c.resize(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) {
    const double inlet = slot_inlet_c(cooling, r, run.cluster.gpus_per_node, in.dies_per_package);
    in.inlet_c[static_cast<std::size_t>(r)] = inlet;
    in.initial_c[static_cast<std::size_t>(r)] = setup.thermal->steady_state_c(inlet, start_w);
  }
  return setup;
}

// ---- the observer --------------------------------------------------------------------------------------------

PowerObserver::Gpu::Gpu() {
  // In the order of the kAverage*/kRise* indices.
  windows.track({0.0, kWindow1ms}, {1.0, -1.0}, kWindow1ms);
  windows.track({0.0, kWindow25ms}, {1.0, -1.0}, kWindow25ms);
  windows.track({0.0, kWindow100ms}, {1.0, -1.0}, kWindow100ms);
  windows.track({0.0, kWindow1ms, 2.0 * kWindow1ms}, {1.0, -2.0, 1.0}, kWindow1ms);
}

PowerObserver::PowerObserver(const Workload& workload, const RunSpec& run, const PowerSetup& setup)
    : workload_(workload), gpus_(static_cast<std::size_t>(workload.layout.world_size())) {
  report_.available = setup.enabled();
  report_.cap_w = setup.input.cap_w_per_gpu;
  report_.slowest_chip_dynamic_scale = setup.input.governed_dynamic_scale;
  report_.chips = chips_of(run);
  report_.ceiling_hz = setup.input.ceiling_hz;
  report_.max_clock_hz = run.hardware.compute.boost_clock_hz;
  for (Gpu& gpu : gpus_) gpu.busy_min_clock_hz = std::numeric_limits<double>::infinity();
}

void PowerObserver::advance(Gpu& g, double time_s) const {
  const double dt = time_s - g.time_s;
  if (dt <= 0.0) return;
  g.sums.energy_j += g.power_w * dt;
  g.sums.clock_time += g.clock_hz * dt;
  if (g.compute_running > 0) {
    g.sums.busy_s += dt;
    g.sums.busy_clock_time += g.clock_hz * dt;
    if (g.clock_hz < kLowClockFraction * report_.max_clock_hz) g.sums.busy_below_s += dt;
    g.busy_min_clock_hz = std::min(g.busy_min_clock_hz, g.clock_hz);
  }
  if (g.flags != 0) g.sums.throttled_s += dt;
  if (g.flags & kThrottlePower) g.sums.capped_s += dt;
  if (g.flags & kThrottleThermal) g.sums.thermal_s += dt;
  g.time_s = time_s;
}

void PowerObserver::on_op_event(const OpEvent& event) {
  const Op& op = workload_.program(static_cast<int>(event.rank)).streams[event.stream].ops[event.op];
  if (op.kind != OpKind::compute) return;
  Gpu& g = gpus_[event.rank];
  advance(g, event.time_s);
  if (!event.is_end && g.compute_running == 0 && g.clock_hz > 0.0)
    g.busy_min_clock_hz = std::min(g.busy_min_clock_hz, g.clock_hz);
  g.compute_running += event.is_end ? -1 : 1;
}

void PowerObserver::on_telemetry(const GpuStateSample& s) {
  if (s.gpu >= gpus_.size()) throw EngineError("telemetry for GPU " + std::to_string(s.gpu) + " out of range");
  Gpu& g = gpus_[s.gpu];
  advance(g, s.time_s);
  g.power_w = s.power_w;
  g.clock_hz = s.clock_hz;
  g.flags = s.flags;
  if (g.compute_running > 0) g.busy_min_clock_hz = std::min(g.busy_min_clock_hz, g.clock_hz);
  g.peak_w = std::max(g.peak_w, s.power_w);
  g.peak_c = std::max(g.peak_c, s.temperature_c);
  if ((s.flags & kThrottleThermal) != 0 && g.first_thermal_s < 0.0) g.first_thermal_s = s.time_s;
  g.windows.add(s.time_s - folded_s_, s.power_w);
}

void PowerObserver::on_fold_window_begin(double time_s) {
  window_begin_s_ = time_s;
  for (Gpu& g : gpus_) {
    advance(g, time_s);
    g.at_window_begin = g.sums;
  }
}

void PowerObserver::on_fold(double time_s, double span_s) {
  const double window = time_s - window_begin_s_;
  const double k = window > 0.0 ? span_s / window : 0.0;
  for (Gpu& g : gpus_) {
    advance(g, time_s);
    extrapolate_window(g.sums, g.at_window_begin, k, &Integrals::energy_j, &Integrals::clock_time, &Integrals::busy_s,
                       &Integrals::busy_clock_time, &Integrals::busy_below_s, &Integrals::throttled_s,
                       &Integrals::capped_s, &Integrals::thermal_s);
    g.time_s = time_s + span_s;
  }
  folded_s_ += span_s;
}

PowerReport PowerObserver::finish(double end_s, int iterations, double tokens_per_iteration) {
  PowerReport r = report_;
  if (!r.available || gpus_.empty() || !(end_s > 0.0)) return r;
  const double n = static_cast<double>(gpus_.size());
  const double per_iteration = 1.0 / std::max(iterations, 1);
  double energy = 0.0, clock_time = 0.0, busy = 0.0, busy_clock = 0.0, below = 0.0;
  double throttled = 0.0, capped = 0.0, thermal = 0.0;
  r.clock_min_hz = std::numeric_limits<double>::infinity();
  // Under symmetry only representatives have telemetry: each counts for its class, and every GPU's own figures are
  // its representative's.
  const std::vector<double> weights = rank_weights(representative_, gpus_.size());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const double w = weights[i];
    if (w == 0.0) continue;
    Gpu& g = gpus_[i];
    advance(g, end_s);
    energy += w * g.sums.energy_j;
    clock_time += w * g.sums.clock_time;
    busy += w * g.sums.busy_s;
    busy_clock += w * g.sums.busy_clock_time;
    below += w * g.sums.busy_below_s;
    throttled += w * g.sums.throttled_s;
    capped += w * g.sums.capped_s;
    thermal += w * g.sums.thermal_s;
    if (g.sums.busy_s > 0.0) r.clock_min_hz = std::min(r.clock_min_hz, g.busy_min_clock_hz);
    r.peak_w = std::max(r.peak_w, g.peak_w);
    g.windows.finish(end_s - folded_s_);
    const double a1 = g.windows.extreme(kAverage1ms);
    const double a25 = g.windows.extreme(kAverage25ms);
    const double a100 = g.windows.extreme(kAverage100ms);
    const double rise = g.windows.extreme(kRise1ms);
    // A run shorter than a window: its average over the whole run.
    r.peak_1ms_w = std::max(r.peak_1ms_w, std::isnan(a1) ? g.sums.energy_j / end_s : a1);
    r.peak_25ms_w = std::max(r.peak_25ms_w, std::isnan(a25) ? g.sums.energy_j / end_s : a25);
    r.peak_100ms_w = std::max(r.peak_100ms_w, std::isnan(a100) ? g.sums.energy_j / end_s : a100);
    if (!std::isnan(rise)) r.max_rise_w_per_ms = std::max(r.max_rise_w_per_ms, rise);
  }
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& g = gpus_[representative_.empty() ? i : representative_[i]];
    r.peak_temperature_c.push_back(g.peak_c);
    r.thermal_throttled_fraction_per_gpu.push_back(g.sums.thermal_s / end_s);
    r.first_thermal_throttle_s.push_back(g.first_thermal_s);
  }
  r.mean_w = energy / end_s / n;
  r.energy_per_iteration_j = energy * per_iteration;
  r.energy_per_token_j = tokens_per_iteration > 0.0 ? r.energy_per_iteration_j / tokens_per_iteration : 0.0;
  r.clock_mean_all_hz = clock_time / end_s / n;
  r.clock_mean_hz = busy > 0.0 ? busy_clock / busy : r.clock_mean_all_hz;
  if (!std::isfinite(r.clock_min_hz)) r.clock_min_hz = r.clock_mean_all_hz;
  r.below_90pct_fraction = busy > 0.0 ? below / busy : 0.0;
  r.below_90pct_s = below / n * per_iteration;
  r.throttled_fraction = throttled / (end_s * n);
  r.power_capped_fraction = capped / (end_s * n);
  r.thermal_throttled_fraction = thermal / (end_s * n);
  return r;
}

}  // namespace chopsim::detail
