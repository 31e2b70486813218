// Memory per GPU against hand-computed model states (ZeRO) and activations (Korthikanti et al. 2022).

#include "chopsim/models/memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "chopsim/common/error.hpp"

namespace chopsim {
namespace {

TransformerSpec llama3_8b() {
  TransformerSpec m;
  m.name = "llama3-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

TransformerSpec llama3_70b() {
  TransformerSpec m = llama3_8b();
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  return m;
}

/// A GPT-3-style block (MHA, GELU, f = 4h, LayerNorm): Korthikanti's own setting.
TransformerSpec gpt3_175b() {
  TransformerSpec m;
  m.layers = 96;
  m.hidden = 12288;
  m.ffn_hidden = 4 * 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.vocab = 50257;
  m.mlp = MlpKind::gelu;
  m.norm = NormKind::layernorm;
  m.tied_embeddings = true;
  return m;
}

HardwareSpec gpu(double capacity_bytes) {
  HardwareSpec h;
  h.name = "test-gpu";
  h.hbm_capacity_bytes = capacity_bytes;
  return h;
}

ParallelismSpec data_parallel(int dp, int zero_stage) {
  ParallelismSpec p;
  p.dp = dp;
  p.zero_stage = zero_stage;
  return p;
}

TrainingSpec one_sequence_per_rank(int dp, int seq_len) {
  TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = dp;
  t.seq_len = seq_len;
  return t;
}

/// Korthikanti et al. 2022 with flash attention: 34*s*b*h bytes per layer (Llama-3-8B's GQA + SwiGLU
/// tensors happen to add up to the same 34 h per token), plus flash attention's fp32 log-sum-exp
/// (4 bytes per query and head).
double llama3_8b_layer_activations(double seq_len) { return seq_len * (34.0 * 4096.0 + 4.0 * 32.0); }

TEST(Memory, Llama3_8BFsdpOnEightGpusShardsSixteenBytesPerParameter) {
  const TransformerSpec model = llama3_8b();
  const ParallelismSpec parallelism = data_parallel(8, 3);
  const TrainingSpec training = one_sequence_per_rank(8, 8192);
  const MemoryBreakdown m = estimate_stage_memory(model, parallelism, training, gpu(192e9), 0);
  const double parameters = count_parameters(model).total;  // 8.03e9
  // 2 (bf16 weights) + 2 (bf16 gradients) + 12 (fp32 master, m, v) bytes, sharded 8 ways.
  EXPECT_NEAR(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes, 16.0 * parameters / 8.0, 1.0);
  EXPECT_NEAR(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes, 16.06e9, 0.005e9);
  EXPECT_NEAR(m.activations_bytes, 32.0 * llama3_8b_layer_activations(8192), 1.0);
  // The largest unit is the output head with the final norm (128256 * 4096 + 4096): it and one prefetched
  // unit gathered, plus its unsharded gradient before the reduce-scatter.
  EXPECT_NEAR(m.gathered_weights_bytes, 3.0 * 2.0 * (128256.0 * 4096.0 + 4096.0), 1.0);
  // fp32 logits of the micro-batch.
  EXPECT_NEAR(m.transient_bytes, 8192.0 * 128256.0 * 4.0, 1.0);
  EXPECT_TRUE(m.fits());
}

TEST(Memory, UnfusedMegatronCrossEntropyHoldsTheFp32CopyBesideTheHeadsOutput) {
  // megatron/core/tensor_parallel/cross_entropy.py: calculate_logits_max makes an fp32 copy with .float() while
  // GPTModel.forward still holds the head's bf16 output: 4 + 2 bytes per logit. A fused loss keeps the fp32 softmax
  // only; in fp32 training .float() is the tensor itself.
  const TransformerSpec model = llama3_8b();
  const ParallelismSpec parallelism = data_parallel(8, 3);
  TrainingSpec training = one_sequence_per_rank(8, 8192);
  const double logits = 8192.0 * 128256.0;
  training.cross_entropy_fusion = false;
  EXPECT_NEAR(estimate_stage_memory(model, parallelism, training, gpu(192e9), 0).transient_bytes, 6.0 * logits, 1.0);
  training.cross_entropy_fusion = true;
  EXPECT_NEAR(estimate_stage_memory(model, parallelism, training, gpu(192e9), 0).transient_bytes, 4.0 * logits, 1.0);
  training.cross_entropy_fusion = false;
  training.precision = Precision::fp32;
  EXPECT_NEAR(estimate_stage_memory(model, parallelism, training, gpu(192e9), 0).transient_bytes, 4.0 * logits, 1.0);
}

TEST(Memory, ZeroStagesShardOptimizerThenGradientsThenWeights) {
  const TransformerSpec model = llama3_8b();
  const double n = count_parameters(model).total;
  const TrainingSpec training = one_sequence_per_rank(8, 2048);
  const auto states = [&](int zero) {
    const MemoryBreakdown m = estimate_stage_memory(model, data_parallel(8, zero), training, gpu(1e12), 0);
    return m.weights_bytes + m.gradients_bytes + m.optimizer_bytes;
  };
  // Megatron Core's distributed-optimizer guide, bf16 parameters with fp32 gradients: 18 bytes per
  // parameter without it, 6 + 12/d with it (ZeRO-1); ZeRO-2 also shards the 4-byte gradients; ZeRO-3/FSDP
  // keeps ZeRO's (2 + 2 + K)/d with K = 12 (Rajbhandari et al. 2020, Sec. 5).
  EXPECT_NEAR(states(0), 18.0 * n, 1.0);
  EXPECT_NEAR(states(1), 6.0 * n + 12.0 * n / 8.0, 1.0);
  EXPECT_NEAR(states(2), 2.0 * n + 16.0 * n / 8.0, 1.0);
  EXPECT_NEAR(states(3), 16.0 * n / 8.0, 1.0);
}

TEST(Memory, TensorParallelActivationsFollowKorthikanti) {
  // Korthikanti et al., Sec. 4.2: s*b*h*(10 + 24/t) with tensor parallelism and s*b*h*34/t with sequence
  // parallelism; flash attention drops the 5*a*s/h term. Without dropout the two 1-byte masks (part of
  // the 10) are not stored.
  TransformerSpec model = gpt3_175b();
  model.dropout = true;
  ParallelismSpec parallelism;
  parallelism.tp = 8;
  const TrainingSpec training = one_sequence_per_rank(1, 2048);
  const double s = 2048, h = 12288, a = 96, t = 8, layers = 96;
  const double lse = 4.0 * a / t;  // fp32 log-sum-exp of this rank's heads, per token
  const MemoryBreakdown tp = estimate_stage_memory(model, parallelism, training, gpu(1e13), 0);
  EXPECT_NEAR(tp.activations_bytes, layers * s * (h * (10.0 + 24.0 / t) + lse), 1.0);
  parallelism.sequence_parallel = true;
  const MemoryBreakdown sp = estimate_stage_memory(model, parallelism, training, gpu(1e13), 0);
  EXPECT_NEAR(sp.activations_bytes, layers * s * (h * 34.0 / t + lse), 1.0);
  model.dropout = false;
  parallelism.sequence_parallel = false;
  const MemoryBreakdown no_dropout = estimate_stage_memory(model, parallelism, training, gpu(1e13), 0);
  EXPECT_NEAR(no_dropout.activations_bytes, layers * s * (h * (8.0 + 24.0 / t) + lse), 1.0);
}

TEST(Memory, FullRecomputationKeepsLayerInputsAndOneLayer) {
  const TransformerSpec model = llama3_8b();
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.recompute = RecomputePolicy::full;
  const MemoryBreakdown m = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0);
  EXPECT_NEAR(m.activations_bytes, 32.0 * 4096.0 * 2.0 * 4096.0 + llama3_8b_layer_activations(4096), 1.0);
  // Selective recomputation saves nothing more once attention is flash-style.
  training.recompute = RecomputePolicy::selective;
  const MemoryBreakdown selective = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0);
  EXPECT_NEAR(selective.activations_bytes, 32.0 * llama3_8b_layer_activations(4096), 1.0);
}

TEST(Memory, BlockRecomputationKeepsInputsOfTheRecomputedLayersAndEverythingOfTheOthers) {
  // Megatron --recompute-method block --recompute-num-layers K: K of the 32 layers keep their 2-byte input, the
  // other 32 - K every activation, plus one recomputed layer's live activations.
  const TransformerSpec model = llama3_8b();
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.recompute = RecomputePolicy::full;
  const double input = 4096.0 * 2.0 * 4096.0;
  const double layer = llama3_8b_layer_activations(4096);
  for (const int k : {1, 8, 31}) {
    training.recompute_layers = k;
    const MemoryBreakdown m = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0);
    EXPECT_NEAR(m.activations_bytes, k * input + (32 - k) * layer + layer, 1.0) << k;
  }
  // Every layer (or more than the stage has) is full recomputation.
  training.recompute_layers = 0;
  const double full = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0).activations_bytes;
  for (const int k : {32, 40}) {
    training.recompute_layers = k;
    EXPECT_DOUBLE_EQ(estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0).activations_bytes, full);
  }
  // Without full recomputation the count is refused.
  training.recompute = RecomputePolicy::selective;
  training.recompute_layers = 4;
  EXPECT_THROW((void)estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e12), 0), ModelError);
}

