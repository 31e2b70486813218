// Kernels of the transformer's layers, with the tensor-, sequence-, context- and expert-parallel
// collectives that sit between them (Megatron-LM / Megatron-Core layouts).
//
// Conventions (per rank and micro-batch): T = micro_batch * seq_len / cp tokens enter every GEMM
// (the tensor-parallel group shares them); with sequence parallelism norms, residuals and
// elementwise ops outside the attention/MLP cores see T / tp tokens (Korthikanti et al. 2022, Sec. 4.2.2).
// GEMM FLOPs are 2*m*n*k; the backward of a GEMM is a dgrad and a wgrad GEMM of the same FLOPs, so the
// matmuls of a training step total 6 * N_active FLOPs per token (Narayanan et al., SC'21).
// HBM bytes: GEMMs read both operands and write the result once; elementwise kernels read their inputs
// and write their outputs once (they are memory-bound, so these bytes set their time).

#include <cmath>
#include <string>

#include "chopsim/common/error.hpp"
#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

// --- kernels ---------------------------------------------------------------------------------------

// Which GEMMs are unaligned: those whose result's rows (its contiguous dimension) are not a multiple of 16 bytes of
// result elements (bf16 also in fp8 runs), so their 128-bit vector stores do not line up: the forward Y[m x n] of an
// n-wide output head, but neither its input gradient dX[m x k] nor its weight gradient, stored like the weight as
// [n x k] rows of k. cuBLAS falls back from its aligned tensor-core kernels for such shapes (Netflix Tech Blog,
// "Scaling LLM Post-Training at Netflix", 2026-02: an unpadded vocabulary triples the LM head's time). The operands'
// strides are not checked: by that rule both backward GEMMs of the head would be hit as well, and the Perseus stage-7
// profile (docs/validation.md, perseus_a100) says otherwise: its backward is within 1 % without a penalty, and 3x on
// the weight gradient as well adds 2.5 ms to it and takes one of its energy points above 10 %. The token dimension m
// is not checked: it is a multiple of the micro-batch's sequence length, and an average for expert GEMMs.
bool StageGenerator::unaligned(double features) const {
  constexpr double kAlignmentBytes = 16.0;  // 128-bit vector stores of the tensor-core kernels' epilogue
  const double elements = kAlignmentBytes / sizes_.activation_bytes;
  return std::fmod(features, elements) != 0.0;
}

Precision StageGenerator::precision_of(const Gemm& g) const {
  return g.transformer_engine ? gemm_precision_ : high_precision_;
}

// Deterministic mode and uninitialised memory: torch.use_deterministic_algorithms(True) (Megatron's
// --deterministic-mode calls it) makes PyTorch fill every CUDA tensor allocated through at::empty with NaN before
// use (torch.utils.deterministic.fill_uninitialized_memory, default True: PyTorch's empty_cuda runs
// fill_empty_deterministic_), while ATen's own structured kernels allocate their outputs without it. Transformer
// Engine allocates its outputs through at::empty (allocateSpace, torch.empty): its GEMM outputs (forward, dgrad, and
// wgrad when the gradient is written fresh), its norms' outputs, the fused attention's output and input gradients,
// and the deterministic attention workspace are each written once more by a fill kernel first. So is a dtype cast's
// output (_to_copy allocates through at::empty_strided, which fills as well): the fp32 copy of the logits in Megatron's
// unfused cross entropy and the cast of its gradient back to the logits' dtype. Left out: smaller TE outputs (rotary,
// fused activations, softmax statistics) and communication buffers Megatron allocates with torch.empty
// (sequence/context/expert-parallel gathers).
void StageGenerator::fill_output(std::string_view name, double bytes) {
  if (!training_.deterministic || !training_.fill_uninitialized_memory || bytes <= 0.0) return;
  (void)compute(std::string(name) + "_fill", KernelClass::elementwise, Precision::fp32, 0.0, bytes);
}

double StageGenerator::deterministic_workspace_bytes(double keys) const {
  return kernels_.deterministic_workspace_bytes_per_score * sizes_.tokens * sizes_.query_heads * keys;
}

