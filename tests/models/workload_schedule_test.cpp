// Workload generation, pipeline order and communication volumes: the 1F1B and interleaved schedules and their
// layer splits, data-parallel buckets and the distributed optimizer, FSDP's gathers and reductions, tensor- and
// context-parallel collectives, each against hand counts.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"
#include "workload_queries.hpp"

namespace chopsim {
namespace {

using test::bytes_of;
using test::count_of;
using test::RunSetup;
using test::setup;

/// Per stage: order of (micro-batch, chunk) forward starts and backward ends on the compute stream.
struct PassOrder {
  std::map<std::pair<int, int>, std::size_t> first_forward;
  std::map<std::pair<int, int>, std::size_t> last_backward;
  int max_in_flight = 0;
};

PassOrder pass_order(const Program& program, int layers_per_chunk, int pp, int stage) {
  PassOrder order;
  const auto& ops = program.streams[0].ops;
  auto chunk_of = [&](const Op& op) { return op.layer < 0 ? -1 : (op.layer / layers_per_chunk - stage) / pp; };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.micro_batch < 0 || op.layer < 0) continue;
    const std::pair<int, int> key{op.micro_batch, chunk_of(op)};
    if (op.pass == Pass::forward && !order.first_forward.count(key)) order.first_forward[key] = i;
    if (op.pass == Pass::backward) order.last_backward[key] = i;
  }
  // Activations are held from a chunk's first forward op to its last backward op.
  std::vector<std::pair<std::size_t, int>> events;
  for (const auto& [key, index] : order.first_forward) events.emplace_back(index, +1);
  for (const auto& [key, index] : order.last_backward) events.emplace_back(index, -1);
  std::sort(events.begin(), events.end());
  int in_flight = 0;
  for (const auto& [index, delta] : events) {
    in_flight += delta;
    order.max_in_flight = std::max(order.max_in_flight, in_flight);
  }
  return order;
}

TEST(PipelineSchedule, OneFOneBKeepsAtMostPpMinusStageMicroBatchesInFlight) {
  for (const int micro_batches : {2, 8}) {
    const RunSetup s = setup("pp4", 1, 1, 4, micro_batches);
    const Workload workload = build_workload(s.model, s.parallelism, s.training);
    for (int stage = 0; stage < 4; ++stage) {
      const PassOrder order = pass_order(workload.programs[stage], 2, 4, stage);
      ASSERT_EQ(order.first_forward.size(), static_cast<std::size_t>(micro_batches));
      for (const auto& [key, forward] : order.first_forward) EXPECT_LT(forward, order.last_backward.at(key));
      // PipeDream-flush: stage i runs pp - i - 1 warm-up forwards, then one forward per backward.
      EXPECT_EQ(order.max_in_flight, std::min(4 - stage, micro_batches)) << "stage " << stage;
    }
  }
}

TEST(PipelineSchedule, InterleavedFirstStageHoldsMegatronWarmupPlusOne) {
  // Megatron-Core: (pp - stage - 1)*2 + (v - 1)*pp warm-up forwards, then 1F1B.
  RunSetup s = setup("interleaved", 1, 1, 4, 8);
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  for (int stage = 0; stage < 4; ++stage) {
    const PassOrder order = pass_order(workload.programs[stage], 1, 4, stage);
    ASSERT_EQ(order.first_forward.size(), 16u);
    for (const auto& [key, forward] : order.first_forward) EXPECT_LT(forward, order.last_backward.at(key));
    EXPECT_EQ(order.max_in_flight, (4 - stage - 1) * 2 + (2 - 1) * 4 + 1) << "stage " << stage;
  }
}

TEST(PipelineSchedule, LastChunkOfLastStageFeedsNextChunkOfFirstStage) {
  RunSetup s = setup("interleaved", 1, 1, 2, 2);
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  // Stage 1 (last) sends chunk 0's output forward (+1 wraps to stage 0); stage 0 receives from -1.
  int wrap_sends = 0;
  for (const Stream& stream : workload.programs[1].streams)
    for (const Op& op : stream.ops)
      if (op.kind == OpKind::send && op.peer_offset == +1) ++wrap_sends;
  EXPECT_EQ(wrap_sends, 2);  // chunk 0 of both micro-batches
  int first_stage_activation_recvs = 0;
  for (const Stream& stream : workload.programs[0].streams)
    for (const Op& op : stream.ops)
      if (op.kind == OpKind::recv && op.peer_offset == -1) ++first_stage_activation_recvs;
  EXPECT_EQ(first_stage_activation_recvs, 2);
}

