#include "chopsim/models/power_dynamics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Relative tolerance of "the averaged power is above the cap" (a crossing event lands on the cap).
constexpr double kCapTolerance = 1e-9;
/// Decisions at one instant before the domain moves its next decision a nanosecond on (guards against a governor
/// that keeps naming the present).
constexpr int kMaxDecisionsPerInstant = 8;

/// Times within this of each other are the same instant (SimGrid wakes an actor at now + (t - now), which can
/// differ from t in the last bits).
double same_instant(double t) { return 1e-12 * std::max(1.0, std::abs(t)); }

/// to += a * weight, field by field (time integrals and averages of a die's load).
void add_scaled(DieActivity& to, const DieActivity& a, double weight) {
  to.busy += a.busy * weight;
  to.tensor += a.tensor * weight;
  to.vector += a.vector * weight;
  to.hbm += a.hbm * weight;
  to.communication += a.communication * weight;
}

bool uses_tensor_cores(const KernelWork& work) {
  return (work.kernel_class == KernelClass::gemm || work.kernel_class == KernelClass::attention) &&
         work.precision != Precision::fp32;
}

/// What a kernel of `work`, timed `timing`, adds to its die's activity when it holds `share` of the die.
void add_kernel_activity(DieActivity& activity, const KernelWork& work, const KernelTiming& timing, double share) {
  (uses_tensor_cores(work) ? activity.tensor : activity.vector) += share * std::min(timing.compute_utilization, 1.0);
  activity.hbm += share * std::min(timing.memory_utilization, 1.0);
}

}  // namespace

PowerDomain::PowerDomain(const ComputeModel& compute, const PowerModel& power, const ThermalModel& thermal,
                         const Governor& governor, PowerDomainSettings settings, TelemetrySink* sink,
                         RateListener* listener)
    : compute_(compute),
      power_(power),
      thermal_(thermal),
      governor_(governor),
      settings_(std::move(settings)),
      sink_(sink),
      listener_(listener),
      step_hz_(governor.params().clock_step_hz),
      inverse_step_(step_hz_ > 0.0 ? 1.0 / step_hz_ : 0.0) {
  if (settings_.dies.empty()) throw ModelError("power domain: no dies");
  if (!(settings_.cap_w > 0.0)) throw ModelError("power domain: the power cap must be positive");
  if (!(settings_.ceiling_hz > 0.0) || settings_.floor_hz < 0.0 || settings_.floor_hz > settings_.ceiling_hz)
    throw ModelError("power domain: need 0 <= floor clock <= ceiling clock, ceiling > 0");
  if (!(settings_.comm_compute_slowdown >= 0.0 && settings_.comm_compute_slowdown < 1.0))
    throw ModelError("power domain: comm_compute_slowdown must be in [0, 1)");
  if (!(settings_.governed_dynamic_scale >= 1.0))
    throw ModelError("power domain: the governed chip's dynamic power scale must be >= 1");
  dies_.resize(settings_.dies.size());
  for (std::size_t d = 0; d < dies_.size(); ++d) {
    dies_[d].settings = settings_.dies[d];
    dies_[d].temperature_c = settings_.dies[d].initial_c;
    dies_[d].clock_hz = settings_.ceiling_hz;
  }
  // Clock steps up to the ceiling (and one beyond, for a ceiling between steps). The firmware governor requires a
  // step of 0.1 MHz or more; without a step every clock goes through the off-step memo.
  if (step_hz_ > 0.0)
    scale_by_step_.assign(static_cast<std::size_t>(std::ceil(settings_.ceiling_hz / step_hz_)) + 2,
                          std::numeric_limits<double>::quiet_NaN());
}

// ---- the governor's view -------------------------------------------------------------------------------------

const KernelTiming& PowerDomain::timing_at(const Kernel& kernel, double clock_hz, double die_clock_hz) const {
  // Two caches: the die's own clock (what the kernel runs at) and the last other clock a governor probed.
  double& cached_clock = clock_hz == die_clock_hz ? kernel.timed_clock_hz : kernel.probed_clock_hz;
  KernelTiming& cached = clock_hz == die_clock_hz ? kernel.timing : kernel.probed_timing;
  if (cached_clock != clock_hz) {
    cached = compute_.timing(kernel.work, clock_hz);
    cached_clock = clock_hz;
  }
  return cached;
}

