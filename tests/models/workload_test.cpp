// Workload generation: FLOPs against 6*N, communication volumes against hand counts, pipeline order,
// and completion (no deadlock) of every parallelism mix under the symbolic executor.

#include "chopsim/models/workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

using test::tiny_dense;
using test::tiny_mla;

TransformerSpec tiny_moe() {
  TransformerSpec m = tiny_dense();
  m.name = "tiny-moe";
  m.experts = 4;
  m.top_k = 2;
  return m;
}

/// DeepSeek's layout in small: two dense first layers of their own width, then MoE layers with a shared expert.
TransformerSpec tiny_moe_dense_first_shared() {
  TransformerSpec m = tiny_moe();
  m.name = "tiny-moe-dense-first-shared";
  m.dense_layers = 2;
  m.dense_ffn_hidden = 1024;
  m.shared_expert_ffn_hidden = 344;
  return m;
}

/// A hybrid model in small (Nemotron 3's proportions): Mamba-2, attention, dense-MLP and MoE layers with a shared
/// expert and squared-ReLU MLPs; the Mamba heads and groups split over tp 2.
TransformerSpec tiny_hybrid() {
  TransformerSpec m = tiny_moe();
  m.name = "tiny-hybrid";
  m.hybrid_pattern = "M*EM-ME*";
  m.head_dim_override = 64;
  m.shared_expert_ffn_hidden = 344;
  m.mlp = MlpKind::squared_relu;
  m.mamba_heads = 8;
  m.mamba_head_dim = 16;
  m.mamba_state_dim = 16;
  m.mamba_groups = 2;
  m.mamba_chunk_size = 64;
  return m;
}

/// Whether `name` is one of a Mamba-2 mixer's scan kernels (GEMM-class kernels that are not the model's matmuls).
bool is_mamba_scan(std::string_view name) {
  return name.starts_with("mamba_") && !name.starts_with("mamba_in_proj") && !name.starts_with("mamba_out_proj");
}

struct RunSetup {
  std::string label;
  TransformerSpec model = tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

RunSetup setup(std::string label, int dp, int tp = 1, int pp = 1, int micro_batches = 2) {
  RunSetup s;
  s.label = std::move(label);
  s.parallelism.dp = dp;
  s.parallelism.tp = tp;
  s.parallelism.pp = pp;
  s.training.micro_batch = 1;
  s.training.seq_len = 256;
  s.training.global_batch = dp * micro_batches;
  s.training.dp_bucket_bytes = 256.0 * 1024;  // several buckets for the tiny model
  return s;
}

void for_each_op(const Workload& workload,
                 const std::function<void(int rank, const Program&, std::size_t stream, const Op&)>& visit) {
  for (int rank = 0; rank < workload.layout.world_size(); ++rank) {
    const Program& program = workload.program(rank);
    for (std::size_t s = 0; s < program.streams.size(); ++s)
      for (const Op& op : program.streams[s].ops) visit(rank, program, s, op);
  }
}

/// FLOPs of the compute ops of `kernel_class` (of `pass`); GEMMs without a Mamba-2 mixer's scan kernels unless
/// `with_scans`.
double summed_flops(const Workload& workload, KernelClass kernel_class, std::optional<Pass> pass = std::nullopt,
                    bool with_scans = false) {
  double total = 0.0;
  for_each_op(workload, [&](int, const Program&, std::size_t, const Op& op) {
    if (op.kind == OpKind::compute && op.kernel_class == kernel_class && (!pass || op.pass == *pass) &&
        (with_scans || !is_mamba_scan(workload.name(op))))
      total += op.flops;
  });
  return total;
}

/// Sum of `bytes` of ops called `name` in the program of `rank`.
double bytes_of(const Workload& workload, int rank, std::string_view name) {
  double total = 0.0;
  const Program& program = workload.program(rank);
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name) total += op.bytes;
  return total;
}

int count_of(const Workload& workload, int rank, std::string_view name, std::optional<Pass> pass = std::nullopt) {
  int count = 0;
  const Program& program = workload.program(rank);
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name && (!pass || op.pass == *pass)) ++count;
  return count;
}

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

void PrintTo(const RunSetup& s, std::ostream* out) { *out << s.label; }

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

// --- pipeline schedule ------------------------------------------------------------------------------

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

// --- communication volumes ----------------------------------------------------------------------------

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

// ---- training features (Megatron-LM flags, FSDP mixed precision) -------------------------------------------

/// Parameters of the linear layers of one transformer layer of tiny_dense() on one rank (tp = 1).
double linear_parameters_per_layer(const TransformerSpec& m) {
  const double h = m.hidden, d = m.head_dim();
  return h * d * (m.heads + 2.0 * m.kv_heads) + m.heads * d * h + 3.0 * h * m.ffn_hidden;  // QKV, out, SwiGLU MLP
}