TEST(DataParallel, AllReducesEveryGradientOnceInBucketsDuringTheLastBackward) {
  const RunSetup s = setup("dp4", 4, 1, 1, 3);
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double parameters = count_parameters(s.model).total;
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "dp_all_reduce"), 4.0 * parameters);  // Megatron's fp32 gradients
  const Program& program = workload.program(0);
  int buckets = 0;
  for (const Stream& stream : program.streams) {
    for (const Op& op : stream.ops) {
      if (workload.name(op) != "dp_all_reduce") continue;
      ++buckets;
      EXPECT_EQ(stream.name, "dp");
      EXPECT_EQ(op.group, GroupRole::data);
      ASSERT_EQ(op.dependency_count, 1u);
      const OpDependency& producer = program.dependencies[op.first_dependency];
      const Op& completed_by = program.streams[producer.stream].ops[producer.op];
      EXPECT_EQ(completed_by.pass, Pass::backward);
      EXPECT_EQ(completed_by.micro_batch, 2);
      // The hook scaled the bucket by 1 / dp on the compute stream first.
      EXPECT_EQ(workload.name(completed_by), "dp_grad_scale");
    }
  }
  EXPECT_GT(buckets, 3);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "dp_grad_scale"), 2.0 * 4.0 * parameters);  // read and write, fp32
  EXPECT_EQ(count_of(workload, 0, "dp_grad_scale"), buckets);
  EXPECT_EQ(count_of(workload, 0, "dp_grad_nan_check"), 0);
  // Megatron's --check-for-nan-in-loss-and-grad: each bucket's norm, read once, before the scaling.
  RunSetup checked = s;
  checked.training.check_for_nan_in_grad = true;
  const Workload with_check = build_workload(checked.model, checked.parallelism, checked.training);
  EXPECT_DOUBLE_EQ(bytes_of(with_check, 0, "dp_grad_nan_check"), 4.0 * parameters);
  EXPECT_EQ(count_of(with_check, 0, "dp_grad_nan_check"), buckets);
  // The step starts by zeroing the whole fp32 gradient buffer (Megatron's zero_grad_buffer).
  const Op& first = program.streams[0].ops.front();
  EXPECT_EQ(workload.name(first), "zero_grad_buffer");
  EXPECT_DOUBLE_EQ(first.bytes, 4.0 * parameters);
  // One data-parallel rank: nothing to average, nothing to scale.
  const RunSetup single = setup("dp1", 1, 1, 1, 3);
  EXPECT_EQ(count_of(build_workload(single.model, single.parallelism, single.training), 0, "dp_grad_scale"), 0);
  // The optimizer step waits for the last bucket: its first op, the gradient norm for clipping, then AdamW.
  const auto& compute = program.streams[0].ops;
  const Op& adamw = compute.back();
  EXPECT_EQ(workload.name(adamw), "adamw");
  EXPECT_EQ(adamw.pass, Pass::optimizer);
  const Op& norm = compute[compute.size() - 2];
  EXPECT_EQ(workload.name(norm), "grad_norm");
  EXPECT_EQ(norm.pass, Pass::optimizer);
  ASSERT_EQ(norm.dependency_count, 1u);
  const OpDependency& waits_for = program.dependencies[norm.first_dependency];
  EXPECT_EQ(program.streams[waits_for.stream].name, "dp");
  EXPECT_EQ(waits_for.op, program.streams[waits_for.stream].ops.size() - 1);
  // AdamW on every parameter: fp32 master, m, v read and written, fp32 gradient read, bf16 copy written.
  EXPECT_DOUBLE_EQ(adamw.bytes, (12.0 + 4.0 + 12.0 + 2.0) * parameters);
}