TEST(Memory, OneFOneBStageHoldsPpMinusStageMicroBatches) {
  const TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.pp = 4;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 8;  // 8 micro-batches
  for (int stage = 0; stage < 4; ++stage) {
    const MemoryBreakdown m = estimate_stage_memory(model, parallelism, training, gpu(1e12), stage);
    EXPECT_NEAR(m.activations_bytes, 8.0 * (4 - stage) * llama3_8b_layer_activations(4096), 1.0) << stage;
  }
  training.global_batch = 2;  // fewer micro-batches than stages: at most m in flight
  const MemoryBreakdown few = estimate_stage_memory(model, parallelism, training, gpu(1e12), 0);
  EXPECT_NEAR(few.activations_bytes, 8.0 * 2 * llama3_8b_layer_activations(4096), 1.0);
}

TEST(Memory, InterleavedFirstStageHoldsKorthikantiFactorMore) {
  // Korthikanti et al., Sec. 4.2.3: the interleaved schedule's first stage stores activations of
  // L * (1 + (p - 1) / (p * v)) layers, against L for 1F1B.
  const TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.pp = 4;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 16;
  const double plain = estimate_stage_memory(model, parallelism, training, gpu(1e12), 0).activations_bytes;
  parallelism.pp_schedule = PipelineSchedule::interleaved;
  parallelism.virtual_stages = 2;
  const double interleaved = estimate_stage_memory(model, parallelism, training, gpu(1e12), 0).activations_bytes;
  EXPECT_NEAR(plain, 32.0 * llama3_8b_layer_activations(4096), 1.0);
  EXPECT_NEAR(interleaved / plain, 1.0 + 3.0 / (4.0 * 2.0), 1e-12);
}

