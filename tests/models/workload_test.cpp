// Workload generation across parallelism mixes: FLOPs against 6*N, attention's causal half, send/recv matching,
// the host's issue order and completion (no deadlock) under the symbolic executor; recomputation; the setups it
// rejects; and the checker that catches broken programs. The other workload tests: workload_schedule_test.cpp
// (pipeline, data, tensor, context parallelism, FSDP), workload_experts_test.cpp (experts, hybrid layers, MTP),
// workload_features_test.cpp (training features).

#include "chopsim/models/workload.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"
#include "workload_queries.hpp"

namespace chopsim {
namespace {

using test::count_of;
using test::for_each_op;
using test::RunSetup;
using test::setup;
using test::summed_flops;
using test::tiny_hybrid;
using test::tiny_mla;
using test::tiny_moe;
using test::tiny_moe_dense_first_shared;

/// Two mixes of a model with experts: tp 2 with SP over two stages with ep 2 (ZeRO-1, `dp` data ranks), then FSDP
/// over four data ranks with ep 2 (units of the layers' sizes).
void add_expert_model_mixes(std::vector<RunSetup>& mixes, const TransformerSpec& model, const std::string& sharded,
                            const std::string& fsdp, int dp = 4) {
  RunSetup s = setup(sharded, dp, 2, 2, 4);
  s.model = model;
  s.parallelism.sequence_parallel = true;
  s.parallelism.ep = 2;
  s.parallelism.zero_stage = 1;
  mixes.push_back(s);
  s.label = fsdp;
  s.parallelism = ParallelismSpec{};
  s.parallelism.dp = 4;
  s.parallelism.ep = 2;
  s.parallelism.zero_stage = 3;
  s.training.global_batch = 8;
  mixes.push_back(s);
}

std::vector<RunSetup> parallelism_mixes() {
  std::vector<RunSetup> mixes;
  mixes.push_back(setup("dp4_zero0_overlap", 4));
  {
    RunSetup s = setup("dp4_zero0_blocking", 4);
    s.training.overlap.dp = false;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("dp4_zero1", 4);
    s.parallelism.zero_stage = 1;
    mixes.push_back(s);
    s.label = "dp4_zero2_blocking";
    s.parallelism.zero_stage = 2;
    s.training.overlap.dp = false;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("fsdp8_prefetch1", 8, 1, 1, 3);
    s.parallelism.zero_stage = 3;
    mixes.push_back(s);
    s.label = "fsdp8_prefetch2";
    s.training.fsdp_prefetch = 2;
    mixes.push_back(s);
    s.label = "fsdp8_blocking";
    s.training.overlap.fsdp = false;
    mixes.push_back(s);
    s.label = "fsdp8_hybrid_shard4";
    s.training.overlap.fsdp = true;
    s.parallelism.shard_group_size = 4;
    mixes.push_back(s);
    // PyTorch's runtimes: their kernels around the collectives on the streams of the collectives and in line.
    s.label = "fsdp8_hybrid_shard4_fsdp1_fp32_reduce";
    s.training.fsdp_implementation = FsdpImplementation::fsdp1;
    s.training.fsdp_reduce_fp32 = true;
    mixes.push_back(s);
    s.label = "fsdp8_fsdp2_blocking";
    s.parallelism.shard_group_size = 0;
    s.training.fsdp_implementation = FsdpImplementation::fsdp2;
    s.training.overlap.fsdp = false;
    mixes.push_back(s);
    s.label = "fsdp8_fsdp2";
    s.training.overlap.fsdp = true;
    mixes.push_back(s);
    s.label = "fsdp8_fsdp2_shard_grad_op";
    s.parallelism.zero_stage = 2;
    mixes.push_back(s);
    s.parallelism.zero_stage = 3;
    s.training.fsdp_implementation.reset();
    s.training.fsdp_reduce_fp32 = false;
  }
  {
    RunSetup s = setup("tp2_sp_dp2", 2, 2);
    s.parallelism.sequence_parallel = true;
    mixes.push_back(s);
    s.label = "tp4_no_sp_overlap";
    s.parallelism.tp = 4;
    s.parallelism.sequence_parallel = false;
    s.training.overlap.tp = true;
    mixes.push_back(s);
    s.label = "tp4_sp_overlap";
    s.parallelism.sequence_parallel = true;
    mixes.push_back(s);
  }
  mixes.push_back(setup("pp4_1f1b_m8", 1, 1, 4, 8));
  {
    RunSetup s = setup("pp4_uneven_3_2_2_1", 1, 1, 4, 4);
    s.parallelism.stage_layers = {3, 2, 2, 1};
    mixes.push_back(s);
    s.label = "pp4_uneven_block_recompute_2";  // 2 + 2 + 2 + 1 of the 8 layers recomputed
    s.training.recompute = RecomputePolicy::full;
    s.training.recompute_layers = 2;
    mixes.push_back(s);
  }
  mixes.push_back(setup("pp4_1f1b_m2", 1, 1, 4, 2));
  {
    RunSetup s = setup("pp2_blocking_p2p", 2, 1, 2, 4);
    s.training.overlap.pp = false;
    mixes.push_back(s);
  }
  for (const auto& [pp, v, m] : std::vector<std::tuple<int, int, int>>{{2, 2, 4}, {4, 2, 4}, {4, 2, 12}, {2, 4, 6}}) {
    RunSetup s =
        setup("interleaved_pp" + std::to_string(pp) + "_v" + std::to_string(v) + "_m" + std::to_string(m), 1, 1, pp, m);
    s.parallelism.pp_schedule = PipelineSchedule::interleaved;
    s.parallelism.virtual_stages = v;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("cp2_overlap", 2);
    s.parallelism.cp = 2;
    mixes.push_back(s);
    s.label = "cp2_blocking_fsdp";
    s.training.overlap.cp = false;
    s.parallelism.zero_stage = 3;
    mixes.push_back(s);
    s.label = "cp2_tp2_sp";
    s.parallelism.zero_stage = 0;
    s.parallelism.tp = 2;
    s.parallelism.sequence_parallel = true;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("moe_ep2_dp2", 2);
    s.model = tiny_moe();
    s.parallelism.ep = 2;
    mixes.push_back(s);
    s.label = "moe_ep2_tp2_sp_zero1";
    s.parallelism.tp = 2;
    s.parallelism.sequence_parallel = true;
    s.parallelism.zero_stage = 1;
    mixes.push_back(s);
    s.label = "moe_ep4_fsdp";
    s.parallelism = ParallelismSpec{};
    s.parallelism.dp = 4;
    s.parallelism.ep = 4;
    s.parallelism.zero_stage = 3;
    s.training.global_batch = 8;
    mixes.push_back(s);
    s.label = "moe_ep2_of_dp4_overlap_ep";
    s.parallelism.ep = 2;
    s.parallelism.zero_stage = 0;
    s.training.overlap.ep = true;
    mixes.push_back(s);
  }
  {
    // Megatron-Core's batch-level EP overlap: interleaved pp 2 x vp 2, tp 2 with SP (the backward's tp collectives on
    // side streams of its own), ep 2, the distributed optimizer.
    RunSetup s = setup("moe_ep_1f1b_pp2_vp2_tp2_sp", 2, 2, 2, 4);
    s.model = tiny_moe();
    s.parallelism.pp_schedule = PipelineSchedule::interleaved;
    s.parallelism.virtual_stages = 2;
    s.parallelism.sequence_parallel = true;
    s.parallelism.ep = 2;
    s.parallelism.zero_stage = 1;
    s.training.overlap.ep_1f1b = true;
    mixes.push_back(s);
  }
  {
    // Multi-latent attention: with a query latent under tp 2 with SP (the down projections on each rank's token
    // shard), without one under pp 2 and context parallelism.
    RunSetup s = setup("mla_q_latent_tp2_sp", 2, 2);
    s.model = tiny_mla(96);
    s.parallelism.sequence_parallel = true;
    mixes.push_back(s);
    s = setup("mla_pp2_cp2", 2, 1, 2, 4);
    s.model = tiny_mla(0);
    s.parallelism.cp = 2;
    s.parallelism.dp = 1;
    s.training.global_batch = 4;
    mixes.push_back(s);
  }
  {
    // Dense first layers and shared experts: with tp and SP, across two pipeline stages (the first holds the
    // dense layers), and under FSDP (units of two sizes).
    add_expert_model_mixes(mixes, tiny_moe_dense_first_shared(), "moe_dense_first_shared_tp2_sp_pp2_ep2",
                           "moe_dense_first_shared_fsdp_ep2");
  }
  {
    // Multi-token prediction (DeepSeek-V3): an MoE module on the last of two stages with tp 2, SP and ep 2; under an
    // interleaved pipeline; a dense model's module under FSDP (a unit of its own).
    RunSetup s = setup("mtp_moe_tp2_sp_pp2_ep2", 4, 2, 2, 4);
    s.model = tiny_moe_dense_first_shared();
    s.model.mtp_layers = 1;
    s.parallelism.sequence_parallel = true;
    s.parallelism.ep = 2;
    s.parallelism.zero_stage = 1;
    mixes.push_back(s);
    s.label = "mtp2_interleaved_pp2_v2";
    s.model.mtp_layers = 2;
    s.parallelism.pp_schedule = PipelineSchedule::interleaved;
    s.parallelism.virtual_stages = 2;
    mixes.push_back(s);
    s = setup("mtp_dense_fsdp4", 4);
    s.model.mtp_layers = 1;
    s.parallelism.zero_stage = 3;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("3d_tp2_pp2_dp2_sp_zero1", 2, 2, 2, 4);
    s.parallelism.sequence_parallel = true;
    s.parallelism.zero_stage = 1;
    mixes.push_back(s);
    s.label = "3d_interleaved_full_recompute";
    s.parallelism.pp_schedule = PipelineSchedule::interleaved;
    s.parallelism.virtual_stages = 2;
    s.training.recompute = RecomputePolicy::full;
    mixes.push_back(s);
    s.label = "3d_interleaved_block_recompute_1";  // the first layer of each two-layer chunk
    s.training.recompute_layers = 1;
    mixes.push_back(s);
    s.training.recompute_layers = 0;
    s.label = "3d_fsdp_pp_selective";
    s.parallelism.pp_schedule = PipelineSchedule::one_f_one_b;
    s.parallelism.virtual_stages = 1;
    s.parallelism.zero_stage = 3;
    s.training.recompute = RecomputePolicy::selective;
    mixes.push_back(s);
  }
  {
    // Megatron-LM functional-test features: no gradient-accumulation fusion, unfused cross entropy, learned
    // positions, per-step norm passes, synchronous TP backward.
    RunSetup s = setup("megatron_features_tp2_pp2_zero1", 2, 2, 2, 4);
    s.model.position_embedding = PositionEmbedding::learned;
    s.parallelism.zero_stage = 1;
    s.training.gradient_accumulation_fusion = false;
    s.training.cross_entropy_fusion = false;
    s.training.log_num_zeros_in_grad = true;
    s.training.log_params_norm = true;
    s.training.overlap.tp_backward = false;
    mixes.push_back(s);
    s.label = "fsdp_fp32_reduce_no_grad_clip";
    s.parallelism = ParallelismSpec{};
    s.parallelism.dp = 4;
    s.parallelism.zero_stage = 3;
    s.training.fsdp_reduce_fp32 = true;
    s.training.grad_clip = false;
    mixes.push_back(s);
  }
  {
    RunSetup s = setup("all_tp2_cp2_pp2_dp2_ep2_moe", 2, 2, 2, 4);
    s.model = tiny_moe();
    s.parallelism.cp = 2;
    s.parallelism.ep = 2;
    s.parallelism.sequence_parallel = true;
    s.parallelism.zero_stage = 1;
    s.parallelism.pp_schedule = PipelineSchedule::interleaved;
    s.parallelism.virtual_stages = 2;
    mixes.push_back(s);
  }
  {
    // MoE parallel folding: ep 4 over tp 2 x dp 2, no expert tensor parallelism.
    RunSetup s = setup("folded_tp2_pp2_dp2_ep4_etp1_moe", 2, 2, 2, 4);
    s.model = tiny_moe();
    s.parallelism.ep = 4;
    s.parallelism.etp = 1;
    s.parallelism.sequence_parallel = true;
    s.parallelism.zero_stage = 1;
    mixes.push_back(s);
  }
  {
    // A hybrid model (Mamba-2, attention, MLP and MoE layers): tp 2 with SP over two stages with ep 2; FSDP.
    add_expert_model_mixes(mixes, tiny_hybrid(), "hybrid_tp2_sp_pp2_ep2_zero1", "hybrid_fsdp4_ep2", 2);
  }
  {
    // Megatron's selective recomputation of the norms and the experts' activation (no GEMM or attention re-run).
    RunSetup s = setup("moe_recompute_modules_norm_act_ep2", 2, 2, 2, 4);
    s.model = tiny_moe_dense_first_shared();
    s.parallelism.sequence_parallel = true;
    s.parallelism.ep = 2;
    s.training.recompute = RecomputePolicy::selective;
    s.training.recompute_modules.layernorm = true;
    s.training.recompute_modules.moe_act = true;
    mixes.push_back(s);
  }
  return mixes;
}

class ParallelismMix : public ::testing::TestWithParam<RunSetup> {};

/// The share of the transformer layers whose forward runs again in the backward: every one under full
/// recomputation, the first recompute_layers of each chunk under block recomputation, none otherwise.
double recomputed_share(const RunSetup& s) {
  double recomputed = 0;
  for (const int chunk_layers : s.parallelism.virtual_stage_layers(s.model.layers))
    recomputed += s.training.recomputed_layers(chunk_layers);
  return recomputed / s.model.layers;
}

TEST_P(ParallelismMix, CompletesWithoutDeadlock) {
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  EXPECT_EQ(workload.programs.size(), static_cast<std::size_t>(s.parallelism.pp));
}

TEST_P(ParallelismMix, TheHostIssuesEveryOpOnceAfterWhatItWaitsFor) {
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  for (const Program& program : workload.programs) {
    ASSERT_EQ(program.issue_order.size(), program.op_count());
    std::vector<std::vector<std::size_t>> position(program.streams.size());
    for (std::size_t st = 0; st < program.streams.size(); ++st)
      position[st].assign(program.streams[st].ops.size(), SIZE_MAX);
    for (std::size_t i = 0; i < program.issue_order.size(); ++i) {
      const IssueStep& step = program.issue_order[i];
      ASSERT_EQ(position[step.stream][step.op], SIZE_MAX) << "issued twice";
      position[step.stream][step.op] = i;
    }
    for (std::size_t st = 0; st < program.streams.size(); ++st)
      for (std::size_t k = 0; k < program.streams[st].ops.size(); ++k) {
        if (k > 0) {
          EXPECT_LT(position[st][k - 1], position[st][k]);
        }
        const Op& op = program.streams[st].ops[k];
        for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
          const OpDependency& dep = program.dependencies[op.first_dependency + d];
          EXPECT_LT(position[dep.stream][dep.op], position[st][k]);
        }
      }
  }
}

TEST_P(ParallelismMix, GemmFlopsAreSixTimesActiveParametersPerToken) {
  // Every matmul parameter is used once per token forward (2 FLOPs) and twice backward (dgrad and
  // wgrad, 4 FLOPs): 6*N per token over the whole cluster. Full recomputation re-runs the transformer
  // layers' forward (not the output head, as in Megatron): 2 * (N - V*h) more, hardware FLOPs ~4x forward.
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  EXPECT_DOUBLE_EQ(workload.tokens_per_iteration, tokens);
  // Multi-token prediction modules add their projection, layer and another pass through the head (not recomputed).
  const ParameterCount count = count_parameters(s.model);
  const double n_active = count.active_matmul + s.model.mtp_layers * count.mtp_active_matmul;
  const double head = static_cast<double>(s.model.vocab) * s.model.hidden;
  const double expected = 6.0 * n_active * tokens;
  const double recomputed = recomputed_share(s) * 2.0 * (count.active_matmul - head) * tokens;
  EXPECT_NEAR(summed_flops(workload, KernelClass::gemm, Pass::forward), 2.0 * n_active * tokens, expected * 1e-12);
  EXPECT_NEAR(summed_flops(workload, KernelClass::gemm, Pass::backward), 4.0 * n_active * tokens, expected * 1e-12);
  EXPECT_NEAR(summed_flops(workload, KernelClass::gemm, Pass::recompute), recomputed, expected * 1e-12);
  EXPECT_NEAR(summed_flops(workload, KernelClass::gemm), expected + recomputed, expected * 1e-12);
  EXPECT_NEAR(workload.model_flops_per_iteration, model_training_flops_per_token(s.model, s.training.seq_len) * tokens,
              workload.model_flops_per_iteration * 1e-12);
}

TEST_P(ParallelismMix, AttentionFlopsAreTheCausalHalfWithFlashBackward) {
  // Model attention FLOPs are 12*L*h*s per token for forward + backward without masking (4*L*h*s
  // forward); causal flash kernels do half of that, and their backward runs 2.5x the forward
  // (FlashAttention-2: five matmuls against two).
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  // 2 x (qk + v) per (query, key, head): 4 d for standard heads (heads x d = hidden here), 2 (192 + 128)-like
  // widths under multi-latent attention.
  const double per_pair = 2.0 * s.model.heads * (s.model.qk_head_dim() + s.model.v_dim());
  // The multi-token prediction modules' layers attend too (not recomputed).
  const double layer_forward = 0.5 * per_pair * s.training.seq_len * tokens;
  const double forward = layer_forward * (s.model.attention_layers() + s.model.mtp_layers);
  EXPECT_NEAR(summed_flops(workload, KernelClass::attention, Pass::forward), forward, forward * 1e-12);
  EXPECT_NEAR(summed_flops(workload, KernelClass::attention, Pass::backward), 2.5 * forward, forward * 1e-12);
  const double recomputed = recomputed_share(s) * layer_forward * s.model.layers;
  EXPECT_NEAR(summed_flops(workload, KernelClass::attention, Pass::recompute), recomputed, forward * 1e-12);
}

TEST(Attention, SlidingWindowKernelsComputeThePairsInTheWindow) {
  // 256-token sequences, a 64-token window on every other layer: a sliding layer's causal kernel computes the
  // (query, key) pairs within the window, 64*65/2 + (256-64)*64 of the 256*257/2 causal pairs; the full layers all.
  RunSetup s = setup("sliding", 2);
  s.model.sliding_window = 64;
  s.model.full_attention_every = 2;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const double full_layer = 0.5 * 4.0 * s.model.hidden * s.training.seq_len * tokens;
  const double share = (64.0 * 65 / 2 + (256.0 - 64) * 64) / (256.0 * 257 / 2);
  const double forward = full_layer * (4 + 4 * share);
  EXPECT_NEAR(summed_flops(workload, KernelClass::attention, Pass::forward), forward, forward * 1e-12);
  EXPECT_NEAR(summed_flops(workload, KernelClass::attention, Pass::backward), 2.5 * forward, forward * 1e-12);
  // The model FLOPs count each sliding layer's window against the sequence.
  EXPECT_NEAR(workload.model_flops_per_iteration,
              (6.0 * count_parameters(s.model).active_matmul + 12.0 * 256 * (4 * 256.0 + 4 * 64.0)) * tokens,
              workload.model_flops_per_iteration * 1e-12);
}

TEST_P(ParallelismMix, EverySendHasExactlyOneMatchingRecv) {
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const RankLayout& layout = workload.layout;
  const int pp = s.parallelism.pp;
  std::map<std::tuple<int, int, std::uint32_t>, int> sends;
  std::map<std::tuple<int, int, std::uint32_t>, int> recvs;
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    if (op.kind != OpKind::send && op.kind != OpKind::recv) return;
    RankCoordinates peer = layout.coordinates(rank);
    peer.pp = ((peer.pp + op.peer_offset) % pp + pp) % pp;
    const int other = layout.rank_of(peer);
    if (op.kind == OpKind::send) ++sends[{rank, other, op.tag}];
    if (op.kind == OpKind::recv) ++recvs[{other, rank, op.tag}];
  });
  EXPECT_EQ(sends, recvs);
  for (const auto& [key, count] : sends) EXPECT_EQ(count, 1);
  // 1F1B: every micro-batch crosses each of the (pp*v - 1) boundaries once forward and once backward.
  const int chunks = s.parallelism.pp_schedule == PipelineSchedule::interleaved ? s.parallelism.virtual_stages : 1;
  const int micro_batches = s.training.micro_batches(s.parallelism);
  const int pipelines = layout.world_size() / pp;
  EXPECT_EQ(static_cast<int>(sends.size()), pp == 1 ? 0 : pipelines * micro_batches * (pp * chunks - 1) * 2);
}