TEST(DataParallel, DistributedOptimizerReduceScattersAndGathersParameters) {
  RunSetup s = setup("zero1", 4);
  s.parallelism.zero_stage = 1;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double parameters = count_parameters(s.model).total;
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "dp_reduce_scatter"), 4.0 * parameters);    // fp32 gradients
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "dp_param_all_gather"), 2.0 * parameters);  // bf16 weights
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "dp_all_reduce"), 0.0);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "adamw"), 30.0 * parameters / 4.0);
}

/// The name of the stream that carries the ops called `name` on `rank` ("" when none does).
std::string stream_of(const Workload& workload, int rank, std::string_view name) {
  const Program& program = workload.program(rank);
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name) return stream.name;
  return "";
}

TEST(DataParallel, ParameterGatherOverlapIsSetApartFromTheGradientReduction) {
  // Megatron --overlap-grad-reduce without --overlap-param-gather: the reduce-scatters overlap the backward on the dp
  // stream, the parameter all-gathers follow the optimizer step on the compute stream, after AdamW; with both, the
  // gathers run on their own stream before the next forward needs each bucket.
  RunSetup s = setup("zero1", 4);
  s.parallelism.zero_stage = 1;
  s.training.overlap.dp = true;
  s.training.overlap.param_gather = false;
  const Workload blocking = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(stream_of(blocking, 0, "dp_reduce_scatter"), "dp");
  EXPECT_EQ(stream_of(blocking, 0, "dp_param_all_gather"), blocking.program(0).streams[0].name);
  const auto& compute = blocking.program(0).streams[0].ops;
  EXPECT_EQ(blocking.name(compute.back()), "dp_param_all_gather");
  s.training.overlap.param_gather = true;
  const Workload overlapped = build_workload(s.model, s.parallelism, s.training);
  EXPECT_NE(stream_of(overlapped, 0, "dp_param_all_gather"), overlapped.program(0).streams[0].name);
  EXPECT_EQ(overlapped.name(overlapped.program(0).streams[0].ops.back()), "adamw");
  // The same bytes either way.
  EXPECT_DOUBLE_EQ(bytes_of(blocking, 0, "dp_param_all_gather"), bytes_of(overlapped, 0, "dp_param_all_gather"));
}

/// The issue step of the first op called `name` on stream 0 of the program of `rank`.
const IssueStep& issue_of(const Workload& workload, int rank, std::string_view name) {
  const Program& program = workload.program(rank);
  for (const IssueStep& step : program.issue_order)
    if (step.stream == 0 && workload.name(program.streams[0].ops[step.op]) == name) return step;
  throw std::runtime_error("no op " + std::string(name));
}

TEST(DataParallel, MegatronsHostWaitsAndLoopsAreIssueSteps) {
  // A GPT-3-style model (LayerNorm, linear biases, learned positions, untied head): 12 tensors per layer, and the
  // word and position embeddings, the final norm's weight and bias and the head: 8 x 12 + 5 = 101 tensors.
  RunSetup s = setup("megatron", 2, 1, 1, 3);
  s.model.norm = NormKind::layernorm;
  s.model.linear_bias = true;
  s.model.mlp = MlpKind::gelu;
  s.model.position_embedding = PositionEmbedding::learned;
  s.parallelism.zero_stage = 1;
  s.training.check_for_nan_in_grad = true;
  s.training.log_num_zeros_in_grad = true;
  s.training.log_params_norm = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Program& program = workload.program(0);
  int waits = 0;
  for (const IssueStep& step : program.issue_order) {
    if (!step.host_waits) continue;
    ++waits;
    const std::string name(workload.name(program.streams[step.stream].ops[step.op]));
    EXPECT_TRUE(name == "dp_grad_nan_check" || name == "loss_nan_check" || name == "grad_count_zeros" ||
                name == "params_norm")
        << name;
  }
  // One NaN test per bucket, one loss test per micro-batch, the zero count and the parameter norm.
  EXPECT_EQ(waits, count_of(workload, 0, "dp_grad_nan_check") + 3 + 2);
  EXPECT_EQ(count_of(workload, 0, "loss_nan_check"), 3);
  // The shard holds ceil(101 / 2) + 1 = 52 tensors: count_zeros launches four kernels per tensor; the optimizer
  // step launches AdamW per 36 tensors and copies each tensor back to the bf16 parameters (ZeRO 1).
  EXPECT_EQ(issue_of(workload, 0, "grad_count_zeros").launches, 4 * 52);
  EXPECT_EQ(issue_of(workload, 0, "adamw").launches, 2 + 52);
  EXPECT_FALSE(issue_of(workload, 0, "adamw").host_waits);
  // Without Megatron's checks the host never waits, and FSDP's optimizer makes no per-tensor copies.
  RunSetup plain = setup("plain", 2, 1, 1, 3);
  plain.parallelism.zero_stage = 3;
  const Workload fsdp = build_workload(plain.model, plain.parallelism, plain.training);
  for (const IssueStep& step : fsdp.program(0).issue_order) EXPECT_FALSE(step.host_waits);
  // Llama-style tiny model: 6 tensors per layer, word embedding, final norm, head: 8 x 6 + 3 = 51; ceil(51/2)+1 = 27.
  EXPECT_EQ(issue_of(fsdp, 0, "adamw").launches, 1);
}

