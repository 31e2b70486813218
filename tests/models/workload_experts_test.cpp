// Workload generation with experts: all-to-all volumes against top-k copies, grouped expert GEMMs and their
// launches, the dispatcher's host waits and overlaps; hybrid Mamba-2 layers; multi-token prediction.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"
#include "workload_queries.hpp"

namespace chopsim {
namespace {

using test::count_of;
using test::for_each_op;
using test::is_mamba_scan;
using test::RunSetup;
using test::setup;
using test::tiny_hybrid;
using test::tiny_moe;

/// The tiny MoE model on 2 GPUs, its experts split over both (ep 2).
RunSetup ep2_tiny_moe() {
  RunSetup s = setup("ep2", 2, 1, 1, 1);
  s.model = tiny_moe();
  s.parallelism.ep = 2;
  return s;
}

TEST(ExpertParallel, AllToAllMovesTopKCopiesOfEachLocalToken) {
  RunSetup s = setup("ep2_tp2", 4, 2, 1, 1);
  s.model = tiny_moe();
  s.parallelism.ep = 2;
  s.parallelism.sequence_parallel = true;
  s.training.moe_capacity_factor = 1.25;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  // Each rank routes s/tp tokens, top_k * capacity copies of each, h bf16 elements per copy.
  const double dispatched = 256.0 / 2.0 * 2.0 * 1.25 * 256.0 * 2.0;
  int checked = 0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == "ep_all_to_all_dispatch") {
        EXPECT_EQ(op.collective, CollectiveKind::all_to_all);
        EXPECT_EQ(op.group, GroupRole::ep);
        EXPECT_DOUBLE_EQ(op.bytes, dispatched);
        ++checked;
      }
  EXPECT_EQ(checked, 2 * 8);  // forward and backward of every layer
  // Expert gradients are reduced over the expert_data group (here 4 / 2 = 2 ranks), not the data group.
  bool expert_group_used = false;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == "dp_all_reduce" && op.group == GroupRole::expert_data) expert_group_used = true;
  EXPECT_TRUE(expert_group_used);
}

TEST(ExpertParallel, ExpertGemmsAreGroupedKernelsOfTheLocalExperts) {
  // Each rank's expert GEMMs (forward, dgrad, wgrad) run its experts / ep local experts as one grouped kernel; every
  // other GEMM is one problem.
  RunSetup s = ep2_tiny_moe();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  int expert_gemms = 0, other_gemms = 0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) {
      if (op.kind != OpKind::compute || op.kernel_class != KernelClass::gemm) continue;
      if (workload.name(op).rfind("expert_fc", 0) == 0) {
        EXPECT_EQ(op.gemm_problems, s.model.experts / 2) << workload.name(op);
        EXPECT_EQ(kernel_work(op).problems, s.model.experts / 2);
        ++expert_gemms;
      } else {
        EXPECT_EQ(op.gemm_problems, 1) << workload.name(op);
        ++other_gemms;
      }
    }
  EXPECT_EQ(expert_gemms, 6 * 8);  // fc1, fc2 forward; their dgrad and wgrad; 8 layers
  EXPECT_GT(other_gemms, 0);
}

TEST(ExpertParallel, TheHostLaunchesOneGemmPerLocalExpert) {
  // Transformer Engine's grouped GEMM loops over the experts on the host, one cuBLAS launch each
  // (multi_stream_cublas_gemm): every expert GEMM costs the host experts / ep launches, every other GEMM one.
  RunSetup s = ep2_tiny_moe();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Program& program = workload.program(0);
  int expert_gemms = 0;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (op.kind != OpKind::compute || op.kernel_class != KernelClass::gemm) continue;
    const bool expert_gemm = workload.name(op).rfind("expert_fc", 0) == 0;
    EXPECT_EQ(step.launches, expert_gemm ? s.model.experts / 2 : 1) << workload.name(op);
    expert_gemms += expert_gemm ? 1 : 0;
  }
  EXPECT_EQ(expert_gemms, 6 * 8);
}