// A mixture of experts' local experts run as one grouped kernel (Megatron-Core's TEGroupedMLP, Transformer Engine's
// GroupedLinear; or one kernel per expert in SequentialMLP): each expert's GEMM has only the tokens routed to it,
// and its efficiency is that of a GEMM of its own size, not of the group's total (the roofline's size term, with
// the tokens spread evenly over the experts). The host launches it expert by expert: GroupedLinear's GEMM
// (general_grouped_gemm -> nvte_multi_stream_cublas_gemm) loops over the experts and launches one cuBLAS GEMM each,
// round-robin on four streams (transformer_engine/common/gemm/cublaslt_gemm.cu), so an expert GEMM costs the host as
// many launches as the rank has local experts. The GPU side stays one op: the streams overlap the experts' GEMMs,
// which the size term above already prices as one kernel of per-expert GEMMs.
OpRef StageGenerator::gemm_kernel(std::string_view name, const Gemm& g, Precision precision, double bytes,
                                  bool unaligned) {
  Op op = compute_op(name, KernelClass::gemm, precision, 2.0 * g.m * g.n * g.k, bytes, unaligned);
  op.gemm_problems = launch_count(g.weights);
  const OpRef ref = append_to_compute_stream(op);
  if (op.gemm_problems > 1) builder_.set_host_issue(ref, op.gemm_problems, false);
  return ref;
}

OpRef StageGenerator::gemm(std::string_view name, const Gemm& g, CastScale input_scale, bool weight_cast) {
  const Precision precision = precision_of(g);
  if (precision == Precision::fp8) {
    fp8_cast(std::string(name) + "_input_fp8_cast", g.m * g.k, input_scale);
    if (weight_cast && pass_ == Pass::forward && micro_batch_ == 0)
      fp8_cast(std::string(name) + "_weight_fp8_cast", g.weights * g.k * g.n);
  }
  const double output_bytes = g.m * g.n * sizes_.activation_bytes;
  if (g.transformer_engine) fill_output(name, output_bytes);
  const double operand_bytes = bytes_per_element(precision);
  const double bytes = (g.m * g.k + g.weights * g.k * g.n) * operand_bytes + output_bytes;
  return gemm_kernel(name, g, precision, bytes, unaligned(g.n));
}

OpRef StageGenerator::gemm_dgrad(std::string_view name, const Gemm& g, CastScale gradient_scale) {
  // dX[m x k] = dY[m x n] * W^T
  const Precision precision = precision_of(g);
  if (precision == Precision::fp8) fp8_cast(std::string(name) + "_fp8_cast", g.m * g.n, gradient_scale);
  const double output_bytes = g.m * g.k * sizes_.activation_bytes;
  if (g.transformer_engine) fill_output(name, output_bytes);
  const double operand_bytes = bytes_per_element(precision);
  const double bytes = (g.m * g.n + g.weights * g.k * g.n) * operand_bytes + output_bytes;
  return gemm_kernel(name, g, precision, bytes, unaligned(g.k));  // rows of k
}

OpRef StageGenerator::gemm_wgrad(std::string_view name, const Gemm& g) {
  // dW[n x k] = dY^T * X, in the weight's layout (PyTorch's [out, in]); in fp8 from the casts' transposed copies.
  const Sizes& s = sizes_;
  const Precision precision = precision_of(g);
  const double inputs = (g.m * g.k + g.m * g.n) * bytes_per_element(precision);
  const double weights = g.weights * g.k * g.n;
  const bool unaligned_result = unaligned(g.k);  // rows of k
  if (training_.gradient_accumulation_fusion || fsdp_units(parallelism_, training_)) {
    // Accumulated into the gradient buffer in the GEMM's epilogue (read and written): Megatron's
    // gradient-accumulation fusion into the fp32 main_grad, or FSDP's unsharded gradient.
    return gemm_kernel(name, g, precision, inputs + 2.0 * weights * s.weight_grad_bytes, unaligned_result);
  }
  // Megatron --no-gradient-accumulation-fusion: the GEMM writes a fresh gradient in the activation dtype and the
  // DDP backward hook adds it to the fp32 main_grad (param.main_grad.add_(param.grad)): a memory-bound kernel
  // that reads main_grad and the gradient and writes main_grad back (4 + 2 + 4 bytes per bf16 parameter).
  if (g.transformer_engine) fill_output(name, weights * s.activation_bytes);
  (void)gemm_kernel(name, g, precision, inputs + weights * s.activation_bytes, unaligned_result);
  return elementwise(std::string(name) + "_accumulate", weights, 1.0, 2.0 * s.weight_grad_bytes + s.activation_bytes);
}

