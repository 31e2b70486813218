// What the training loop runs around the layers (models/src/workload_trainer.cpp), counted against the code that
// runs it: Composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py: a Python loop over the tensors, eight
// unfused kernels each after a .item() of the tensor's GPU step counter), PyTorch's gradient clipping (which always
// multiplies the gradients by the clamped coefficient), and Composer's train metrics over the logits after every
// micro-batch (LanguageCrossEntropy and LanguagePerplexity: an unfused cross entropy in fp32 each; TokenAccuracy:
// an argmax and a boolean-mask selection the host waits for).

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/common/pytorch_softmax.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

/// The tiny model under FSDP1 (full shard) over 8 ranks, fp32 gradient reduction, two micro-batches per step.
test::TinyRun composer_run() {
  test::TinyRun r;
  r.parallelism.dp = 8;
  r.parallelism.zero_stage = 3;
  r.training.micro_batch = 2;
  r.training.seq_len = 256;
  r.training.global_batch = 2 * 2 * 8;
  r.training.fsdp_reduce_fp32 = true;
  r.training.fsdp_implementation = FsdpImplementation::fsdp1;
  return r;
}

struct Cost {
  int ops = 0;
  double bytes = 0.0;
  double launches = 0.0;
  int host_waits = 0;
};

/// Rank 0's ops whose name starts with `prefix`: how many, their bytes, host launches and host waits.
Cost cost_of(const Workload& workload, std::string_view prefix) {
  Cost cost;
  const Program& program = workload.program(0);
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (!workload.name(op).starts_with(prefix)) continue;
    ++cost.ops;
    cost.bytes += op.bytes;
    cost.launches += step.launches;
    cost.host_waits += step.host_waits ? 1 : 0;
  }
  return cost;
}

TEST(Trainer, DecoupledAdamWMovesEightyBytesPerParameterTensorByTensorWithAHostWaitEach) {
  test::TinyRun r = composer_run();
  const Workload fused = build_workload(r.model, r.parallelism, r.training);
  r.training.optimizer = Optimizer::decoupled_adamw;
  const Workload loop = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(loop));

  // The fused step reads the fp32 parameter, both moments and the fp32 gradient and writes the three back, plus the
  // bf16 copy chopsim writes outside eager PyTorch: 30 bytes per parameter of the shard. That gives the shard's size.
  const Cost adamw = cost_of(fused, "adamw");
  ASSERT_EQ(adamw.ops, 1);
  const double shard_parameters = adamw.bytes / 30.0;
  EXPECT_EQ(cost_of(loop, "adamw").ops, 0);

  // Composer's loop, per element: m.mul_ 8, m.add_(g) 12, v.mul_ 8, v.addcmul_(g, g) 12, sqrt 8, division 8,
  // add_(eps) 8, p.addcdiv_ 16 = 80 bytes (no weight decay, as llm-foundry's YAMLs run it).
  const Cost decoupled = cost_of(loop, "decoupled_adamw");
  EXPECT_NEAR(decoupled.bytes, 80.0 * shard_parameters, 1e-6 * decoupled.bytes);
  // One op per tensor of the shard, each waited for by the host (the next tensor's .item()); eight launches each,
  // and the first carries every tensor's step-counter increment.
  EXPECT_GT(decoupled.ops, 1);
  EXPECT_EQ(decoupled.host_waits, decoupled.ops);
  EXPECT_DOUBLE_EQ(decoupled.launches, 8.0 * decoupled.ops + decoupled.ops);
}

