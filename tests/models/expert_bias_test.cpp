// The routed experts' biases (TransformerSpec::linear_bias on a mixture of experts, gpt-oss) as Megatron-Core's
// TEGroupedMLP applies them (megatron/core/transformer/moe/experts.py, _apply_bias, 2025-09 to 2026-08): fc1's inside
// the grouped GEMM, fc2's expert by expert in a Python loop. Checked against counts that follow from that code: two
// launches per local expert forward (b * p, t + ...) plus the cat and the cast, five per expert backward plus the
// two whole-tensor kernels, and one main_grad accumulation per bias parameter (two per local expert); the bytes are
// those of the fp32 intermediates the loop creates.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

using BiasRun = test::TinyRun;

/// The tiny model with 8 experts (top 2) over ep 2 data ranks: 4 local experts per rank, one micro-batch each.
BiasRun expert_run(bool linear_bias) {
  BiasRun r;
  r.model.name = "tiny-moe-bias";
  r.model.experts = 8;
  r.model.top_k = 2;
  r.model.linear_bias = linear_bias;
  r.parallelism.dp = 2;
  r.parallelism.ep = 2;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 2;
  return r;
}

constexpr double kLocalExperts = 4.0;
constexpr int kLayers = 8;
// Rows of a rank's expert GEMMs (balanced routing: the copies it receives, as many as it sends): 256 tokens x top 2.
constexpr double kExpertRows = 256.0 * 2.0;
constexpr double kHidden = 256.0;

bool is_bias_op(std::string_view name) {
  return name.starts_with("expert_fc2_bias") || name.starts_with("expert_bias");
}

struct BiasCost {
  double launches = 0.0;
  double bytes = 0.0;
  int ops = 0;
};

/// Host launches and bytes of rank 0's expert-bias ops in `pass`.
BiasCost bias_cost(const Workload& workload, Pass pass) {
  BiasCost cost;
  const Program& program = workload.program(0);
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (op.pass != pass || !is_bias_op(workload.name(op))) continue;
    cost.launches += step.launches;
    cost.bytes += op.bytes;
    ++cost.ops;
  }
  return cost;
}

TEST(ExpertBias, TheForwardLoopLaunchesTwoKernelsPerLocalExpertAndMovesTheFp32Intermediates) {
  const BiasRun r = expert_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  const BiasCost forward = bias_cost(workload, Pass::forward);
  // b * p and t + b * p per local expert, then the cat and the cast back to bf16; every MoE layer.
  EXPECT_DOUBLE_EQ(forward.launches, kLayers * (2.0 * kLocalExperts + 2.0));
  // 4 (b * p written) + 10 (t and b * p read, the sum written) + 8 (cat) + 6 (cast) bytes per element.
  EXPECT_DOUBLE_EQ(forward.bytes, kLayers * 28.0 * kExpertRows * kHidden);
}

TEST(ExpertBias, TheBackwardLoopLaunchesFivePerExpertAndAccumulatesEachBiasGradient) {
  const BiasRun r = expert_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  const BiasCost backward = bias_cost(workload, Pass::backward);
  // Per expert: t's gradient cast, b's product and sum, p's product and sum; the cast's and the split's gradients;
  // 2 bias parameters per local expert added to main_grad.
  EXPECT_DOUBLE_EQ(backward.launches, kLayers * (5.0 * kLocalExperts + 2.0 + 2.0 * kLocalExperts));
  const double per_element = 6.0 + 6.0 + 24.0 + 4.0;
  const double accumulate = 2.0 * kLocalExperts * kHidden * 10.0;
  EXPECT_DOUBLE_EQ(backward.bytes, kLayers * (per_element * kExpertRows * kHidden + accumulate));
}

TEST(ExpertBias, TheLoopsSitBetweenTheExpertsSecondGemmAndTheirCombine) {
  const BiasRun r = expert_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  const Program& program = workload.program(0);
  std::string previous;
  int forward_loops = 0, backward_loops = 0;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    const std::string name(workload.name(op));
    if (name == "expert_fc2_bias" && op.pass == Pass::forward) {
      EXPECT_EQ(previous, "expert_fc2");
      ++forward_loops;
    }
    // The backward loop runs first in the experts' backward, its gradients then go to main_grad.
    if (name == "expert_fc2_dgrad" && op.pass == Pass::backward) {
      EXPECT_EQ(previous, "expert_bias_grad_accumulate");
      ++backward_loops;
    }
    previous = name;
  }
  EXPECT_EQ(forward_loops, kLayers);
  EXPECT_EQ(backward_loops, kLayers);
}

TEST(ExpertBias, FrozenExpertsSkipTheBiasGradientsButNotTheRowsGradients) {
  BiasRun r = expert_run(true);
  r.training.lora.rank = 16;  // on the fused QKV only: the experts stay frozen
  r.training.lora.proj = r.training.lora.fc1 = r.training.lora.fc2 = false;
  r.parallelism.zero_stage = 1;
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  const BiasCost backward = bias_cost(workload, Pass::backward);
  // t's gradient cast and p's product and sum per expert; no b gradient, no main_grad accumulation.
  EXPECT_DOUBLE_EQ(backward.launches, kLayers * (3.0 * kLocalExperts + 2.0));
  EXPECT_DOUBLE_EQ(backward.bytes, kLayers * (6.0 + 6.0 + 12.0 + 4.0) * kExpertRows * kHidden);
}

TEST(ExpertBias, ExpertsWithoutBiasesLaunchNothingForThem) {
  const BiasRun r = expert_run(false);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_EQ(bias_cost(workload, Pass::forward).ops, 0);
  EXPECT_EQ(bias_cost(workload, Pass::backward).ops, 0);
  // The biases are the only difference: the two workloads' other ops cost the same.
  const Workload biased = build_workload(expert_run(true).model, r.parallelism, r.training);
  std::size_t plain_ops = 0, biased_ops = 0;
  for (const Stream& stream : workload.program(0).streams) plain_ops += stream.ops.size();
  for (const Stream& stream : biased.program(0).streams)
    for (const Op& op : stream.ops) biased_ops += is_bias_op(biased.name(op)) ? 0 : 1;
  EXPECT_EQ(biased_ops, plain_ops + kLayers);  // the out-projection's bias gradient, one per layer
}

}  // namespace
}  // namespace chopsim