DieActivity PowerDomain::activity(const DieState& die, double clock_hz) const {
  DieActivity a;
  a.communication = die.communications > 0 ? 1.0 : 0.0;
  if (die.kernels.empty()) return a;
  const double busy = 1.0 - settings_.comm_compute_slowdown * a.communication;
  const double share = busy / static_cast<double>(die.kernels.size());
  a.busy = busy;
  for (const Kernel& k : die.kernels) add_kernel_activity(a, k.work, timing_at(k, clock_hz, die.clock_hz), share);
  return a;
}

double PowerDomain::governed_power_w(const PowerLine& line, double dynamic_scale) const {
  return line.base_w + settings_.governed_dynamic_scale * line.per_scale_w * dynamic_scale;
}

double PowerDomain::scale_at(double clock_hz) const {
  // highest_clock_within probes the steps as k * step: the same product finds the entry (a multiply and a truncation
  // here; std::round and a division cost more than the lookup saved).
  if (clock_hz >= 0.0) {
    const auto index = static_cast<std::size_t>(clock_hz * inverse_step_ + 0.5);
    if (index < scale_by_step_.size() && static_cast<double>(index) * step_hz_ == clock_hz) {
      double& scale = scale_by_step_[index];
      if (std::isnan(scale)) scale = power_.dynamic_scale(clock_hz);
      return scale;
    }
  }
  if (off_step_clock_hz_ != clock_hz) {
    off_step_clock_hz_ = clock_hz;
    off_step_scale_ = power_.dynamic_scale(clock_hz);
  }
  return off_step_scale_;
}

const PowerDomain::DieState::PowerMemo& PowerDomain::memoized_power(const DieState& die, double clock_hz) const {
  DieState::PowerMemo& memo = die.power_memo;
  if (memo.clock_hz != clock_hz || memo.temperature_c != die.temperature_c) {
    memo.activity = activity(die, clock_hz);
    const PowerLine line = power_.power_line(memo.activity, die.temperature_c);
    const double scale = scale_at(clock_hz);
    memo.power_w = line.at(scale);
    memo.governed_power_w = governed_power_w(line, scale);
    memo.clock_hz = clock_hz;
    memo.temperature_c = die.temperature_c;
  }
  return memo;
}

double PowerDomain::die_power_w(int die, double clock_hz) const {
  return memoized_power(dies_[static_cast<std::size_t>(die)], clock_hz).governed_power_w;
}

double PowerDomain::die_period_power_w(int die, double clock_hz) const {
  const DieState& d = dies_[static_cast<std::size_t>(die)];
  if (!(d.period_s > 0.0)) return die_power_w(die, clock_hz);
  if (!d.period_line_valid) {
    DieActivity average;
    add_scaled(average, d.period_load, 1.0 / d.period_s);
    d.period_line = power_.power_line(average, d.temperature_c);
    d.period_line_valid = true;
  }
  return governed_power_w(d.period_line, scale_at(clock_hz));
}

void PowerDomain::refresh_power(DieState& d) const {
  const DieState::PowerMemo& memo = memoized_power(d, d.clock_hz);
  d.activity = memo.activity;
  // While the cap holds the clock down, a typical chip paced by the slowest one draws the cap as well: it runs its
  // kernels faster and waits at each synchronisation, and its firmware, averaging over the window, raises its clock
  // until the average is at the cap. Otherwise it draws its own power at the common clock.
  d.power_w = (d.flags & kThrottlePower) != 0 ? memo.governed_power_w : memo.power_w;
  d.governed_power_w = memo.governed_power_w;
}

double PowerDomain::slowdown_c() const { return thermal_.params().slowdown_c; }

double PowerDomain::sustainable_power_w(int die) const {
  return thermal_.power_for_steady_w(dies_[static_cast<std::size_t>(die)].settings.inlet_c, slowdown_c());
}

double PowerDomain::time_to_temperature_s(int die, double power_w, double target_c) const {
  const DieState& d = dies_[static_cast<std::size_t>(die)];
  return thermal_.time_to_reach_s(d.temperature_c, d.settings.inlet_c, power_w, target_c);
}

double PowerDomain::time_to_filtered_s(double power_w, double target_w) const {
  const double from = filtered_w_ - power_w;
  const double to = target_w - power_w;
  if (from == to) return 0.0;
  if (from == 0.0 || to == 0.0 || (from > 0.0) != (to > 0.0) || std::abs(to) > std::abs(from)) return kInfinity;
  return governor_.params().window_s * std::log(from / to);
}

