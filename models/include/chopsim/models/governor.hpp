#pragma once
// DVFS governors: which core clock each die of a power domain runs at. A power domain is what one power limit
// covers: one GPU, or one MI250/MI250X package of two GCDs (AMD's SMU limits the package power; rocm-smi reports
// it on one GCD of the pair).
//
// A governor follows SimGrid's model contract (../shared/docs/style.md): given the domain's state now it says which
// clocks to run and when it must be asked again; the domain integrates its state in closed form in between and
// asks again whenever the load changes. Nothing happens between those times, so a governor costs a small constant
// number of decisions per kernel and nothing while the load and the clocks are steady.

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "chopsim/common/registry.hpp"

namespace chopsim {

struct GovernorParams {
  /// Time constant (s) of the exponentially averaged power the firmware holds under the cap. Bursts shorter than
  /// this can exceed the cap; longer ones are clipped.
  double window_s = 0.01;
  /// Time (s) from the averaged power crossing the cap to it being back at the cap: the first half is the
  /// firmware's detection delay (clocks unchanged), the second half its correction. 0 = immediate.
  double response_s = 0.0;
  double clock_step_hz = 15e6;  ///< clocks are multiples of this step (NVIDIA: 15 MHz)
  /// Hysteresis of the cap: once capped, the governor keeps the capped clock for new kernels while the averaged
  /// power stays within this fraction below the cap.
  double hold_band = 0.02;
  double thermal_hysteresis_k = 3.0;  ///< thermal throttling ends this far below the slowdown temperature
  /// Period (s) of the firmware's clock control loop. 0: the clock is re-chosen at every load change for the load
  /// that starts (an idealised per-kernel DVFS). > 0: the clock is chosen once per period for the load the die
  /// carried on average over the last period and held in between, whatever kernels start; a GEMM and an elementwise
  /// kernel of one period run at one clock, and the averaged power is steered back to the cap period by period.
  double control_period_s = 0.0;
};

/// Why a die runs below its ceiling clock (bit flags in telemetry).
inline constexpr std::uint8_t kThrottlePower = 1;    ///< the power cap
inline constexpr std::uint8_t kThrottleThermal = 2;  ///< the slowdown temperature

/// What a governor may ask of a power domain. Power values are at the domain's present load and temperatures.
class GovernorContext {
 public:
  virtual ~GovernorContext() = default;
  [[nodiscard]] virtual int dies() const = 0;
  [[nodiscard]] virtual double now_s() const = 0;
  [[nodiscard]] virtual double cap_w() const = 0;       ///< power limit of the whole domain
  [[nodiscard]] virtual double ceiling_hz() const = 0;  ///< locked clock, or the max clock
  [[nodiscard]] virtual double floor_hz() const = 0;    ///< min clock
  [[nodiscard]] virtual double filtered_power_w() const = 0;
  /// When the averaged power last rose above the cap; +infinity while it is at or below the cap.
  [[nodiscard]] virtual double over_cap_since_s() const = 0;
  /// Time until the averaged power reaches `target_w` if the domain draws `power_w` from now on (+inf: never).
  [[nodiscard]] virtual double time_to_filtered_s(double power_w, double target_w) const = 0;
  /// Power of `die` if it ran at `clock_hz`.
  [[nodiscard]] virtual double die_power_w(int die, double clock_hz) const = 0;
  /// Power of `die` at `clock_hz` with the load it carried on average since the last control period began
  /// (GovernorDecision::period_started); its present load when no time has passed since.
  [[nodiscard]] virtual double die_period_power_w(int die, double clock_hz) const = 0;
  /// Whether a kernel or communication op started or ended on any die since the last control period began.
  [[nodiscard]] virtual bool load_changed_in_period() const = 0;
  [[nodiscard]] virtual double temperature_c(int die) const = 0;
  [[nodiscard]] virtual double slowdown_c() const = 0;
  /// The die power whose steady-state temperature is the slowdown temperature.
  [[nodiscard]] virtual double sustainable_power_w(int die) const = 0;
  /// Time until `die` reaches `target_c` drawing `power_w` (+inf: never).
  [[nodiscard]] virtual double time_to_temperature_s(int die, double power_w, double target_c) const = 0;
};

/// What a governor remembers between decisions (per domain).
struct GovernorState {
  std::vector<std::uint8_t> thermal_throttled;  ///< per die
  std::vector<double> die_ceiling_hz;           ///< per die; scratch of the firmware governor
  // A periodic control loop (GovernorParams::control_period_s > 0): what it chose at its last period and when the
  // next one begins (-inf: not started).
  std::vector<double> held_clock_hz;
  std::vector<std::uint8_t> held_flags;
  double held_common_hz = 0.0;  ///< the power loop's clock for the domain (dies may be lower for temperature)
  double next_period_s = -std::numeric_limits<double>::infinity();
};

struct GovernorDecision {
  std::vector<double> clock_hz;     ///< per die
  std::vector<std::uint8_t> flags;  ///< per die, kThrottle* bits
  double next_s = 0.0;              ///< absolute time of the next decision without a load change; +inf: none
  /// A new control period begins now: the domain restarts the load average die_period_power_w reads.
  bool period_started = false;
};

class Governor {
 public:
  virtual ~Governor() = default;
  virtual void decide(const GovernorContext& context, GovernorState& state, GovernorDecision& decision) const = 0;
  /// True when clocks never change: the engine may then time kernels once, at that clock.
  [[nodiscard]] virtual bool fixed_clock() const = 0;
  [[nodiscard]] virtual const GovernorParams& params() const = 0;
};

using GovernorRegistry = Registry<Governor, const GovernorParams&>;
/// "firmware": boost clock (or the locked clock) unless the averaged power would exceed the cap or a die reaches
/// its slowdown temperature; then the highest clock step that holds the cap / the temperature. With a control
/// period, once per period for the last period's average load.
/// "fixed": the ceiling clock always, whatever the power or temperature (an idealised lock; also the engine
/// behaviour before power dynamics existed, at the rated clock).
void register_builtin_governors(GovernorRegistry& registry);

/// The highest clock step in [floor, ceiling] for which `power_at(f) <= target_w`, or `floor` when none is.
/// Steps are multiples of `step_hz` plus the floor and the ceiling themselves. `power_at` must not decrease with f.
[[nodiscard]] double highest_clock_within(double floor_hz, double ceiling_hz, double step_hz, double target_w,
                                          const std::function<double(double)>& power_at);

}  // namespace chopsim
