#include "fold.hpp"

#include <string>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

namespace {
/// Steady micro-batches in a window. The clocks' control periods (10 ms on NVIDIA) do not line up with micro-batches,
/// so one micro-batch's length varies by about 1 % (measured on Llama-3-70B TP8 PP4 DP2, bench/history.md); a window
/// of four spreads that over four.
constexpr int kWindowMicroBatches = 4;
}  // namespace

FoldDecision decide_fold(const RunSpec& run, const std::vector<double>& inlet_c, const FoldContext& context) {
  FoldDecision decision;
  if (context.writes_files) {
    decision.limit = "the run writes per-op files (--out)";
    return decision;
  }
  if (!context.engine_folds) {
    decision.limit = "engine '" + run.engine + "' simulates every micro-batch";
    return decision;
  }
  if (context.observer != nullptr && !context.observer->folds()) {
    decision.limit = "an observer sees every op";
    return decision;
  }
  const ParallelismSpec& p = run.parallelism;
  FoldShape shape;
  shape.micro_batches = run.training.micro_batches(p);
  if (p.pp_schedule == PipelineSchedule::interleaved && p.virtual_stages > 1) {
    // Megatron's interleaved schedule runs micro-batches through the chunks in groups of pp (pipeline_schedule): a
    // group is its period. Stage 0's warm-up is (pp - 1) * 2 + (v - 1) * pp forward chunks, under two groups' worth;
    // the window opens with the fourth group (0-based: 3 pp), spans two, and one more keeps every stage's chunks steady
    // through it before the drain (a schedule of whole groups: the simulated micro-batches stay a multiple of pp).
    shape.window_begin = 3 * p.pp;
    shape.window = 2 * p.pp;
    shape.period = p.pp;
    shape.simulated = shape.window_begin + shape.window + p.pp;
  } else {
    // Stage 0 runs pp - 1 forwards before its first backward; from micro-batch pp on every stage is in its steady
    // one-forward-one-backward, and one more lets the governor's averaged power follow (the lead-in). One micro-batch
    // after the window keeps stage 0 steady to the window's end (it closes as stage 0 starts that micro-batch's
    // forward); the other stages run behind stage 0, so they are steady too.
    shape.window_begin = p.pp + 1;
    shape.window = kWindowMicroBatches;
    shape.simulated = shape.window_begin + shape.window + 1;
  }
  // Worth it only when the left-out micro-batches are at least another window.
  if (shape.left_out() < shape.window) {
    decision.limit = "a fold needs " + std::to_string(shape.simulated + shape.window) +
                     " micro-batches per pipeline or more (" + std::to_string(shape.simulated) +
                     " simulated, a window's " + std::to_string(shape.window) + " left out); the run has " +
                     std::to_string(shape.micro_batches);
    return decision;
  }
  if (p.zero_stage < 3 && !inlet_c.empty()) {
    const RankLayout layout(p);
    // The first member met of each data-parallel group (by group_id, so O(GPUs), not GPUs x dp).
    std::vector<int> first_of_group(static_cast<std::size_t>(layout.world_size()), -1);
    for (int r = 0; r < layout.world_size(); ++r) {
      int& first = first_of_group[static_cast<std::size_t>(layout.group_id(r, GroupRole::dp))];
      if (first < 0) first = r;
      if (inlet_c[static_cast<std::size_t>(r)] != inlet_c[static_cast<std::size_t>(first)]) {
        decision.limit = "data-parallel replicas drift apart: ranks " + std::to_string(first) + " and " +
                         std::to_string(r) + " have different inlet temperatures";
        return decision;
      }
    }
  }
  decision.shape = shape;
  return decision;
}

TrainingSpec folded_training(const RunSpec& run, const FoldShape& shape) {
  TrainingSpec training = run.training;
  training.global_batch = shape.simulated * run.parallelism.dp * training.micro_batch;
  return training;
}

FoldPlan fold_plan(const Workload& simulated, const FoldShape& shape) {
  const Program& program = simulated.program(0);
  FoldPlan plan;
  plan.rank = 0;
  for (std::size_t s = 0; s < program.streams.size(); ++s) {
    if (program.streams[s].name != "compute") continue;
    const std::vector<Op>& ops = program.streams[s].ops;
    std::optional<std::uint32_t> lead, begin, end;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (!lead && ops[i].micro_batch == shape.window_begin - shape.period) lead = i;
      if (!begin && ops[i].micro_batch == shape.window_begin) begin = i;
      if (!end && ops[i].micro_batch == shape.window_begin + shape.window) end = i;
    }
    if (!begin || !end)
      throw ModelError("fold: stage 0's compute stream has no micro-batch " + std::to_string(shape.window_begin) +
                       " or " + std::to_string(shape.window_begin + shape.window));
    plan.stream = static_cast<std::uint16_t>(s);
    plan.window_begin_op = *begin;
    plan.window_end_op = *end;
    plan.repeats = shape.repeats();
    if (lead) {
      plan.lead_begin_op = *lead;
      plan.lead_share = static_cast<double>(shape.period) / shape.window;
    }
    return plan;
  }
  throw ModelError("fold: rank 0 has no compute stream");
}

double left_out_executed_flops(const Workload& simulated, const FoldShape& shape) {
  std::vector<double> ranks_per_program(simulated.programs.size(), 0.0);
  for (const std::uint32_t program : simulated.program_of_rank) ranks_per_program.at(program) += 1.0;
  double total = 0.0;
  for (std::size_t p = 0; p < simulated.programs.size(); ++p)
    for (const Stream& stream : simulated.programs[p].streams)
      for (const Op& op : stream.ops)
        if (op.kind == OpKind::compute && op.micro_batch == shape.window_begin)
          total += op.flops * ranks_per_program[p];
  return total * shape.left_out();
}

double left_out_launches(const Program& program, const FoldShape& shape) {
  double launches = 0.0;
  for (const IssueStep& step : program.issue_order)
    if (program.streams[step.stream].ops[step.op].micro_batch == shape.window_begin) launches += step.launches;
  return launches * shape.left_out();
}

void unfold_totals(Workload& simulated, const FoldShape& shape) {
  const double scale = static_cast<double>(shape.micro_batches) / shape.simulated;
  simulated.tokens_per_iteration *= scale;
  simulated.model_flops_per_iteration *= scale;
}

}  // namespace chopsim::detail
