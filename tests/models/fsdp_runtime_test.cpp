// The kernels PyTorch's FSDP runtimes launch around their collectives (TrainingSpec::fsdp_implementation;
// models/src/workload_fsdp.cpp), counted against what torch/distributed/fsdp's code does per unit and micro-batch:
// FSDP1 (FlatParameter, _runtime_utils.py) casts the shard before the all-gather, cats the gradients into the flat
// gradient, casts it to the reduce dtype and pre-divides it before the reduce-scatter, post-divides and accumulates the
// shard after it; FSDP2 (fully_shard) copies the shards in and the gathered rows out, and the gradients into the
// reduce-scatter's input. Megatron-FSDP launches none of them.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

constexpr int kLayers = 8;

/// The tiny model under FSDP (full shard) over `dp` ranks, two micro-batches per step, fp32 gradient reduction.
test::TinyRun fsdp_run(FsdpImplementation implementation, int dp = 8) {
  test::TinyRun r;
  r.parallelism.dp = dp;
  r.parallelism.zero_stage = 3;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 2 * dp;
  r.training.fsdp_reduce_fp32 = true;
  r.training.fsdp_implementation = implementation;
  return r;
}

struct Named {
  const Op* op = nullptr;
  std::string stream;
  std::size_t index = 0;  ///< position on its stream
};

/// Every op of rank 0 called `name`, in stream order.
std::vector<Named> ops_named(const Workload& workload, std::string_view name) {
  std::vector<Named> found;
  for (const Stream& stream : workload.program(0).streams)
    for (std::size_t i = 0; i < stream.ops.size(); ++i)
      if (workload.name(stream.ops[i]) == name) found.push_back({&stream.ops[i], stream.name, i});
  return found;
}

/// Per transformer layer and micro-batch: the first op called `name` of that layer's backward (or forward).
std::map<std::pair<int, int>, Named> by_layer(const Workload& workload, std::string_view name, Pass pass) {
  std::map<std::pair<int, int>, Named> found;
  for (const Named& n : ops_named(workload, name))
    if (n.op->layer >= 0 && n.op->pass == pass) found.emplace(std::make_pair(n.op->layer, n.op->micro_batch), n);
  return found;
}

