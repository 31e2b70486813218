#pragma once
// Observers of a simulation's op events (private to chopsim_experiments).

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/experiments/run.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/thermal.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"
#include "timeline_formats.hpp"

namespace chopsim::detail {

/// How many GPUs the figures of each rank stand for: 1 each without classes (`representative` empty); under symmetry
/// (SimulationObserver::on_rank_classes) its class's size for a representative and 0 for the others.
[[nodiscard]] std::vector<double> rank_weights(const std::vector<std::uint32_t>& representative, std::size_t ranks);

/// At a steady-state fold (SimulationObserver::on_fold): each of `members` of `sums` grows by k times what it gained
/// since `at_window_begin`, k = the span left out / the window.
template <class Sums, class... Members>
void extrapolate_window(Sums& sums, const Sums& at_window_begin, double k, Members... members) {
  ((sums.*members += k * (sums.*members - at_window_begin.*members)), ...);
}

/// Sends every event to several observers in order.
class FanOutObserver final : public SimulationObserver {
 public:
  void add(SimulationObserver& observer) { observers_.push_back(&observer); }
  void on_op_event(const OpEvent& event) override {
    for (auto* observer : observers_) observer->on_op_event(event);
  }
  void on_telemetry(const GpuStateSample& sample) override {
    for (auto* observer : observers_) observer->on_telemetry(sample);
  }
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override {
    for (auto* observer : observers_) observer->on_rank_classes(representative);
  }
  [[nodiscard]] bool folds() const override {
    return std::all_of(observers_.begin(), observers_.end(), [](const auto* observer) { return observer->folds(); });
  }
  void on_fold_window_begin(double time_s) override {
    for (auto* observer : observers_) observer->on_fold_window_begin(time_s);
  }
  void on_fold(double time_s, double span_s) override {
    for (auto* observer : observers_) observer->on_fold(time_s, span_s);
  }

 private:
  std::vector<SimulationObserver*> observers_;
};

/// Charges every instant of every GPU to one bucket of TimeBreakdown, from which ops are running:
/// compute if any compute op runs; else exposed communication of the running categories (split evenly);
/// else the GPU runs nothing, and the gap is charged when it ends, by what ended it: a pipeline send or receive
/// starting (its peer stage got there) makes it pipeline bubble; any other op starting makes it idle (the GPU
/// waited for its host: launches issued slower than the GPU runs them, host synchronisations). A gap that nothing
/// ends (a rank done before the slowest) is bubble in a pipeline (pp > 1), idle otherwise. O(1) per event, no op
/// records kept.
class BreakdownObserver final : public SimulationObserver {
 public:
  explicit BreakdownObserver(const Workload& workload);
  void on_op_event(const OpEvent& event) override;
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override { representative_ = representative; }
  [[nodiscard]] bool folds() const override { return true; }
  void on_fold_window_begin(double time_s) override;
  /// Each GPU's parts grow by the window's, scaled so that they add up to the span.
  void on_fold(double time_s, double span_s) override;
  /// Mean over GPUs of the time up to `end_s`, divided by `iterations`.
  [[nodiscard]] TimeBreakdown finish(double end_s, int iterations);

 private:
  struct RankState {
    double last_time_s = 0.0;
    std::uint32_t active_compute = 0;
    std::array<std::uint32_t, kCommCategoryCount> active_comm{};
    double gap_s = 0.0;  ///< the present stretch with nothing running, not yet charged
    TimeBreakdown accumulated;
    TimeBreakdown at_window_begin;  ///< `accumulated` when a fold's window opened
  };
  void advance(RankState& state, double time_s) const;
  /// Charges the rank's present gap to pipeline bubble or idle.
  static void charge_gap(RankState& state, bool pipeline_wait);

  const Workload& workload_;
  bool pipelined_;
  std::vector<RankState> ranks_;
  std::vector<std::uint32_t> representative_;
};

/// The Chopper-style loss breakdown (run.hpp, LossBreakdown). Every compute kernel's duration D splits exactly into
/// its ideal time, its efficiency loss and launch overhead at the max clock (together d(f_max)), and the stretch
/// beyond d(f_max): while the kernel runs at share s of the GPU and clock f it progresses at s / d(f), so
///   D - d(f_max) = integral (1 - d(f_max)/d(f)) dt  +  integral d(f_max)/d(f) (1 - s) dt
///                  `-- frequency overhead --'        `-- communication contention --'
/// (the clock comes from telemetry; without power dynamics it is the fixed clock). The non-kernel time comes from
/// the TimeBreakdown. O(1) per event.
class LossBreakdownObserver final : public SimulationObserver {
 public:
  /// `clock_hz`: every GPU's clock until its first telemetry sample; `max_clock_hz`: the reference of the ideal.
  LossBreakdownObserver(const Workload& workload, const ComputeModel& compute, double clock_hz, double max_clock_hz);
  void on_op_event(const OpEvent& event) override;
  void on_telemetry(const GpuStateSample& sample) override;
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override { representative_ = representative; }
  [[nodiscard]] bool folds() const override { return true; }
  void on_fold_window_begin(double time_s) override;
  void on_fold(double time_s, double span_s) override;
  /// Per iteration, mean over GPUs; the kernel parts are scaled to `time.compute_s` (equal up to rounding: kernels
  /// running together are each given their share of the GPU's time) and the rest taken from `time`.
  [[nodiscard]] LossBreakdown finish(const TimeBreakdown& time, int iterations) const;