OpRef StageGenerator::norm(std::string_view name, bool backward) {
  const double elements = sizes_.norm_tokens * sizes_.hidden;
  const double flops = model_.norm == NormKind::rmsnorm ? kRmsNormFlops : kLayerNormFlops;
  // Forward reads x and writes y; backward reads x and dy and writes dx.
  fill_output(name, elements * sizes_.activation_bytes);
  if (!backward) return elementwise(name, elements, flops, 2.0 * sizes_.activation_bytes, KernelClass::norm);
  return elementwise(name, elements, kBackwardFlopRatio * flops, 3.0 * sizes_.activation_bytes, KernelClass::norm);
}

// Linear biases (TransformerSpec::linear_bias), as Megatron-Core places them: linear_qkv keeps its bias inside
// Transformer Engine's GEMM (added in the forward GEMM's epilogue, its gradient computed in the wgrad GEMM's epilogue,
// cuBLASLt BGRADB: no kernel of its own). linear_proj, linear_fc1 and linear_fc2 are built with skip_bias_add, and
// their biases are added outside the GEMM, in the fused bias-dropout-add and bias-GELU (bias-SwiGLU) kernels, whose
// forward reads only the bias vector besides what they read anyway. In the backward, autograd sums the output
// gradient over the tokens into each such bias: a reduction that reads the gradient once more. (The experts' biases
// of a mixture-of-experts MLP are not modelled.)
void StageGenerator::bias_gradient(std::string_view name, double elements) {
  if (!model_.linear_bias || frozen_base()) return;
  (void)elementwise(name, elements, 1.0, sizes_.activation_bytes, KernelClass::reduction);
}

// Qwen3's norms of each head's query and key (TransformerSpec::qk_norm; Megatron-Core's SelfAttention applies
// q_layernorm and k_layernorm, two TENorm modules, to the split QKV output before the rotary embedding): one kernel
// each forward, over the rank's query and key heads; backward, each norm's input gradient and its weight gradient
// (Transformer Engine's norm backward and the finalize of its partial weight gradients): four launches.
void StageGenerator::qk_norm(bool backward) {
  if (!model_.qk_norm) return;
  const Sizes& s = sizes_;
  const double elements = s.tokens * (s.query_heads + s.kv_heads) * s.head_dim;
  const double flops = model_.norm == NormKind::rmsnorm ? kRmsNormFlops : kLayerNormFlops;
  const OpRef op = backward ? elementwise("qk_norm_bwd", elements, kBackwardFlopRatio * flops, 3.0 * s.activation_bytes,
                                          KernelClass::norm)
                            : elementwise("qk_norm", elements, flops, 2.0 * s.activation_bytes, KernelClass::norm);
  builder_.set_host_issue(op, backward ? 4 : 2, false);
}

OpRef StageGenerator::elementwise(std::string_view name, double elements, double flops_per_element,
                                  double bytes_per_element, KernelClass kernel_class) {
  return compute(name, kernel_class, Precision::fp32, elements * flops_per_element, elements * bytes_per_element);
}

// --- a layer ----------------------------------------------------------------------------------------------
// A transformer layer runs its attention and its MLP (or MoE) sublayers, each behind a pre-norm with a residual add
// after it; a hybrid model's layer runs one sublayer (LayerKind). The norms of a transformer layer are "input_norm"
// and "post_attention_norm"; a hybrid layer's one norm is "input_norm".

