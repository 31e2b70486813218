#include "chopsim/models/governor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// Relative tolerance when comparing the averaged power with the cap (absorbs rounding at crossing events).
constexpr double kCapTolerance = 1e-9;
/// Absolute tolerance (K) when comparing a temperature with the slowdown point (a crossing event lands on it).
constexpr double kTemperatureTolerance_k = 1e-9;

/// highest_clock_within for any callable: the governor's searches call their power lambdas directly, without a
/// std::function's indirect call at each of their up to ten probes per decision.
template <typename PowerAt>
double highest_step_within(double floor_hz, double ceiling_hz, double step_hz, double target_w,
                           const PowerAt& power_at) {
  if (ceiling_hz <= floor_hz) return ceiling_hz;
  if (power_at(ceiling_hz) <= target_w) return ceiling_hz;
  // Candidates: floor, every multiple of the step strictly between, the ceiling (already rejected).
  const auto first = static_cast<long long>(std::floor(floor_hz / step_hz)) + 1;
  const auto last = static_cast<long long>(std::ceil(ceiling_hz / step_hz)) - 1;
  long long lo = first, hi = last;  // find the highest k in [first, last] with power_at(k * step) <= target
  long long best = first - 1;       // first - 1 stands for the floor
  while (lo <= hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (power_at(static_cast<double>(mid) * step_hz) <= target_w) {
      best = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best >= first ? static_cast<double>(best) * step_hz : floor_hz;
}

void check(const GovernorParams& p) {
  if (!(p.window_s > 0.0)) throw ModelError("governor: window_s must be positive");
  if (p.response_s < 0.0) throw ModelError("governor: response_s must be >= 0");
  // No GPU steps its clock by less than 0.1 MHz; a tinier step would make every clock search millions of evaluations.
  if (!(p.clock_step_hz >= 1e5)) throw ModelError("governor: clock_step_hz must be at least 0.1 MHz");
  if (p.hold_band < 0.0 || p.hold_band >= 1.0) throw ModelError("governor: hold_band must be in [0, 1)");
  if (p.thermal_hysteresis_k < 0.0) throw ModelError("governor: thermal_hysteresis_k must be >= 0");
  // Below 10 µs a control loop would re-decide within single kernels: use 0 (per load change) instead.
  if (!(p.control_period_s == 0.0 || (p.control_period_s >= 1e-5 && std::isfinite(p.control_period_s))))
    throw ModelError("governor: control_period_s must be 0 or at least 10 µs");
}

/// Firmware power and thermal management as NVIDIA's and AMD's boards do it, reduced to what decides time and
/// power: the board runs at its ceiling clock (boost, or the nvidia-smi -lgc locked clock) until
///  * its exponentially averaged power reaches the cap: it then holds the highest clock step whose power fits the
///    cap (a fixed, windowed power limiter; the window is GovernorParams::window_s), keeping that state for new
///    kernels while the averaged power stays within hold_band of the cap, so that short dips do not re-arm a burst;
///  * a die reaches its slowdown temperature: that die is held at the highest step whose power keeps the steady
///    temperature at the slowdown point, until it cools thermal_hysteresis_k below it.
/// With a response time r, the firmware notices a crossing of the cap r/2 late and then pulls the averaged power
/// back to the cap within r/2, so the averaged power is above the cap for at most r per excursion.
/// The dies of a multi-die package share one clock for the power cap; each may be lower for its own temperature.
class FirmwareGovernor final : public Governor {
 public:
  explicit FirmwareGovernor(const GovernorParams& params)
      : params_(params), period_decay_(std::exp(-params.control_period_s / params.window_s)) {
    check(params_);
  }

  bool fixed_clock() const override { return false; }
  const GovernorParams& params() const override { return params_; }

  void decide(const GovernorContext& c, GovernorState& state, GovernorDecision& out) const override {
    out.period_started = false;
    if (params_.control_period_s > 0.0) {
      decide_periodic(c, state, out);
      return;
    }
    const int dies = c.dies();
    const double now = c.now_s();
    const double floor = c.floor_hz();
    const double step = params_.clock_step_hz;
    double next = kInfinity;

    // Thermal: each die's own ceiling.
    (void)update_thermal_state(c, state);
    set_die_ceilings(c, state);
    const auto& die_ceiling = state.die_ceiling_hz;
    const double top = *std::max_element(die_ceiling.begin(), die_ceiling.end());
    auto domain_power = [&](double f) {
      double p = 0.0;
      for (int d = 0; d < dies; ++d) p += c.die_power_w(d, std::min(f, die_ceiling[static_cast<std::size_t>(d)]));
      return p;
    };

    // Power cap: a target for the domain's power now (infinity = none).
    const double cap = c.cap_w();
    const double filtered = c.filtered_power_w();
    const double over_since = c.over_cap_since_s();
    const double free_power = domain_power(top);
    const double half = 0.5 * params_.response_s;
    double target = kInfinity;
    if (std::isfinite(over_since)) {
      const double detected = over_since + half;
      const double deadline = over_since + params_.response_s;
      if (now < detected * (1.0 - kCapTolerance) && half > 0.0) {
        next = detected;  // the firmware has not noticed yet
      } else {
        // Pull the averaged power back to the cap by the deadline: P_avg(deadline) = P + (P_avg - P) e^(-dt/tau).
        double dt = deadline - now;
        if (dt <= params_.window_s * 1e-6) dt = std::max(half, params_.window_s);  // late: another correction round
        const double decay = std::exp(-dt / params_.window_s);
        target = (cap - filtered * decay) / (1.0 - decay);
        next = now + dt;
      }
    } else if (free_power > cap * (1.0 + kCapTolerance)) {
      if (filtered >= cap * (1.0 - params_.hold_band)) {
        target = cap;  // capped: hold
      } else {
        const double dt = c.time_to_filtered_s(free_power, cap);  // burst at the ceiling until the average hits the cap
        next = now + dt + half;
      }
    }

    double common = top;
    if (target < free_power) common = highest_step_within(floor, top, step, target, domain_power);
    apply_clocks(c, state, common, out);
    out.next_s = std::min(next, next_thermal_event_s(c, state, out));
  }

 private:
  /// The control loop of GovernorParams::control_period_s. Between periods the clocks chosen at the last one hold,
  /// whatever starts or ends. At a period the firmware knows the load of the period that ended (the die's average
  /// activity and HBM traffic, as its power telemetry integrates it) and the averaged power; it picks for the next
  /// period the clock at which that load would bring the averaged power to the cap by the period's end:
  ///   P_avg(t + T) = P + (P_avg(t) - P) exp(-T / window) = cap  =>  P = (cap - P_avg(t) e^(-T/window)) / (1 -
  ///   e^(-T/window)),
  /// or the ceiling when the load draws less than that there. A cold start (P_avg low) therefore bursts at the ceiling
  /// until the average has filled, and a load that alternates between GEMMs and memory-bound kernels runs at one
  /// clock over each period, drawing more than the cap in its GEMMs and less in the rest.
  /// Thermal: the hardware slowdown acts at once, not per period: a die at its slowdown temperature runs at the
  /// highest clock whose steady temperature with its present load is the slowdown point, re-decided at every load
  /// change while it is throttled (as decide() does).
  void decide_periodic(const GovernorContext& c, GovernorState& state, GovernorDecision& out) const {
    const int dies = c.dies();
    const auto n = static_cast<std::size_t>(dies);
    const double now = c.now_s();
    // Thermal slowdown does not wait for the power loop: a die reaching its slowdown temperature (or cooled enough to
    // be released) is re-decided at once, and a throttled die's clock follows its present load, as decide() does.
    const bool thermal_changed = update_thermal_state(c, state);
    const bool at_period =
        !std::isfinite(state.next_period_s) || now >= state.next_period_s - 1e-12 * std::max(1.0, std::abs(now));
    const bool any_throttled =
        std::any_of(state.thermal_throttled.begin(), state.thermal_throttled.end(), [](std::uint8_t t) { return t; });
    if (!at_period && !thermal_changed && !any_throttled && state.held_clock_hz.size() == n) {
      out.clock_hz = state.held_clock_hz;
      out.flags = state.held_flags;
      out.next_s = std::min(next_period_due(state), next_thermal_event_s(c, state, out));
      return;
    }

    set_die_ceilings(c, state);
    const auto& die_ceiling = state.die_ceiling_hz;
    if (at_period) {
      // A load that did not change over the whole last period is steady: hold the highest clock within the cap
      // itself (the deadbeat target would dither between two clock steps around it). Once that clock is the one
      // held, nothing changes until the load does, so the loop sleeps until then: a long kernel costs no decisions.
      const bool steady = std::isfinite(state.next_period_s) && !c.load_changed_in_period();
      const double top = *std::max_element(die_ceiling.begin(), die_ceiling.end());
      auto domain_power = [&](double f) {
        double p = 0.0;
        for (int d = 0; d < dies; ++d)
          p += c.die_period_power_w(d, std::min(f, die_ceiling[static_cast<std::size_t>(d)]));
        return p;
      };
      const double decay = period_decay_;
      const double target =
          steady ? c.cap_w() : std::max(0.0, (c.cap_w() - c.filtered_power_w() * decay) / (1.0 - decay));
      const double common = highest_step_within(c.floor_hz(), top, params_.clock_step_hz, target, domain_power);
      const bool settled = steady && common == state.held_common_hz && !thermal_changed && !any_throttled;
      state.held_common_hz = common;
      // Settled: the next decision (a load change) begins the next period.
      state.next_period_s = settled ? -std::numeric_limits<double>::infinity() : now + params_.control_period_s;
      out.period_started = true;
    }
    apply_clocks(c, state, state.held_common_hz, out);
    state.held_clock_hz = out.clock_hz;
    state.held_flags = out.flags;
    out.next_s = std::min(next_period_due(state), next_thermal_event_s(c, state, out));
  }

  /// Updates each die's thermal state: throttled from its slowdown temperature until it has cooled
  /// thermal_hysteresis_k below it. True when a die's state changed.
  bool update_thermal_state(const GovernorContext& c, GovernorState& state) const {
    state.thermal_throttled.resize(static_cast<std::size_t>(c.dies()), 0);
    bool changed = false;
    for (int d = 0; d < c.dies(); ++d) {
      auto& throttled = state.thermal_throttled[static_cast<std::size_t>(d)];
      const std::uint8_t before = throttled;
      const double t = c.temperature_c(d);
      if (throttled && t <= c.slowdown_c() - params_.thermal_hysteresis_k) throttled = 0;
      if (!throttled && t >= c.slowdown_c() - kTemperatureTolerance_k) throttled = 1;
      changed = changed || throttled != before;
    }
    return changed;
  }

  /// Each die's own ceiling (state.die_ceiling_hz): the ceiling clock, or for a throttled die the highest step whose
  /// steady temperature with its present load is the slowdown point.
  void set_die_ceilings(const GovernorContext& c, GovernorState& state) const {
    const double ceiling = c.ceiling_hz();
    state.die_ceiling_hz.assign(static_cast<std::size_t>(c.dies()), ceiling);
    for (int d = 0; d < c.dies(); ++d)
      if (state.thermal_throttled[static_cast<std::size_t>(d)])
        state.die_ceiling_hz[static_cast<std::size_t>(d)] =
            highest_step_within(c.floor_hz(), ceiling, params_.clock_step_hz, c.sustainable_power_w(d),
                                [&](double f) { return c.die_power_w(d, f); });
  }

  /// The domain's clock `common` on every die, each at most its own ceiling, and why a die runs below the ceiling.
  static void apply_clocks(const GovernorContext& c, const GovernorState& state, double common, GovernorDecision& out) {
    const auto n = static_cast<std::size_t>(c.dies());
    out.clock_hz.assign(n, c.ceiling_hz());
    out.flags.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const double die_ceiling = state.die_ceiling_hz[i];
      out.clock_hz[i] = std::min(common, die_ceiling);
      if (state.thermal_throttled[i] && die_ceiling < c.ceiling_hz()) out.flags[i] |= kThrottleThermal;
      if (common < die_ceiling) out.flags[i] |= kThrottlePower;
    }
  }

  /// The next period's start; +infinity while the loop sleeps (it restarts at the next load change).
  static double next_period_due(const GovernorState& state) {
    return std::isfinite(state.next_period_s) ? state.next_period_s : kInfinity;
  }

  /// When a die next reaches its slowdown temperature (or, throttled, cools to its release point) at the clocks of
  /// `out` and its present load.
  double next_thermal_event_s(const GovernorContext& c, const GovernorState& state, const GovernorDecision& out) const {
    double next = kInfinity;
    for (int d = 0; d < c.dies(); ++d) {
      const auto i = static_cast<std::size_t>(d);
      const double goal = state.thermal_throttled[i] ? c.slowdown_c() - params_.thermal_hysteresis_k : c.slowdown_c();
      next = std::min(next, c.now_s() + c.time_to_temperature_s(d, c.die_power_w(d, out.clock_hz[i]), goal));
    }
    return next;
  }

  GovernorParams params_;
  /// exp(-control period / window): how much of the averaged power one control period keeps (the same every period).
  double period_decay_;
};

/// The ceiling clock, always (an idealised clock lock that ignores power and temperature).
class FixedGovernor final : public Governor {
 public:
  explicit FixedGovernor(const GovernorParams& params) : params_(params) {}
  bool fixed_clock() const override { return true; }
  const GovernorParams& params() const override { return params_; }
  void decide(const GovernorContext& c, GovernorState&, GovernorDecision& out) const override {
    out.clock_hz.assign(static_cast<std::size_t>(c.dies()), c.ceiling_hz());
    out.flags.assign(static_cast<std::size_t>(c.dies()), 0);
    out.next_s = kInfinity;
  }

 private:
  GovernorParams params_;
};

}  // namespace

double highest_clock_within(double floor_hz, double ceiling_hz, double step_hz, double target_w,
                            const std::function<double(double)>& power_at) {
  return highest_step_within(floor_hz, ceiling_hz, step_hz, target_w, power_at);
}

void register_builtin_governors(GovernorRegistry& registry) {
  registry.add("firmware",
               "boost/locked clock, held under the power cap (averaged over a window, with a response time) and "
               "under the slowdown temperature, in clock steps",
               [](const GovernorParams& params) { return std::make_unique<FirmwareGovernor>(params); });
  registry.add("fixed", "the ceiling clock always, whatever the power and temperature",
               [](const GovernorParams& params) { return std::make_unique<FixedGovernor>(params); });
}

}  // namespace chopsim
