#pragma once
// The largest windowed averages and rises of a streamed power signal (private to chopsim_experiments): the power
// report's 1, 25 and 100 ms peaks and its largest 1 ms rise.

#include <array>
#include <cstddef>
#include <limits>
#include <vector>

namespace chopsim::detail {

/// The largest values of windowed functionals F(t) = sum_j c_j E(t - o_j) / scale over t, for the energy E(t) =
/// integral of a piecewise-constant power streamed as breakpoints in time order: the largest average over a window
/// w (offsets {0, w}, coefficients {1, -1}, scale w) or the largest rise of that average within w (offsets
/// {0, w, 2w}, {1, -2, 1}, scale w).
///
/// E is piecewise linear, so F is too: its slope sum_j c_j P(t - o_j) / scale changes only where some t - o_j is a
/// breakpoint. Each functional sweeps those instants in time order with one pointer per offset (the breakpoint at
/// or before t - o_j), and evaluates F exactly (from the breakpoints' energies) only where its slope turns from
/// rising to not rising: the local maxima, and the first and last t. A breakpoint costs each functional one step per
/// offset, whatever the window's length. All functionals share one buffer of breakpoints (the last max(o_j)
/// seconds): a GPU's four power windows cost one breakpoint, not four.
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
  /// At most three offsets (an average has two, a rise three): fixed arrays keep a step free of pointer chasing (it
  /// runs for every power breakpoint of every simulated GPU).
  static constexpr std::size_t kMaxOffsets = 3;
  struct Functional {
    std::size_t count = 0;  ///< offsets in use
    std::array<double, kMaxOffsets> offsets{}, coefficients{};
    double scale = 1.0, span = 0.0;
    double best = -std::numeric_limits<double>::infinity();
    bool started = false;  ///< swept from start + span on
    /// sum_j c_j P(t - o_j) just after the instant t the sweep has reached (scale left out: only its sign is used).
    double slope = 0.0;
    /// Per offset j: the absolute index of the breakpoint at or before t - o_j.
    std::array<std::size_t, kMaxOffsets> at{};
  };
  [[nodiscard]] const Point& point(std::size_t absolute) const { return points_[head_ + absolute - popped_]; }
  [[nodiscard]] std::size_t end_index() const { return popped_ + points_.size() - head_; }
  /// F at `time_s`, an instant no later than the next one the sweep would reach (its pointers are at the
  /// breakpoints at or before time_s - o_j).
  [[nodiscard]] double value(const Functional& f, double time_s) const;
  [[nodiscard]] double slope(const Functional& f) const;
  /// Sweeps f (of N offsets) over the instants before `before_s`, evaluating F where it stops rising.
  template <std::size_t N>
  void sweep(Functional& f, double before_s) const;
  /// Sweeps every functional to the instants before `time_s` (and `time_s` itself when `inclusive`).
  void evaluate_until(double time_s, bool inclusive);

  std::vector<Functional> functionals_;
  double span_ = 0.0;          ///< the largest offset of all functionals: how far back the pointers go
  std::vector<Point> points_;  ///< points_[head_..] are the live breakpoints
  std::size_t head_ = 0;
  std::size_t popped_ = 0;  ///< points dropped from the front so far (the absolute index of points_[head_])
  double start_s_ = 0.0;
  /// Points added since the functionals were last swept; they are swept every kBatch points and at finish().
  static constexpr int kBatch = 64;
  int unevaluated_ = 0;
  bool started_ = false;
};

}  // namespace chopsim::detail