TEST(FsdpRuntime, Fsdp1CastsCatsAndDividesEachUnitsGradientsAroundItsReduceScatter) {
  const test::TinyRun r = fsdp_run(FsdpImplementation::fsdp1);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  const auto scatters = by_layer(workload, "fsdp_reduce_scatter", Pass::backward);
  const auto flatten = by_layer(workload, "fsdp_grad_flatten", Pass::backward);
  const auto cast = by_layer(workload, "fsdp_grad_cast", Pass::backward);
  const auto predivide = by_layer(workload, "fsdp_grad_predivide", Pass::backward);
  const auto postdivide = by_layer(workload, "fsdp_grad_postdivide", Pass::backward);
  const auto accumulate = by_layer(workload, "fsdp_grad_accumulate", Pass::backward);
  ASSERT_EQ(scatters.size(), 2u * kLayers);
  EXPECT_EQ(flatten.size(), 2u * kLayers);
  EXPECT_EQ(cast.size(), 2u * kLayers);
  EXPECT_EQ(predivide.size(), 2u * kLayers);
  EXPECT_EQ(postdivide.size(), 2u * kLayers);  // 8 ranks: pre-divide by 4, post-divide by 2
  EXPECT_EQ(accumulate.size(), 1u * kLayers);  // the second micro-batch adds to the first one's shard
  for (const auto& [key, scatter] : scatters) {
    // The reduce-scatter moves the layer's unsharded fp32 gradient: P parameters x 4 bytes.
    const double parameters = scatter.op->bytes / 4.0;
    EXPECT_EQ(flatten.at(key).stream, "compute");
    EXPECT_DOUBLE_EQ(flatten.at(key).op->bytes, parameters * 2.0 * 2.0);  // cat of the bf16 gradients
    EXPECT_EQ(flatten.at(key).op->kernel_class, KernelClass::memcpy);
    for (const auto* side : {&cast, &predivide, &postdivide}) EXPECT_EQ(side->at(key).stream, "fsdp_rs");
    EXPECT_DOUBLE_EQ(cast.at(key).op->bytes, parameters * (2.0 + 4.0));  // bf16 read, fp32 written
    // PyTorch's TensorIterator paths: the bf16 -> fp32 cast casts element by element (unrolled); the in-place
    // fp32 divisions and the accumulation are vectorized; the cat is a kernel of its own.
    EXPECT_EQ(cast.at(key).op->elementwise_path, ElementwisePath::unrolled);
    EXPECT_EQ(predivide.at(key).op->elementwise_path, ElementwisePath::vectorized);
    EXPECT_EQ(postdivide.at(key).op->elementwise_path, ElementwisePath::vectorized);
    EXPECT_EQ(flatten.at(key).op->elementwise_path, ElementwisePath::fused);
    EXPECT_DOUBLE_EQ(predivide.at(key).op->bytes, parameters * 8.0);  // in place, fp32
    EXPECT_DOUBLE_EQ(postdivide.at(key).op->bytes, parameters / 8.0 * 8.0);
    // Stream order: cast, pre-divide, reduce-scatter, post-divide.
    EXPECT_LT(cast.at(key).index, predivide.at(key).index);
    EXPECT_LT(predivide.at(key).index, scatter.index);
    EXPECT_LT(scatter.index, postdivide.at(key).index);
    if (key.second == 1) {
      EXPECT_DOUBLE_EQ(accumulate.at(key).op->bytes, parameters / 8.0 * 12.0);
    }
  }
  // Before every all-gather, the local fp32 shard cast to bf16: P / 8 x (4 + 2) bytes, on the gather's stream.
  const auto gathers = ops_named(workload, "fsdp_all_gather");
  const auto shard_casts = ops_named(workload, "fsdp_shard_cast");
  ASSERT_EQ(gathers.size(), shard_casts.size());
  for (std::size_t i = 0; i < gathers.size(); ++i) {
    EXPECT_EQ(shard_casts[i].stream, "fsdp_ag");
    EXPECT_EQ(shard_casts[i].index + 1, gathers[i].index);
    EXPECT_DOUBLE_EQ(shard_casts[i].op->bytes, gathers[i].op->bytes / 2.0 / 8.0 * 6.0);
    EXPECT_EQ(shard_casts[i].op->elementwise_path, ElementwisePath::vectorized);  // fp32 -> bf16 has its own kernel
  }
}

TEST(FsdpRuntime, Fsdp1PostDividesOnlyWhenThePreDivisionLeavesAFactor) {
  // Two ranks: PyTorch's pre-divide factor is 2 = the world size, so nothing is left to divide after the reduction.
  const test::TinyRun r = fsdp_run(FsdpImplementation::fsdp1, 2);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_FALSE(ops_named(workload, "fsdp_grad_predivide").empty());
  EXPECT_TRUE(ops_named(workload, "fsdp_grad_postdivide").empty());
}