TEST(Fsdp, GathersEachUnitForForwardAndBackwardAndReduceScattersEveryMicroBatch) {
  RunSetup s = setup("fsdp", 8, 1, 1, 2);
  s.parallelism.zero_stage = 3;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(workload, 0, "zero_grad_buffer"), 0);  // FSDP sets gradients to None
  const int units = s.model.layers + 2;                     // layers, embedding, head
  // Per micro-batch: every unit forward, every unit backward except the head, kept from its forward.
  EXPECT_EQ(count_of(workload, 0, "fsdp_all_gather"), 2 * (2 * units - 1));
  const double parameters = count_parameters(s.model).total;
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "fsdp_reduce_scatter"), 2 * 2.0 * parameters);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "adamw"), 28.0 * parameters / 8.0);
  // Rate limiter: with prefetch 1, the gather for use j waits for use j-2's compute.
  const Program& program = workload.program(0);
  std::size_t gathers = 0;
  for (const Stream& stream : program.streams) {
    if (stream.name != "fsdp_ag") continue;
    for (const Op& op : stream.ops) {
      if (gathers < 2) {
        EXPECT_EQ(op.dependency_count, 0u);
      } else {
        ASSERT_EQ(op.dependency_count, 1u);
        EXPECT_EQ(program.dependencies[op.first_dependency].stream, 0);
      }
      ++gathers;
    }
  }
  EXPECT_EQ(gathers, static_cast<std::size_t>(2 * (2 * units - 1)));
}

TEST(Fsdp, HybridShardingAllReducesTheShardAcrossReplicas) {
  RunSetup s = setup("hsdp", 8, 1, 1, 1);
  s.parallelism.zero_stage = 3;
  s.parallelism.shard_group_size = 4;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double parameters = count_parameters(s.model).total;
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "fsdp_reduce_scatter"), 2.0 * parameters);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "fsdp_all_reduce_replicate"), 2.0 * parameters / 4.0);
}

TEST(TensorParallel, AllReducesTwicePerLayerEachWay) {
  const RunSetup s = setup("tp2", 1, 2, 1, 1);
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double activation = 256.0 * 256.0 * 2.0;  // s * b * h bf16
  // Per layer: after attention and after the MLP forward; at the QKV and fc1 inputs backward.
  // Plus the embedding's vocab-parallel sum forward and the logits input gradient backward.
  EXPECT_EQ(count_of(workload, 0, "tp_all_reduce", Pass::forward), 2 * 8 + 1);
  EXPECT_EQ(count_of(workload, 0, "tp_all_reduce", Pass::backward), 2 * 8 + 1);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "tp_all_reduce"), (4 * 8 + 2) * activation);
}

