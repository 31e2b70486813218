#pragma once
// The discrete-event engine interface. The engine owns time: it runs the per-rank programs of a Workload
// over a Topology, asking the compute model for kernel durations and the collective model for
// point-to-point plans, and reports every op start and end to an observer in time order.
// Workload and models know nothing of SimGrid; a second engine can implement this interface.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/common/registry.hpp"

namespace chopsim {

struct Workload;
class Topology;
class ComputeModel;
class CollectiveModel;

struct EngineOptions {
  /// SimGrid network model (`network/model`). CM02 without cross-traffic reproduces the alpha-beta
  /// cost of a transfer exactly (latency + size / bandwidth) with max-min fair sharing of links; see
  /// docs/design.md for why not LV08.
  std::string network_model = "CM02";
  /// Run each simulation in a child process (SimGrid allows one engine per process; a child lets a
  /// process run many simulations, one after another or from several threads).
  bool isolate_in_child_process = true;
};

/// Everything one simulation needs; the engine does not own any of it.
struct SimulationInput {
  const Workload* workload = nullptr;
  const Topology* topology = nullptr;
  const ComputeModel* compute = nullptr;
  const CollectiveModel* collectives = nullptr;
  int iterations = 1;
  /// Core clock every GPU runs at (hertz); 0 = the compute model's boost clock.
  double clock_hz = 0.0;
};

/// An op started or ended. Events reach the observer in non-decreasing `time_s`.
struct OpEvent {
  double time_s = 0.0;
  double start_s = 0.0;  ///< for end events: when the op started
  std::uint32_t rank = 0;
  std::uint32_t op = 0;  ///< index in its stream
  std::uint32_t iteration = 0;
  std::uint16_t stream = 0;
  bool is_end = false;
};

/// Watches a simulation (breakdown, timeline, op table writers). Called from the caller's thread.
class SimulationObserver {
 public:
  virtual ~SimulationObserver() = default;
  virtual void on_op_event(const OpEvent& event) = 0;
};

struct SimulationStats {
  double makespan_s = 0.0;              ///< end of the last op of the last iteration
  std::vector<double> iteration_end_s;  ///< per iteration, the latest end over all ranks
  std::uint64_t activities = 0;         ///< engine activities (executions, transfers, waits) started
  std::uint64_t op_events = 0;          ///< events sent to the observer
};

class Engine {
 public:
  virtual ~Engine() = default;
  /// Simulates `input.iterations` iterations. Throws EngineError on failure (deadlock, engine abort).
  virtual SimulationStats run(const SimulationInput& input, SimulationObserver& observer) = 0;
};

using EngineRegistry = Registry<Engine, const EngineOptions&>;
/// "simgrid": SimGrid 3.32 s4u, one actor per GPU stream, links shared by SimGrid's network model.
void register_builtin_engines(EngineRegistry& registry);

}  // namespace chopsim