void StageGenerator::layer_forward(int layer) {
  layer_ = layer;
  const LayerKind kind = model_.layer_kind(layer);
  const Sizes& s = sizes_;
  const double residual_elements = s.norm_tokens * s.hidden;
  // Megatron's fused bias-dropout-add: reads the branch output and the residual, writes the sum and,
  // with dropout, the 1-byte mask kept for backward.
  const double residual_bytes = 3.0 * s.activation_bytes + (model_.dropout ? 1.0 : 0.0);
  // The residual add after a layer's last sublayer saves nothing, so a recomputed forward under PyTorch's early stop
  // ends before it (recompute_stops_early); with dropout the fused dropout-add keeps its mask and stays.
  const bool last_sublayer_is_mamba = !kind.attention && !kind.mlp && !kind.moe;
  const bool last_sublayer_is_attention = !kind.mlp && !kind.moe;
  const auto residual_add = [&](std::string_view name, bool last_sublayer) {
    if (last_sublayer && recompute_stops_early() && !model_.dropout) return;
    (void)elementwise(name, residual_elements, 1.0, residual_bytes);
  };
  if (kind.mamba) {
    (void)norm("input_norm", false);
    mamba_forward();
    residual_add("mamba_residual", last_sublayer_is_mamba);
  }
  if (kind.attention) {
    (void)norm("input_norm", false);
    if (model_.is_mla()) {
      mla_projections_forward();
    } else {
      const Gemm qkv{s.tokens, (s.query_heads + 2.0 * s.kv_heads) * s.head_dim, s.hidden};
      (void)column_parallel_gemm("qkv_proj", qkv, true);
      if (training_.lora.qkv) lora_forward("qkv_lora", qkv, true);
      qk_norm(false);
      if (model_.position_embedding == PositionEmbedding::rope)
        (void)elementwise("rotary", s.tokens * (s.query_heads + s.kv_heads) * s.head_dim, kRotaryFlops,
                          2.0 * s.activation_bytes);
    }
    attention_forward();
    const Gemm out_proj{s.tokens, s.hidden, s.query_heads * s.v_dim};
    (void)row_parallel_gemm("out_proj", out_proj);
    if (training_.lora.proj) lora_forward("out_proj_lora", out_proj, false);
    residual_add("attention_residual", last_sublayer_is_attention);
  }
  if (!kind.mlp && !kind.moe) return;
  (void)norm(kind.attention ? "post_attention_norm" : "input_norm", false);
  if (kind.moe) {
    moe_layer_forward();
  } else {
    mlp_forward("mlp", s.ffn_local);
  }
  residual_add("mlp_residual", true);
}

void StageGenerator::layer_backward(int layer) {
  layer_ = layer;
  const LayerKind kind = model_.layer_kind(layer);
  const Sizes& s = sizes_;
  const double residual_elements = s.norm_tokens * s.hidden;
  const double residual_bytes = 3.0 * s.activation_bytes + (model_.dropout ? 1.0 : 0.0);  // reads the mask
  // A transformer layer's two norms share local_.norms (with MLA's latent norms); a hybrid layer has one.
  const double one_norm = model_.is_hybrid() ? local_.norm : local_.norms / 2.0;
  // MLP branch, then the residual's gradient is added to the branch's input gradient.
  if (kind.mlp || kind.moe) {
    recompute_sublayer(kind, true);
    if (kind.moe) {
      if (model_.shared_expert_ffn_hidden > 0) {
        mlp_backward("shared_expert", s.shared_ffn_local);
        (void)elementwise("shared_expert_add_bwd", residual_elements, 1.0, 3.0 * s.activation_bytes);
      }
      moe_backward();
    } else {
      mlp_backward("mlp", s.ffn_local);
    }
    gradient_ready(one_norm, false, norm(kind.attention ? "post_attention_norm_bwd" : "input_norm_bwd", true));
    (void)elementwise("mlp_residual_bwd", residual_elements, 1.0, residual_bytes);
  }
  if (kind.attention) {
    recompute_sublayer(kind, false);
    bias_gradient("out_proj_bias_grad", residual_elements);
    const Gemm out_proj{s.tokens, s.hidden, s.query_heads * s.v_dim};
    if (training_.lora.proj) lora_backward("out_proj_lora", out_proj, false);
    row_parallel_backward("out_proj_dgrad", "out_proj_wgrad", out_proj, s.query_heads * s.v_dim * s.hidden);
    attention_backward();
    if (model_.is_mla()) {
      mla_projections_backward();
    } else {
      if (model_.position_embedding == PositionEmbedding::rope)
        (void)elementwise("rotary_bwd", s.tokens * (s.query_heads + s.kv_heads) * s.head_dim, kRotaryFlops,
                          2.0 * s.activation_bytes);
      qk_norm(true);
      const double qkv_width = (s.query_heads + 2.0 * s.kv_heads) * s.head_dim;
      const Gemm qkv{s.tokens, qkv_width, s.hidden};
      if (training_.lora.qkv) lora_backward("qkv_lora", qkv, true);
      column_parallel_backward("qkv_proj_dgrad", "qkv_proj_wgrad", qkv, qkv_width * s.hidden, false);
    }
    gradient_ready(one_norm, false, norm("input_norm_bwd", true));
    (void)elementwise("attention_residual_bwd", residual_elements, 1.0, residual_bytes);
  }
  if (kind.mamba) {
    recompute_sublayer(kind, false);
    mamba_backward();
    gradient_ready(one_norm, false, norm("input_norm_bwd", true));
    (void)elementwise("mamba_residual_bwd", residual_elements, 1.0, residual_bytes);
  }
}