// ---- time ----------------------------------------------------------------------------------------------------

void PowerDomain::integrate(double time_s) {
  const double dt = time_s - now_s_;
  if (dt <= 0.0) return;
  double total = 0.0;
  for (DieState& d : dies_) {
    d.energy_j += d.power_w * dt;
    add_scaled(d.period_load, d.activity, dt);
    d.period_s += dt;
    d.period_line_valid = false;
    d.temperature_c = thermal_.advance_c(d.temperature_c, d.settings.inlet_c, d.power_w, dt);
    total += d.governed_power_w;
  }
  // The firmware's averaged power: a first-order filter, P_avg(t + dt) = P + (P_avg - P) exp(-dt / window).
  const double window = governor_.params().window_s;
  const double cap = settings_.cap_w * (1.0 + kCapTolerance);
  if (filtered_w_ <= cap && total > cap) {
    const double cross = now_s_ + window * std::log((total - filtered_w_) / (total - cap));
    if (cross <= time_s) over_since_s_ = cross;
  }
  filtered_w_ = total + (filtered_w_ - total) * std::exp(-dt / window);
  if (filtered_w_ <= cap) over_since_s_ = kInfinity;
  now_s_ = time_s;
}

void PowerDomain::advance_to(double time_s) {
  if (time_s > now_s_) settle();  // the state the instant ended in holds from now on
  int at_instant = 0;
  double instant = -kInfinity;
  while (next_event_s_ <= time_s + same_instant(time_s)) {
    const double t = std::min(next_event_s_, time_s);
    integrate(t);
    ++stats_.timed_events;
    if (t == instant) {
      if (++at_instant >= kMaxDecisionsPerInstant) {
        next_event_s_ = t + 1e-9;
        continue;
      }
    } else {
      instant = t;
      at_instant = 0;
    }
    decide();
  }
  integrate(time_s);
}

void PowerDomain::decide() {
  decision_pending_ = false;  // this decision sees every load change so far
  governor_.decide(*this, state_, decision_);
  ++stats_.decisions;
  if (decision_.period_started) period_started_s_ = now_s_;
  for (std::size_t i = 0; i < dies_.size(); ++i) {
    DieState& d = dies_[i];
    const bool clock_changed = decision_.clock_hz[i] != d.clock_hz;
    d.clock_hz = decision_.clock_hz[i];
    d.flags = decision_.flags[i];
    if (decision_.period_started) {
      d.period_load = DieActivity{};
      d.period_s = 0.0;
      d.period_line_valid = false;
    }
    refresh_power(d);
    if ((clock_changed || d.load_changed) && listener_ != nullptr && !d.kernels.empty())
      listener_->on_rates_changed(static_cast<int>(i), now_s_);
    d.load_changed = false;
    report(d, false);
  }
  next_event_s_ = decision_.next_s;
}

void PowerDomain::report(DieState& d, bool force) {
  if (!force && d.reported && d.reported_power_w == d.power_w && d.reported_clock_hz == d.clock_hz &&
      d.reported_flags == d.flags)
    return;
  d.reported = true;
  d.reported_power_w = d.power_w;
  d.reported_clock_hz = d.clock_hz;
  d.reported_flags = d.flags;
  if (sink_ == nullptr) return;
  GpuStateSample s;
  s.time_s = now_s_;
  s.gpu = d.settings.gpu;
  s.power_w = d.power_w;
  s.clock_hz = d.clock_hz;
  s.temperature_c = d.temperature_c;
  s.filtered_power_w = filtered_w_;
  s.flags = d.flags;
  ++stats_.samples;
  sink_->on_telemetry(s);
}

// ---- load ----------------------------------------------------------------------------------------------------

void PowerDomain::start(double time_s) {
  now_s_ = time_s;
  for (DieState& d : dies_) refresh_power(d);  // idle: no kernels yet
  filtered_w_ = 0.0;
  for (const DieState& d : dies_) filtered_w_ += d.governed_power_w;
  decide();  // reports every die: none has been reported yet
}

