// Transformer Engine's FP8 scaling recipes (TrainingSpec::fp8_recipe) against what its quantizers launch
// (transformer_engine/pytorch/csrc/quantizer.cpp, Float8CurrentScalingQuantizer::quantize_impl; csrc/extensions/
// normalization.cpp; module/linear.py): delayed scaling and MXFP8 cast in one pass; current scaling first reduces
// the tensor to its amax (one more read, two more launches with the scale), except where TE's fused norm found the
// amax (QKV and fc1: the scale's launch only), and with sequence parallelism all-reduces the amax of the
// column-parallel inputs and the row-parallel output gradients over the tensor-parallel group.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

constexpr int kLayers = 8;
constexpr int kMicroBatches = 2;

using Fp8Run = test::TinyRun;

/// The tiny dense model in fp8 on tp 2 with sequence parallelism, two micro-batches, no recomputation.
Fp8Run fp8_run(Fp8Recipe recipe) {
  Fp8Run r;
  r.parallelism.tp = 2;
  r.parallelism.sequence_parallel = true;
  r.training.precision = Precision::fp8;
  r.training.fp8_recipe = recipe;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = kMicroBatches;
  return r;
}

struct Census {
  int casts = 0;         ///< the fp8 casts themselves
  int amax_passes = 0;   ///< current scaling's reductions to the amax
  int scales = 0;        ///< the scale kernels of casts whose norm found the amax
  int amax_reduces = 0;  ///< all-reduces of an amax over tp
  double cast_bytes = 0.0, amax_bytes = 0.0;
  double launches = 0.0;  ///< host launches of all of the above but the casts
};

Census census(const Workload& workload) {
  Census c;
  const Program& program = workload.program(0);
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    const std::string_view name = workload.name(op);
    if (name.ends_with("_fp8_cast")) {
      ++c.casts;
      c.cast_bytes += op.bytes;
    } else if (name.ends_with("_fp8_cast_amax")) {
      ++c.amax_passes;
      c.amax_bytes += op.bytes;
      c.launches += step.launches;
    } else if (name.ends_with("_fp8_cast_scale")) {
      ++c.scales;
      c.launches += step.launches;
    } else if (name.ends_with("_fp8_amax_all_reduce")) {
      ++c.amax_reduces;
      EXPECT_EQ(op.kind, OpKind::collective);
      EXPECT_EQ(op.group, GroupRole::tp);
      EXPECT_DOUBLE_EQ(op.bytes, 4.0);  // one fp32 amax
    }
  }
  return c;
}

TEST(Fp8Scaling, DelayedScalingAndMxfp8CastInOnePass) {
  for (const Fp8Recipe recipe : {Fp8Recipe::delayed, Fp8Recipe::mxfp8}) {
    SCOPED_TRACE(std::string(to_string(recipe)));
    const Fp8Run r = fp8_run(recipe);
    const Census c = census(build_workload(r.model, r.parallelism, r.training));
    EXPECT_GT(c.casts, 0);
    EXPECT_EQ(c.amax_passes + c.scales + c.amax_reduces, 0);
  }
}

TEST(Fp8Scaling, CurrentScalingReadsEachTensorOnceMoreUnlessItsNormFoundTheAmax) {
  const Fp8Run delayed_run = fp8_run(Fp8Recipe::delayed);
  const Fp8Run current_run = fp8_run(Fp8Recipe::current);
  const Workload delayed = build_workload(delayed_run.model, delayed_run.parallelism, delayed_run.training);
  const Workload current = build_workload(current_run.model, current_run.parallelism, current_run.training);
  EXPECT_NO_THROW(check_workload_completes(current));
  const Census d = census(delayed), c = census(current);
  EXPECT_EQ(c.casts, d.casts);
  EXPECT_DOUBLE_EQ(c.cast_bytes, d.cast_bytes);
  // Per layer and micro-batch, the forward's QKV and fc1 inputs come from a fused norm (the scale only); the output
  // projection's and fc2's inputs and the four dgrads' output gradients take an amax pass. Userbuffers are off, so
  // no GEMM is split. The weights' casts (first micro-batch) take one each as well.
  const int weight_casts = 4 * kLayers;
  EXPECT_EQ(c.scales, 2 * kLayers * kMicroBatches);
  EXPECT_EQ(c.amax_passes, (2 + 4) * kLayers * kMicroBatches + weight_casts);
  EXPECT_DOUBLE_EQ(c.launches, 2.0 * c.amax_passes + c.scales);
  // An amax pass reads the bf16 tensor (2 bytes per element) that its cast reads and writes (4).
  double own_amax_cast_bytes = 0.0;
  const Program& program = current.program(0);
  std::string previous;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    const std::string name(current.name(op));
    if (name.ends_with("_fp8_cast") && previous == name + "_amax") own_amax_cast_bytes += op.bytes;
    previous = name;
  }
  EXPECT_DOUBLE_EQ(c.amax_bytes, own_amax_cast_bytes / 2.0);
}

TEST(Fp8Scaling, CurrentScalingAllReducesTheAmaxOfTheGatheredShards) {
  // Sequence parallelism: the column-parallel inputs (QKV, fc1) in the forward and the row-parallel output gradients
  // (output projection, fc2) in the backward are quantized as shards and gathered in fp8: four per layer and
  // micro-batch. Without tensor parallelism there is nothing to agree on.
  const Fp8Run r = fp8_run(Fp8Recipe::current);
  EXPECT_EQ(census(build_workload(r.model, r.parallelism, r.training)).amax_reduces, 4 * kLayers * kMicroBatches);
  Fp8Run single = fp8_run(Fp8Recipe::current);
  single.parallelism.tp = 1;
  single.parallelism.sequence_parallel = false;
  EXPECT_EQ(census(build_workload(single.model, single.parallelism, single.training)).amax_reduces, 0);
}

TEST(Fp8Scaling, ASplitGemmScalesItsInputOnce) {
  // Userbuffers split the QKV and fc1 GEMMs into the rows that arrive during the ring exchange and the last ones, and
  // the output projection's and fc2's dgrads likewise: the later chunk's cast reuses the scale.
  Fp8Run split = fp8_run(Fp8Recipe::current);
  split.training.overlap.tp = true;
  const Fp8Run whole = fp8_run(Fp8Recipe::current);
  const Census s = census(build_workload(split.model, split.parallelism, split.training));
  const Census w = census(build_workload(whole.model, whole.parallelism, whole.training));
  EXPECT_EQ(s.casts, w.casts + 4 * kLayers * kMicroBatches);  // the later chunks' casts
  EXPECT_EQ(s.amax_passes, w.amax_passes);
  EXPECT_EQ(s.scales, w.scales);
}

}  // namespace
}  // namespace chopsim