// Megatron-Core's selective recomputation by module (transformer_layer.py, recompute_modules): the norm's output, a
// dense MLP, a whole MoE layer (with its dispatch and its shared experts), the experts' activation, the shared experts,
// multi-latent attention's up projections (multi_latent_attention.py, recompute_up_proj) or the attention kernel,
// checkpointed in the forward and run again right before the sublayer's backward.
void StageGenerator::recompute_sublayer(const LayerKind& kind, bool mlp_side) {
  const RecomputeModules modules = training_.recomputed_modules();
  if (!modules.any()) return;
  const Pass pass = pass_;
  pass_ = Pass::recompute;
  if (modules.layernorm) (void)norm(mlp_side && kind.attention ? "post_attention_norm" : "input_norm", false);
  if (mlp_side && kind.moe && modules.moe) {
    moe_layer_forward();
  } else if (mlp_side && kind.moe) {
    if (modules.shared_experts && model_.shared_expert_ffn_hidden > 0)
      mlp_forward("shared_expert", sizes_.shared_ffn_local);
    if (modules.moe_act) expert_activation_forward();
  }
  if (mlp_side && kind.mlp && modules.mlp) mlp_forward("mlp", sizes_.ffn_local);
  if (!mlp_side && kind.attention && modules.mla_up_proj && model_.is_mla()) mla_up_projections();
  if (!mlp_side && kind.attention && modules.core_attn) attention_forward();
  pass_ = pass;
}

// --- dense MLP ------------------------------------------------------------------------------------------

std::string StageGenerator::activation_name() const {
  switch (model_.mlp) {
    case MlpKind::swiglu:
      return "swiglu";
    case MlpKind::gelu:
      return "gelu";
    case MlpKind::squared_relu:
      return "squared_relu";
  }
  return "activation";
}

double StageGenerator::activation_flops() const {
  switch (model_.mlp) {
    case MlpKind::swiglu:
      return kSwigluFlops;
    case MlpKind::gelu:
      return kGeluFlops;
    case MlpKind::squared_relu:
      return kSquaredReluFlops;
  }
  return kGeluFlops;
}

void StageGenerator::mlp_forward(std::string_view name, double ffn_local) {
  const Sizes& s = sizes_;
  const bool swiglu = model_.mlp == MlpKind::swiglu;
  const std::string prefix(name);
  // The dense MLP's activation kernels keep their plain names (swiglu, gelu); the shared experts' are prefixed.
  const std::string activation = (name == "mlp" ? std::string() : prefix + "_") + activation_name();
  // SwiGLU's gate and up projections run as one GEMM of width 2f (Megatron's fused linear_fc1).
  const Gemm fc1{s.tokens, (swiglu ? 2.0 : 1.0) * ffn_local, s.hidden};
  // The dense MLP's fc1 carries the norm before it (TELayerNormColumnParallelLinear); the shared experts' does not.
  (void)column_parallel_gemm(prefix + "_fc1", fc1, name == "mlp");
  if (training_.lora.fc1) lora_forward(prefix + "_fc1_lora", fc1, true);
  if (swiglu) {
    (void)elementwise(activation, s.tokens * ffn_local, kSwigluFlops, 3.0 * s.activation_bytes);
  } else {
    (void)elementwise(activation, s.tokens * ffn_local, activation_flops(), 2.0 * s.activation_bytes);
  }
  // Under PyTorch's early stop a recomputed layer ends before its dense MLP's fc2 (recompute_skips_fc2).
  if (name == "mlp" && recompute_skips_fc2()) return;
  const Gemm fc2{s.tokens, s.hidden, ffn_local};
  (void)row_parallel_gemm(prefix + "_fc2", fc2);
  if (training_.lora.fc2) lora_forward(prefix + "_fc2_lora", fc2, false);
}