TEST(Memory, MoeActivationsScaleWithTopK) {
  TransformerSpec model = llama3_8b();
  model.vocab = 32000;
  model.experts = 8;
  model.top_k = 1;
  const TrainingSpec training = one_sequence_per_rank(1, 4096);
  const double one = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e13), 0).activations_bytes;
  model.top_k = 2;
  const double two = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e13), 0).activations_bytes;
  // Each extra copy of a token stores its expert input (h) and SwiGLU intermediates (3f), bf16.
  EXPECT_NEAR(two - one, 32.0 * 4096.0 * (4096.0 + 3.0 * 14336.0) * 2.0, 1.0);
}

// A hybrid model's Mamba-2 layer keeps its pre-norm's input and output, in_proj's output (z, x, B, C, dt), the scan's
// output before its silu(z) gate, the gated output and fp32 rstd per group of the RMSNorm after the scan, and
// out_proj's input (mamba_split_conv1d_scan_combined recomputes the convolution and the states; Megatron-Core's
// MambaMixer runs its norm after the combined kernel); under tp 2 the mixer's share halves, the pre-norm's does not.
TEST(Memory, MambaLayerKeepsInProjOutputScanOutputAndOutProjInput) {
  TransformerSpec with;  // Nemotron 3 Nano's mixer and attention on 2688-wide tokens
  with.name = "hybrid";
  with.hidden = 2688;
  with.head_dim_override = 128;
  with.heads = 32;
  with.kv_heads = 2;
  with.ffn_hidden = 1856;
  with.vocab = 131072;
  with.mamba_heads = 64;
  with.mamba_head_dim = 64;
  with.mamba_state_dim = 128;
  with.mamba_groups = 8;
  with.layers = 3;
  with.hybrid_pattern = "MM*";
  TransformerSpec without = with;
  without.layers = 2;
  without.hybrid_pattern = "M*";
  const TrainingSpec training = one_sequence_per_rank(1, 8192);
  for (const int tp : {1, 2}) {
    ParallelismSpec p;
    p.tp = tp;
    const double one_layer = estimate_stage_memory(with, p, training, gpu(1e13), 0).activations_bytes -
                             estimate_stage_memory(without, p, training, gpu(1e13), 0).activations_bytes;
    const double heads = 64.0 / tp, groups = 8.0 / tp, inner = heads * 64;
    const double in_proj_output = 2.0 * inner + 2.0 * groups * 128 + heads;
    EXPECT_NEAR(one_layer, 8192.0 * (2.0 * 2688 * 2 + (in_proj_output + 3.0 * inner) * 2 + 4.0 * groups), 1.0) << tp;
  }
}

