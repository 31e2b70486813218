// Workload generation of training features (Megatron-LM and Transformer Engine flags, FSDP mixed precision,
// eager PyTorch): the traffic, kernels and flags each adds, against hand counts.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"
#include "workload_queries.hpp"

namespace chopsim {
namespace {

using test::bytes_of;
using test::count_of;
using test::for_each_op;
using test::RunSetup;
using test::setup;
using test::summed_flops;
using test::tiny_dense;
using test::tiny_moe;

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

}  // namespace
}  // namespace chopsim
