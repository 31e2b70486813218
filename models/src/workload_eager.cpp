// The kernels of a training step in eager PyTorch (TrainingSpec::framework == Framework::pytorch_eager): Hugging Face
// transformers' Llama-family modules (LlamaRMSNorm, LlamaAttention with SDPA, LlamaMLP, LlamaForCausalLM's loss)
// under torch.autocast with fp32 master weights. Every kernel below was read off the Kineto trace of
// ../shared/data/measured/h200_llama32_1b (PyTorch 2.11, transformers 5.17, one step at micro-batch 4: 2,525
// kernels), op by op with its shapes and dtypes; docs/frameworks.md lists them, and tests/models/eager_test.cpp holds
// the inventory against that trace (kernel counts and bytes per class).
//
// What makes eager training slower than Megatron/Transformer Engine at the same FLOPs, per token and layer:
//  * autocast casts: every fp32 weight is cast to bf16 at its use (autocast caches the cast for one forward, so
//    once per weight and micro-batch: 6 bytes per parameter), every fp32 input of a linear is cast again for each
//    linear that reads it (q, k, v read the same norm output: three casts), and every gradient that flows back
//    through a cast is cast the other way;
//  * the residual stream is fp32 (the embedding's output is fp32), so norms, residual adds and their gradients move
//    4-byte elements;
//  * LlamaRMSNorm is six kernels forward (pow, mean, add, rsqrt, two multiplications) and about twelve backward;
//  * rotary embeddings multiply bf16 q/k by fp32 cos/sin (fp32 results), rotate by neg + cat, and add;
//  * the logits are upcast to fp32 for the loss (logits.float()), whose log-softmax and its gradient run in fp32.
// Kernel classes are the classifier's for the same kernels (copies and casts are elementwise, mean/sum and the
// softmax are reductions), so a calibration from such a trace applies class by class.

#include "chopsim/common/pytorch_softmax.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

namespace {
/// An fp32 <-> bf16/fp16 cast: read 4 and write 2 bytes per element, or read 2 and write 4.
constexpr double kCastBytes = 6.0;
/// fp32 elementwise with one input and one output (4 + 4), two inputs (4 + 4 + 4).
constexpr double kUnaryFp32Bytes = 8.0;
constexpr double kBinaryFp32Bytes = 12.0;
/// bf16 with one or two inputs.
constexpr double kUnaryHalfBytes = 4.0;
constexpr double kBinaryHalfBytes = 6.0;
/// A bf16 tensor multiplied by an fp32 (broadcast) table: read 2, write 4 (PyTorch promotes to fp32).
constexpr double kHalfTimesFp32Bytes = 6.0;
/// Arithmetic per element of these kernels (they are memory-bound; the count only feeds the compute-bound check).
constexpr double kOneFlop = 1.0;
// TensorIterator's paths (ElementwisePath), as the H200 trace's kernel names show them per op: same-dtype contiguous
// operands and fp32 -> bf16 casts vectorized; bf16 -> fp32 casts and fp32 + bf16 adds unrolled; a broadcast operand
// (a norm's weight or 1/rms, the rotary tables) or a transposed view strided; reductions, cats, the embedding's and
// the loss's own kernels are no TensorIterator kernels (fused: the class's efficiency).
constexpr ElementwisePath kVectorized = ElementwisePath::vectorized;
constexpr ElementwisePath kUnrolled = ElementwisePath::unrolled;
constexpr ElementwisePath kStrided = ElementwisePath::strided;
constexpr ElementwisePath kOwnKernel = ElementwisePath::fused;
}  // namespace

// --- building blocks ---------------------------------------------------------------------------------------

OpRef StageGenerator::eager_elementwise(std::string_view name, double elements, double bytes_per_element,
                                        ElementwisePath path, KernelClass kernel_class) {
  Op op = compute_op(name, kernel_class, Precision::fp32, elements * kOneFlop, elements * bytes_per_element);
  op.elementwise_path = path;
  return append_to_compute_stream(op);
}

OpRef StageGenerator::eager_linear(std::string_view name, const Gemm& g, bool fp32_input) {
  const std::string n(name);
  // autocast's weight cast, cached for the rest of this forward (re-done by a recomputed forward).
  (void)eager_elementwise(n + "_weight_cast", g.k * g.n, kCastBytes, kVectorized);
  if (fp32_input) (void)eager_elementwise(n + "_input_cast", g.m * g.k, kCastBytes, kVectorized);
  return gemm(name, g);
}

