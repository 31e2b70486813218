#pragma once
// Power, clock and temperature of one power domain over time: one GPU, or one MI250/MI250X package of two GCDs
// that share a power limit. The engine reports load changes (a kernel or a communication op starting or ending on
// a die) and asks for the clocks and the rate at which each running kernel progresses; the domain integrates power
// (energy), the firmware's averaged power and every die's temperature in closed form between those times, and asks
// its governor for clocks at every load change and at the times the governor names (governor.hpp).
// The decision after a load change is taken when its result is first needed (a clock, a rate, the next event) or
// when time moves on, so several changes at one instant (a kernel ending and the next one starting) cost one
// decision and report one state: the governor's answer depends only on the state at the instant, and a state that
// lasts no time draws no energy.
//
// Between load changes each die draws constant power: leakage follows the temperature reached at the last
// update (the thermal time constant is seconds, updates come every kernel, milliseconds apart).
// Kernel progress: a die's running compute kernels share it equally; while a communication op runs on the die they
// get 1 - comm_compute_slowdown of it (as the SimGrid engine's bounded load Exec gives them). A kernel of duration
// d(f) at clock f (ComputeModel::timing) progresses at share / d(f) of itself per second, so a clock change stretches
// compute-bound kernels in proportion and memory-bound ones hardly at all (only their compute limit scales).

#include <cstdint>
#include <limits>
#include <vector>

#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/power.hpp"
#include "chopsim/models/thermal.hpp"

namespace chopsim {

/// One GPU's state at a change. Power and clock hold until the GPU's next sample; the temperature relaxes from
/// `temperature_c` towards inlet + power * R in the meantime (thermal.hpp).
struct GpuStateSample {
  double time_s = 0.0;
  std::uint32_t gpu = 0;  ///< global rank
  double power_w = 0.0;
  double clock_hz = 0.0;
  double temperature_c = 0.0;     ///< °C at time_s
  double filtered_power_w = 0.0;  ///< the domain's averaged power at time_s (what the governor holds under the cap)
  std::uint8_t flags = 0;         ///< kThrottlePower | kThrottleThermal
};

class TelemetrySink {
 public:
  virtual ~TelemetrySink() = default;
  virtual void on_telemetry(const GpuStateSample& sample) = 0;
};

/// Told when the progress rates of a die's running kernels may have changed (clock or load), at `time_s`.
class RateListener {
 public:
  virtual ~RateListener() = default;
  virtual void on_rates_changed(int die, double time_s) = 0;
};

struct PowerDomainSettings {
  double cap_w = 0.0;       ///< power limit of the domain (sum over its dies)
  double ceiling_hz = 0.0;  ///< locked clock or max clock
  double floor_hz = 0.0;    ///< min clock
  double comm_compute_slowdown = 0.0;
  /// The governor holds the power cap (and the slowdown temperature) for a chip that draws this many times the
  /// modelled chip's dynamic power at the same clock and load: the slowest chip of a synchronous job, which every
  /// GPU of it waits for (slowest_chip_dynamic_scale). The power the domain reports (and its energy and temperature)
  /// is a typical chip's paced by the slowest one: the governed chip's while the power cap holds the clock down (the
  /// typical chip runs ahead, waits at each synchronisation, and its firmware keeps its averaged power at the cap),
  /// the modelled chip's at the common clock otherwise. 1: the modelled chip alone.
  double governed_dynamic_scale = 1.0;
  struct Die {
    std::uint32_t gpu = 0;    ///< global rank, for telemetry
    double inlet_c = 25.0;    ///< inlet temperature of its slot (°C)
    double initial_c = 25.0;  ///< temperature at the start (°C)
  };
  std::vector<Die> dies;
};

struct PowerDomainStats {
  std::uint64_t decisions = 0;     ///< governor calls
  std::uint64_t timed_events = 0;  ///< decisions at times the governor named (not load changes)
  std::uint64_t samples = 0;       ///< telemetry samples sent
};

class PowerDomain final : private GovernorContext {
 public:
  using KernelHandle = std::uint64_t;

  /// Models are borrowed and must outlive the domain; `sink` and `listener` may be null.
  PowerDomain(const ComputeModel& compute, const PowerModel& power, const ThermalModel& thermal,
              const Governor& governor, PowerDomainSettings settings, TelemetrySink* sink, RateListener* listener);

  /// Sets the clocks at `time_s` (idle load) and reports every die.
  void start(double time_s);
  /// Processes the governor's timed decisions up to `time_s` and integrates the state to `time_s`.
  void advance_to(double time_s);

