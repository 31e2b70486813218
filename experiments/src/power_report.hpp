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

/// The largest values of windowed functionals F(t) = sum_j c_j E(t - o_j) / scale over t, for the energy E(t) =
/// integral of a piecewise-constant power streamed as breakpoints in time order: the largest average over a window
/// w (offsets {0, w}, coefficients {1, -1}, scale w) or the largest rise of that average within w (offsets
/// {0, w, 2w}, {1, -2, 1}, scale w). E is piecewise linear, so an extreme lies where some t - o_j is a breakpoint;
/// those candidates are evaluated as soon as E is known there. All functionals share one buffer of breakpoints (the
/// last max(o_j) seconds): a GPU's four power windows cost one breakpoint, not four.
class WindowedExtremes {
 public:
  /// Tracks one more functional (before the first add()); returns its index for extreme().
  std::size_t track(std::vector<double> offsets, std::vector<double> coefficients, double scale);
  /// The power is `power_w` from `time_s` on (non-decreasing times).
  void add(double time_s, double power_w);
  /// Closes the signal at `end_s`.
  void finish(double end_s);
  /// After finish(): functional `index`'s extreme over t in [start + its max offset, end] (NaN if no such t).
  [[nodiscard]] double extreme(std::size_t index) const;

 private:
  struct Point {
    double time_s;
    double energy_j;  ///< E at time_s
    double power_w;   ///< from time_s to the next point
  };
  /// At most three offsets (an average has two, a rise three): fixed arrays keep a candidate's evaluation free of
  /// pointer chasing (it runs for every power breakpoint of every simulated GPU).
  static constexpr std::size_t kMaxOffsets = 3;
  struct Functional {
    std::size_t count = 0;  ///< offsets in use
    std::array<double, kMaxOffsets> offsets{}, coefficients{};
    double scale = 1.0, span = 0.0;
    double best = -std::numeric_limits<double>::infinity();
    /// Per offset q: the absolute index of the first point whose candidate t_i + o_q is not evaluated yet.
    std::array<std::size_t, kMaxOffsets> next_candidate{};
    /// Per (offset q, offset j): the absolute index of the point the last lookup of E(t - o_j) for a candidate of
    /// offset q found. Those times only grow: amortised O(1) per lookup instead of a binary search (the 100 ms
    /// window holds thousands of points).
    std::array<std::size_t, kMaxOffsets * kMaxOffsets> cursors{};
    /// dF/dt = sum_j c_j P(t - o_j) / scale is at most rising_per_watt * P_max + falling_per_watt * P_min, with
    /// rising = sum of the positive c_j / scale and falling = sum of the negative ones: a window average rises at most
    /// (P_max - P_min) / window, half the bound 2 P_max / window that |c| gives when the GPU idles near 0 W.
    double rising_per_watt = 0.0, falling_per_watt = 0.0;
    /// Per offset q: the last candidate evaluated (its time and value). F(t) <= value + (t - time) * slope bound, so
    /// later candidates of offset q are skipped while that bound stays below `best`: the 25 and 100 ms averages move
    /// slowly, and most of their candidates are skipped without a lookup.
    /// Before the first evaluation the value is +infinity: nothing is skipped.
    std::array<double, kMaxOffsets> anchor_s{};
    std::array<double, kMaxOffsets> anchor_value{std::numeric_limits<double>::infinity(),
                                                 std::numeric_limits<double>::infinity(),
                                                 std::numeric_limits<double>::infinity()};
  };
  [[nodiscard]] const Point& point(std::size_t absolute) const { return points_[head_ + absolute - popped_]; }
  [[nodiscard]] std::size_t end_index() const { return popped_ + points_.size() - head_; }
  [[nodiscard]] double energy_at(double time_s, std::size_t& cursor) const;
  /// Evaluates the candidates at times before `time_s` (and at `time_s` when `inclusive`).
  void evaluate_until(double time_s, bool inclusive);

  std::vector<Functional> functionals_;
  double span_ = 0.0;          ///< the largest offset of all functionals: how far back lookups go
  std::vector<Point> points_;  ///< points_[head_..] are the live breakpoints
  std::size_t head_ = 0;
  std::size_t popped_ = 0;  ///< points dropped from the front so far (the absolute index of points_[head_])
  double start_s_ = 0.0;
  /// The largest and smallest power added so far: they bound the slope of every functional.
  double max_power_w_ = -std::numeric_limits<double>::infinity();
  double min_power_w_ = std::numeric_limits<double>::infinity();
  /// Points added since candidates were last evaluated; they are evaluated every kBatch points and at finish().
  static constexpr int kBatch = 64;
  int unevaluated_ = 0;
  bool started_ = false;
};

/// Turns telemetry and op events into a PowerReport.
class PowerObserver final : public SimulationObserver {
 public:
  PowerObserver(const Workload& workload, const RunSpec& run, const PowerSetup& setup);
  void on_op_event(const OpEvent& event) override;
  void on_telemetry(const GpuStateSample& sample) override;
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override { representative_ = representative; }
  [[nodiscard]] PowerReport finish(double end_s, int iterations, double tokens_per_iteration);

 private:
  struct Gpu {
    double time_s = 0.0;
    double power_w = 0.0;
    double clock_hz = 0.0;
    std::uint8_t flags = 0;
    int compute_running = 0;
    double energy_j = 0.0;
    double clock_time = 0.0;       ///< integral of the clock over the run
    double busy_s = 0.0;           ///< time with a compute kernel running
    double busy_clock_time = 0.0;  ///< integral of the clock while busy
    double busy_below_s = 0.0;     ///< busy time below 90 % of the max clock
    double busy_min_clock_hz = 0.0;
    double throttled_s = 0.0, capped_s = 0.0, thermal_s = 0.0;
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
};

}  // namespace chopsim::detail