TEST(TensorParallel, SequenceParallelSplitsPipelineMessagesAndGathersActivations) {
  RunSetup s = setup("tp2_sp_pp2", 1, 2, 2, 2);
  s.parallelism.sequence_parallel = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(workload, 0, "tp_all_reduce"), 0);
  for (const Stream& stream : workload.programs[0].streams)
    for (const Op& op : stream.ops) {
      if (op.kind == OpKind::send) {
        EXPECT_DOUBLE_EQ(op.bytes, 256.0 * 256.0 * 2.0 / 2.0);
      }
      if (workload.name(op) == "sp_all_gather" && op.pass == Pass::forward) {
        EXPECT_DOUBLE_EQ(op.bytes, 256.0 * 256.0 * 2.0);
      }
    }
}

TEST(ContextParallel, GathersKeysAndValuesOfTheWholeSequence) {
  RunSetup s = setup("cp2", 1);
  s.parallelism.cp = 2;
  s.training.global_batch = 2;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  // K and V: 2 tensors of s * kv_heads * head_dim bf16 elements, 8 layers, forward and backward.
  const double kv = 2.0 * 256.0 * 4.0 * 32.0 * 2.0;
  EXPECT_EQ(count_of(workload, 0, "cp_all_gather_kv"), 2 * 2 * 8);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "cp_all_gather_kv"), 2 * 2 * 8 * kv);
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "cp_reduce_scatter_dkv"), 2 * 8 * kv);
}