TEST(Trainer, PyTorchGradientClippingAlwaysRescalesMegatronsDoesNot) {
  test::TinyRun r = composer_run();
  const Workload pytorch = build_workload(r.model, r.parallelism, r.training);
  const Cost norm = cost_of(pytorch, "grad_norm");
  const Cost scale = cost_of(pytorch, "grad_clip_scale");
  ASSERT_EQ(norm.ops, 1);
  ASSERT_EQ(scale.ops, 1);
  // The norm reads each fp32 gradient once; the rescale reads and writes it.
  EXPECT_DOUBLE_EQ(scale.bytes, 2.0 * norm.bytes);
  r.training.fsdp_implementation = FsdpImplementation::megatron;
  const Workload megatron = build_workload(r.model, r.parallelism, r.training);
  EXPECT_EQ(cost_of(megatron, "grad_norm").ops, 1);
  EXPECT_EQ(cost_of(megatron, "grad_clip_scale").ops, 0);
  r.training.grad_clip = false;
  r.training.fsdp_implementation = FsdpImplementation::fsdp1;
  const Workload unclipped = build_workload(r.model, r.parallelism, r.training);
  EXPECT_EQ(cost_of(unclipped, "grad_clip_scale").ops, 0);
}

TEST(Trainer, TrainMetricsReadTheLogitsAfterEveryMicroBatch) {
  test::TinyRun r = composer_run();
  const Workload none = build_workload(r.model, r.parallelism, r.training);
  EXPECT_EQ(cost_of(none, "language_").ops, 0);  // no metrics unless listed
  r.training.train_metrics = {TrainMetric::language_cross_entropy, TrainMetric::language_perplexity,
                              TrainMetric::token_accuracy};
  const Workload metrics = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(metrics));
  const double micro_batches = 2.0;
  const double logits = r.training.micro_batch * r.training.seq_len * r.model.vocab;
  // Each cross entropy under autocast: the bf16 logits cast to fp32 (2 + 4 bytes), then log_softmax over the tiny
  // model's vocabulary, whose fp32 rows fit in a block's shared memory: one read and a write (8 bytes), per logit and
  // micro-batch.
  ASSERT_LT(4.0 * r.model.vocab, kPytorchSoftmaxSharedMemoryBytes);
  for (const std::string metric : {"language_cross_entropy", "language_perplexity"}) {
    SCOPED_TRACE(metric);
    EXPECT_DOUBLE_EQ(cost_of(metrics, metric + "_logits_float").bytes, micro_batches * 6.0 * logits);
    EXPECT_DOUBLE_EQ(cost_of(metrics, metric + "_log_softmax").bytes, micro_batches * 8.0 * logits);
    EXPECT_EQ(cost_of(metrics, metric + "_update").host_waits, 0);
  }
  {
    // MPT's vocabulary (50,368: 197 KiB of fp32 per row) takes the multi-pass kernel: three reads and a write.
    test::TinyRun mpt = r;
    mpt.model.vocab = 50368;
    const Workload wide = build_workload(mpt.model, mpt.parallelism, mpt.training);
    const double wide_logits =
        mpt.training.micro_batch * mpt.training.seq_len * mpt.model.vocab_per_tp_rank(mpt.parallelism.tp);
    EXPECT_DOUBLE_EQ(cost_of(wide, "language_cross_entropy_log_softmax").bytes, micro_batches * 16.0 * wide_logits);
  }
  // TokenAccuracy: the argmax reads the bf16 logits once; the masked selection makes the host wait (nonzero).
  EXPECT_DOUBLE_EQ(cost_of(metrics, "token_accuracy_argmax").bytes, micro_batches * 2.0 * logits);
  EXPECT_EQ(cost_of(metrics, "token_accuracy_update").host_waits, 2);
  // They come after the micro-batch's backward: each metric op follows the last backward op of its micro-batch.
  const Program& program = metrics.program(0);
  int after_backward = 0;
  bool backward_seen = false;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (op.pass == Pass::backward && !metrics.name(op).starts_with("language_") &&
        !metrics.name(op).starts_with("token_accuracy"))
      backward_seen = true;
    if (metrics.name(op) == "language_cross_entropy_logits_float") {
      EXPECT_TRUE(backward_seen);
      ++after_backward;
      backward_seen = false;
    }
  }
  EXPECT_EQ(after_backward, 2);
}

}  // namespace
}  // namespace chopsim