TEST(TrainingFeatures, GradientAccumulationFusionOffAddsExactlyTheFp32AccumulateTraffic) {
  // Megatron --no-gradient-accumulation-fusion: each weight-gradient GEMM writes a bf16 gradient (2 bytes per
  // weight instead of reading and writing the fp32 main_grad, 8) and a separate kernel adds it to main_grad
  // (reads 4 + 2, writes 4 = 10 bytes per weight), every micro-batch.
  RunSetup fused = setup("fused", 2, 1, 1, 3);
  fused.parallelism.zero_stage = 1;
  RunSetup unfused = fused;
  unfused.training.gradient_accumulation_fusion = false;
  const Workload a = build_workload(fused.model, fused.parallelism, fused.training);
  const Workload b = build_workload(unfused.model, unfused.parallelism, unfused.training);
  const int micro_batches = 3;
  const double layer_weights = linear_parameters_per_layer(fused.model);
  const double head_weights = static_cast<double>(fused.model.vocab) * fused.model.hidden;  // untied logits
  const double weights = (fused.model.layers * layer_weights + head_weights) * micro_batches;
  double accumulate_bytes = 0.0, accumulate_elements = 0.0, wgrad_a = 0.0, wgrad_b = 0.0;
  int accumulates = 0, wgrads = 0;
  for (const Op& op : b.programs[0].streams[0].ops) {
    const std::string name(b.name(op));
    if (name.size() > 11 && name.substr(name.size() - 11) == "_accumulate" && name != "embedding_grad_accumulate") {
      ++accumulates;
      accumulate_bytes += op.bytes;
      accumulate_elements += op.flops;  // one add per weight
      EXPECT_EQ(op.kernel_class, KernelClass::elementwise);
    }
    if (name.size() > 6 && name.substr(name.size() - 6) == "_wgrad") wgrad_b += op.bytes;
  }
  for (const Op& op : a.programs[0].streams[0].ops) {
    const std::string name(a.name(op));
    if (name.size() > 6 && name.substr(name.size() - 6) == "_wgrad") {
      ++wgrads;
      wgrad_a += op.bytes;
    }
    EXPECT_EQ(name.find("wgrad_accumulate"), std::string::npos) << name;
  }
  EXPECT_EQ(accumulates, wgrads);  // one accumulate per weight-gradient GEMM
  EXPECT_DOUBLE_EQ(accumulate_elements, weights);
  EXPECT_DOUBLE_EQ(accumulate_bytes, 10.0 * weights);
  EXPECT_DOUBLE_EQ(wgrad_a - wgrad_b, (8.0 - 2.0) * weights);
  // The bucketed gradient reduction waits for the accumulate, not the GEMM: same buckets, same bytes.
  EXPECT_DOUBLE_EQ(bytes_of(a, 0, "dp_reduce_scatter"), bytes_of(b, 0, "dp_reduce_scatter"));
  // FSDP keeps the parameter-dtype gradient: the flag changes nothing there.
  RunSetup fsdp = setup("fsdp", 4, 1, 1, 2);
  fsdp.parallelism.zero_stage = 3;
  RunSetup fsdp_unfused = fsdp;
  fsdp_unfused.training.gradient_accumulation_fusion = false;
  EXPECT_EQ(count_of(build_workload(fsdp_unfused.model, fsdp_unfused.parallelism, fsdp_unfused.training), 0,
                     "mlp_fc1_wgrad_accumulate"),
            0);
}

TEST(TrainingFeatures, UnfusedCrossEntropyMakesMegatronsPassesOverTheLogits) {
  RunSetup s = setup("ce", 1, 2, 1, 1);
  const double logits = 256.0 * 1024 / 2;  // tokens x vocab / tp
  Workload fused = build_workload(s.model, s.parallelism, s.training);
  EXPECT_DOUBLE_EQ(bytes_of(fused, 0, "cross_entropy"), logits * (2.0 + 4.0));
  EXPECT_DOUBLE_EQ(bytes_of(fused, 0, "cross_entropy_bwd"), logits * (4.0 + 2.0));
  s.training.cross_entropy_fusion = false;
  const Workload unfused = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(unfused, 0, "cross_entropy"), 0);
  // Forward: float() 2+4, max 4, x -= max 4+4, exp 4+4, sum 4, /= sum 4+4 = 38 bytes; backward: *= dloss 4+4,
  // cast to bf16 4+2 = 14 bytes per logit.
  EXPECT_DOUBLE_EQ(bytes_of(unfused, 0, "cross_entropy_reductions") + bytes_of(unfused, 0, "cross_entropy_elementwise"),
                   38.0 * logits);
  EXPECT_DOUBLE_EQ(bytes_of(unfused, 0, "cross_entropy_bwd"), 14.0 * logits);
}