void StageGenerator::mlp_backward(std::string_view name, double ffn_local) {
  const Sizes& s = sizes_;
  const bool swiglu = model_.mlp == MlpKind::swiglu;
  const std::string prefix(name);
  const std::string activation = (name == "mlp" ? std::string() : prefix + "_") + activation_name();
  bias_gradient(prefix + "_fc2_bias_grad", s.norm_tokens * s.hidden);
  const Gemm fc2{s.tokens, s.hidden, ffn_local};
  if (training_.lora.fc2) lora_backward(prefix + "_fc2_lora", fc2, false);
  row_parallel_backward(prefix + "_fc2_dgrad", prefix + "_fc2_wgrad", fc2, ffn_local * s.hidden);
  if (swiglu) {
    // Reads gate, up and the output gradient, writes both input gradients.
    (void)elementwise(activation + "_bwd", s.tokens * ffn_local, kBackwardFlopRatio * kSwigluFlops,
                      5.0 * s.activation_bytes);
  } else {
    (void)elementwise(activation + "_bwd", s.tokens * ffn_local, kBackwardFlopRatio * activation_flops(),
                      3.0 * s.activation_bytes);
  }
  const double fc1_width = (swiglu ? 2.0 : 1.0) * ffn_local;
  bias_gradient(prefix + "_fc1_bias_grad", s.tokens * fc1_width);
  const Gemm fc1{s.tokens, fc1_width, s.hidden};
  if (training_.lora.fc1) lora_backward(prefix + "_fc1_lora", fc1, true);
  column_parallel_backward(prefix + "_fc1_dgrad", prefix + "_fc1_wgrad", fc1, fc1_width * s.hidden, false);
}

// --- embedding and output head ----------------------------------------------------------------------

void StageGenerator::embedding_forward() {
  const Sizes& s = sizes_;
  // Vocab-parallel lookup: every tp rank gathers the rows of its vocabulary shard for all T tokens
  // (zeros elsewhere), then the tp group sums them (Megatron VocabParallelEmbedding).
  (void)compute("embedding", KernelClass::elementwise, Precision::fp32, 0.0,
                2.0 * s.tokens * s.hidden * s.activation_bytes);
  await(reduce_after_row_parallel());
  if (model_.position_embedding == PositionEmbedding::learned) {
    // Learned absolute positions (Megatron's learned_absolute, MPT's learned_pos_emb): read the word and position
    // rows, write their sum; with dropout the embedding dropout follows in the same kernel and stores its mask.
    (void)compute("position_embedding", KernelClass::elementwise, Precision::fp32, s.tokens * s.hidden,
                  s.tokens * s.hidden * (3.0 * s.activation_bytes + (model_.dropout ? 1.0 : 0.0)));
  }
}

void StageGenerator::embedding_backward(double reported) {
  const Sizes& s = sizes_;
  if (frozen_base()) return;  // LoRA: the table takes no gradient, and nothing before it needs one
  if (parallelism_.sequence_parallel) {
    await(communicate(training_.overlap.tp, kTpStream,
                      {"sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp,
                       s.tokens * s.hidden * s.activation_bytes}));
  }
  // PyTorch's dense embedding backward (embedding_dense_backward, used by Megatron's VocabParallelEmbedding and
  // nn.Embedding): a zero-filled gradient of the whole table in the parameter dtype, into which the output
  // gradient's rows are summed (read dY, read-modify-write the touched rows). Learned position embeddings add
  // their own (seq x h) table the same way.
  const bool learned = model_.position_embedding == PositionEmbedding::learned;
  const double table_rows = s.vocab_local + (learned ? s.sequence : 0.0);
  const bool fsdp = fsdp_units(parallelism_, training_);
  const double gradient_element_bytes = fsdp ? s.weight_grad_bytes : s.activation_bytes;
  OpRef op =
      compute("embedding_bwd", KernelClass::elementwise, Precision::fp32, s.tokens * s.hidden * (learned ? 2.0 : 1.0),
              table_rows * s.hidden * gradient_element_bytes +
                  (learned ? 2.0 : 1.0) * s.tokens * s.hidden * (s.activation_bytes + 2.0 * gradient_element_bytes));
  if (!fsdp) {
    // The DDP backward hook adds the table's gradient to the fp32 main_grad (param.main_grad.add_(param.grad):
    // embeddings are not fused linears, so this happens with or without gradient-accumulation fusion).
    op = elementwise("embedding_grad_accumulate", table_rows * s.hidden, 1.0,
                     2.0 * s.weight_grad_bytes + s.activation_bytes);
  }
  gradient_ready(reported, false, op);
}

