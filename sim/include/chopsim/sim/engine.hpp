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
#include "chopsim/models/power_dynamics.hpp"

namespace chopsim {

struct Workload;
class Topology;
class ComputeModel;
class CollectiveModel;
class PowerModel;
class ThermalModel;
class Governor;

struct EngineOptions {
  /// SimGrid network model (`network/model`). CM02 without cross-traffic reproduces the alpha-beta
  /// cost of a transfer exactly (latency + size / bandwidth) with max-min fair sharing of links; see
  /// docs/design.md for why not LV08.
  std::string network_model = "CM02";
  /// Run each simulation in a child process (SimGrid allows one engine per process; a child lets a
  /// process run many simulations, one after another or from several threads).
  bool isolate_in_child_process = true;
  /// Fast engine: simulate one representative per class of equivalent ranks (docs/design.md, "Symmetry") where the
  /// input allows it; false simulates every rank.
  bool use_symmetry = true;
};

/// Power, DVFS and thermal dynamics of a simulation (power_dynamics.hpp). Every GPU package is one power domain
/// with the governor's clocks; kernels run at the clock of the moment. The engine does not own the models.
struct PowerInput {
  const PowerModel* power = nullptr;
  const ThermalModel* thermal = nullptr;
  const Governor* governor = nullptr;
  double cap_w_per_gpu = 0.0;  ///< a package of n dies shares n times this
  double ceiling_hz = 0.0;     ///< locked clock, or the max clock
  double floor_hz = 0.0;       ///< min clock
  int dies_per_package = 1;    ///< ranks k*n .. k*n+n-1 form package k
  /// Every domain's governor holds the cap for the job's slowest chip (PowerDomainSettings::governed_dynamic_scale).
  double governed_dynamic_scale = 1.0;
  std::vector<double> inlet_c;    ///< per rank (°C)
  std::vector<double> initial_c;  ///< per rank (°C)
};

/// Steady-state folding (docs/design.md, "Folding"): the workload holds fewer repetitions of a periodic stretch (the
/// steady micro-batches of a pipeline) than the run, and one window of it stands for the ones left out. The window
/// opens when `rank`'s stream `stream` starts op `window_begin_op` and closes when it starts `window_end_op`, in every
/// iteration; there the engine moves each GPU's temperature on as the window's mean power would over `repeats` more
/// windows, tells the observer (SimulationObserver::on_fold), and reports every later time that much later.
struct FoldPlan {
  int rank = -1;  ///< -1: no folding
  std::uint16_t stream = 0;
  std::uint32_t window_begin_op = 0;
  std::uint32_t window_end_op = 0;
  double repeats = 0.0;  ///< windows left out per iteration (may be fractional)
  /// The lead-in, from this op's start to the window's (lead_share > 0): its length over lead_share estimates the
  /// window's, and at the window's start the GPUs warm by half the span at the lead-in's mean power, so that the
  /// window runs at the temperatures halfway through the left-out micro-batches (the other half follows at the fold).
  std::uint32_t lead_begin_op = 0;
  double lead_share = 0.0;
  [[nodiscard]] bool enabled() const { return rank >= 0; }
};

/// Everything one simulation needs; the engine does not own any of it.
struct SimulationInput {
  const Workload* workload = nullptr;
  const Topology* topology = nullptr;
  const ComputeModel* compute = nullptr;
  const CollectiveModel* collectives = nullptr;
  int iterations = 1;
  /// Core clock every GPU runs at (hertz) when `power` is absent or its governor holds clocks fixed; 0 = the
  /// compute model's rated clock (ComputeParams::peak_clock_hz).
  double clock_hz = 0.0;
  /// Power dynamics; nullptr = none (fixed clocks, no telemetry).
  const PowerInput* power = nullptr;
  /// Host time (s) to launch one kernel (Program::issue_order, IssueStep::launches); 0 = the host is never behind
  /// and host waits cost nothing.
  double host_launch_s = 0.0;
  /// Steady-state folding; only for an engine whose folds() is true and an observer whose folds() is true.
  FoldPlan fold{};
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
  /// A GPU's power, clock or throttle state changed (runs with power dynamics only). Samples of one GPU arrive in
  /// time order and interleaved in time order with that GPU's op events; samples of different GPUs need not be in
  /// global time order (a domain with no kernel running catches up on its governor's decisions at its next event).
  virtual void on_telemetry(const GpuStateSample& /*sample*/) {}
  /// Called once before any event when the engine simulates one representative per class of equivalent ranks
  /// (EngineOptions::use_symmetry; docs/design.md, "Symmetry"): `representative[r]` is the rank whose events and
  /// telemetry stand for rank r. Events and telemetry then arrive for representatives only; an observer that reports
  /// per GPU or over all GPUs takes every rank's figures from its representative. Not called without classes.
  virtual void on_rank_classes(const std::vector<std::uint32_t>& /*representative*/) {}
  /// Whether this observer extrapolates its figures at a fold (on_fold_window_begin, on_fold); an engine refuses a
  /// FoldPlan for an observer that does not.
  [[nodiscard]] virtual bool folds() const { return false; }
  /// A fold's window opens at `time_s` (FoldPlan): figures accumulated from now on stand for the windows left out.
  virtual void on_fold_window_begin(double /*time_s*/) {}
  /// The window closes at `time_s` and repeats for `span_s` more seconds, which the simulation does not run: what
  /// accumulated over the window grows by span_s / (window length) of itself, and every later event and sample comes
  /// `span_s` later than the simulated clock (op ends included, so an op running across the fold lasts span_s
  /// longer in event times). Temperatures move on across the span in the engine; the telemetry after the fold shows it.
  virtual void on_fold(double /*time_s*/, double /*span_s*/) {}
};

struct SimulationStats {
  double makespan_s = 0.0;                  ///< end of the last op of the last iteration
  std::vector<double> iteration_end_s;      ///< per iteration, the latest end over all ranks
  std::uint64_t activities = 0;             ///< engine activities (executions, transfers, waits) started
  std::uint64_t op_events = 0;              ///< events sent to the observer
  std::uint64_t telemetry_samples = 0;      ///< telemetry samples sent to the observer
  std::uint64_t governor_decisions = 0;     ///< governor calls (one per load change and timed decision)
  std::uint64_t governor_timed_events = 0;  ///< decisions at times a governor named
  /// Ranks simulated: all, or one per symmetry class (EngineOptions::use_symmetry); 0 = all (engines without classes).
  std::uint32_t simulated_ranks = 0;
  /// Why the symmetry classes are not coarser ("" when every data-parallel replica is one class or without classes).
  std::string symmetry_limit;
  std::uint32_t folds = 0;  ///< steady-state folds made (FoldPlan: one per iteration)
  double folded_s = 0.0;    ///< simulated time the folds stand for, all iterations (included in makespan_s)
};

class Engine {
 public:
  virtual ~Engine() = default;
  /// Simulates `input.iterations` iterations. Throws EngineError on failure (deadlock, engine abort).
  virtual SimulationStats run(const SimulationInput& input, SimulationObserver& observer) = 0;
  /// Whether run() carries out SimulationInput::fold (an engine that does not throws EngineError for one).
  [[nodiscard]] virtual bool folds() const { return false; }
  /// Whether run() simulates in a child process it forks (the SimGrid engine by default). Its caller then starts no
  /// thread of its own before run(): the child runs SimGrid, not only async-signal-safe calls, so a lock another
  /// thread held at fork() would stay locked in the child for ever; and the child is a second core already.
  [[nodiscard]] virtual bool simulates_in_child_process() const { return false; }
};

using EngineRegistry = Registry<Engine, const EngineOptions&>;
/// "fast": chopsim's event loop (the default); "simgrid": SimGrid 3.32 s4u, one actor per GPU stream, the reference.
void register_builtin_engines(EngineRegistry& registry);

}  // namespace chopsim