/// Names of the compute ops of rank 0 flagged unaligned.
std::set<std::string> unaligned_ops(const Workload& workload) {
  std::set<std::string> names;
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    if (rank == 0 && op.unaligned) names.insert(std::string(workload.name(op)));
  });
  return names;
}

TEST(TrainingFeatures, AnUnpaddedOddVocabularyMakesTheOutputHeadForwardUnaligned) {
  RunSetup s = setup("vocab", 1, 2, 1, 1);
  EXPECT_TRUE(unaligned_ops(build_workload(s.model, s.parallelism, s.training)).empty());  // 1024 / tp = 512 rows
  s.model.vocab = 1001;  // 501 rows per rank: not a multiple of 8 bf16 elements
  const Workload odd = build_workload(s.model, s.parallelism, s.training);
  // Only the forward's result has rows of the odd width; dX and dW (stored [vocab x hidden]) have rows of hidden.
  EXPECT_EQ(unaligned_ops(odd), (std::set<std::string>{"logits"}));
  const double tokens = 256.0;
  EXPECT_DOUBLE_EQ(
      summed_flops(odd, KernelClass::gemm, Pass::forward) -
          summed_flops(build_workload(tiny_dense(), s.parallelism, s.training), KernelClass::gemm, Pass::forward),
      2.0 * tokens * (501 - 512) * 256 * 2);   // both tp ranks, 501 instead of 512 rows each
  s.model.make_vocab_size_divisible_by = 128;  // Megatron pads 1001 to 1024: 512 rows per rank again
  EXPECT_TRUE(unaligned_ops(build_workload(s.model, s.parallelism, s.training)).empty());
  // fp8: the results are still bf16, so the rule is the same (the MLP's 688 / tp = 344 rows are 688 bytes, aligned;
  // 1-byte inputs do not make them 16-element rows).
  s.training.precision = Precision::fp8;
  EXPECT_TRUE(unaligned_ops(build_workload(s.model, s.parallelism, s.training)).empty());
  s.model.make_vocab_size_divisible_by = 1;
  EXPECT_EQ(unaligned_ops(build_workload(s.model, s.parallelism, s.training)), (std::set<std::string>{"logits"}));
  // fp32: 16 bytes are 4 elements; 501 rows are still odd.
  s.training.precision = Precision::fp32;
  EXPECT_EQ(unaligned_ops(build_workload(s.model, s.parallelism, s.training)), (std::set<std::string>{"logits"}));
}

/// "name/pass" of the ops of rank 0 for which `flag` is true (Op::deterministic, Op::dropout: bit-fields).
std::multiset<std::string> flagged_ops(const Workload& workload, bool (*flag)(const Op&)) {
  std::multiset<std::string> names;
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    if (rank == 0 && flag(op)) names.insert(std::string(workload.name(op)) + "/" + std::string(to_string(op.pass)));
  });
  return names;
}

std::multiset<std::string> deterministic_ops(const Workload& workload) {
  return flagged_ops(workload, [](const Op& op) { return static_cast<bool>(op.deterministic); });
}

TEST(TrainingFeatures, DeterministicModeFlagsEveryAttentionBackwardAndNothingElse) {
  RunSetup s = setup("det", 1, 1, 1, 1);
  s.training.recompute = RecomputePolicy::full;  // recomputed forwards must stay unflagged
  EXPECT_TRUE(deterministic_ops(build_workload(s.model, s.parallelism, s.training)).empty());
  s.training.deterministic = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const std::multiset<std::string> flagged = deterministic_ops(workload);
  const auto layers = static_cast<std::size_t>(s.model.layers);
  const auto micro_batches = static_cast<std::size_t>(s.training.micro_batches(s.parallelism));
  EXPECT_EQ(flagged.size(), layers * micro_batches);
  EXPECT_EQ(flagged.count("attention_bwd/backward"), layers * micro_batches);
  // Context parallelism: the local and the remote chunks' backward kernels.
  RunSetup cp = setup("det-cp", 1, 1, 1, 1);
  cp.parallelism.cp = 2;
  cp.parallelism.dp = 1;
  cp.training.deterministic = true;
  const std::multiset<std::string> cp_flagged =
      deterministic_ops(build_workload(cp.model, cp.parallelism, cp.training));
  EXPECT_GT(cp_flagged.count("attention_bwd/backward"), 0u);
  EXPECT_EQ(cp_flagged.count("attention_bwd_remote/backward"), cp_flagged.count("attention_bwd/backward"));
  EXPECT_EQ(cp_flagged.size(), 2 * cp_flagged.count("attention_bwd/backward"));
  // Eager attention's backward is GEMMs and elementwise kernels, deterministic already.
  s.training.attention = std::string(kEagerAttention);
  EXPECT_TRUE(deterministic_ops(build_workload(s.model, s.parallelism, s.training)).empty());
}