void StageGenerator::head_forward(bool main) {
  const Sizes& s = sizes_;
  (void)norm("final_norm", false);
  await(gather_for_column_parallel());
  (void)gemm("logits", {.m = s.tokens, .n = s.vocab_local, .k = s.hidden, .transformer_engine = false});
  // Vocab-parallel cross-entropy: softmax over this rank's vocabulary shard, kept in fp32 for backward. Fused:
  // one kernel reads the logits and writes the fp32 softmax. Unfused (Megatron's default, _VocabParallelCrossEntropy
  // in megatron/core/tensor_parallel/cross_entropy.py), per element: logits.float() (read 2, write 4), max over
  // the vocabulary (read 4), in-place subtraction of the max (read 4, write 4), in-place exp (read 4, write 4), sum
  // (read 4), in-place division by the sum (read 4, write 4): the logits' bytes + 9 fp32 accesses, 38 bytes with
  // bf16 logits.
  const double logits = s.tokens * s.vocab_local;
  if (training_.cross_entropy_fusion) {
    (void)elementwise("cross_entropy", logits, kSoftmaxFlops, s.activation_bytes + 4.0, KernelClass::reduction);
  } else {
    // The two row reductions (max, sum: 8 bytes) and the four elementwise passes (30 bytes with bf16 logits).
    fill_output("logits_float", logits * 4.0);
    (void)elementwise("cross_entropy_reductions", logits, 2.0, 2.0 * 4.0, KernelClass::reduction);
    (void)elementwise("cross_entropy_elementwise", logits, kSoftmaxFlops - 2.0, s.activation_bytes + 4.0 * 7.0,
                      KernelClass::elementwise);
  }
  // The max, the target logit and the sum of exponentials are all-reduced over tp (three fp32 values per
  // token, Megatron _VocabParallelCrossEntropy), modelled as one all-reduce.
  await(blocking(
      {"cross_entropy_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp, 3.0 * 4.0 * s.tokens}));
  if (main && training_.check_for_nan_in_grad) {
    // Megatron's loss_func sums the masked per-token losses (read the fp32 loss and the mask) and tests the sum for
    // NaN and Inf on the host (--check-for-nan-in-loss-and-grad): the host waits for the forward to finish.
    const OpRef loss = elementwise("loss_nan_check", s.tokens, 2.0, 8.0, KernelClass::reduction);
    builder_.set_host_issue(loss, 1, true);
  }
}

void StageGenerator::head_backward(bool main) {
  const Sizes& s = sizes_;
  // Fused: read the fp32 softmax, write the logits' gradient. Unfused (Megatron): the in-place multiplication
  // of the softmax by the loss gradient (read 4, write 4), then the backward of logits.float() casts it to the
  // logits' dtype (read 4, write 2) = 14 bytes per element with bf16 logits.
  if (training_.cross_entropy_fusion) {
    (void)elementwise("cross_entropy_bwd", s.tokens * s.vocab_local, kBackwardFlopRatio, 4.0 + s.activation_bytes,
                      KernelClass::reduction);
  } else {
    fill_output("cross_entropy_bwd", s.tokens * s.vocab_local * s.activation_bytes);
    (void)elementwise("cross_entropy_bwd", s.tokens * s.vocab_local, kBackwardFlopRatio, 3.0 * 4.0 + s.activation_bytes,
                      KernelClass::elementwise);
  }
  // With tied embeddings on a single stage the head's gradient lands in the embedding's, counted there.
  column_parallel_backward("logits_dgrad", "logits_wgrad",
                           {.m = s.tokens, .n = s.vocab_local, .k = s.hidden, .transformer_engine = false},
                           main ? local_.output_head : 0.0, false);
  const OpRef norm_backward = norm("final_norm_bwd", true);
  if (main) gradient_ready(local_.final_norm, false, norm_backward);
}

}  // namespace chopsim::detail