 private:
  struct Kernel {
    const Op* op = nullptr;
    KernelTiming max_clock;  ///< at f_max (its duration_s is d(f_max))
    double clock_hz = -1.0;  ///< clock of the cached ratio
    double ratio = 1.0;      ///< d(f_max) / d(clock_hz)
    double given_s = 0.0;    ///< the GPU time it was given: its wall time, divided among the kernels it ran beside
    double frequency_s = 0.0;
    double contention_s = 0.0;
  };
  /// A GPU's sums over the kernels that ended.
  struct KernelSums {
    double ideal_s = 0.0, efficiency_s = 0.0, launch_s = 0.0, frequency_s = 0.0, contention_s = 0.0;
    double kernel_s = 0.0;
  };
  struct Rank {
    double time_s = 0.0;
    double clock_hz = 0.0;
    int communications = 0;
    std::vector<Kernel> kernels;
    KernelSums sums;
    KernelSums at_window_begin;  ///< `sums` when a fold's window opened
  };
  void advance(Rank& rank, double time_s) const;

  const Workload& workload_;
  const ComputeModel& compute_;
  double max_clock_hz_;
  double slowdown_;
  std::vector<Rank> ranks_;
  std::vector<std::uint32_t> representative_;
  double window_begin_s_ = 0.0;
};

/// Writes the run's timeline (timeline_formats.hpp: a Chrome trace, timeline.json, or Perfetto's protobuf,
/// timeline.pftrace): a track group per GPU, a track per stream, one slice per op with its size in the arguments,
/// and power, clock and temperature counters. Events stream to disk as ops end.
class TimelineWriter final : public SimulationObserver {
 public:
  /// `ranks`: the GPUs to show (empty: every GPU that has events).
  TimelineWriter(const Workload& workload, const std::filesystem::path& path, int gpus_per_node,
                 std::vector<int> ranks = {}, TimelineFormat format = TimelineFormat::json);
  /// Refuse (OutputError, before the first event is written) a timeline whose estimated size exceeds `max_bytes`:
  /// the ranks it shows x their ops x `iterations` x kTimelineBytesPerOp (with telemetry when `telemetry`).
  /// `source`: the run file, for the message.
  void limit_size(double max_bytes, int iterations, bool telemetry, std::string source);
  ~TimelineWriter() override;
  /// Under symmetry the timeline shows the representatives, each labelled with the GPUs it stands for.
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override;
  void on_op_event(const OpEvent& event) override;
  /// Counter tracks per GPU: power (W), clock (MHz) and temperature (°C) at each change (the temperature when it
  /// moved by 0.1 K or more since the last point drawn).
  void on_telemetry(const GpuStateSample& sample) override;
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Writes ops.h5: a chunked, compressed compound table `/ops` with one row per executed op.
class OpsTableWriter final : public SimulationObserver {
 public:
  OpsTableWriter(const Workload& workload, const std::filesystem::path& path, const std::string& run_name);
  ~OpsTableWriter() override;
  /// Under symmetry the tables hold the representatives' rows; finish() adds `/representative`: per GPU, the GPU whose
  /// rows stand for it.
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override;
  void on_op_event(const OpEvent& event) override;
  /// Adds the table `/telemetry`: per GPU and interval of `interval_s`, mean power and clock, the temperature at the
  /// end of the interval (from the thermal model between samples) and the throttled fraction.
  void enable_telemetry(double interval_s, std::vector<double> inlet_c, const ThermalModel& thermal);
  void on_telemetry(const GpuStateSample& sample) override;
  /// `end_s`: end of the simulation (closes the last telemetry interval).
  void finish(double end_s = 0.0);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// A short human label of a byte count: "512 B", "3.2 MiB", "1.5 GiB".
[[nodiscard]] std::string format_bytes(double bytes);

}  // namespace chopsim::detail