TEST(TrainingFeatures, AttentionDropoutFlagsEveryFusedAttentionKernel) {
  RunSetup s = setup("dropout", 1, 1, 1, 2);
  s.training.recompute = RecomputePolicy::full;
  const auto flagged = [](const Workload& workload) {
    return flagged_ops(workload, [](const Op& op) { return static_cast<bool>(op.dropout); });
  };
  EXPECT_TRUE(flagged(build_workload(s.model, s.parallelism, s.training)).empty());  // Llama-like: no dropout
  s.model.dropout = true;
  const std::multiset<std::string> names = flagged(build_workload(s.model, s.parallelism, s.training));
  const auto per_pass = static_cast<std::size_t>(s.model.layers) * 2;  // layers x micro-batches
  // The forward, the recomputed forward (same random state, same mask) and the backward; nothing else.
  EXPECT_EQ(names.count("attention/forward"), per_pass);
  EXPECT_EQ(names.count("attention/recompute"), per_pass);
  EXPECT_EQ(names.count("attention_bwd/backward"), per_pass);
  EXPECT_EQ(names.size(), 3 * per_pass);
  // Eager attention draws its dropout in an elementwise kernel of its own (attention_dropout).
  s.training.attention = std::string(kEagerAttention);
  EXPECT_TRUE(flagged(build_workload(s.model, s.parallelism, s.training)).empty());
}

TEST(TrainingFeatures, LinearBiasesAddOneGradientReductionPerBiasOutsideItsGemm) {
  // Megatron-Core: linear_proj, linear_fc1 and linear_fc2 add their biases outside the GEMM (skip_bias_add), so
  // autograd sums the output gradient over the tokens; linear_qkv's bias stays in TE's GEMM epilogues.
  RunSetup s = setup("bias", 1, 2, 1, 3);
  s.model.mlp = MlpKind::gelu;
  const auto bias_ops = [](const Workload& workload) {
    std::map<std::string, double> bytes;
    for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
      const std::string name(workload.name(op));
      if (rank != 0 || !name.ends_with("_bias_grad")) return;
      EXPECT_EQ(op.kernel_class, KernelClass::reduction) << name;
      EXPECT_EQ(op.pass, Pass::backward) << name;
      bytes[name] += op.bytes;
    });
    return bytes;
  };
  EXPECT_TRUE(bias_ops(build_workload(s.model, s.parallelism, s.training)).empty());
  s.model.linear_bias = true;
  const std::map<std::string, double> without_sp = bias_ops(build_workload(s.model, s.parallelism, s.training));
  const double tokens = 256.0, micro_batches = 3.0, layers = s.model.layers, e = 2.0, tp = 2.0;
  const double h = s.model.hidden, f = s.model.ffn_hidden;
  // Each reads the gradient once (bf16): h wide for the projection and fc2, f / tp for fc1's shard.
  EXPECT_DOUBLE_EQ(without_sp.at("out_proj_bias_grad"), layers * micro_batches * tokens * h * e);
  EXPECT_DOUBLE_EQ(without_sp.at("mlp_fc2_bias_grad"), layers * micro_batches * tokens * h * e);
  EXPECT_DOUBLE_EQ(without_sp.at("mlp_fc1_bias_grad"), layers * micro_batches * tokens * f / tp * e);
  EXPECT_EQ(without_sp.size(), 3u);
  // Sequence parallelism: the bias-dropout-adds see 1/tp of the tokens; fc1's bias-GELU all of them.
  s.parallelism.sequence_parallel = true;
  const std::map<std::string, double> with_sp = bias_ops(build_workload(s.model, s.parallelism, s.training));
  EXPECT_DOUBLE_EQ(with_sp.at("out_proj_bias_grad"), without_sp.at("out_proj_bias_grad") / tp);
  EXPECT_DOUBLE_EQ(with_sp.at("mlp_fc2_bias_grad"), without_sp.at("mlp_fc2_bias_grad") / tp);
  EXPECT_DOUBLE_EQ(with_sp.at("mlp_fc1_bias_grad"), without_sp.at("mlp_fc1_bias_grad"));
}