  KernelHandle kernel_begin(double time_s, int die, const KernelWork& work);
  void kernel_end(double time_s, int die, KernelHandle kernel);
  void communication_begin(double time_s, int die);
  void communication_end(double time_s, int die);
  /// Integrates to `time_s` and reports every die's final state.
  void finish(double time_s);
  /// Steady-state folding (engine.hpp, FoldPlan): `span_s` seconds that repeat a stretch already simulated are left
  /// out here. Each die's temperature moves on as it would at that stretch's mean power (`mean_power_w`, per die:
  /// the RC model is linear and its time constant, seconds, is far longer than the stretch's ripple, so the mean
  /// stands for the ripple); the domain's clock, energy and averaged power stay (the caller accounts for the span).
  /// The governor decides again at the new temperatures, as after a load change.
  void skip_span(double span_s, const std::vector<double>& mean_power_w);
  /// Takes the decision the load changes at this instant left pending, if any (an engine calls it once an instant's
  /// changes are all in; the queries below and a later time take it too).
  void settle() {
    if (decision_pending_) decide();
  }

  [[nodiscard]] int die_count() const { return static_cast<int>(dies_.size()); }
  // Clocks, rates, powers and the next event take the decision a load change left pending (hence not const).
  [[nodiscard]] double clock_hz(int die) {
    settle();
    return dies_[static_cast<std::size_t>(die)].clock_hz;
  }
  /// Fraction of `kernel` completed per second at the present clock and load.
  [[nodiscard]] double kernel_rate(int die, KernelHandle kernel);
  /// Time of the governor's next timed decision; +infinity when none is due before the next load change.
  [[nodiscard]] double next_event_s() {
    settle();
    return next_event_s_;
  }
  /// True while a compute kernel runs on some die (then the clock decides simulated time).
  [[nodiscard]] bool computing() const;
  [[nodiscard]] double power_w(int die) {
    settle();
    return dies_[static_cast<std::size_t>(die)].power_w;
  }
  [[nodiscard]] double temperature_c(int die) const override {
    return dies_[static_cast<std::size_t>(die)].temperature_c;
  }
  [[nodiscard]] double energy_j(int die) const { return dies_[static_cast<std::size_t>(die)].energy_j; }
  [[nodiscard]] std::uint8_t flags(int die) {
    settle();
    return dies_[static_cast<std::size_t>(die)].flags;
  }
  [[nodiscard]] double filtered_power() const { return filtered_w_; }
  [[nodiscard]] double time_s() const { return now_s_; }
  [[nodiscard]] const PowerDomainStats& stats() const { return stats_; }

 private:
  struct Kernel {
    KernelHandle handle = 0;
    KernelWork work;
    mutable double timed_clock_hz = -1.0;  ///< clock `timing` was computed at (a cache of the die's clock)
    mutable KernelTiming timing;
    mutable double probed_clock_hz = -1.0;  ///< clock `probed_timing` was computed at (the governor's last probe)
    mutable KernelTiming probed_timing;
  };
  struct DieState {
    PowerDomainSettings::Die settings;
    std::vector<Kernel> kernels;
    int communications = 0;
    double clock_hz = 0.0;
    double power_w = 0.0;
    double governed_power_w = 0.0;  ///< what the governed chip would draw instead (governed_dynamic_scale)
    double temperature_c = 0.0;
    double energy_j = 0.0;
    std::uint8_t flags = 0;
    DieActivity activity;  ///< the load power_w was computed for
    /// Integral of `activity` over the governor's present control period (activity x seconds), and its length.
    DieActivity period_load;
    double period_s = 0.0;
    /// The power line of period_load / period_s at the die's temperature, computed when the governor first asks
    /// after any of them changed (its clock search asks at up to ten clocks for one period's load: each then costs a
    /// multiply-add); `period_line_valid` is cleared when they change (integrate, a new period).
    mutable PowerLine period_line;
    mutable bool period_line_valid = false;
    bool reported = false;  ///< a sample was sent
    double reported_power_w = 0.0, reported_clock_hz = 0.0;
    std::uint8_t reported_flags = 0;
    bool load_changed = false;
    /// The power last computed for this die's load (die_power_w, refresh_power), keyed by clock and temperature and
    /// cleared when the load changes (on_load_change): a governor's decision between periods probes the die's power
    /// at its held clock for the thermal outlook, and refresh_power then needs the same figure; at a load change that
    /// is most of what the domain computes.
    struct PowerMemo {
      double clock_hz = -1.0;  ///< none yet
      double temperature_c = 0.0;
      double power_w = 0.0;
      double governed_power_w = 0.0;
      DieActivity activity;
    };
    mutable PowerMemo power_memo;
  };
  /// The die's activity and power at `clock_hz` for its present load and temperature, through its power_memo.
  const DieState::PowerMemo& memoized_power(const DieState& die, double clock_hz) const;