void PowerDomain::skip_span(double span_s, const std::vector<double>& mean_power_w) {
  if (mean_power_w.size() != dies_.size())
    throw ModelError("power domain: skip_span needs one mean power per die (" + std::to_string(dies_.size()) + ")");
  for (std::size_t i = 0; i < dies_.size(); ++i) {
    DieState& d = dies_[i];
    d.temperature_c = thermal_.advance_c(d.temperature_c, d.settings.inlet_c, mean_power_w[i], span_s);
    d.power_memo = {};  // leakage follows the new temperature
    d.period_line_valid = false;
    d.load_changed = true;
  }
  decision_pending_ = true;
}

void PowerDomain::on_load_change(DieState& die) {
  die.power_memo = {};
  die.load_changed = true;  // decide() clears it
  last_load_change_s_ = now_s_;
  decision_pending_ = true;
}

PowerDomain::KernelHandle PowerDomain::kernel_begin(double time_s, int die, const KernelWork& work) {
  advance_to(time_s);
  DieState& d = dies_.at(static_cast<std::size_t>(die));
  Kernel k;
  k.handle = next_handle_++;
  k.work = work;
  d.kernels.push_back(k);
  on_load_change(d);
  return k.handle;
}

void PowerDomain::kernel_end(double time_s, int die, KernelHandle kernel) {
  advance_to(time_s);
  DieState& d = dies_.at(static_cast<std::size_t>(die));
  const auto it = std::find_if(d.kernels.begin(), d.kernels.end(), [&](const Kernel& k) { return k.handle == kernel; });
  if (it == d.kernels.end()) throw ModelError("power domain: ending a kernel that is not running");
  d.kernels.erase(it);
  on_load_change(d);
}

void PowerDomain::communication_begin(double time_s, int die) {
  advance_to(time_s);
  DieState& d = dies_.at(static_cast<std::size_t>(die));
  ++d.communications;
  on_load_change(d);
}

void PowerDomain::communication_end(double time_s, int die) {
  advance_to(time_s);
  DieState& d = dies_.at(static_cast<std::size_t>(die));
  if (d.communications <= 0) throw ModelError("power domain: ending a communication that is not running");
  --d.communications;
  on_load_change(d);
}

void PowerDomain::finish(double time_s) {
  advance_to(time_s);
  settle();
  for (DieState& d : dies_) report(d, true);
}

double PowerDomain::kernel_rate(int die, KernelHandle kernel) {
  settle();
  const DieState& d = dies_.at(static_cast<std::size_t>(die));
  const auto it = std::find_if(d.kernels.begin(), d.kernels.end(), [&](const Kernel& k) { return k.handle == kernel; });
  if (it == d.kernels.end()) throw ModelError("power domain: asking the rate of a kernel that is not running");
  const KernelTiming& timing = timing_at(*it, d.clock_hz, d.clock_hz);
  if (!(timing.duration_s > 0.0)) return kInfinity;
  const double busy = 1.0 - settings_.comm_compute_slowdown * (d.communications > 0 ? 1.0 : 0.0);
  return busy / static_cast<double>(d.kernels.size()) / timing.duration_s;
}

bool PowerDomain::computing() const {
  return std::any_of(dies_.begin(), dies_.end(), [](const DieState& d) { return !d.kernels.empty(); });
}

SustainedClockLimits sustained_clock_limits(const HardwareSpec& hardware, const ThermalModel& thermal) {
  SustainedClockLimits limits;
  limits.cap_w = hardware.tdp_w;
  limits.floor_hz = std::min(hardware.min_clock_hz, hardware.compute.boost_clock_hz);
  limits.ceiling_hz = hardware.compute.boost_clock_hz;
  limits.step_hz = hardware.governor.clock_step_hz;
  limits.temperature_c = thermal.steady_state_c(hardware.cooling.ambient_c, hardware.tdp_w);
  return limits;
}

double sustained_clock_hz(const ComputeModel& compute, const PowerModel& power, const KernelWork& work,
                          const SustainedClockLimits& limits) {
  if (!(limits.ceiling_hz > 0.0) || !(limits.step_hz > 0.0))
    throw ModelError("sustained clock: the ceiling clock and the clock step must be positive");
  return highest_clock_within(limits.floor_hz, limits.ceiling_hz, limits.step_hz, limits.cap_w, [&](double clock_hz) {
    DieActivity a;
    a.busy = 1.0;
    add_kernel_activity(a, work, compute.timing(work, clock_hz), 1.0);
    return power.power_w(a, clock_hz, limits.temperature_c);
  });
}

}  // namespace chopsim