TEST(TrainingFeatures, TheDataLoadersAttentionMaskIsCopiedAndBroadcastWhereGetBatchRuns) {
  // Megatron's get_batch: the [b, 1, s, s] mask (b s^2 bytes) copied from the host on the chunks holding the
  // embedding and the loss, then broadcast over tensor parallelism. Interleaved pipeline of 4 stages x 2 chunks.
  RunSetup s = setup("mask", 1, 2, 4, 4);
  s.parallelism.virtual_stages = 2;
  s.training.micro_batch = 2;
  s.training.global_batch = 8;
  EXPECT_EQ(count_of(build_workload(s.model, s.parallelism, s.training), 0, "attention_mask_h2d"), 0);  // off
  s.training.attention_mask_in_dataloader = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const RankLayout& layout = workload.layout;
  const double mask_bytes = 2.0 * 256.0 * 256.0;
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    const int stage = layout.coordinates(rank).pp;
    const int expected = stage == 0 || stage == 3 ? 4 : 0;  // one per micro-batch on the first and last stage
    EXPECT_EQ(count_of(workload, rank, "attention_mask_h2d"), expected) << rank;
    EXPECT_EQ(count_of(workload, rank, "attention_mask_broadcast"), expected) << rank;
    EXPECT_DOUBLE_EQ(bytes_of(workload, rank, "attention_mask_h2d"), expected * mask_bytes) << rank;
  }
  for_each_op(workload, [&](int, const Program&, std::size_t, const Op& op) {
    if (workload.name(op) == "attention_mask_h2d") {
      EXPECT_TRUE(op.host_to_device);
      EXPECT_EQ(op.pass, Pass::forward);
    } else {
      EXPECT_FALSE(op.host_to_device) << workload.name(op);
    }
    if (workload.name(op) == "attention_mask_broadcast") {
      EXPECT_EQ(op.collective, CollectiveKind::broadcast);
      EXPECT_EQ(op.group, GroupRole::tp);
    }
  });
  // Without tensor parallelism there is nobody to broadcast to.
  RunSetup alone = setup("mask-tp1", 1, 1, 1, 2);
  alone.training.attention_mask_in_dataloader = true;
  const Workload single = build_workload(alone.model, alone.parallelism, alone.training);
  EXPECT_EQ(count_of(single, 0, "attention_mask_h2d"), 2);
  EXPECT_EQ(count_of(single, 0, "attention_mask_broadcast"), 0);
}

/// Bytes and count of rank 0's ops whose name ends in "_fp8_cast", per pass.
struct Fp8Casts {
  std::map<Pass, double> bytes;
  std::map<Pass, int> count;
};

Fp8Casts fp8_casts(const Workload& workload) {
  Fp8Casts casts;
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    const std::string name(workload.name(op));
    if (rank != 0 || !name.ends_with("_fp8_cast")) return;
    EXPECT_EQ(op.kernel_class, KernelClass::elementwise) << name;
    casts.bytes[op.pass] += op.bytes;
    ++casts.count[op.pass];
  });
  return casts;
}

TEST(TrainingFeatures, Fp8CastsEachTransformerEngineGemmOperandAndKeepsTheHeadInBf16) {
  // Transformer Engine's cast_transpose: read bf16 (2 bytes), write fp8 in two layouts (1 + 1) per element.
  RunSetup s = setup("fp8", 1, 1, 1, 3);
  EXPECT_TRUE(fp8_casts(build_workload(s.model, s.parallelism, s.training)).count.empty());  // bf16: none
  s.training.precision = Precision::fp8;
  s.training.recompute = RecomputePolicy::full;
  const Workload workload = build_workload(s.model, s.parallelism, s.training);
  const Fp8Casts casts = fp8_casts(workload);
  const TransformerSpec& m = s.model;
  const double tokens = 256.0, micro_batches = 3.0, layers = m.layers;
  const double h = m.hidden, f = m.ffn_hidden, qkv_width = m.head_dim() * (m.heads + 2.0 * m.kv_heads);
  // Inputs of QKV (h), the output projection (h), SwiGLU's fc1 (h) and fc2 (f), every micro-batch; the weights at
  // the first micro-batch's forward only (TE keeps their fp8 copies for the step).
  const double inputs = layers * micro_batches * tokens * (3.0 * h + f);
  const double weights = layers * linear_parameters_per_layer(m);
  EXPECT_DOUBLE_EQ(casts.bytes.at(Pass::forward), 4.0 * (inputs + weights));
  EXPECT_EQ(casts.count.at(Pass::forward), static_cast<int>(4 * layers * micro_batches + 4 * layers));
  // A recomputed forward casts its inputs again, not the weights.
  EXPECT_DOUBLE_EQ(casts.bytes.at(Pass::recompute), 4.0 * inputs);
  // Output gradients before each dgrad: QKV's, the projection's (h), fc1's (2f wide) and fc2's (h).
  const double output_gradients = layers * micro_batches * tokens * (qkv_width + h + 2.0 * f + h);
  EXPECT_DOUBLE_EQ(casts.bytes.at(Pass::backward), 4.0 * output_gradients);
  // The LM head is a plain linear: bf16 GEMMs, no casts; the layers' GEMMs read 1-byte operands.
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    const std::string name(workload.name(op));
    if (rank != 0 || op.kernel_class != KernelClass::gemm) return;
    EXPECT_EQ(op.precision, name.starts_with("logits") ? Precision::bf16 : Precision::fp8) << name;
  });
  // MoE: the router is a plain linear too; the grouped expert GEMMs are TE's.
  RunSetup moe = setup("fp8-moe", 1, 1, 1, 1);
  moe.model = tiny_moe();
  moe.training.precision = Precision::fp8;
  const Workload moe_workload = build_workload(moe.model, moe.parallelism, moe.training);
  for_each_op(moe_workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    const std::string name(moe_workload.name(op));
    if (rank != 0 || op.kernel_class != KernelClass::gemm) return;
    const bool plain = name.starts_with("logits") || name.starts_with("router");
    EXPECT_EQ(op.precision, plain ? Precision::bf16 : Precision::fp8) << name;
  });
  EXPECT_EQ(count_of(moe_workload, 0, "router_input_fp8_cast"), 0);
  EXPECT_GT(count_of(moe_workload, 0, "expert_fc1_input_fp8_cast"), 0);
  // fc2 (forward and recomputed forward): 1-byte input and weight, bf16 result.
  EXPECT_DOUBLE_EQ(bytes_of(workload, 0, "mlp_fc2"),
                   2.0 * micro_batches * layers * ((tokens * f + f * h) * 1.0 + tokens * h * 2.0));
}

