#pragma once
// Steady-state folding of a run (docs/design.md, "Folding"; private to chopsim_experiments): which micro-batches a
// run simulates when the steady ones of its schedule repeat, and how the simulated workload stands for the run's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/config/run_spec.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim::detail {

/// Micro-batches per pipeline (per iteration) of a folded run. The simulated workload has `simulated` of the run's
/// `micro_batches`: the pipeline's fill and steady ones before the window (clocks, the governor's averaged power and
/// the pipeline settle), the `window` steady micro-batches that stand for the ones left out, and the fewest after it
/// that keep every stage steady through the window: the pipeline's drain and the end of the iteration then run at
/// the temperatures the left-out ones lead to. 1F1B: the window is micro-batches pp + 1 .. pp + 4 of pp + 6 (stage
/// 0 still has a forward to run when it closes); interleaved: groups of pp micro-batches are the period, and the
/// window is the fourth and fifth group of six. Fewer after the window leave the iteration time where it was (within
/// 0.02 % of the longer tail on the cases of docs/design.md) and sample fewer extremes.
struct FoldShape {
  int micro_batches = 0;
  int simulated = 0;
  int window_begin = 0;  ///< the window opens with this micro-batch's first op on stage 0's compute stream
  int window = 0;        ///< micro-batches in the window
  int period = 1;        ///< micro-batches in one period of the schedule (the interleaved schedule's groups: pp)
  [[nodiscard]] int left_out() const { return micro_batches - simulated; }
  /// Windows the left-out micro-batches make (FoldPlan::repeats).
  [[nodiscard]] double repeats() const { return static_cast<double>(left_out()) / window; }
};

/// Whether and how a run folds.
struct FoldDecision {
  std::optional<FoldShape> shape;  ///< nothing: every micro-batch is simulated
  std::string limit;               ///< why not, when simulation.fold asked for it ("" otherwise)
};

/// What of a run besides its config decides whether it can fold: every figure must be extrapolated.
struct FoldContext {
  bool writes_files = false;                     ///< per-op files (--out) show every op
  bool engine_folds = false;                     ///< Engine::folds()
  const SimulationObserver* observer = nullptr;  ///< RunOptions::observer: it must fold too
};

/// How `run` would fold, with `inlet_c` the GPUs' inlet temperatures (°C, per rank; empty without power dynamics),
/// whether or not simulation.fold asks for it (a run that does not is told what folding would simulate). It does not
/// fold when `context` rules it out; when too few are left out to be worth it; or when its data-parallel replicas can
/// drift apart: replicas in slots of different inlet temperatures run at different clocks, and unless they meet every
/// micro-batch (ZeRO-3/FSDP) the faster waits for the slower at the end of the iteration for as long as the drift over
/// every micro-batch, which a window of a few cannot show (Llama-3-8B TP2 PP2 DP8 on MI250: the data-parallel
/// reduce-scatters' exposed time 19 % short).
[[nodiscard]] FoldDecision decide_fold(const RunSpec& run, const std::vector<double>& inlet_c,
                                       const FoldContext& context);

/// `run`'s training with the global batch of the simulated micro-batches.
[[nodiscard]] TrainingSpec folded_training(const RunSpec& run, const FoldShape& shape);

/// The engine's plan for `simulated` (built from folded_training): the window on rank 0's compute stream. Throws
/// ModelError if the workload has no such window.
[[nodiscard]] FoldPlan fold_plan(const Workload& simulated, const FoldShape& shape);

/// Executed FLOPs per iteration, over every rank, of the micro-batches `simulated` leaves out: left_out() times one
/// steady micro-batch's (the window's first).
[[nodiscard]] double left_out_executed_flops(const Workload& simulated, const FoldShape& shape);

/// Kernel launches per iteration (IssueStep::launches) of the micro-batches `program` leaves out.
[[nodiscard]] double left_out_launches(const Program& program, const FoldShape& shape);

/// Makes the figures of `simulated` the run's: tokens and model FLOPs per iteration of all its micro-batches.
void unfold_totals(Workload& simulated, const FoldShape& shape);

}  // namespace chopsim::detail
