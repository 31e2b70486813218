// Expert load imbalance (TrainingSpec::moe_load_imbalance): in a dropless mixture of experts the busiest
// expert-parallel rank receives more routed copies than the mean, and every MoE layer waits for it (the combine
// all-to-all needs its experts' output). chopsim times every rank as that rank. Checked against counts that follow
// from the definition: its expert GEMMs and all-to-alls carry imbalance x the balanced rows, what a rank does with its
// own tokens (router, permutation, unpermutation) does not change, and its expert activations grow by the extra rows.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

/// The tiny model with 8 experts (top 2) over ep 2 data ranks, one micro-batch of 256 tokens each.
test::TinyRun expert_run(double imbalance) {
  test::TinyRun r;
  r.model.name = "tiny-moe";
  r.model.experts = 8;
  r.model.top_k = 2;
  r.parallelism.dp = 2;
  r.parallelism.ep = 2;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 2;
  r.training.moe_load_imbalance = imbalance;
  return r;
}

constexpr int kLayers = 8;

/// FLOPs and bytes of rank 0's ops, summed per op name.
struct Totals {
  std::map<std::string, double> flops, bytes;
};

Totals totals_of(const test::TinyRun& r) {
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  Totals t;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) {
      const std::string name(workload.name(op));
      t.flops[name] += op.flops;
      t.bytes[name] += op.bytes;
    }
  return t;
}

TEST(MoeLoadImbalance, TheBusiestRanksRowsSetTheExpertGemmsAndTheAllToAlls) {
  const Totals balanced = totals_of(expert_run(1.0));
  const Totals skewed = totals_of(expert_run(1.5));
  // Balanced: a rank's expert GEMMs take the copies it receives, 256 tokens x top 2 (as many as it sends).
  const double rows = 256.0 * 2.0;
  const double fc1_width = 2.0 * 688.0;  // SwiGLU: gate and up
  EXPECT_DOUBLE_EQ(balanced.flops.at("expert_fc1"), kLayers * 2.0 * rows * fc1_width * 256.0);
  for (const char* name : {"expert_fc1", "expert_fc2", "expert_fc1_dgrad", "expert_fc1_wgrad", "expert_fc2_dgrad",
                           "expert_fc2_wgrad", "expert_swiglu", "expert_swiglu_bwd"}) {
    ASSERT_GT(balanced.flops.at(name), 0.0) << name;
    EXPECT_DOUBLE_EQ(skewed.flops.at(name), 1.5 * balanced.flops.at(name)) << name;
  }
  // The all-to-alls carry the busiest rank's rows: it receives them in the dispatch, sends them back in the combine.
  const double dispatched = kLayers * 2.0 * rows * 256.0 * 2.0;  // forward and backward, h bf16 elements per row
  EXPECT_DOUBLE_EQ(balanced.bytes.at("ep_all_to_all_dispatch"), dispatched);
  EXPECT_DOUBLE_EQ(skewed.bytes.at("ep_all_to_all_dispatch"), 1.5 * dispatched);
  EXPECT_DOUBLE_EQ(skewed.bytes.at("ep_all_to_all_combine"), 1.5 * balanced.bytes.at("ep_all_to_all_combine"));
  // A rank's own tokens: routed, permuted and summed as before.
  for (const char* name : {"router", "moe_permute", "moe_unpermute", "moe_permute_bwd", "moe_unpermute_bwd"}) {
    EXPECT_DOUBLE_EQ(skewed.flops.at(name), balanced.flops.at(name)) << name;
    EXPECT_DOUBLE_EQ(skewed.bytes.at(name), balanced.bytes.at(name)) << name;
  }
  // Attention is untouched.
  EXPECT_DOUBLE_EQ(skewed.flops.at("qkv_proj"), balanced.flops.at("qkv_proj"));
}

TEST(MoeLoadImbalance, ACapacityFactorPadsEveryExpertToItsCapacityOrCapsIt) {
  TrainingSpec training;
  training.moe_load_imbalance = 1.6;
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(4), 1.6);
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(1), 1.0);  // one rank holds every expert: its load is the mean
  EXPECT_DOUBLE_EQ(training.moe_sent_load(), 1.0);
  // Padded (Megatron's --moe-pad-expert-input-to-capacity): each expert takes exactly its capacity, whatever the
  // routing, and a rank sends its tokens padded to it.
  training.moe_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(4), 1.25);
  EXPECT_DOUBLE_EQ(training.moe_sent_load(), 1.25);
  // Not padded: the tokens above the capacity are dropped, none added.
  training.moe_pad_to_capacity = false;
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(4), 1.25);  // 1.6 capped
  training.moe_load_imbalance = 1.1;
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(4), 1.1);  // below the capacity: what is routed
  EXPECT_DOUBLE_EQ(training.moe_sent_load(), 1.0);
  training.moe_capacity_factor = 0.8;  // below the mean: every expert drops a fifth
  EXPECT_DOUBLE_EQ(training.moe_busiest_rank_load(1), 0.8);
  EXPECT_DOUBLE_EQ(training.moe_sent_load(), 0.8);
}