TEST(FsdpRuntime, Fsdp2CopiesTheGatheredRowsOutOnTheComputeStreamAndTheGradientsIntoTheReduceScatter) {
  const test::TinyRun r = fsdp_run(FsdpImplementation::fsdp2);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  const auto gathers = ops_named(workload, "fsdp_all_gather");
  const auto copy_in = ops_named(workload, "fsdp_all_gather_copy_in");
  const auto copy_out = ops_named(workload, "fsdp_all_gather_copy_out");
  ASSERT_EQ(copy_in.size(), gathers.size());
  ASSERT_EQ(copy_out.size(), gathers.size());
  for (std::size_t i = 0; i < gathers.size(); ++i) {
    const double parameters = gathers[i].op->bytes / 2.0;  // gathered in bf16
    EXPECT_EQ(copy_in[i].stream, "fsdp_ag");
    EXPECT_DOUBLE_EQ(copy_in[i].op->bytes, parameters / 8.0 * ((4.0 + 2.0) + 2.0 * 2.0));  // cast, then copy
    EXPECT_EQ(copy_out[i].stream, "compute");
    EXPECT_DOUBLE_EQ(copy_out[i].op->bytes, parameters * 2.0 * 2.0);
  }
  // The copy-out waits for its all-gather.
  const Program& program = workload.program(0);
  const Stream& compute = program.streams[0];
  for (const Named& out : copy_out) {
    const Op& op = compute.ops[out.index];
    bool waits_for_gather = false;
    for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
      const OpDependency& dep = program.dependencies[op.first_dependency + d];
      waits_for_gather |= program.streams[dep.stream].name == "fsdp_ag";
    }
    EXPECT_TRUE(waits_for_gather);
  }
  const auto scatters = by_layer(workload, "fsdp_reduce_scatter", Pass::backward);
  const auto scatter_in = by_layer(workload, "fsdp_reduce_scatter_copy_in", Pass::backward);
  ASSERT_EQ(scatter_in.size(), scatters.size());
  for (const auto& [key, scatter] : scatters) {
    EXPECT_DOUBLE_EQ(scatter_in.at(key).op->bytes, scatter.op->bytes / 4.0 * (2.0 + 4.0));
    EXPECT_EQ(scatter_in.at(key).index + 1, scatter.index);
  }
  // bf16 and fp32 reductions average inside NCCL: no division kernels; nothing of FSDP1's gradient path.
  for (const char* absent : {"fsdp_grad_predivide", "fsdp_grad_postdivide", "fsdp_grad_flatten", "fsdp_shard_cast"})
    EXPECT_TRUE(ops_named(workload, absent).empty()) << absent;
  EXPECT_EQ(ops_named(workload, "fsdp_grad_accumulate").size(), 1u * kLayers + 2u);  // the layers, embedding, head
}

/// Whether the first compute-stream op of micro-batch 1 waits for the last op micro-batch 0 put on the reduce-scatter
/// stream.
bool next_micro_batch_waits_for_the_reduce_scatters(const Workload& workload) {
  const Program& program = workload.program(0);
  std::uint16_t rs = 0;
  std::uint32_t last_rs = 0;
  bool found = false;
  for (std::uint16_t s = 0; s < program.streams.size(); ++s) {
    if (program.streams[s].name != "fsdp_rs") continue;
    rs = s;
    for (std::uint32_t i = 0; i < program.streams[s].ops.size(); ++i)
      if (program.streams[s].ops[i].micro_batch == 0) {
        last_rs = i;
        found = true;
      }
  }
  if (!found) return false;
  for (const Op& op : program.streams[0].ops) {
    if (op.micro_batch != 1) continue;
    for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
      const OpDependency& dep = program.dependencies[op.first_dependency + d];
      if (dep.stream == rs && dep.op >= last_rs) return true;
    }
    return false;
  }
  return false;
}

// PyTorch's FSDP ends each backward with the compute stream waiting for its reduce-scatters (FSDP1's
// _post_backward_final_callback, FSDP2's _root_post_backward_final_callback); Megatron-FSDP does not.
TEST(FsdpRuntime, PyTorchsFsdpEndsEachBackwardWaitingForItsReduceScatters) {
  for (const FsdpImplementation implementation : {FsdpImplementation::fsdp1, FsdpImplementation::fsdp2}) {
    SCOPED_TRACE(std::string(to_string(implementation)));
    const test::TinyRun r = fsdp_run(implementation);
    const Workload workload = build_workload(r.model, r.parallelism, r.training);
    EXPECT_NO_THROW(check_workload_completes(workload));
    EXPECT_TRUE(next_micro_batch_waits_for_the_reduce_scatters(workload));
  }
  const test::TinyRun megatron = fsdp_run(FsdpImplementation::megatron);
  EXPECT_FALSE(next_micro_batch_waits_for_the_reduce_scatters(
      build_workload(megatron.model, megatron.parallelism, megatron.training)));
}