TEST(PipelineSchedule, AnUnevenSplitGivesEachStageItsLayers) {
  RunSetup s = setup("uneven", 1, 1, 4, 4);
  s.parallelism.stage_layers = {3, 2, 2, 1};
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  for (int stage = 0; stage < 4; ++stage)
    EXPECT_EQ(count_of(workload, stage, "qkv_proj", Pass::forward), s.parallelism.stage_layers[stage] * 4) << stage;
  EXPECT_EQ(count_of(workload, 3, "logits"), 4);
  s.parallelism.stage_layers = {3, 2, 2, 2};  // 9 layers for an 8-layer model
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

// An interleaved pipeline with its own layout (Megatron's --pipeline-model-parallel-layout, as Megatron-Bridge's
// DeepSeek-V3 recipes give one): 7 layers over pp 2 x vp 2 as 2, 2, 2, 1 (virtual stages in Megatron's order: stage 0
// runs chunks 0 and 2, stage 1 chunks 1 and 3), so stage 0 holds 4 layers and stage 1 three.
TEST(PipelineSchedule, AnInterleavedPipelineTakesAnUnevenLayout) {
  RunSetup s = setup("layout", 1, 1, 2, 4);
  s.model.layers = 7;
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  s.parallelism.stage_layers = {2, 2, 2, 1};
  EXPECT_EQ(s.parallelism.layers_of_stage(7, 0), 4);
  EXPECT_EQ(s.parallelism.layers_of_stage(7, 1), 3);
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(workload, 0, "qkv_proj", Pass::forward), 4 * 4);
  EXPECT_EQ(count_of(workload, 1, "qkv_proj", Pass::forward), 3 * 4);
  EXPECT_EQ(count_of(workload, 1, "logits"), 4);
  s.parallelism.stage_layers = {4, 3};  // one entry per stage is not enough for two chunks each
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

// Megatron's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the embedding and the
// loss take a layer's slot in the first and the last virtual stage. 6 layers over pp 2 x vp 2: (6 + 2) / 4 = 2 slots
// per virtual stage, so virtual stages 0..3 hold 1, 2, 2, 1 layers: stage 0 runs chunks 0 and 2 (1 + 2 layers),
// stage 1 chunks 1 and 3 (2 + 1).
TEST(PipelineSchedule, TheEmbeddingAndTheLossCanCountAsLayers) {
  RunSetup s = setup("accounted", 1, 1, 2, 4);
  s.model.layers = 6;
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  s.parallelism.account_for_embedding_in_split = true;
  s.parallelism.account_for_loss_in_split = true;
  EXPECT_EQ(s.parallelism.virtual_stage_layers(6), (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(s.parallelism.layers_of_stage(6, 0), 3);
  EXPECT_EQ(s.parallelism.layers_of_stage(6, 1), 3);
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  for (int stage = 0; stage < 2; ++stage) EXPECT_EQ(count_of(workload, stage, "qkv_proj", Pass::forward), 3 * 4);
  // Layer 0 (virtual stage 0) and layer 5 (virtual stage 3) are alone in their chunks, on stages 0 and 1.
  std::set<int> stage_one_layers;
  for (const Op& op : workload.program(1).streams[0].ops)
    if (op.layer >= 0) stage_one_layers.insert(op.layer);
  EXPECT_EQ(stage_one_layers, (std::set<int>{1, 2, 5}));
  // Without the accounting the 6 layers do not divide over 4 virtual stages.
  s.parallelism.account_for_loss_in_split = false;
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

TEST(TensorParallel, BackwardInputGradientReductionOverlapsTheWeightGradient) {
  // Megatron-Core / Transformer Engine issue the column-parallel layers' input-gradient all-reduce with
  // async_op=True and run the weight-gradient GEMM meanwhile: the all-reduce sits on the tp stream and the GEMM
  // does not wait for it. With tp_backward off it blocks the compute stream.
  RunSetup s = setup("tp2", 1, 2, 1, 1);
  const auto backward_reduces_on_compute = [](const Workload& w) {
    int on_compute = 0, on_side = 0;
    const Program& program = w.programs[0];
    for (std::size_t stream = 0; stream < program.streams.size(); ++stream)
      for (const Op& op : program.streams[stream].ops)
        if (w.name(op) == "tp_all_reduce" && op.pass == Pass::backward) (stream == 0 ? on_compute : on_side) += 1;
    return std::pair{on_compute, on_side};
  };
  // Per layer the QKV and fc1 input gradients; plus the logits' input gradient.
  EXPECT_EQ(backward_reduces_on_compute(build_workload(s.model, s.parallelism, s.training)), std::pair(0, 2 * 8 + 1));
  s.training.overlap.tp_backward = false;
  EXPECT_EQ(backward_reduces_on_compute(build_workload(s.model, s.parallelism, s.training)), std::pair(2 * 8 + 1, 0));
}

TEST(TensorParallel, UserbuffersPipelineTheSequenceParallelCollectivesWithTheirGemms) {
  // Transformer Engine's userbuffers (training.overlap.tp with SP), as NeMo's / Megatron-Bridge's tables configure
  // them: ring exchange for the all-gather before QKV / fc1 (all of the GEMM but its last 1/tp of rows runs beside
  // the gather; that last chunk waits for it), and a pipelined reduce-scatter in 4 splits after the output projection
  // / fc2 (3/4 of the bytes beside the GEMM, 1/4 after it). Without userbuffers the collectives block the compute
  // stream right before / after their GEMM.
  RunSetup s = setup("tp2sp", 1, 2, 1, 1);
  s.parallelism.sequence_parallel = true;
  const auto forward_bytes = [](const Workload& w, std::string_view name) {
    double bytes = 0.0;
    for (const Stream& stream : w.programs[0].streams)
      for (const Op& op : stream.ops)
        if (w.name(op) == name && op.pass == Pass::forward) bytes += op.bytes;
    return bytes;
  };
  const auto forward_flops = [](const Workload& w, std::string_view name) {
    double flops = 0.0;
    for (const Op& op : w.programs[0].streams[0].ops)
      if (w.name(op) == name && op.pass == Pass::forward) flops += op.flops;
    return flops;
  };
  s.training.overlap.tp = false;
  const Workload blocking = build_workload(s.model, s.parallelism, s.training);
  s.training.overlap.tp = true;
  const Workload w = build_workload(s.model, s.parallelism, s.training);
  // The same work and the same bytes, arranged differently.
  for (const char* name : {"qkv_proj", "mlp_fc1", "out_proj", "mlp_fc2"})
    EXPECT_NEAR(forward_flops(w, name), forward_flops(blocking, name), 1e-9 * forward_flops(blocking, name)) << name;
  for (const char* name : {"sp_all_gather", "sp_reduce_scatter"})
    EXPECT_NEAR(forward_bytes(w, name), forward_bytes(blocking, name), 1e-9 * forward_bytes(blocking, name)) << name;

  const Program& program = w.programs[0];
  const auto& compute = program.streams[0].ops;
  const auto producers = [&](const Op& op) {
    std::vector<const Op*> found;
    for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
      const OpDependency& dep = program.dependencies[op.first_dependency + d];
      found.push_back(&program.streams[dep.stream].ops[dep.op]);
    }
    return found;
  };
  const auto waits_for = [&](const Op& op, std::string_view name) {
    for (const Op* producer : producers(op))
      if (w.name(*producer) == name) return producer;
    return static_cast<const Op*>(nullptr);
  };
  int column = 0, row = 0;
  for (std::size_t i = 1; i + 1 < compute.size(); ++i) {
    const std::string name(w.name(compute[i]));
    if (compute[i].pass != Pass::forward) continue;
    if ((name == "qkv_proj" || name == "mlp_fc1") && w.name(compute[i + 1]) == name) {
      ++column;
      EXPECT_EQ(waits_for(compute[i], "sp_all_gather"), nullptr) << name;  // its rows are there already
      const Op* gather = waits_for(compute[i + 1], "sp_all_gather");
      ASSERT_NE(gather, nullptr) << name << ": the last chunk waits for the gather";
      EXPECT_DOUBLE_EQ(compute[i + 1].flops * (s.parallelism.tp - 1), compute[i].flops) << name;
      const auto before = producers(*gather);
      EXPECT_NE(std::find(before.begin(), before.end(), &compute[i - 1]), before.end()) << name;
    }
    if (name == "out_proj" || name == "mlp_fc2") {
      ++row;
      // The op after the GEMM waits for the last part, which follows the first on the tp stream (in order).
      const Op* last = waits_for(compute[i + 1], "sp_reduce_scatter");
      ASSERT_NE(last, nullptr) << name;
      const auto tp_stream = std::find_if(program.streams.begin(), program.streams.end(),
                                          [](const Stream& stream) { return stream.name == "tp"; });
      ASSERT_NE(tp_stream, program.streams.end());
      const auto& tp_ops = tp_stream->ops;
      ASSERT_TRUE(last > tp_ops.data() && last < tp_ops.data() + tp_ops.size()) << name;
      const Op* first = last - 1;
      ASSERT_EQ(w.name(*first), "sp_reduce_scatter") << name;
      const auto beside = producers(*first), after = producers(*last);
      EXPECT_NE(std::find(beside.begin(), beside.end(), &compute[i - 1]), beside.end()) << name;
      EXPECT_EQ(std::find(beside.begin(), beside.end(), &compute[i]), beside.end()) << name;
      EXPECT_NE(std::find(after.begin(), after.end(), &compute[i]), after.end()) << name;
      EXPECT_DOUBLE_EQ(first->bytes, 3.0 * last->bytes) << name;
    }
  }
  EXPECT_EQ(column, 2 * s.model.layers);
  EXPECT_EQ(row, 2 * s.model.layers);
  // Without userbuffers the gather sits on the compute stream right before its GEMM, the reduce-scatter right after.
  const auto& plain = blocking.programs[0].streams[0].ops;
  int blocked = 0;
  for (std::size_t i = 1; i + 1 < plain.size(); ++i) {
    const std::string name(blocking.name(plain[i]));
    if (plain[i].pass != Pass::forward) continue;
    if (name == "qkv_proj" || name == "mlp_fc1") blocked += blocking.name(plain[i - 1]) == "sp_all_gather" ? 1 : 0;
    if (name == "out_proj" || name == "mlp_fc2") blocked += blocking.name(plain[i + 1]) == "sp_reduce_scatter" ? 1 : 0;
  }
  EXPECT_EQ(blocked, 4 * s.model.layers);
  // Userbuffers need sequence parallelism: without it there is no gather, and the GEMMs stay whole.
  s.parallelism.sequence_parallel = false;
  const Workload without_sp = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(without_sp, 0, "sp_all_gather"), 0);
  EXPECT_EQ(count_of(without_sp, 0, "qkv_proj", Pass::forward), s.model.layers);
}

}  // namespace
}  // namespace chopsim