TEST(MoeLoadImbalance, DroppedTokensAreNeitherSentNorComputed) {
  // A capacity of 0.8 without padding: every rank sends and its experts take 0.8 of the balanced copies.
  test::TinyRun dropping = expert_run(1.0);
  dropping.training.moe_capacity_factor = 0.8;
  dropping.training.moe_pad_to_capacity = false;
  const Totals balanced = totals_of(expert_run(1.0));
  const Totals dropped = totals_of(dropping);
  EXPECT_DOUBLE_EQ(dropped.flops.at("expert_fc1"), 0.8 * balanced.flops.at("expert_fc1"));
  EXPECT_DOUBLE_EQ(dropped.bytes.at("ep_all_to_all_dispatch"), 0.8 * balanced.bytes.at("ep_all_to_all_dispatch"));
  EXPECT_LT(dropped.bytes.at("moe_unpermute"), balanced.bytes.at("moe_unpermute"));
  EXPECT_DOUBLE_EQ(dropped.flops.at("router"), balanced.flops.at("router"));  // every token is routed
}

TEST(MoeLoadImbalance, TheBusiestRanksExtraRowsAreKeptForTheBackward) {
  const HardwareSpec hardware;
  const test::TinyRun balanced = expert_run(1.0), skewed = expert_run(1.5);
  const MemoryBreakdown a = estimate_peak_memory(balanced.model, balanced.parallelism, balanced.training, hardware);
  const MemoryBreakdown b = estimate_peak_memory(skewed.model, skewed.parallelism, skewed.training, hardware);
  // Per extra row: its permuted input (h bf16 elements) and SwiGLU's three intermediates (f bf16 elements each).
  const double extra_rows = 0.5 * 256.0 * 2.0;
  const double per_row = 256.0 * 2.0 + 3.0 * 688.0 * 2.0;
  EXPECT_DOUBLE_EQ(b.activations_bytes - a.activations_bytes, kLayers * extra_rows * per_row);
  EXPECT_DOUBLE_EQ(b.weights_bytes, a.weights_bytes);
}

TEST(MoeLoadImbalance, TheBusiestRankTakesEveryTokenAtMostOncePerLocalExpert) {
  // min(ep, experts / top_k) = min(2, 8 / 2) = 2: both of a token's experts may sit on one rank.
  EXPECT_NO_THROW((void)totals_of(expert_run(2.0)));
  const test::TinyRun above = expert_run(2.5);
  EXPECT_THROW((void)build_workload(above.model, above.parallelism, above.training), ModelError);
  test::TinyRun one_rank = expert_run(1.2);
  one_rank.parallelism.ep = 1;
  EXPECT_THROW((void)build_workload(one_rank.model, one_rank.parallelism, one_rank.training), ModelError);
}

// Megatron-Core's all-to-all dispatcher needs the token counts on the host to size its all-to-all, so the host waits
// for the GPU at every MoE layer's dispatch: dropless, or with a capacity but unpadded (the output size is dynamic).
// Experts padded to their capacity take a known number of rows: MoEAlltoAllTokenDispatcher.preprocess returns before
// any device-to-host copy (megatron/core/transformer/moe/token_dispatcher.py, drop_and_pad), and the host runs on. The
// flex dispatcher (DeepEP) always waits for its receive counts.
TEST(MoeLoadImbalance, TheHostWaitsForTheTokenCountsUnlessExpertsArePaddedToCapacity) {
  const auto waits_at_dispatch = [](const test::TinyRun& run) {
    const Workload workload = build_workload(run.model, run.parallelism, run.training);
    const Program& program = workload.program(0);
    int waits = 0;
    for (const IssueStep& step : program.issue_order)
      if (step.host_waits && workload.name(program.streams[step.stream].ops[step.op]) == "moe_permute") ++waits;
    return waits;
  };
  test::TinyRun dropless = expert_run(1.0);
  EXPECT_EQ(waits_at_dispatch(dropless), kLayers);
  test::TinyRun padded = dropless;
  padded.training.moe_capacity_factor = 1.0;
  EXPECT_EQ(waits_at_dispatch(padded), 0);
  test::TinyRun unpadded = padded;
  unpadded.training.moe_pad_to_capacity = false;
  EXPECT_EQ(waits_at_dispatch(unpadded), kLayers);
  test::TinyRun flex = padded;
  flex.training.moe_dispatcher = MoeDispatcher::flex;
  EXPECT_EQ(waits_at_dispatch(flex), kLayers);
}

}  // namespace
}  // namespace chopsim
