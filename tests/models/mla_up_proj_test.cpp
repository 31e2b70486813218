// Megatron-Core's recompute of multi-latent attention's up projections (recompute_modules: mla_up_proj;
// multi_latent_attention.py, recompute_up_proj with CheckpointWithoutOutput): the query and key-value up projections
// and the rotary embedding run again before the attention's backward, and the queries, keys and values they made,
// which the attention kernel would keep, are dropped after its forward.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

constexpr int kLayers = 8;

test::TinyRun mla_run(bool recompute_up_proj) {
  test::TinyRun r;
  r.model = test::tiny_mla(96);
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 1;
  if (recompute_up_proj) {
    r.training.recompute = RecomputePolicy::selective;
    r.training.recompute_modules.mla_up_proj = true;
  }
  return r;
}

int count(const Workload& workload, std::string_view name, Pass pass) {
  int n = 0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name && op.pass == pass) ++n;
  return n;
}

TEST(MlaUpProjRecompute, TheUpProjectionsAndTheRotaryEmbeddingRunAgainBeforeEachAttentionBackward) {
  const test::TinyRun r = mla_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  for (const char* name : {"q_up_proj", "kv_up_proj", "rotary"}) {
    EXPECT_EQ(count(workload, name, Pass::forward), kLayers) << name;
    EXPECT_EQ(count(workload, name, Pass::recompute), kLayers) << name;
  }
  // Not the down projections, their norms or the attention kernel: their outputs are kept.
  for (const char* name : {"q_down_proj", "kv_down_proj", "kv_latent_norm", "attention"})
    EXPECT_EQ(count(workload, name, Pass::recompute), 0) << name;
  const test::TinyRun plain = mla_run(false);
  const Workload without = build_workload(plain.model, plain.parallelism, plain.training);
  EXPECT_EQ(count(without, "q_up_proj", Pass::recompute), 0);
}

TEST(MlaUpProjRecompute, TheAttentionKernelsQueriesKeysAndValuesAreNotKept) {
  const test::TinyRun with = mla_run(true), without = mla_run(false);
  HardwareSpec gpu;
  gpu.name = "test-gpu";
  gpu.hbm_capacity_bytes = 80e9;
  const double saved =
      estimate_peak_memory(without.model, without.parallelism, without.training, gpu).activations_bytes -
      estimate_peak_memory(with.model, with.parallelism, with.training, gpu).activations_bytes;
  // Per layer and token: 8 heads of a 48-wide query and key (32 + 16 rotary) and a 32-wide value, bf16; one layer's
  // are live again during its backward.
  const double per_layer = 256.0 * 8.0 * (2.0 * 48.0 + 32.0) * 2.0;
  EXPECT_DOUBLE_EQ(saved, (kLayers - 1) * per_layer);
}

// Megatron-Core's unfused DotProductAttention takes multi-latent attention's heads as they are (the functional test
// gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed runs MLA with --attention-backend unfused): the scores' GEMM is over
// the 48-wide query/key heads, the probabilities' over the 32-wide value heads.
TEST(MlaEagerAttention, TheScoresUseTheQueryKeyWidthAndTheOutputTheValueWidth) {
  test::TinyRun r = mla_run(false);
  r.training.attention = std::string(kEagerAttention);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  const double scores = 256.0 * 256.0 * 8.0;  // every (query, key) pair of the 8 heads
  double scores_flops = 0.0, probs_v_flops = 0.0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) {
      if (op.pass != Pass::forward) continue;
      if (workload.name(op) == "attention_scores") scores_flops += op.flops;
      if (workload.name(op) == "attention_probs_v") probs_v_flops += op.flops;
    }
  EXPECT_DOUBLE_EQ(scores_flops, kLayers * 2.0 * scores * 48.0);
  EXPECT_DOUBLE_EQ(probs_v_flops, kLayers * 2.0 * scores * 32.0);
}

}  // namespace
}  // namespace chopsim