// Megatron's --recompute-modules moe_act: each MoE layer keeps its experts' activation output no more (one f-wide
// tensor per token copy); one layer's is live again during its backward.
TEST(Memory, RecomputedExpertActivationIsNotKept) {
  TransformerSpec model = llama3_8b();
  model.vocab = 32000;
  model.experts = 8;
  model.top_k = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  const double kept = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e13), 0).activations_bytes;
  training.recompute = RecomputePolicy::selective;
  training.recompute_modules.moe_act = true;
  const double dropped = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e13), 0).activations_bytes;
  const double one_layer = 2.0 * 4096.0 * 14336.0 * 2.0;  // top-2 copies x f x bf16
  EXPECT_NEAR(kept - dropped, 32.0 * one_layer - one_layer, 1.0);
  // Recomputing the norms drops their outputs (two per layer, h wide).
  training.recompute_modules = RecomputeModules{.layernorm = true};
  const double norms = estimate_stage_memory(model, ParallelismSpec{}, training, gpu(1e13), 0).activations_bytes;
  EXPECT_NEAR(kept - norms, 31.0 * 2.0 * 4096.0 * 4096.0 * 2.0, 1.0);
}

TEST(Memory, FoldedExpertsKeepWholeExpertsAndOnlyTheirOwnCopies) {
  // 8 experts on tp 2 x dp 4 (one stage). Default (etp = tp): ep 2 in the data group, each rank holds 4 experts
  // split in two. Folded (etp 1): ep 4 over the stage, each rank holds 2 whole experts. Either way a rank keeps
  // 8 / (ep x etp) = 1 expert's weights, and the expert-data group that shards their optimizer states has
  // 8 / (ep x etp) = 2 ranks, so weights and optimizer states match.
  TransformerSpec model = llama3_8b();
  model.vocab = 32000;
  model.experts = 8;
  model.top_k = 2;
  TrainingSpec training = one_sequence_per_rank(4, 4096);
  ParallelismSpec split;
  split.tp = 2;
  split.dp = 4;
  split.ep = 2;
  split.sequence_parallel = true;
  split.zero_stage = 1;
  ParallelismSpec folded = split;
  folded.ep = 4;
  folded.etp = 1;
  const MemoryBreakdown a = estimate_stage_memory(model, split, training, gpu(1e13), 0);
  const MemoryBreakdown b = estimate_stage_memory(model, folded, training, gpu(1e13), 0);
  EXPECT_NEAR(b.weights_bytes, a.weights_bytes, 1e-9 * a.weights_bytes);
  EXPECT_NEAR(b.optimizer_bytes, a.optimizer_bytes, 1e-9 * a.optimizer_bytes);
  // Activations: the SwiGLU intermediates are the same (rows x f/etp: 4096 x f/2 or 2048 x f), but the default
  // keeps the tp-gathered expert inputs of all 4096 tokens (h wide) where a folded rank keeps those of the 2048 it
  // routes: 2048 tokens x 2 copies x h x 2 bytes less per layer, 32 layers.
  EXPECT_NEAR(a.activations_bytes - b.activations_bytes, 32.0 * 2048.0 * 2.0 * 4096.0 * 2.0, 1.0);
  // ep 8 folded: one whole expert per rank (half the weights of ep 4's two), nothing left to shard them over.
  folded.ep = 8;
  const MemoryBreakdown c = estimate_stage_memory(model, folded, training, gpu(1e13), 0);
  const double one_expert = 32.0 * 3.0 * 4096.0 * 14336.0 * 2.0;  // 32 layers of SwiGLU experts, bf16
  EXPECT_NEAR(b.weights_bytes - c.weights_bytes, one_expert, 1e-9 * one_expert);
}

