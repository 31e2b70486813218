#pragma once
// Power dynamics of a run on the experiments side (private to chopsim_experiments): the models and engine input
// built from a RunSpec, and the observer that turns telemetry into the PowerReport.

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/config/run_spec.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"
#include "windowed_extremes.hpp"

namespace chopsim::detail {

/// The power, thermal and governor models of a run and the engine input that borrows them.
struct PowerSetup {
  std::unique_ptr<PowerModel> power;
  std::unique_ptr<ThermalModel> thermal;
  std::unique_ptr<Governor> governor;
  PowerInput input;
  [[nodiscard]] bool enabled() const { return power != nullptr; }
};

/// The run's chips: its GPU packages (an MI250/MI250X package of two GCDs is one chip: one power limit, one clock).
[[nodiscard]] int chips_of(const RunSpec& run);

/// Builds the models named in run.power (none when run.power.dynamics is false).
[[nodiscard]] PowerSetup make_power_setup(const RunSpec& run, const ModelRegistries& registries);

/// Turns telemetry and op events into a PowerReport.
class PowerObserver final : public SimulationObserver {
 public:
  PowerObserver(const Workload& workload, const RunSpec& run, const PowerSetup& setup);
  void on_op_event(const OpEvent& event) override;
  void on_telemetry(const GpuStateSample& sample) override;
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override { representative_ = representative; }
  [[nodiscard]] bool folds() const override { return true; }
  void on_fold_window_begin(double time_s) override;
  /// The integrals grow by the window's; peaks and windowed averages are the simulated ones (the power signal in
  /// simulated time runs on seamlessly across a fold: the window repeats the stretch before it).
  void on_fold(double time_s, double span_s) override;
  [[nodiscard]] PowerReport finish(double end_s, int iterations, double tokens_per_iteration);

 private:
  /// A GPU's integrals over the run.
  struct Integrals {
    double energy_j = 0.0;
    double clock_time = 0.0;       ///< integral of the clock over the run
    double busy_s = 0.0;           ///< time with a compute kernel running
    double busy_clock_time = 0.0;  ///< integral of the clock while busy
    double busy_below_s = 0.0;     ///< busy time below 90 % of the max clock
    double throttled_s = 0.0, capped_s = 0.0, thermal_s = 0.0;
  };
  struct Gpu {
    double time_s = 0.0;
    double power_w = 0.0;
    double clock_hz = 0.0;
    std::uint8_t flags = 0;
    int compute_running = 0;
    Integrals sums;
    Integrals at_window_begin;  ///< `sums` when a fold's window opened
    double busy_min_clock_hz = 0.0;
    double peak_w = 0.0;
    double peak_c = -1e300;
    double first_thermal_s = -1.0;
    WindowedExtremes windows;  ///< the power's 1, 25 and 100 ms averages and its 1 ms rise (kWindow* indices)
    Gpu();
  };
  void advance(Gpu& gpu, double time_s) const;

  const Workload& workload_;
  PowerReport report_;
  std::vector<Gpu> gpus_;
  std::vector<std::uint32_t> representative_;  ///< under symmetry: per GPU, the one whose telemetry stands for it
  double window_begin_s_ = 0.0;
  double folded_s_ = 0.0;  ///< spans folded so far: the windowed averages take times this much earlier
};

}  // namespace chopsim::detail