void StageGenerator::eager_linear_backward(std::string_view name, const Gemm& g, bool fp32_input,
                                           bool input_gradient_accumulates) {
  const std::string n(name);
  (void)gemm_wgrad(n + "_wgrad", g);
  (void)gemm_dgrad(n + "_dgrad", g);
  if (fp32_input) (void)eager_elementwise(n + "_input_grad_cast", g.m * g.k, kCastBytes, kUnrolled);
  // A second and third linear reading the same tensor add their input gradient to the first's (autograd's
  // accumulation of a tensor used twice).
  if (input_gradient_accumulates)
    (void)eager_elementwise(n + "_input_grad_add", g.m * g.k, kBinaryFp32Bytes, kVectorized);
  // The bf16 weight gradient back through autocast's cast into the fp32 .grad (set to None between steps, so the
  // first micro-batch assigns it); later micro-batches of a step add into .grad.
  OpRef ready = eager_elementwise(n + "_weight_grad_cast", g.k * g.n, kCastBytes, kUnrolled);
  if (micro_batch_ > 0)
    ready = eager_elementwise(n + "_weight_grad_accumulate", g.k * g.n, kBinaryFp32Bytes, kVectorized);
  gradient_ready(g.k * g.n, false, ready);
}

// LlamaRMSNorm.forward: variance = x.pow(2).mean(-1, keepdim=True); x = x * torch.rsqrt(variance + eps);
// return weight * x.to(input_dtype) -- on the fp32 residual stream. LayerNorm (native_layer_norm, which autocast runs
// in fp32) is one fused kernel.
void StageGenerator::eager_norm_forward(std::string_view name) {
  const std::string n(name);
  const double elements = sizes_.norm_tokens * sizes_.hidden;
  if (model_.norm == NormKind::layernorm) {
    (void)eager_elementwise(n, elements, kUnaryFp32Bytes, kOwnKernel, KernelClass::norm);
    return;
  }
  (void)eager_elementwise(n + "_pow", elements, kUnaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_mean", elements, 4.0, kOwnKernel, KernelClass::reduction);
  (void)eager_elementwise(n + "_add_eps", sizes_.norm_tokens, kUnaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_rsqrt", sizes_.norm_tokens, kUnaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_scale", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_weight", elements, kUnaryFp32Bytes, kStrided);
}

// Autograd of the same chain: the weight's and the scale's multiplications each give a product with the gradient
// (read 4 + 4, write 4) reduced over tokens or the hidden dimension, the rsqrt/mean/pow chain a division, a scaling
// and a product, and the two paths into x are added; a norm on the residual stream (every layer's, not the final
// one) adds its gradient to the residual's as well.
OpRef StageGenerator::eager_norm_backward(std::string_view name, bool on_residual_stream) {
  const std::string n(name);
  const double elements = sizes_.norm_tokens * sizes_.hidden;
  if (model_.norm == NormKind::layernorm) {
    OpRef last = eager_elementwise(n, elements, kBinaryFp32Bytes, kOwnKernel, KernelClass::norm);
    if (on_residual_stream) last = eager_elementwise(n + "_residual_add", elements, kBinaryFp32Bytes, kVectorized);
    return last;
  }
  (void)eager_elementwise(n + "_grad_times_weight", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_grad_times_normed", elements, kBinaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_weight_grad_sum", elements, 4.0, kOwnKernel, KernelClass::reduction);
  (void)eager_elementwise(n + "_grad_times_x", elements, kBinaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_grad_times_rsqrt", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_rsqrt_grad_sum", elements, 4.0, kOwnKernel, KernelClass::reduction);
  for (const char* tiny : {"_rsqrt_bwd_pow", "_rsqrt_bwd_mul", "_rsqrt_bwd_chain"})
    (void)eager_elementwise(n + tiny, sizes_.norm_tokens, kUnaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_mean_bwd", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_pow_bwd_scale", elements, kUnaryFp32Bytes, kVectorized);
  (void)eager_elementwise(n + "_pow_bwd", elements, kBinaryFp32Bytes, kVectorized);
  OpRef last = eager_elementwise(n + "_paths_add", elements, kBinaryFp32Bytes, kVectorized);
  if (on_residual_stream) last = eager_elementwise(n + "_residual_add", elements, kBinaryFp32Bytes, kVectorized);
  return last;
}

// apply_rotary_pos_emb on one of q, k (`elements` = tokens x heads x head_dim): q * cos (bf16 x fp32 -> fp32),
// rotate_half as neg of one half and cat of the halves, rotate_half(q) * sin, and the fp32 sum.
void StageGenerator::eager_rotary_forward(std::string_view name, double elements) {
  const std::string n(name);
  (void)eager_elementwise(n + "_cos", elements, kHalfTimesFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_neg", elements / 2.0, kUnaryHalfBytes, kStrided);
  (void)eager_elementwise(n + "_cat", elements, kUnaryHalfBytes, kOwnKernel);
  (void)eager_elementwise(n + "_sin", elements, kHalfTimesFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_add", elements, kBinaryFp32Bytes, kStrided);
}

// Its gradient: each product's gradient by the fp32 table and its cast back to bf16, rotate_half's backward (zero-
// filled halves, the negated and the plain half copied in, summed), and the two paths added.
void StageGenerator::eager_rotary_backward(std::string_view name, double elements) {
  const std::string n(name);
  (void)eager_elementwise(n + "_sin_bwd", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_sin_bwd_cast", elements, kCastBytes, kVectorized);
  (void)eager_elementwise(n + "_neg_bwd", elements / 2.0, kUnaryHalfBytes, kStrided);
  for (const char* half : {"_cat_bwd_first", "_cat_bwd_second"}) {
    (void)eager_elementwise(n + half + "_zero", elements, 2.0, kVectorized);
    (void)eager_elementwise(n + half + "_copy", elements / 2.0, kUnaryHalfBytes, kStrided);
  }
  (void)eager_elementwise(n + "_cat_bwd_add", elements, kBinaryHalfBytes, kStrided);
  (void)eager_elementwise(n + "_cos_bwd", elements, kUnaryFp32Bytes, kStrided);
  (void)eager_elementwise(n + "_cos_bwd_cast", elements, kCastBytes, kVectorized);
  (void)eager_elementwise(n + "_paths_add", elements, kBinaryHalfBytes, kVectorized);
}

// --- a layer -----------------------------------------------------------------------------------------------------

void StageGenerator::eager_layer_forward(int layer) {
  layer_ = layer;
  const Sizes& s = sizes_;
  const double q_width = s.query_heads * s.head_dim;
  const double kv_width = s.kv_heads * s.head_dim;
  const double residual = s.norm_tokens * s.hidden;
  eager_norm_forward("input_norm");
  (void)eager_linear("q_proj", {.m = s.tokens, .n = q_width, .k = s.hidden}, true);
  (void)eager_linear("k_proj", {.m = s.tokens, .n = kv_width, .k = s.hidden}, true);
  (void)eager_linear("v_proj", {.m = s.tokens, .n = kv_width, .k = s.hidden}, true);
  if (model_.position_embedding == PositionEmbedding::rope) {
    eager_rotary_forward("q_rotary", s.tokens * q_width);
    eager_rotary_forward("k_rotary", s.tokens * kv_width);
  }
  // LlamaModel's DynamicCache (use_cache, on unless gradient checkpointing turns it off) concatenates k and v to its
  // empty fp32 tensors: k stays fp32 (read 4, write 4), v is promoted (read 2, write 4). SDPA under autocast then
  // casts its fp32 inputs to bf16.
  const bool cache = training_.recompute == RecomputePolicy::none;
  if (cache) {
    (void)eager_elementwise("kv_cache_k_cat", s.tokens * kv_width, kUnaryFp32Bytes, kOwnKernel);
    (void)eager_elementwise("kv_cache_v_cat", s.tokens * kv_width, kHalfTimesFp32Bytes, kOwnKernel);
  }
  const bool rope = model_.position_embedding == PositionEmbedding::rope;
  if (rope) (void)eager_elementwise("sdpa_q_cast", s.tokens * q_width, kCastBytes, kVectorized);
  if (rope || cache) (void)eager_elementwise("sdpa_k_cast", s.tokens * kv_width, kCastBytes, kVectorized);
  if (cache) (void)eager_elementwise("sdpa_v_cast", s.tokens * kv_width, kCastBytes, kVectorized);
  attention_forward();
  (void)eager_linear("o_proj", {.m = s.tokens, .n = s.hidden, .k = q_width}, false);
  // residual + attention output: fp32 + bf16 -> fp32.
  (void)eager_elementwise("attention_residual", residual, 4.0 + 2.0 + 4.0, kUnrolled);
  eager_norm_forward("post_attention_norm");
  if (model_.mlp == MlpKind::swiglu) {
    (void)eager_linear("gate_proj", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true);
    (void)eager_elementwise("silu", s.tokens * s.ffn_local, kUnaryHalfBytes, kVectorized);
    (void)eager_linear("up_proj", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true);
    (void)eager_elementwise("silu_times_up", s.tokens * s.ffn_local, kBinaryHalfBytes, kVectorized);
  } else {
    (void)eager_linear("fc1", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true);
    (void)eager_elementwise("gelu", s.tokens * s.ffn_local, kUnaryHalfBytes, kVectorized);
  }
  // Under PyTorch's early stop a recomputed layer ends once down_proj's GEMM has saved its inputs: autocast's
  // weight cast runs, the GEMM and the residual add do not (recompute_skips_fc2).
  if (recompute_skips_fc2()) {
    (void)eager_elementwise("down_proj_weight_cast", s.ffn_local * s.hidden, kCastBytes, kVectorized);
    return;
  }
  (void)eager_linear("down_proj", {.m = s.tokens, .n = s.hidden, .k = s.ffn_local}, false);
  (void)eager_elementwise("mlp_residual", residual, 4.0 + 2.0 + 4.0, kUnrolled);
}

void StageGenerator::eager_layer_backward(int layer) {
  layer_ = layer;
  const Sizes& s = sizes_;
  const double q_width = s.query_heads * s.head_dim;
  const double kv_width = s.kv_heads * s.head_dim;
  const double residual = s.norm_tokens * s.hidden;
  // The residual add's gradient into its bf16 branch: a cast of the fp32 gradient.
  (void)eager_elementwise("mlp_residual_grad_cast", residual, kCastBytes, kVectorized);
  eager_linear_backward("down_proj", {.m = s.tokens, .n = s.hidden, .k = s.ffn_local}, false, false);
  if (model_.mlp == MlpKind::swiglu) {
    (void)eager_elementwise("silu_times_up_bwd_gate", s.tokens * s.ffn_local, kBinaryHalfBytes, kVectorized);
    (void)eager_elementwise("silu_times_up_bwd_up", s.tokens * s.ffn_local, kBinaryHalfBytes, kVectorized);
    eager_linear_backward("up_proj", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true, false);
    (void)eager_elementwise("silu_bwd", s.tokens * s.ffn_local, kBinaryHalfBytes, kVectorized);
    eager_linear_backward("gate_proj", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true, true);
  } else {
    (void)eager_elementwise("gelu_bwd", s.tokens * s.ffn_local, kBinaryHalfBytes, kVectorized);
    eager_linear_backward("fc1", {.m = s.tokens, .n = s.ffn_local, .k = s.hidden}, true, false);
  }
  gradient_ready(local_.norms / 2.0, false, eager_norm_backward("post_attention_norm_bwd", true));
  (void)eager_elementwise("attention_residual_grad_cast", residual, kCastBytes, kVectorized);
  eager_linear_backward("o_proj", {.m = s.tokens, .n = s.hidden, .k = q_width}, false, false);
  attention_backward();
  // The gradients back through SDPA's input casts (and the v cache's promotion), then the rotary embeddings.
  const bool cache = training_.recompute == RecomputePolicy::none;
  const bool rope = model_.position_embedding == PositionEmbedding::rope;
  if (rope) (void)eager_elementwise("sdpa_q_cast_bwd", s.tokens * q_width, kCastBytes, kUnrolled);
  if (rope || cache) (void)eager_elementwise("sdpa_k_cast_bwd", s.tokens * kv_width, kCastBytes, kUnrolled);
  if (cache) {
    (void)eager_elementwise("sdpa_v_cast_bwd", s.tokens * kv_width, kCastBytes, kUnrolled);
    (void)eager_elementwise("kv_cache_v_cat_bwd", s.tokens * kv_width, kCastBytes, kVectorized);
  }
  if (rope) {
    eager_rotary_backward("k_rotary_bwd", s.tokens * kv_width);
    eager_rotary_backward("q_rotary_bwd", s.tokens * q_width);
  }
  // The projections' output gradients made contiguous in [tokens, heads, head_dim] for their GEMMs.
  (void)eager_elementwise("v_grad_transpose", s.tokens * kv_width, kUnaryHalfBytes, kStrided);
  eager_linear_backward("v_proj", {.m = s.tokens, .n = kv_width, .k = s.hidden}, true, false);
  (void)eager_elementwise("k_grad_transpose", s.tokens * kv_width, kUnaryHalfBytes, kStrided);
  eager_linear_backward("k_proj", {.m = s.tokens, .n = kv_width, .k = s.hidden}, true, true);
  (void)eager_elementwise("q_grad_transpose", s.tokens * q_width, kUnaryHalfBytes, kStrided);
  eager_linear_backward("q_proj", {.m = s.tokens, .n = q_width, .k = s.hidden}, true, true);
  gradient_ready(local_.norms / 2.0, false, eager_norm_backward("input_norm_bwd", true));
}

// --- embedding and head ------------------------------------------------------------------------------------------

void StageGenerator::eager_embedding_forward() {
  const Sizes& s = sizes_;
  // nn.Embedding on the fp32 table (autocast leaves embedding lookups alone): gather T rows, write them.
  (void)eager_elementwise("embedding", s.tokens * s.hidden, kUnaryFp32Bytes, kOwnKernel);
}

void StageGenerator::eager_embedding_backward() {
  const Sizes& s = sizes_;
  const double table = s.vocab_local * s.hidden;
  // embedding_dense_backward: a zero-filled fp32 table gradient, then the output gradient's rows sorted by token
  // and summed into it (read dY, read-modify-write the touched rows); with tied embeddings the head's gradient is
  // already in .grad and this one is added to it.
  (void)eager_elementwise("embedding_grad_zero", table, 4.0, kVectorized);
  OpRef ready = eager_elementwise("embedding_bwd", s.tokens * s.hidden, kBinaryFp32Bytes, kOwnKernel);
  if (model_.tied_embeddings || micro_batch_ > 0)
    ready = eager_elementwise("embedding_grad_accumulate", table, kBinaryFp32Bytes, kVectorized);
  gradient_ready(local_.embedding, false, ready);
}

void StageGenerator::eager_head_forward() {
  const Sizes& s = sizes_;
  const double logits = s.tokens * s.vocab_local;
  eager_norm_forward("final_norm");
  (void)eager_linear("lm_head", {.m = s.tokens, .n = s.vocab_local, .k = s.hidden, .transformer_engine = false}, true);
  // transformers' ForCausalLMLoss: logits.float(), then cross_entropy = log_softmax (fp32 in, fp32 out) + nll_loss.
  // Over a vocabulary's rows PyTorch's softmax reads each row three times (common/pytorch_softmax.hpp) and streams
  // like a vectorized kernel: the trace's cunn_SoftMaxForward, 7.88 ms at micro-batch 4.
  (void)eager_elementwise("logits_float", logits, kCastBytes, kUnrolled);
  (void)eager_elementwise("log_softmax", logits, pytorch_softmax_forward_bytes(s.vocab_local, 4.0, 4.0),
                          pytorch_softmax_path(s.vocab_local, 4.0), KernelClass::reduction);
  (void)eager_elementwise("nll_loss", s.tokens, kUnaryFp32Bytes, kOwnKernel, KernelClass::reduction);
}

void StageGenerator::eager_head_backward() {
  const Sizes& s = sizes_;
  const double logits = s.tokens * s.vocab_local;
  // nll_loss's backward scatters into a zero-filled fp32 gradient of the log-probabilities; log_softmax's backward
  // reads it and its output and writes the logits' fp32 gradient, cast back to bf16 for the head's GEMMs.
  (void)eager_elementwise("nll_loss_bwd_zero", logits, 4.0, kVectorized);
  (void)eager_elementwise("nll_loss_bwd", s.tokens, kUnaryFp32Bytes, kOwnKernel);
  // Over long rows it reads the log-probabilities' gradient twice (its sum, then the result): cunn_SoftMaxBackward.
  (void)eager_elementwise("log_softmax_bwd", logits, pytorch_log_softmax_backward_bytes(s.vocab_local, 4.0, 4.0),
                          pytorch_softmax_path(s.vocab_local, 4.0), KernelClass::reduction);
  (void)eager_elementwise("logits_float_bwd", logits, kCastBytes, kVectorized);
  // A tied head's weight is the embedding's: its gradient lands in the embedding's .grad (reduced with it).
  const Gemm head{.m = s.tokens, .n = s.vocab_local, .k = s.hidden, .transformer_engine = false};
  (void)gemm_wgrad("lm_head_wgrad", head);
  (void)gemm_dgrad("lm_head_dgrad", head);
  (void)eager_elementwise("lm_head_input_grad_cast", s.tokens * s.hidden, kCastBytes, kUnrolled);
  OpRef ready = eager_elementwise("lm_head_weight_grad_cast", head.k * head.n, kCastBytes, kUnrolled);
  if (!model_.tied_embeddings) gradient_ready(local_.output_head, false, ready);
  gradient_ready(local_.final_norm, false, eager_norm_backward("final_norm_bwd", false));
}

}  // namespace chopsim::detail
