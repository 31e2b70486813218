// Qwen3's norms of each head's query and key (TransformerSpec::qk_norm; Megatron-Core's qk_layernorm): the kernels
// Megatron-Core's SelfAttention and Transformer Engine's norm launch for them, the bytes a norm moves (reads x, writes
// y; backward reads x and dy, writes dx), and the inputs kept for the backward.

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

using NormRun = test::TinyRun;

/// The tiny model (8 query heads over 4 KV heads of 32) on tp 2 with sequence parallelism, one micro-batch.
NormRun norm_run(bool qk_norm) {
  NormRun r;
  r.model.qk_norm = qk_norm;
  r.parallelism.tp = 2;
  r.parallelism.sequence_parallel = true;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 1;
  return r;
}

TEST(QkNorm, EachLayerNormsItsQueryAndKeyHeadsBeforeTheRotaryEmbedding) {
  const NormRun r = norm_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  // The rank's heads over the whole sequence (the QKV output is not sequence-parallel): (4 + 2) heads x 32 x 256.
  const double elements = 256.0 * (8.0 / 2.0 + 4.0 / 2.0) * 32.0;
  int forward = 0, backward = 0;
  std::string previous;
  const Program& program = workload.program(0);
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    const std::string name(workload.name(op));
    if (name == "qk_norm") {
      ++forward;
      EXPECT_EQ(previous, "qkv_proj");
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * 2.0 * elements);  // bf16 in and out
      EXPECT_EQ(step.launches, 2);                       // q_layernorm and k_layernorm
      EXPECT_EQ(op.kernel_class, KernelClass::norm);
    }
    if (name == "rotary") {
      EXPECT_EQ(previous, "qk_norm");
    }
    if (name == "qk_norm_bwd") {
      ++backward;
      EXPECT_EQ(previous, "rotary_bwd");
      EXPECT_DOUBLE_EQ(op.bytes, 3.0 * 2.0 * elements);
      EXPECT_EQ(step.launches, 4);  // each norm's input gradient and its weight gradient's finalize
    }
    previous = name;
  }
  EXPECT_EQ(forward, kLayers);
  EXPECT_EQ(backward, kLayers);
}

TEST(QkNorm, TheNormsInputsAreKeptForTheBackward) {
  const NormRun with = norm_run(true), without = norm_run(false);
  HardwareSpec gpu;
  gpu.name = "test-gpu";
  gpu.hbm_capacity_bytes = 80e9;
  const double kept = estimate_peak_memory(with.model, with.parallelism, with.training, gpu).activations_bytes -
                      estimate_peak_memory(without.model, without.parallelism, without.training, gpu).activations_bytes;
  // Per layer and token: the rank's 6 heads x 32 bf16 inputs and an fp32 rstd per head.
  EXPECT_DOUBLE_EQ(kept, kLayers * 256.0 * 6.0 * (32.0 * 2.0 + 4.0));
}

TEST(QkNorm, ModelsWithoutThemLaunchNothingForThem) {
  const NormRun r = norm_run(false);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) EXPECT_FALSE(workload.name(op).starts_with("qk_norm"));
}

}  // namespace
}  // namespace chopsim