/// Bytes of rank 0's "_fill" ops, per pass.
std::map<Pass, double> fill_bytes(const Workload& workload) {
  std::map<Pass, double> bytes;
  for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
    if (rank == 0 && workload.name(op).ends_with("_fill")) bytes[op.pass] += op.bytes;
  });
  return bytes;
}

TEST(TrainingFeatures, DeterministicModeFillsEveryOutputTransformerEngineAllocates) {
  // torch.use_deterministic_algorithms(True) with fill_uninitialized_memory (PyTorch's default) writes NaN into
  // every at::empty allocation first: TE's GEMM, norm and attention outputs and the attention workspace.
  RunSetup s = setup("fill", 1, 1, 1, 2);
  const KernelFacts cudnn_hopper{2.0};  // workspace bytes per score
  EXPECT_TRUE(fill_bytes(build_workload(s.model, s.parallelism, s.training, cudnn_hopper)).empty());
  s.training.deterministic = true;
  const Workload workload = build_workload(s.model, s.parallelism, s.training, cudnn_hopper);
  const std::map<Pass, double> fills = fill_bytes(workload);
  const TransformerSpec& m = s.model;
  const double tokens = 256.0, micro_batches = 2.0, layers = m.layers, e = 2.0;  // bf16 outputs
  const double h = m.hidden, f = m.ffn_hidden, d = m.head_dim();
  const double qkv_width = d * (m.heads + 2.0 * m.kv_heads);
  // Forward, per layer: QKV, O (h wide), the projection, SwiGLU's fc1 (2f) and fc2, and the two norms; the final
  // norm once per micro-batch. The LM head's GEMM is not TE's: no fill.
  const double forward = layers * tokens * (qkv_width + h + h + 2.0 * f + h + 2.0 * h) + tokens * h;
  EXPECT_DOUBLE_EQ(fills.at(Pass::forward), micro_batches * forward * e);
  // Backward, per layer: the dgrads' outputs (fc2: f, fc1: h, projection: h, QKV: h; the wgrads accumulate into
  // main_grad), the two norms' dx, dQ dK dV, and the workspace: 2 bytes per score over the 8 heads x 256 x 256.
  const double gradients = tokens * (f + h + h + h) + 2.0 * tokens * h + tokens * qkv_width;
  const double workspace = 2.0 * m.heads * tokens * 256.0;
  EXPECT_DOUBLE_EQ(fills.at(Pass::backward), micro_batches * (layers * (gradients * e + workspace) + tokens * h * e));
  // Turned off (torch.utils.deterministic.fill_uninitialized_memory = False): no fills.
  s.training.fill_uninitialized_memory = false;
  EXPECT_TRUE(fill_bytes(build_workload(s.model, s.parallelism, s.training, cudnn_hopper)).empty());
  // Without gradient-accumulation fusion the wgrads write fresh gradients: TE allocates, and fills, them too.
  s.training.fill_uninitialized_memory = true;
  s.training.gradient_accumulation_fusion = false;
  s.parallelism.zero_stage = 1;
  const std::map<Pass, double> unfused = fill_bytes(build_workload(s.model, s.parallelism, s.training, cudnn_hopper));
  EXPECT_DOUBLE_EQ(unfused.at(Pass::backward) - fills.at(Pass::backward),
                   micro_batches * layers * linear_parameters_per_layer(m) * e);
  // Context parallelism: one workspace per kernel call, over the local chunk's keys, then the remote ones.
  RunSetup cp = setup("fill-cp", 1, 1, 1, 1);
  cp.parallelism.cp = 2;
  cp.training.deterministic = true;
  const Workload cp_workload = build_workload(cp.model, cp.parallelism, cp.training, cudnn_hopper);
  const double local_tokens = 128.0;  // 256 / cp
  EXPECT_DOUBLE_EQ(bytes_of(cp_workload, 0, "attention_bwd_remote_fill"),
                   layers * 2.0 * local_tokens * m.heads * (256.0 - 128.0));
  EXPECT_DOUBLE_EQ(
      bytes_of(cp_workload, 0, "attention_bwd_fill") - bytes_of(cp_workload, 0, "attention_bwd_remote_fill"),
      layers * local_tokens * (h + 2.0 * 256.0 / local_tokens * m.kv_heads * d) * e);
  // Megatron's unfused cross entropy casts the logits to fp32 and its gradient back: both casts' outputs are filled.
  s.training.cross_entropy_fusion = false;
  const Workload unfused_loss = build_workload(s.model, s.parallelism, s.training, cudnn_hopper);
  const double logits = tokens * s.model.vocab_per_tp_rank(1);
  EXPECT_DOUBLE_EQ(bytes_of(unfused_loss, 0, "logits_float_fill"), micro_batches * logits * 4.0);
  EXPECT_DOUBLE_EQ(bytes_of(unfused_loss, 0, "cross_entropy_bwd_fill"), micro_batches * logits * e);
  s.training.cross_entropy_fusion = true;
  // Eager attention is plain PyTorch: no attention fills (and no workspace).
  s.training.attention = std::string(kEagerAttention);
  const Workload eager = build_workload(s.model, s.parallelism, s.training, cudnn_hopper);
  EXPECT_EQ(count_of(eager, 0, "attention_fill"), 0);
  EXPECT_EQ(count_of(eager, 0, "attention_bwd_fill"), 0);
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

// Eager attention: the core becomes four GEMM-class kernels of 2*b*a*s^2*d FLOPs each per pass pair (S = QK^T and
// PV forward; dV, dP, dQ, dK backward), over every query-key pair (no causal skipping), and no attention-class kernel.
TEST(TrainingFeatures, EagerAttentionRunsTheCoreAsGemmsOverEveryQueryKeyPair) {
  RunSetup s = setup("eager", 1);
  const Workload fused = build_workload(s.model, s.parallelism, s.training);
  s.training.attention = std::string(kEagerAttention);
  const Workload eager = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(summed_flops(eager, KernelClass::attention), 0.0);
  const double core = 2.0 * 256.0 * 256.0 * 8 * 32;  // one GEMM over one micro-batch's scores: 2 * s^2 * a * d
  const double layers_and_micro_batches = 8 * 2;
  EXPECT_DOUBLE_EQ(
      summed_flops(eager, KernelClass::gemm, Pass::forward) - summed_flops(fused, KernelClass::gemm, Pass::forward),
      2 * core * layers_and_micro_batches);
  EXPECT_DOUBLE_EQ(
      summed_flops(eager, KernelClass::gemm, Pass::backward) - summed_flops(fused, KernelClass::gemm, Pass::backward),
      4 * core * layers_and_micro_batches);
  EXPECT_EQ(count_of(eager, 0, "attention_causal_mask"), 16);
  EXPECT_EQ(count_of(eager, 0, "attention_dropout"), 0);  // the tiny Llama has no dropout
  // Selective recomputation keeps no scores: the core's forward runs again before its backward.
  s.training.recompute = RecomputePolicy::selective;
  const Workload selective = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(selective, 0, "attention_scores", Pass::recompute), 16);
  EXPECT_DOUBLE_EQ(summed_flops(selective, KernelClass::gemm, Pass::recompute), 2 * core * layers_and_micro_batches);
}