TEST(Memory, Llama3_70BDoesNotFitOnOne80GBGpu) {
  const MemoryBreakdown m =
      estimate_peak_memory(llama3_70b(), ParallelismSpec{}, one_sequence_per_rank(1, 8192), gpu(80e9));
  EXPECT_FALSE(m.fits());
  EXPECT_GT(m.weights_bytes, 140e9);  // 70.6e9 bf16 weights alone
  EXPECT_DOUBLE_EQ(m.capacity_bytes, 80e9);
}

TEST(Memory, AddsReservedMemoryAndFragmentation) {
  HardwareSpec hardware = gpu(80e9);
  hardware.memory_reserved_bytes = 3e9;
  hardware.memory_fragmentation_fraction = 0.1;
  const MemoryBreakdown m =
      estimate_stage_memory(llama3_8b(), data_parallel(8, 3), one_sequence_per_rank(8, 2048), hardware, 0);
  const double allocated = m.weights_bytes + m.gathered_weights_bytes + m.gradients_bytes + m.optimizer_bytes +
                           m.activations_bytes + m.transient_bytes + m.workspace_bytes;
  EXPECT_NEAR(m.fragmentation_bytes, 0.1 * allocated, 1.0);
  EXPECT_NEAR(m.total_bytes, 1.1 * allocated + 3e9, 1.0);
  EXPECT_DOUBLE_EQ(m.reserved_bytes, 3e9);
}

// The GEMM libraries' workspaces come from PyTorch's allocator (so max_memory_allocated counts them): PyTorch keeps
// one cuBLAS workspace per (handle, stream) and a handle per thread, and the forward's GEMMs run on the Python thread,
// the backward's on autograd's device thread: two. Transformer Engine adds one of its own in Megatron runs.
// CUBLAS_WORKSPACE_CONFIG (training.cublas_workspace_bytes) replaces the GPU's default size.
TEST(Memory, GemmWorkspacesAreTwoOfPyTorchsAndTransformerEngines) {
  constexpr double kMiB = 1024.0 * 1024.0;
  HardwareSpec hardware = gpu(80e9);
  hardware.cublas_workspace_bytes = 8.125 * kMiB;  // PyTorch's default below compute capability 9.0
  hardware.transformer_engine_workspace_bytes = 4.0 * kMiB;
  TrainingSpec training = one_sequence_per_rank(8, 2048);
  const auto workspace = [&] {
    return estimate_stage_memory(llama3_8b(), data_parallel(8, 1), training, hardware, 0).workspace_bytes;
  };
  EXPECT_DOUBLE_EQ(workspace(), 2.0 * 8.125 * kMiB + 4.0 * kMiB);
  training.cublas_workspace_bytes = 4096.0 * 1024.0 * 8.0;  // CUBLAS_WORKSPACE_CONFIG=:4096:8
  EXPECT_DOUBLE_EQ(workspace(), 2.0 * 32.0 * kMiB + 4.0 * kMiB);
  training.framework = Framework::pytorch_eager;  // no Transformer Engine
  EXPECT_DOUBLE_EQ(workspace(), 2.0 * 32.0 * kMiB);
  const MemoryBreakdown m = estimate_stage_memory(llama3_8b(), data_parallel(8, 1), training, hardware, 0);
  EXPECT_NEAR(m.allocated_bytes(),
              m.weights_bytes + m.gathered_weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes +
                  m.transient_bytes + 64.0 * kMiB,
              1.0);
}

