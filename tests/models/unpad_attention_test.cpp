// llm-foundry's flash-attn 2 path (TrainingSpec::unpad_attention): flash-attn v2.4.2's bert_padding.unpad_input for
// Q, K and V before the varlen kernel, pad_input for its output after it, and their autograd backward. Checked
// against what that code does (flash_attn/bert_padding.py): per layer forward three gathers (each reads and writes
// its tensor) and two host synchronisations per gather (torch.nonzero, max().item()), torch.zeros and an index_put
// for the output; backward a gather of the output gradient and, per input, torch.zeros and a scatter. For multi-head
// attention that is 9 + 11 = 20 times one [tokens, hidden] tensor's bytes per layer, and nothing without the flag.

#include <gtest/gtest.h>

#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

/// The tiny model made multi-head (8 heads of 32, as MPT's), on one GPU, one micro-batch of 2 x 256 tokens.
test::TinyRun foundry_run(bool unpad) {
  test::TinyRun r;
  r.model.kv_heads = r.model.heads;
  r.parallelism.dp = 1;
  r.training.micro_batch = 2;
  r.training.seq_len = 256;
  r.training.global_batch = 2;
  r.training.attention = "flash2";
  r.training.unpad_attention = unpad;
  return r;
}

constexpr int kLayers = 8;
constexpr double kTensorBytes = 2.0 * 256.0 * 256.0 * 2.0;  // tokens x hidden x bf16

bool is_unpad_op(const std::string& name) { return name.starts_with("unpad_") || name.starts_with("pad_output"); }

TEST(UnpadAttention, TwentyTensorsOfTrafficAndSixHostWaitsPerLayer) {
  const test::TinyRun r = foundry_run(true);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  const Program& program = workload.program(0);
  double copied = 0.0;
  int gathers = 0, scatters = 0;
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops) {
      const std::string name(workload.name(op));
      if (!is_unpad_op(name) || op.kernel_class != KernelClass::memcpy) continue;
      copied += op.bytes;
      gathers += name.starts_with("unpad_gather_") ? 1 : 0;
      scatters += name.starts_with("unpad_bwd_scatter_") ? 1 : 0;
    }
  EXPECT_DOUBLE_EQ(copied, kLayers * 20.0 * kTensorBytes);
  EXPECT_EQ(gathers, 3 * kLayers);
  EXPECT_EQ(scatters, 3 * kLayers);
  // The host blocks after torch.nonzero and after max().item(), for each of Q, K and V.
  int host_waits = 0;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (step.host_waits && is_unpad_op(std::string(workload.name(op)))) ++host_waits;
  }
  EXPECT_EQ(host_waits, 6 * kLayers);
  EXPECT_EQ(issue_order_problem(program), "");
}

TEST(UnpadAttention, TheTritonAndCudnnPathsHaveNone) {
  const test::TinyRun r = foundry_run(false);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) EXPECT_FALSE(is_unpad_op(std::string(workload.name(op)))) << workload.name(op);
}

TEST(UnpadAttention, NeedsAFusedKernelWithoutContextParallelism) {
  test::TinyRun cp = foundry_run(true);
  cp.parallelism.cp = 2;
  cp.training.seq_len = 256;
  try {
    (void)build_workload(cp.model, cp.parallelism, cp.training);
    ADD_FAILURE() << "built with cp 2";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("unpad_attention"), std::string::npos) << error.what();
  }
  cp.training.unpad_attention = false;
  EXPECT_NO_THROW((void)build_workload(cp.model, cp.parallelism, cp.training));
}

}  // namespace
}  // namespace chopsim