  // GovernorContext
  int dies() const override { return die_count(); }
  double now_s() const override { return now_s_; }
  double cap_w() const override { return settings_.cap_w; }
  double ceiling_hz() const override { return settings_.ceiling_hz; }
  double floor_hz() const override { return settings_.floor_hz; }
  double filtered_power_w() const override { return filtered_w_; }
  double over_cap_since_s() const override { return over_since_s_; }
  double time_to_filtered_s(double power_w, double target_w) const override;
  double die_power_w(int die, double clock_hz) const override;
  double die_period_power_w(int die, double clock_hz) const override;
  /// A change at the instant a period began belongs to the period before: the new period's load is steady from its
  /// start, and the answer does not depend on whether a decision came between changes at that instant.
  bool load_changed_in_period() const override { return last_load_change_s_ > period_started_s_; }
  double slowdown_c() const override;
  double sustainable_power_w(int die) const override;
  double time_to_temperature_s(int die, double power_w, double target_c) const override;
  // GovernorContext::temperature_c is the public accessor above.

  DieActivity activity(const DieState& die, double clock_hz) const;
  /// What the governed chip draws on `line` at g(f) = `dynamic_scale`: its dynamic part times governed_dynamic_scale.
  double governed_power_w(const PowerLine& line, double dynamic_scale) const;
  /// power_.dynamic_scale(clock_hz), remembered per clock step.
  double scale_at(double clock_hz) const;
  /// The kernel's timing at `clock_hz`, cached per kernel (`die_clock_hz`: the clock its die runs at now).
  const KernelTiming& timing_at(const Kernel& kernel, double clock_hz, double die_clock_hz) const;
  void integrate(double time_s);
  /// Asks the governor, applies its clocks, refreshes powers, notifies and reports.
  void decide();
  /// After `die`'s load changed (a kernel or communication began or ended): marks it; the decision is pending.
  void on_load_change(DieState& die);
  /// Sets die.power_w (and die.activity) for its present load and clock.
  void refresh_power(DieState& die) const;
  void report(DieState& die, bool force);

  const ComputeModel& compute_;
  const PowerModel& power_;
  const ThermalModel& thermal_;
  const Governor& governor_;
  PowerDomainSettings settings_;
  TelemetrySink* sink_;
  RateListener* listener_;
  std::vector<DieState> dies_;
  GovernorState state_;
  GovernorDecision decision_;
  double now_s_ = 0.0;
  double filtered_w_ = 0.0;  ///< the governed chip's averaged power (what the governor holds under the cap)
  double over_since_s_ = std::numeric_limits<double>::infinity();
  double next_event_s_ = std::numeric_limits<double>::infinity();
  double period_started_s_ = -std::numeric_limits<double>::infinity();    ///< the last control period's start
  double last_load_change_s_ = -std::numeric_limits<double>::infinity();  ///< the last kernel or comm begin/end
  bool decision_pending_ = false;  ///< the load changed at now_s_ and the governor has not been asked since
  KernelHandle next_handle_ = 1;
  PowerDomainStats stats_;
  double step_hz_;       ///< the governor's clock step
  double inverse_step_;  ///< 1 / step_hz_
  /// g(f) of every clock step k * step the governor has probed, indexed by k (NaN: not yet computed): its searches
  /// evaluate the same clock steps decision after decision, and a pow() each was a tenth of a large run's time.
  /// ceiling / step + 2 entries (3 KiB for MI300X's 5 MHz steps).
  mutable std::vector<double> scale_by_step_;
  /// The last clock probed that is not a whole step (a locked clock or a floor between steps) and its g(f).
  mutable double off_step_clock_hz_ = -1.0;
  mutable double off_step_scale_ = 0.0;
};

/// Limits of a die's clock under its power limit, for sustained_clock_hz().
struct SustainedClockLimits {
  double cap_w = 0.0;          ///< the die's power limit (W)
  double floor_hz = 0.0;       ///< lowest clock
  double ceiling_hz = 0.0;     ///< boost or locked clock
  double step_hz = 15e6;       ///< clock steps (governor.clock_step_mhz)
  double temperature_c = 0.0;  ///< die temperature while it runs (°C; leakage)
};

/// The limits of one of `hardware`'s dies at its TDP in its usual chassis (a front slot, cooling.ambient_c), with
/// the steady temperature `thermal` gives at the TDP (W, Hz, °C).
[[nodiscard]] SustainedClockLimits sustained_clock_limits(const HardwareSpec& hardware, const ThermalModel& thermal);

/// The clock a die holds while it runs `work` alone for long: the highest clock step at which `power`, for the
/// load of that one kernel at that clock (busy 1, its compute and HBM utilisation from `compute`), stays within
/// the cap. It is the firmware governor's steady state for a steady load (governor.hpp), without its averaging
/// window and response: replay scales a measured kernel from one GPU to another at these clocks.
[[nodiscard]] double sustained_clock_hz(const ComputeModel& compute, const PowerModel& power, const KernelWork& work,
                                        const SustainedClockLimits& limits);

}  // namespace chopsim