// Eager attention keeps the probabilities of every (query, key) pair: with dropout 5 bytes per score (P, the mask
// and the dropped-out P; Korthikanti et al. 2022, 5 a s^2 b per layer), once per layer in flight without
// recomputation, and one layer's worth under selective or full recomputation.
TEST(Memory, EagerAttentionKeepsFiveBytesPerScore) {
  TransformerSpec model = llama3_8b();
  model.dropout = true;
  ParallelismSpec parallelism;
  parallelism.tp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 2048);
  const MemoryBreakdown fused = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  training.attention = std::string(kEagerAttention);
  const MemoryBreakdown eager = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  const double per_layer = 5.0 * (32 / 2) * 2048.0 * 2048.0;  // heads per rank x s^2 x b, 5 bytes each
  EXPECT_NEAR(eager.activations_bytes - fused.activations_bytes, 32 * per_layer, 1.0);
  training.recompute = RecomputePolicy::selective;
  const MemoryBreakdown selective = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  training.attention.clear();
  EXPECT_NEAR(
      selective.activations_bytes - estimate_stage_memory(model, parallelism, training, gpu(80e9), 0).activations_bytes,
      per_layer, 1.0);
}

// cuDNN's deterministic backward on Hopper stages the score gradients in a b*h*s_q*s_kv*2-byte workspace
// (cudnn-frontend PR #398): transient memory while one layer's backward runs, never with the logits, so the larger
// of the two is the stage's transient.
TEST(Memory, DeterministicAttentionWorkspaceIsTransient) {
  const TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.tp = 2;
  parallelism.pp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 2;
  HardwareSpec hardware = gpu(80e9);
  hardware.compute.deterministic_attention.workspace_bytes_per_score = 2.0;
  const MemoryBreakdown free_order = estimate_stage_memory(model, parallelism, training, hardware, 0);
  EXPECT_EQ(free_order.transient_bytes, 0.0);  // first stage: no logits
  training.deterministic = true;
  const double workspace = 1.0 * (32 / 2) * 4096.0 * 4096.0 * 2.0;  // b x heads per rank x s^2 x 2 bytes
  EXPECT_DOUBLE_EQ(estimate_stage_memory(model, parallelism, training, hardware, 0).transient_bytes, workspace);
  // Last stage: the fp32 logits of a micro-batch (4096 tokens x 64,128 rows x 4 bytes = 1.05 GB) exceed it.
  const double logits = 4096.0 * (128256 / 2) * 4.0;
  ASSERT_GT(logits, workspace);
  EXPECT_DOUBLE_EQ(estimate_stage_memory(model, parallelism, training, hardware, 1).transient_bytes, logits);
  // A named kernel brings its own workspace (none for one without the key), and eager attention has none.
  hardware.attention_implementations["flash2"] = AttentionImplementation{};
  training.attention = "flash2";
  EXPECT_EQ(estimate_stage_memory(model, parallelism, training, hardware, 0).transient_bytes, 0.0);
  training.attention = std::string(kEagerAttention);
  EXPECT_EQ(estimate_stage_memory(model, parallelism, training, hardware, 0).transient_bytes, 0.0);
}