TEST_P(ParallelismMix, CollectivesSpanMoreThanOneRankAndOneStage) {
  const RunSetup& s = GetParam();
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  for_each_op(workload, [&](int, const Program&, std::size_t, const Op& op) {
    if (op.kind != OpKind::collective) return;
    EXPECT_GT(workload.layout.group_size(op.group), 1) << workload.name(op);
    EXPECT_NE(op.group, GroupRole::pp) << workload.name(op);
    EXPECT_NE(op.group, GroupRole::world) << workload.name(op);
    EXPECT_NE(op.category, CommCategory::none) << workload.name(op);
    EXPECT_EQ(op.kernel_class, KernelClass::communication);
    EXPECT_GT(op.bytes, 0.0);
  });
}

INSTANTIATE_TEST_SUITE_P(Workload, ParallelismMix, ::testing::ValuesIn(parallelism_mixes()),
                         [](const ::testing::TestParamInfo<RunSetup>& info) { return info.param.label; });

// Megatron's --recompute-modules: each listed module's forward runs again (Pass::recompute) right before its
// backward, once per layer that has it and micro-batch; a recomputed MoE layer re-runs its dispatch and combine too.
TEST(Workload, RecomputeModulesRunEachListedModuleAgainBeforeItsBackward) {
  RunSetup s = setup("moe_modules", 2, 1, 1, 2);
  s.model = tiny_moe_dense_first_shared();  // 2 dense layers, 6 MoE layers with shared experts
  s.parallelism.ep = 2;
  s.training.recompute = RecomputePolicy::selective;
  const auto recomputed = [&](const RecomputeModules& modules, std::string_view name) {
    RunSetup run = s;
    run.training.recompute_modules = modules;
    return count_of(build_workload(run.model, run.parallelism, run.training), 0, name, Pass::recompute);
  };
  const int micro_batches = 2;
  EXPECT_EQ(recomputed({.moe_act = true}, "expert_swiglu"), 6 * micro_batches);
  EXPECT_EQ(recomputed({.moe_act = true}, "ep_all_to_all_dispatch"), 0);
  EXPECT_EQ(recomputed({.moe = true}, "ep_all_to_all_dispatch"), 6 * micro_batches);
  EXPECT_EQ(recomputed({.moe = true}, "shared_expert_fc1"), 6 * micro_batches);
  EXPECT_EQ(recomputed({.shared_experts = true}, "shared_expert_fc1"), 6 * micro_batches);
  EXPECT_EQ(recomputed({.mlp = true}, "mlp_fc1"), 2 * micro_batches);
  EXPECT_EQ(recomputed({.core_attn = true}, "attention"), 8 * micro_batches);
  EXPECT_EQ(recomputed({.layernorm = true}, "input_norm"), 8 * micro_batches);
  EXPECT_EQ(recomputed({.layernorm = true}, "post_attention_norm"), 8 * micro_batches);
  // recompute: selective without modules keeps its meaning (fused attention: nothing re-runs).
  EXPECT_EQ(recomputed({}, "attention"), 0);
}