// Megatron-LM's FusedScaleMaskSoftmax: one pass over the scores forward (read and write each once) where PyTorch
// runs scale, causal mask and softmax as three; backward one (read P and dP, write dS) where PyTorch runs three
// (softmax backward, mask, scale: 3 + 2 + 2 score-sized reads and writes). The GEMMs are the same.
TEST(TrainingFeatures, MaskedSoftmaxFusionPassesOverTheScoresOnceEachWay) {
  RunSetup s = setup("softmax", 1);
  s.training.attention = std::string(kEagerAttention);
  const Workload unfused = build_workload(s.model, s.parallelism, s.training);
  s.training.masked_softmax_fusion = true;
  const Workload fused = build_workload(s.model, s.parallelism, s.training);
  const auto score_bytes = [](const Workload& workload, Pass pass) {
    double bytes = 0.0;
    for_each_op(workload, [&](int rank, const Program&, std::size_t, const Op& op) {
      const std::string name(workload.name(op));
      if (rank == 0 && op.pass == pass && op.kind == OpKind::compute && op.kernel_class != KernelClass::gemm &&
          (name.starts_with("attention_scale") || name.starts_with("attention_causal_mask") ||
           name.starts_with("attention_softmax")))
        bytes += op.bytes;
    });
    return bytes;
  };
  const double scores = 256.0 * 256.0 * 8 * 16;  // one micro-batch's scores x layers x micro-batches: s^2 a L m
  const double e = 2.0;                          // bf16
  EXPECT_DOUBLE_EQ(score_bytes(unfused, Pass::forward), 3 * 2 * e * scores);
  EXPECT_DOUBLE_EQ(score_bytes(fused, Pass::forward), 2 * e * scores);
  EXPECT_DOUBLE_EQ(score_bytes(unfused, Pass::backward), (3 + 2 + 2) * e * scores);
  EXPECT_DOUBLE_EQ(score_bytes(fused, Pass::backward), 3 * e * scores);
  EXPECT_EQ(count_of(fused, 0, "attention_scale_mask_softmax", Pass::forward), 16);
  EXPECT_EQ(count_of(fused, 0, "attention_causal_mask"), 0);
  EXPECT_DOUBLE_EQ(summed_flops(fused, KernelClass::gemm), summed_flops(unfused, KernelClass::gemm));
  // It fuses eager attention's softmax: with a fused attention kernel there is nothing to fuse.
  s.training.attention.clear();
  EXPECT_THROW((void)build_workload(s.model, s.parallelism, s.training), ModelError);
}