// Dense first layers sit on the first stage: its weights are those of its 2 dense and 14 MoE layers (with a shared
// expert), the second stage's of 16 MoE layers; the embedding and the untied head weigh the same, the final norm is
// the second stage's. Activations: a dense layer keeps its MLP's intermediates at its own width.
TEST(Memory, DenseFirstLayersWeighOnTheFirstStage) {
  TransformerSpec model = llama3_8b();
  model.experts = 8;
  model.top_k = 2;
  model.dense_layers = 2;
  model.dense_ffn_hidden = 28672;
  model.shared_expert_ffn_hidden = 4096;
  ParallelismSpec parallelism;
  parallelism.pp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 2;
  const MemoryBreakdown first = estimate_stage_memory(model, parallelism, training, gpu(1e13), 0);
  const MemoryBreakdown second = estimate_stage_memory(model, parallelism, training, gpu(1e13), 1);
  const ParameterCount count = count_parameters(model);
  EXPECT_NEAR(first.weights_bytes, (2 * count.dense_layer + 14 * count.per_layer + count.embedding) * 2.0, 1.0);
  EXPECT_NEAR(second.weights_bytes, (16 * count.per_layer + count.output_head + count.final_norm) * 2.0, 1.0);
  EXPECT_NEAR(count.total * 2.0, first.weights_bytes + second.weights_bytes, 1.0);
  // The first stage's two dense layers keep their 3 x 28672-wide SwiGLU intermediates instead of the routed
  // experts' and the shared expert's: per layer 2 bytes x 4096 tokens x (3 x 28672 - 2 x 3 x 14336 - 3 x 4096) less
  // the router's fp32 probabilities (8 per token) and the dispatched copies (2 per token, 4096 wide) as well.
  TransformerSpec all_moe = model;
  all_moe.dense_layers = 0;
  const MemoryBreakdown moe_first = estimate_stage_memory(all_moe, parallelism, training, gpu(1e13), 0);
  const double tokens = 4096.0;
  const double dense_mlp = tokens * 3.0 * 28672 * 2.0;
  const double moe_mlp = tokens * 8 * 4.0 + tokens * 2 * (4096 * 2.0 + 3.0 * 14336 * 2.0) + tokens * 3.0 * 4096 * 2.0;
  // Stage 0 of a 1F1B pipeline of two micro-batches holds both in flight.
  EXPECT_NEAR(first.activations_bytes - moe_first.activations_bytes, 2.0 * 2.0 * (dense_mlp - moe_mlp), 1.0);
}

// An uneven split moves whole layers: the weights of a stage grow by one layer's parameters per extra layer.
TEST(Memory, AnUnevenSplitGivesEachStageTheWeightsOfItsLayers) {
  const TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.pp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 2;
  const MemoryBreakdown even = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  parallelism.stage_layers = {17, 15};
  const MemoryBreakdown uneven = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  const ParameterCount count = count_parameters(model);
  EXPECT_NEAR(uneven.weights_bytes - even.weights_bytes, count.per_layer * 2.0, 1.0);  // bf16 weights
  EXPECT_GT(uneven.activations_bytes, even.activations_bytes);
}

// A multi-token prediction module (DeepSeek-V3) sits on the last stage: its parameters and a copy of the embedding
// there (bf16 weights, unsharded at zero_stage 0), a second set of fp32 logits, and more activations; the first stage
// is untouched.
TEST(Memory, MultiTokenPredictionWeighsOnTheLastStage) {
  TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.pp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 2;
  const auto stage = [&](int mtp, int pp_stage) {
    model.mtp_layers = mtp;
    return estimate_stage_memory(model, parallelism, training, gpu(400e9), pp_stage);
  };
  const ParameterCount count = [&] {
    model.mtp_layers = 1;
    return count_parameters(model);
  }();
  EXPECT_DOUBLE_EQ(stage(1, 0).total_bytes, stage(0, 0).total_bytes);
  EXPECT_NEAR(stage(1, 1).weights_bytes - stage(0, 1).weights_bytes, (count.mtp_module + 128256.0 * 4096.0) * 2.0, 1.0);
  EXPECT_NEAR(stage(1, 1).transient_bytes, 2.0 * stage(0, 1).transient_bytes, 1.0);
  EXPECT_GT(stage(1, 1).activations_bytes, stage(0, 1).activations_bytes);
  // On a single stage the module looks the tokens up in the model's own embedding: no copy.
  parallelism.pp = 1;
  EXPECT_NEAR(stage(1, 0).weights_bytes - stage(0, 0).weights_bytes, count.mtp_module * 2.0, 1.0);
}