TEST(Workload, RecomputationIsMarkedAndSelectiveCostsNothingWithFlashAttention) {
  RunSetup s = setup("recompute", 1);
  const double none = build_workload(s.model, s.parallelism, s.training).executed_flops_per_iteration();
  s.training.recompute = RecomputePolicy::selective;
  EXPECT_DOUBLE_EQ(build_workload(s.model, s.parallelism, s.training).executed_flops_per_iteration(), none);
  s.training.recompute = RecomputePolicy::full;
  const Workload full = build_workload(s.model, s.parallelism, s.training);
  EXPECT_GT(summed_flops(full, KernelClass::gemm, Pass::recompute), 0.0);
  EXPECT_GT(full.executed_flops_per_iteration(), none);
}

TEST(Workload, EarlyStopLeavesTheLastProjectionAndTheResidualOutOfTheRecomputation) {
  // PyTorch's non-reentrant checkpoint (2.1+) stops a recomputed forward once every tensor the backward reads is
  // rebuilt; the MLP's fc2 saves its input and weight before it runs, so its GEMM (2 t f h FLOPs per layer and
  // micro-batch) and the residual add after it are left out, and nothing else changes.
  RunSetup s = setup("early_stop", 2, 2, 2, 4);  // tp 2 over two stages, four micro-batches
  s.training.recompute = RecomputePolicy::full;
  const auto built = [&](bool early_stop, bool dropout) {
    RunSetup run = s;
    run.training.recompute_early_stop = early_stop;
    run.model.dropout = dropout;
    return build_workload(run.model, run.parallelism, run.training);
  };
  const Workload whole = built(false, false), stopped = built(true, false);
  const double tokens = static_cast<double>(s.training.global_batch) * s.training.seq_len;
  const double fc2_forward = 2.0 * tokens * s.model.ffn_hidden * s.model.hidden * s.model.layers;
  EXPECT_NEAR(summed_flops(whole, KernelClass::gemm, Pass::recompute) -
                  summed_flops(stopped, KernelClass::gemm, Pass::recompute),
              fc2_forward, fc2_forward * 1e-12);
  EXPECT_DOUBLE_EQ(summed_flops(stopped, KernelClass::gemm, Pass::forward),
                   summed_flops(whole, KernelClass::gemm, Pass::forward));
  EXPECT_DOUBLE_EQ(summed_flops(stopped, KernelClass::gemm, Pass::backward),
                   summed_flops(whole, KernelClass::gemm, Pass::backward));
  const int layers_per_rank = s.model.layers / 2, micro_batches = 4;
  EXPECT_EQ(count_of(whole, 0, "mlp_residual", Pass::recompute), layers_per_rank * micro_batches);
  EXPECT_EQ(count_of(stopped, 0, "mlp_residual", Pass::recompute), 0);
  EXPECT_EQ(count_of(stopped, 0, "mlp_fc2", Pass::recompute), 0);
  EXPECT_EQ(count_of(stopped, 0, "attention_residual", Pass::recompute), layers_per_rank * micro_batches);
  // A residual dropout after fc2 keeps its mask, so fc2 and the fused dropout-add run again.
  EXPECT_DOUBLE_EQ(summed_flops(built(true, true), KernelClass::gemm, Pass::recompute),
                   summed_flops(built(false, true), KernelClass::gemm, Pass::recompute));
  EXPECT_EQ(count_of(built(true, true), 0, "mlp_residual", Pass::recompute), layers_per_rank * micro_batches);
  // Eager PyTorch's layer: down_proj's GEMM and the residual add are left out, autocast's weight cast is not.
  RunSetup eager = setup("eager_early_stop", 2, 1, 1, 4);  // eager PyTorch: data parallelism only
  eager.training.framework = Framework::pytorch_eager;
  eager.training.recompute = RecomputePolicy::full;
  eager.training.recompute_early_stop = true;
  const Workload eager_stopped = build_workload(eager.model, eager.parallelism, eager.training);
  const int layers = eager.model.layers;
  EXPECT_EQ(count_of(eager_stopped, 0, "down_proj", Pass::recompute), 0);
  EXPECT_EQ(count_of(eager_stopped, 0, "down_proj_weight_cast", Pass::recompute), layers * micro_batches);
  EXPECT_EQ(count_of(eager_stopped, 0, "mlp_residual", Pass::recompute), 0);
  EXPECT_EQ(count_of(eager_stopped, 0, "down_proj", Pass::forward), layers * micro_batches);
}