TEST(ExpertParallel, TheFlexDispatcherMarksEveryExpertAllToAllAsATokenDispatch) {
  // Dispatch and combine, forward and backward, of every layer carry the model's routing; no other collective does,
  // and the all-to-all dispatcher marks none.
  RunSetup s = ep2_tiny_moe();
  for (const MoeDispatcher dispatcher : {MoeDispatcher::alltoall, MoeDispatcher::flex}) {
    SCOPED_TRACE(std::string(to_string(dispatcher)));
    s.training.moe_dispatcher = dispatcher;
    const Workload workload = build_workload(s.model, s.parallelism, s.training);
    const bool flex = dispatcher == MoeDispatcher::flex;
    const TokenRouting expected =
        flex ? TokenRouting{.experts = s.model.experts, .top_k = s.model.top_k} : TokenRouting{};
    EXPECT_TRUE(workload.token_routing == expected);
    int marked = 0;
    for (const Stream& stream : workload.program(0).streams)
      for (const Op& op : stream.ops) {
        const bool expert_all_to_all = op.kind == OpKind::collective && op.group == GroupRole::ep;
        const bool routed = workload.routing_of(op).experts > 0;
        EXPECT_EQ(routed, flex && expert_all_to_all) << workload.name(op);
        marked += routed ? 1 : 0;
      }
    EXPECT_EQ(marked, flex ? 4 * 8 : 0);
  }
}

TEST(ExpertParallel, TheHostWaitsForTheTokenCountsBeforeEachForwardDispatch) {
  // Megatron-Core's all-to-all dispatcher needs the split sizes on the host: one host wait per MoE layer forward, at
  // the permutation before the dispatch; none in the backward.
  RunSetup s = ep2_tiny_moe();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Program& program = workload.program(0);
  int forward_waits = 0, other_waits = 0;
  for (const IssueStep& step : program.issue_order) {
    if (!step.host_waits) continue;
    const Op& op = program.streams[step.stream].ops[step.op];
    if (workload.name(op) == "moe_permute" && op.pass == Pass::forward)
      ++forward_waits;
    else if (workload.name(op) == "moe_permute")
      ++other_waits;
  }
  EXPECT_EQ(forward_waits, 8);  // 8 layers, one micro-batch
  EXPECT_EQ(other_waits, 0);
}

TEST(ExpertParallel, FoldedExpertsDispatchOverTheTensorRanksWithoutTensorCollectives) {
  // etp 1, ep 4 over tp 2 x dp 2: each rank routes its s/tp tokens to the 4 ranks of its stage and runs whole
  // experts (f columns) on the copies it receives: no expert tensor-parallel gather or scatter.
  RunSetup s = setup("folded", 2, 2, 1, 1);
  s.model = tiny_moe();
  s.parallelism.ep = 4;
  s.parallelism.etp = 1;
  s.parallelism.sequence_parallel = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double routed = 256.0 / 2.0 * s.model.top_k;  // token copies a rank dispatches (capacity factor 1)
  int dispatches = 0, expert_gemms = 0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) {
      const std::string name(workload.name(op));
      EXPECT_EQ(name.find("moe_tp_"), std::string::npos) << name;
      if (name == "ep_all_to_all_dispatch") {
        EXPECT_EQ(op.group, GroupRole::ep);
        EXPECT_DOUBLE_EQ(op.bytes, routed * s.model.hidden * 2.0);
        ++dispatches;
      }
      if (name == "expert_fc2" && op.pass == Pass::forward) {
        // rows x hidden x f, over every received copy: 2 FLOPs per multiply-add.
        EXPECT_DOUBLE_EQ(op.flops, 2.0 * routed * s.model.hidden * s.model.ffn_hidden);
        ++expert_gemms;
      }
    }
  EXPECT_EQ(dispatches, 2 * s.model.layers);
  EXPECT_EQ(expert_gemms, s.model.layers);
  EXPECT_EQ(workload.layout.group(0, GroupRole::ep), (std::vector<int>{0, 1, 2, 3}));
  // Without sequence parallelism the tp ranks would all route the same tokens: refused.
  s.parallelism.sequence_parallel = false;
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

TEST(ExpertParallel, OverlappedTensorGatherWaitsForTheDispatchedTokens) {
  RunSetup s = setup("ep2_tp2_overlap", 4, 2, 1, 1);
  s.model = tiny_moe();
  s.parallelism.ep = 2;
  s.parallelism.sequence_parallel = true;
  s.training.overlap.ep = true;
  s.training.overlap.tp = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Program& program = workload.program(0);
  int checked = 0;
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops) {
      if (workload.name(op) != "moe_tp_all_gather" || op.pass != Pass::forward) continue;
      bool waits_for_dispatch = false;
      for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
        const OpDependency& dep = program.dependencies[op.first_dependency + d];
        waits_for_dispatch |= workload.name(program.streams[dep.stream].ops[dep.op]) == "ep_all_to_all_dispatch";
      }
      EXPECT_TRUE(waits_for_dispatch);
      ++checked;
    }
  EXPECT_EQ(checked, 8);
  EXPECT_NO_THROW(check_workload_completes(workload));
}