TEST(Memory, LogitsOnlyOnTheLastStageAndPeakIsTheWorstStage) {
  const TransformerSpec model = llama3_8b();
  ParallelismSpec parallelism;
  parallelism.pp = 2;
  parallelism.tp = 2;
  TrainingSpec training = one_sequence_per_rank(1, 4096);
  training.global_batch = 4;
  const MemoryBreakdown first = estimate_stage_memory(model, parallelism, training, gpu(80e9), 0);
  const MemoryBreakdown last = estimate_stage_memory(model, parallelism, training, gpu(80e9), 1);
  EXPECT_DOUBLE_EQ(first.transient_bytes, 0.0);
  EXPECT_NEAR(last.transient_bytes, 4096.0 * 128256.0 / 2.0 * 4.0, 1.0);  // vocab-parallel fp32 logits
  const MemoryBreakdown peak = estimate_peak_memory(model, parallelism, training, gpu(80e9));
  EXPECT_DOUBLE_EQ(peak.total_bytes, std::max(first.total_bytes, last.total_bytes));
  EXPECT_EQ(peak.pp_stage, first.total_bytes >= last.total_bytes ? 0 : 1);
  EXPECT_THROW((void)estimate_stage_memory(model, parallelism, training, gpu(80e9), 2), ModelError);
}

}  // namespace
}  // namespace chopsim

namespace chopsim {
namespace {

// Megatron-LM's functional tests measure PyTorch's allocated memory on the last rank (the one writing
// TensorBoard) for a 7B GPT on 8x H100, bf16, distributed optimizer, seq 8192, global batch 8:
// ../shared/data/validation/megatron_lm/gpt3_7b_*_memory_speed/ (model_config.yaml; golden_values_dev_dgx_
// h100.json: mem-allocated-bytes after the first step, mem-max-allocated-bytes). Megatron's GPT defaults:
// LayerNorm, GELU MLP of 4h, hidden dropout 0.1; 32 layers, h 4096, 32 heads in 8 query groups, untied
// embeddings, vocabulary 131073 padded to a multiple of 128*tp. Allocated memory excludes the reserved and
// fragmentation allowances. Not modelled: linear biases and learned position embeddings (0.5 % of the
// parameters).
TransformerSpec megatron_gpt3_7b() {
  TransformerSpec m = llama3_8b();
  m.ffn_hidden = 4 * 4096;
  m.mlp = MlpKind::gelu;
  m.norm = NormKind::layernorm;
  m.dropout = true;
  m.vocab = 131073;
  m.make_vocab_size_divisible_by = 128;  // 131200 rows at tp 1, 4 x 32896 at tp 4
  return m;
}

TEST(MemoryValidation, MegatronGpt7BInterleavedPipelineLastStage) {
  ParallelismSpec parallelism;
  parallelism.pp = 4;
  parallelism.dp = 2;
  parallelism.pp_schedule = PipelineSchedule::interleaved;
  parallelism.virtual_stages = 8;  // --num-layers-per-virtual-pipeline-stage 1
  parallelism.zero_stage = 1;      // --use-distributed-optimizer
  TrainingSpec training;
  training.seq_len = 8192;
  training.global_batch = 8;
  training.micro_batch = 1;
  const MemoryBreakdown m = estimate_stage_memory(megatron_gpt3_7b(), parallelism, training, gpu(80e9), 3);
  EXPECT_NEAR(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes, 24.81e9, 0.08 * 24.81e9);
  EXPECT_NEAR(m.total_bytes, 60.72e9, 0.08 * 60.72e9);
}

TEST(MemoryValidation, MegatronGpt7BTensorParallel) {
  ParallelismSpec parallelism;
  parallelism.tp = 4;
  parallelism.dp = 2;
  parallelism.zero_stage = 1;
  TrainingSpec training;
  training.seq_len = 8192;
  training.global_batch = 8;
  training.micro_batch = 2;
  const MemoryBreakdown m = estimate_stage_memory(megatron_gpt3_7b(), parallelism, training, gpu(80e9), 0);
  EXPECT_NEAR(m.weights_bytes + m.gradients_bytes + m.optimizer_bytes, 20.66e9, 0.08 * 20.66e9);
  EXPECT_NEAR(m.total_bytes, 57.14e9, 0.08 * 57.14e9);
}

}  // namespace
}  // namespace chopsim
