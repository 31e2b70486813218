#pragma once
// Observers of a simulation's op events (private to chopsim_experiments).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/experiments/run.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim::detail {

/// Sends every event to several observers in order.
class FanOutObserver final : public SimulationObserver {
 public:
  void add(SimulationObserver& observer) { observers_.push_back(&observer); }
  void on_op_event(const OpEvent& event) override {
    for (auto* observer : observers_) observer->on_op_event(event);
  }

 private:
  std::vector<SimulationObserver*> observers_;
};

/// Charges every instant of every GPU to one bucket of TimeBreakdown, from which ops are running:
/// compute if any compute op runs; else exposed communication of the running categories (split evenly);
/// else pipeline bubble (pp > 1) or idle. O(1) per event, no op records kept.
class BreakdownObserver final : public SimulationObserver {
 public:
  explicit BreakdownObserver(const Workload& workload);
  void on_op_event(const OpEvent& event) override;
  /// Mean over GPUs of the time up to `end_s`, divided by `iterations`.
  [[nodiscard]] TimeBreakdown finish(double end_s, int iterations);

 private:
  struct RankState {
    double last_time_s = 0.0;
    std::uint32_t active_compute = 0;
    std::array<std::uint32_t, kCommCategoryCount> active_comm{};
    TimeBreakdown accumulated;
  };
  void advance(RankState& state, double time_s) const;

  const Workload& workload_;
  bool pipelined_;
  std::vector<RankState> ranks_;
};

/// Writes a Chrome/Perfetto trace (timeline.json): one process per GPU, one thread per stream, one
/// complete event per op with its size in the arguments. Events stream to disk as ops end.
class TimelineWriter final : public SimulationObserver {
 public:
  TimelineWriter(const Workload& workload, const std::filesystem::path& path, int gpus_per_node);
  ~TimelineWriter() override;
  void on_op_event(const OpEvent& event) override;
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
  void on_op_event(const OpEvent& event) override;
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// A short human label of a byte count: "512 B", "3.2 MiB", "1.5 GiB".
[[nodiscard]] std::string format_bytes(double bytes);

}  // namespace chopsim::detail

namespace chopsim::detail {
/// summary.json: the run, its predictions and the time and memory breakdowns (deterministic bytes:
/// no wall time, no host names, no dates).
void write_summary_json(std::ostream& out, const RunSpec& run, const RunReport& report);
}  // namespace chopsim::detail