TEST(FsdpRuntime, MegatronFsdpLaunchesNothingButItsCollectives) {
  const test::TinyRun r = fsdp_run(FsdpImplementation::megatron);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  for (const char* absent :
       {"fsdp_shard_cast", "fsdp_grad_flatten", "fsdp_grad_cast", "fsdp_grad_predivide", "fsdp_grad_postdivide",
        "fsdp_grad_accumulate", "fsdp_all_gather_copy_in", "fsdp_all_gather_copy_out", "fsdp_reduce_scatter_copy_in"})
    EXPECT_TRUE(ops_named(workload, absent).empty()) << absent;
  EXPECT_FALSE(ops_named(workload, "fsdp_reduce_scatter").empty());
}

TEST(FsdpRuntime, ShardGradOpGathersForTheForwardKeepsForTheBackwardAndReducesEveryUnit) {
  // FSDP1's SHARD_GRAD_OP (zero_stage 2): each micro-batch's forward gathers a unit, its backward reuses it, and the
  // unit's gradients are reduce-scattered after it with FSDP1's kernels; no Megatron buckets, no gather after the step.
  test::TinyRun r = fsdp_run(FsdpImplementation::fsdp1);
  r.parallelism.zero_stage = 2;
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  const auto gathers = ops_named(workload, "fsdp_all_gather");
  ASSERT_EQ(gathers.size(), 2u * (kLayers + 2));  // embedding, layers and head, per micro-batch
  for (const Named& g : gathers) EXPECT_EQ(g.op->pass, Pass::forward);
  EXPECT_EQ(by_layer(workload, "fsdp_reduce_scatter", Pass::backward).size(), 2u * kLayers);
  EXPECT_EQ(by_layer(workload, "fsdp_grad_predivide", Pass::backward).size(), 2u * kLayers);
  for (const char* absent : {"dp_reduce_scatter", "dp_param_all_gather", "zero_grad_buffer"})
    EXPECT_TRUE(ops_named(workload, absent).empty()) << absent;
  // Megatron's ZeRO-2 stays its distributed optimizer over gradient buckets.
  r.training.fsdp_implementation = FsdpImplementation::megatron;
  const Workload megatron = build_workload(r.model, r.parallelism, r.training);
  EXPECT_TRUE(ops_named(megatron, "fsdp_all_gather").empty());
  EXPECT_FALSE(ops_named(megatron, "dp_reduce_scatter").empty());
}

TEST(FsdpRuntime, EachFrameworkHasItsOwnDefault) {
  TrainingSpec training;
  EXPECT_EQ(training.fsdp_runtime(), FsdpImplementation::megatron);
  training.framework = Framework::pytorch_eager;
  EXPECT_EQ(training.fsdp_runtime(), FsdpImplementation::fsdp2);  // torchtitan's fully_shard
  training.fsdp_implementation = FsdpImplementation::fsdp1;
  EXPECT_EQ(training.fsdp_runtime(), FsdpImplementation::fsdp1);
}

TEST(FsdpRuntime, FullPrecisionRunsCastNothing) {
  test::TinyRun r = fsdp_run(FsdpImplementation::fsdp1);
  r.training.precision = Precision::fp32;
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_TRUE(ops_named(workload, "fsdp_shard_cast").empty());
  EXPECT_TRUE(ops_named(workload, "fsdp_grad_cast").empty());
  EXPECT_FALSE(ops_named(workload, "fsdp_grad_flatten").empty());
}

TEST(FsdpRuntime, WithoutOverlapEveryKernelRunsInLineOnTheComputeStream) {
  test::TinyRun r = fsdp_run(FsdpImplementation::fsdp1);
  r.training.overlap.fsdp = false;
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  for (const char* name : {"fsdp_shard_cast", "fsdp_grad_cast", "fsdp_grad_predivide", "fsdp_grad_postdivide"})
    for (const Named& n : ops_named(workload, name)) EXPECT_EQ(n.stream, "compute") << name;
}

}  // namespace
}  // namespace chopsim