// Megatron-Core's combined 1F1B (overlap.ep_1f1b): every steady-state forward runs beside the backward that follows
// it in the schedule, the backward on a compute stream of its own; the host issues the two passes' layers in
// alternation; nothing of a pair starts before the pair before it has ended on both streams.
TEST(ExpertParallel, BatchLevelOverlapRunsEachSteadyStateBackwardBesideItsForward) {
  RunSetup s = setup("ep_1f1b", 2, 1, 2, 4);
  s.model = tiny_moe();
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  s.parallelism.ep = 2;
  s.parallelism.zero_stage = 1;
  s.training.overlap.ep_1f1b = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const int micro_batches = 4, pp = 2, chunks = 2;
  const int layers_per_chunk = s.model.layers / (pp * chunks);
  for (const int stage : {0, 1}) {
    const Program& program = workload.program(workload.layout.rank_of(RankCoordinates{.pp = stage}));
    std::size_t merged = program.streams.size();
    for (std::size_t k = 0; k < program.streams.size(); ++k)
      if (program.streams[k].name == "compute_merged_backward") merged = k;
    ASSERT_LT(merged, program.streams.size()) << "stage " << stage;
    // Megatron-Core's interleaved schedule: (pp - stage - 1) * 2 + (chunks - 1) * pp warm-up forwards of the
    // micro_batches * chunks, then one forward per backward: every backward but the warm-up's count is merged.
    const int pairs = micro_batches * chunks - ((pp - stage - 1) * 2 + (chunks - 1) * pp);
    std::set<std::pair<int, int>> merged_layers;  // (micro-batch, layer) of the merged stream's backward ops
    for (const Op& op : program.streams[merged].ops) {
      if (op.kind != OpKind::compute) continue;
      EXPECT_EQ(op.pass, Pass::backward) << workload.name(op);
      if (op.layer >= 0) merged_layers.insert({op.micro_batch, op.layer});
    }
    EXPECT_EQ(static_cast<int>(merged_layers.size()), pairs * layers_per_chunk) << "stage " << stage;
    // The host alternates: forward ops on "compute" are issued after the merged stream's first op.
    std::size_t first_merged = program.issue_order.size(), last_forward = 0;
    for (std::size_t i = 0; i < program.issue_order.size(); ++i) {
      const IssueStep& step = program.issue_order[i];
      if (step.stream == merged) first_merged = std::min(first_merged, i);
      if (step.stream == 0 && program.streams[0].ops[step.op].pass == Pass::forward) last_forward = i;
    }
    EXPECT_LT(first_merged, last_forward) << "stage " << stage;
  }
  EXPECT_NO_THROW(check_workload_completes(workload));
  // Megatron-Core's conditions: the interleaved schedule with pp > 1, and no full recomputation.
  RunSetup plain = s;
  plain.parallelism.pp_schedule = PipelineSchedule::one_f_one_b;
  plain.parallelism.virtual_stages = 1;
  EXPECT_THROW((void)build_workload(plain.model, plain.parallelism, plain.training), ModelError);
  RunSetup full = s;
  full.training.recompute = RecomputePolicy::full;
  EXPECT_THROW((void)build_workload(full.model, full.parallelism, full.training), ModelError);
}