TEST(Workload, RejectsSetupsItCannotLayOut) {
  RunSetup s = setup("bad", 2);
  s.model.layers = 6;
  s.parallelism.pp = 4;
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 2);
  s.training.global_batch = 3;
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 2);
  s.parallelism.ep = 2;  // dense model
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 1, 3);  // 8 heads over tp=3
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 1, 1, 4, 6);  // interleaving needs a multiple of pp micro-batches
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 1, 1, 4, 4);  // an uneven split with interleaving
  s.parallelism.pp_schedule = PipelineSchedule::interleaved;
  s.parallelism.virtual_stages = 2;
  s.parallelism.stage_layers = {3, 2, 2, 1};
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
  s = setup("bad", 1);  // eager attention with context parallelism
  s.parallelism.cp = 2;
  EXPECT_NO_THROW((void)build_workload(s.model, s.parallelism, s.training));
  s.training.attention = std::string(kEagerAttention);
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

TEST(WorkloadCheck, DetectsARecvWithoutPartner) {
  const RunSetup s = setup("pp2", 1, 1, 2, 2);
  Workload workload = build_workload(s.model, s.parallelism, s.training);
  bool broken = false;
  for (Stream& stream : workload.programs[1].streams)
    for (Op& op : stream.ops)
      if (!broken && op.kind == OpKind::recv) {
        op.tag += 1000;
        broken = true;
      }
  ASSERT_TRUE(broken);
  try {
    check_workload_completes(workload);
    FAIL() << "expected a deadlock";
  } catch (const ModelError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
    EXPECT_NE(message.find("pp_recv_activation"), std::string::npos) << message;
  }
}