TEST(TrainingFeatures, LearnedPositionsReplaceTheRotaryKernels) {
  RunSetup s = setup("rope", 1);
  const Workload rope = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(rope, 0, "rotary"), 8 * 2);
  EXPECT_EQ(count_of(rope, 0, "position_embedding"), 0);
  s.model.position_embedding = PositionEmbedding::learned;
  const Workload learned = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(learned, 0, "rotary"), 0);
  EXPECT_EQ(count_of(learned, 0, "rotary_bwd"), 0);
  EXPECT_EQ(count_of(learned, 0, "position_embedding"), 2);  // once per micro-batch
  s.model.position_embedding = PositionEmbedding::none;
  EXPECT_EQ(count_of(build_workload(s.model, s.parallelism, s.training), 0, "rotary"), 0);
}

TEST(TrainingFeatures, NormPassesReadTheLocalShardOncePerStep) {
  RunSetup s = setup("norms", 2, 1, 1, 2);
  s.parallelism.zero_stage = 1;
  s.training.log_num_zeros_in_grad = true;
  s.training.log_params_norm = true;
  const Workload w = build_workload(s.model, s.parallelism, s.training);
  const double shard = count_parameters(s.model).total / 2.0;  // distributed optimizer over dp 2
  EXPECT_DOUBLE_EQ(bytes_of(w, 0, "grad_norm"), 4.0 * shard);  // fp32 main gradients
  EXPECT_DOUBLE_EQ(bytes_of(w, 0, "grad_count_zeros"), 4.0 * shard);
  EXPECT_DOUBLE_EQ(bytes_of(w, 0, "params_norm"), 4.0 * shard);  // fp32 main parameters
  s.training.grad_clip = false;
  s.training.log_num_zeros_in_grad = false;
  s.training.log_params_norm = false;
  const Workload none = build_workload(s.model, s.parallelism, s.training);
  EXPECT_EQ(count_of(none, 0, "grad_norm") + count_of(none, 0, "grad_count_zeros") + count_of(none, 0, "params_norm"),
            0);
}

TEST(TrainingFeatures, FsdpFp32ReductionDoublesTheReduceScatter) {
  RunSetup s = setup("fsdp", 4, 1, 1, 2);
  s.parallelism.zero_stage = 3;
  const double bf16 = bytes_of(build_workload(s.model, s.parallelism, s.training), 0, "fsdp_reduce_scatter");
  s.training.fsdp_reduce_fp32 = true;
  const Workload fp32 = build_workload(s.model, s.parallelism, s.training);
  EXPECT_DOUBLE_EQ(bytes_of(fp32, 0, "fsdp_reduce_scatter"), 2.0 * bf16);
  EXPECT_DOUBLE_EQ(bytes_of(fp32, 0, "fsdp_all_gather"),
                   bytes_of(build_workload(s.model, s.parallelism, TrainingSpec(s.training)), 0, "fsdp_all_gather"));
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

// --- the checker catches broken programs ----------------------------------------------------------------

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