// A hybrid model's layers each run one sublayer; a Mamba-2 layer's scan kernels do the chunked scan's FLOPs
// (mamba_scan_flops_per_token per token forward) and its projections the mixer's matmuls on the rank's heads.
TEST(Hybrid, EachLayerRunsItsKindAndTheScanDoesItsFlops) {
  RunSetup s = setup("hybrid_tp2", 1, 2, 1, 2);
  s.model = tiny_hybrid();
  s.parallelism.sequence_parallel = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Program& program = workload.program(0);
  std::map<int, std::set<std::string>> names;  // forward compute ops by layer
  for (const Op& op : program.streams[0].ops)
    if (op.pass == Pass::forward && op.layer >= 0) names[op.layer].insert(std::string(workload.name(op)));
  EXPECT_TRUE(names[0].count("mamba_in_proj") && names[0].count("mamba_chunk_scan") && !names[0].count("qkv_proj"));
  EXPECT_TRUE(names[1].count("attention") && !names[1].count("mlp_fc1") && !names[1].count("expert_fc1"));
  EXPECT_TRUE(names[2].count("expert_fc1") && names[2].count("shared_expert_fc1") && !names[2].count("attention"));
  EXPECT_TRUE(names[2].count("expert_squared_relu"));
  EXPECT_TRUE(names[4].count("mlp_fc1") && names[4].count("squared_relu") && !names[4].count("attention"));
  EXPECT_FALSE(names[0].count("post_attention_norm") || names[1].count("post_attention_norm"));
  // Forward scan FLOPs over the cluster (its GEMM-class kernels): tokens x the scan per token x the three Mamba layers.
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  double scan = 0.0;
  for_each_op(workload, [&](int, const Program&, std::size_t, const Op& op) {
    if (op.kind == OpKind::compute && op.pass == Pass::forward && op.kernel_class == KernelClass::gemm &&
        is_mamba_scan(workload.name(op)))
      scan += op.flops;
  });
  EXPECT_NEAR(scan, 3 * tokens * mamba_scan_flops_per_token(s.model), scan * 1e-12);
  // in_proj on one rank: its tokens x h x (z, x, B, C, dt of 4 heads and 1 group) x 2.
  const double in_width = 2.0 * 4 * 16 + 2.0 * 1 * 16 + 4;
  double in_proj = 0.0;
  for (const Op& op : program.streams[0].ops)
    if (op.pass == Pass::forward && workload.name(op) == "mamba_in_proj") in_proj += op.flops;
  EXPECT_DOUBLE_EQ(in_proj, 3 * s.training.global_batch * s.training.seq_len * 2.0 * s.model.hidden * in_width);
}

// Multi-token prediction (DeepSeek-V3 report, Sec. 2.2): the last stage runs, per micro-batch, one more lookup, the
// projection, one more layer and the head and loss again; the first stage is untouched. Its parameters (the module
// and, with pp > 1, a copy of the embedding) sit on the last stage.
TEST(MultiTokenPrediction, TheLastStageRunsOneModulePerDepth) {
  RunSetup s = setup("mtp", 1, 1, 2, 4);
  s.model = tiny_moe();
  const Workload without = build_workload(s.model, s.parallelism, s.training);
  s.model.mtp_layers = 1;
  const Workload with = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(with, 1, "mtp_eh_proj"), 4);
  EXPECT_EQ(count_of(with, 1, "logits"), 2 * count_of(without, 1, "logits"));
  EXPECT_EQ(count_of(with, 1, "qkv_proj", Pass::forward), count_of(without, 1, "qkv_proj", Pass::forward) + 4);
  EXPECT_EQ(count_of(with, 1, "embedding"), 4);  // the next tokens' lookup, in the stage's copy
  EXPECT_EQ(count_of(with, 0, "qkv_proj", Pass::forward), count_of(without, 0, "qkv_proj", Pass::forward));
  EXPECT_EQ(count_of(with, 0, "mtp_eh_proj"), 0);
  // The module's parameters: its MoE layer, the 2h x h projection, three norms (RMSNorm: h each).
  const ParameterCount count = count_parameters(s.model);
  const double h = s.model.hidden;
  EXPECT_DOUBLE_EQ(count.mtp_module, count.per_layer + 2.0 * h * h + 3.0 * h);
  TransformerSpec plain = s.model;
  plain.mtp_layers = 0;
  EXPECT_DOUBLE_EQ(count.total - count_parameters(plain).total, count.mtp_module);
  // The model FLOPs: 6 x (the projection, the layer's active weights, the head once more) + its layer's attention.
  const double seq = 256;
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(s.model, 256) - model_training_flops_per_token(plain, 256),
                   6.0 * count.mtp_active_matmul + 6.0 * s.model.heads * 2.0 * s.model.head_dim() * seq);
  EXPECT_DOUBLE_EQ(count.mtp_active_matmul, 2.0 * h * h + count.attention_per_layer + count.mlp_active_per_layer +
                                                count.router_per_layer + s.model.vocab * h);
}

}  // namespace
}  // namespace chopsim