TEST(WorkloadCheck, DetectsADependencyCycle) {
  const RunSetup s = setup("dp2", 2);
  Workload workload = build_workload(s.model, s.parallelism, s.training);
  Program& program = workload.programs[0];
  // Make the first compute op wait for the last gradient bucket, which waits for backward compute.
  std::uint16_t dp_stream = 0;
  for (std::size_t i = 0; i < program.streams.size(); ++i)
    if (program.streams[i].name == "dp") dp_stream = static_cast<std::uint16_t>(i);
  ASSERT_NE(dp_stream, 0);
  Op& first = program.streams[0].ops.front();
  ASSERT_EQ(first.dependency_count, 0u);
  first.first_dependency = static_cast<std::uint32_t>(program.dependencies.size());
  first.dependency_count = 1;
  program.dependencies.push_back({dp_stream, static_cast<std::uint32_t>(program.streams[dp_stream].ops.size() - 1)});
  EXPECT_THROW(check_workload_completes(workload), ModelError);
}

TEST(WorkloadCheck, DetectsDuplicateTagsAndMissingDependencies) {
  const RunSetup s = setup("pp2", 1, 1, 2, 2);
  Workload duplicate = build_workload(s.model, s.parallelism, s.training);
  std::vector<Op*> sends;
  for (Stream& stream : duplicate.programs[0].streams)
    for (Op& op : stream.ops)
      if (op.kind == OpKind::send) sends.push_back(&op);
  ASSERT_GE(sends.size(), 2u);
  sends[1]->tag = sends[0]->tag;
  EXPECT_THROW(check_workload_completes(duplicate), ModelError);

  Workload dangling = build_workload(s.model, s.parallelism, s.training);
  dangling.programs[0].dependencies.push_back({0, 999999});
  Op& op = dangling.programs[0].streams[0].ops.back();
  op.first_dependency = static_cast<std::uint32_t>(dangling.programs[0].dependencies.size() - 1);
  op.dependency_count = 1;
  EXPECT_THROW(check_workload_completes(dangling), ModelError);
}

}  // namespace
}  // namespace chopsim
