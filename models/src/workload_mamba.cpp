// The kernels of a Mamba-2 mixer (TransformerSpec::hybrid_pattern 'M' layers): Megatron-Core's MambaMixer
// (megatron/core/ssm/mamba_mixer.py, _ssm_training) on its memory-efficient path, mamba_ssm's
// mamba_split_conv1d_scan_combined (mamba_ssm/ops/triton/ssd_combined.py, MambaSplitConv1dScanCombinedFn), one
// micro-batch of T tokens on one tensor-parallel rank (H heads of P channels, G groups of B and C of state size N,
// chunks of Q tokens; heads and groups split over tp). Megatron passes no norm weight to the combined kernel, so the
// scan gates its output with silu(z) itself and the mixer's RMSNorm (ExtendedRMSNorm, mamba_ssm's Triton
// layernorm_gated.RMSNorm without z) runs after it:
//
//   in_proj      column-parallel GEMM, h -> z, x (H P each), B, C (G N each), dt (H)
//   transposes   "l b d -> b l d" of in_proj's output and back for the scan's: copies when a micro-batch holds
//                more than one sequence (one sequence: a view)
//   A, dt_bias   A = -exp(A_log.float()) and dt_bias.float(): the bf16 parameters cast and transformed (tiny)
//   conv1d       causal depthwise convolution over x, B, C with SiLU (causal_conv1d_fwd)
//   SSD          the chunked scan (Dao and Gu 2024, "Transformers are SSMs", Sec. 6; _mamba_chunk_scan_combined_fwd):
//                  chunk_cumsum   dt softplus and the cumulative decay within each chunk (fp32)
//                  chunk_state    each chunk's final state B^T x (fp32 states: H P N per chunk)
//                  state_passing  the states carried across chunks (written in the activations' dtype)
//                  bmm_chunk      C B^T within each chunk (fp32, G Q x Q per chunk)
//                  chunk_scan     the outputs: masked (C B^T) x within the chunk plus C times the carried state, + D x,
//                                 written as they are (kept for the backward) and gated by silu(z)
//   norm         RMSNorm of the gated output
//   out_proj     row-parallel GEMM, H P -> h
//
// The backward (_mamba_chunk_scan_combined_bwd) recomputes the convolution, the decays, C B^T and the states, then
// runs the gradient kernels in that function's order. Byte counts below are per token from the tensors each kernel
// reads and writes; the scan's kernels multiply on tensor cores (Triton tl.dot in bf16) and at these sizes are
// memory-bound, so they are GEMM-class kernels of one problem each, the others elementwise.

#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

namespace {
/// Bytes of an fp32 element (the scan's decays, states and C B^T).
constexpr double kFp32Bytes = 4.0;
/// Vector FLOPs per element of the convolution: conv_kernel multiply-adds and the SiLU (counted as in the MLP).
constexpr double kSiluFlops = 4.0;
/// Launches of the parameter transforms ahead of the scan: A_log's cast, exp and negation, dt_bias's cast.
constexpr double kParameterTransformLaunches = 4.0;
/// Launches of the decay gradient's bookkeeping between the scan's gradient kernels (_mamba_chunk_scan_combined_bwd):
/// ddA_cumsum_prev[..., -1] += ddA_chunk_cumsum, flip().cumsum().flip() and ddA += ddA_next + ddA_prev.
constexpr double kDecayGradientLaunches = 6.0;
}  // namespace

void StageGenerator::mamba_scan_input(MambaScanInput kernel, const char* name) {
  const Sizes& s = sizes_;
  const double e = s.activation_bytes;
  const double tokens = s.tokens;
  const double heads = s.mamba_heads, groups = s.mamba_groups, inner = s.mamba_inner;
  const double state = model_.mamba_state_dim, head_dim = model_.mamba_head_dim, chunk = model_.mamba_chunk_size;
  switch (kernel) {
    case MambaScanInput::conv1d:
      (void)elementwise(name, tokens * s.mamba_channels, 2.0 * model_.mamba_conv_kernel + kSiluFlops, 2.0 * e);
      return;
    case MambaScanInput::chunk_cumsum:
      (void)elementwise(name, tokens * heads, 4.0, e + 2.0 * kFp32Bytes);
      return;
    case MambaScanInput::chunk_state:
      (void)compute(name, KernelClass::gemm, high_precision_, tokens * 2.0 * state * head_dim * heads,
                    tokens * ((groups * state + inner) * e + 2.0 * heads * kFp32Bytes + s.mamba_states * kFp32Bytes));
      return;
    case MambaScanInput::state_passing:
      (void)elementwise(name, tokens * s.mamba_states, 2.0, kFp32Bytes + e);
      return;
    case MambaScanInput::bmm_chunk:
      (void)compute(name, KernelClass::gemm, high_precision_, tokens * 2.0 * chunk * state * groups,
                    tokens * (2.0 * groups * state * e + groups * chunk * kFp32Bytes));
      return;
  }
}

void StageGenerator::mamba_forward() {
  const Sizes& s = sizes_;
  const double e = s.activation_bytes;
  const double tokens = s.tokens;
  const double heads = s.mamba_heads, groups = s.mamba_groups, inner = s.mamba_inner;
  const double state = model_.mamba_state_dim, head_dim = model_.mamba_head_dim, chunk = model_.mamba_chunk_size;
  const double in_width = s.mamba_in_width, states = s.mamba_states;
  // rearrange(...).contiguous() moves data only when the batch dimension is not 1.
  const bool transposes = training_.micro_batch > 1;

  (void)column_parallel_gemm("mamba_in_proj", {tokens, in_width, s.hidden}, true);  // MambaMixer's norm-fused in_proj
  if (transposes)
    (void)compute("mamba_in_proj_transpose", KernelClass::memcpy, high_precision_, 0.0, 2.0 * tokens * in_width * e);
  const OpRef transforms = elementwise("mamba_parameter_transforms", 2.0 * heads, 2.0, 3.0 * kFp32Bytes);
  builder_.set_host_issue(transforms, launch_count(kParameterTransformLaunches), false);
  mamba_scan_input(MambaScanInput::conv1d, "mamba_conv1d");
  mamba_scan_input(MambaScanInput::chunk_cumsum, "mamba_chunk_cumsum");
  mamba_scan_input(MambaScanInput::chunk_state, "mamba_chunk_state");
  mamba_scan_input(MambaScanInput::state_passing, "mamba_state_passing");
  mamba_scan_input(MambaScanInput::bmm_chunk, "mamba_bmm_chunk");
  // Reads C B^T, x, C, the decays, the carried states and z; writes the scan's output and its gated copy.
  (void)compute("mamba_chunk_scan", KernelClass::gemm, high_precision_,
                tokens * (2.0 * chunk * head_dim * heads + 2.0 * state * head_dim * heads),
                tokens * (groups * chunk * kFp32Bytes + 4.0 * inner * e + groups * state * e +
                          2.0 * heads * kFp32Bytes + states * e));
  if (transposes)
    (void)compute("mamba_scan_transpose", KernelClass::memcpy, high_precision_, 0.0, 2.0 * tokens * inner * e);
  // Reads the gated output, writes the normalised one.
  (void)elementwise("mamba_norm", tokens * inner, kRmsNormFlops, 2.0 * e, KernelClass::norm);
  (void)row_parallel_gemm("mamba_out_proj", {tokens, s.hidden, inner});
}

void StageGenerator::mamba_backward() {
  const Sizes& s = sizes_;
  const double e = s.activation_bytes;
  const double tokens = s.tokens;
  const double heads = s.mamba_heads, groups = s.mamba_groups, inner = s.mamba_inner;
  const double state = model_.mamba_state_dim, head_dim = model_.mamba_head_dim, chunk = model_.mamba_chunk_size;
  const double channels = s.mamba_channels, in_width = s.mamba_in_width, states = s.mamba_states;
  const double scan_flops = 2.0 * state * head_dim * heads;  // one of the scan's N x P products per head and token
  const double within_chunk_flops = 2.0 * chunk * head_dim * heads;  // a Q x Q by Q x P product per head and chunk
  const bool transposes = training_.micro_batch > 1;

  row_parallel_backward("mamba_out_proj_dgrad", "mamba_out_proj_wgrad", {tokens, s.hidden, inner}, inner * s.hidden);
  // Reads the output gradient and the gated output; writes its gradient (and the weight gradient's partial sums,
  // summed by a second launch).
  const OpRef norm_backward =
      elementwise("mamba_norm_bwd", tokens * inner, kBackwardFlopRatio * kRmsNormFlops, 3.0 * e, KernelClass::norm);
  builder_.set_host_issue(norm_backward, 2, false);
  if (transposes)
    (void)compute("mamba_scan_transpose_bwd", KernelClass::memcpy, high_precision_, 0.0, 2.0 * tokens * inner * e);
  // MambaSplitConv1dScanCombinedFn.backward recomputes the convolution's output, then _mamba_chunk_scan_combined_bwd
  // clones dt and recomputes the decays, C B^T and the states.
  mamba_scan_input(MambaScanInput::conv1d, "mamba_conv1d_recompute");
  (void)compute("mamba_dt_clone", KernelClass::memcpy, high_precision_, 0.0, 2.0 * tokens * heads * e);
  mamba_scan_input(MambaScanInput::chunk_cumsum, "mamba_chunk_cumsum_recompute");
  mamba_scan_input(MambaScanInput::bmm_chunk, "mamba_bmm_chunk_recompute");
  mamba_scan_input(MambaScanInput::chunk_state, "mamba_chunk_state_recompute");
  mamba_scan_input(MambaScanInput::state_passing, "mamba_state_passing_recompute");
  // The gate's gradient (_chunk_scan_bwd_dz): reads x, z, the scan's output and the gradient; writes z's gradient
  // and the ungated output's.
  (void)elementwise("mamba_chunk_scan_bwd_dz", tokens * inner, 10.0, 6.0 * e);
  // The gradients: of the carried states (from dout and C), back across the chunks, of x and dt (from dout, C B^T,
  // B and the state gradients), of B (from x and the state gradients), of C (from dout and the carried states), of
  // C B^T (from dout and x within each chunk) into B and C (two launches), and of the decays within each chunk.
  (void)compute("mamba_chunk_scan_bwd_dstates", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + groups * state * e + heads * kFp32Bytes + states * kFp32Bytes));
  (void)elementwise("mamba_state_passing_bwd", tokens * states, 2.0, 2.0 * kFp32Bytes + e);
  (void)compute("mamba_chunk_scan_bwd_dx", KernelClass::gemm, high_precision_,
                tokens * (within_chunk_flops + scan_flops),
                tokens * (3.0 * inner * e + groups * chunk * kFp32Bytes + groups * state * e +
                          2.0 * heads * kFp32Bytes + states * kFp32Bytes));
  (void)compute("mamba_chunk_state_bwd_db", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + states * kFp32Bytes + heads * kFp32Bytes + groups * state * e));
  (void)compute("mamba_chunk_scan_bwd_dc", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + states * e + groups * state * e));
  (void)compute("mamba_chunk_scan_bwd_dcb", KernelClass::gemm, high_precision_, tokens * within_chunk_flops,
                tokens * (2.0 * inner * e + 2.0 * heads * kFp32Bytes + groups * chunk * kFp32Bytes));
  const OpRef bmm_backward =
      compute("mamba_bmm_chunk_bwd", KernelClass::gemm, high_precision_, tokens * 4.0 * chunk * state * groups,
              tokens * (4.0 * groups * state * e + 2.0 * groups * chunk * kFp32Bytes));
  builder_.set_host_issue(bmm_backward, 2, false);
  const OpRef decay_gradient = elementwise("mamba_decay_gradient", tokens * heads, 3.0, 8.0 * kFp32Bytes);
  builder_.set_host_issue(decay_gradient, launch_count(kDecayGradientLaunches), false);
  (void)compute("mamba_chunk_scan_bwd_ddacs", KernelClass::gemm, high_precision_, tokens * within_chunk_flops,
                tokens * (2.0 * inner * e + 3.0 * heads * kFp32Bytes + groups * chunk * kFp32Bytes));
  (void)elementwise("mamba_chunk_cumsum_bwd", tokens * heads, 4.0, e + 3.0 * kFp32Bytes);
  // causal_conv1d_bwd: reads x and the output gradient, writes dx (and the taps' gradient, negligible).
  (void)elementwise("mamba_conv1d_bwd", tokens * channels, kBackwardFlopRatio * (2.0 * model_.mamba_conv_kernel),
                    3.0 * e);
  // Autograd through A = -exp(A_log.float()) and dt_bias.float(): the negation's, the exp's and the casts' gradients.
  const OpRef transforms = elementwise("mamba_parameter_transforms_bwd", 2.0 * heads, 2.0, 3.0 * kFp32Bytes);
  builder_.set_host_issue(transforms, launch_count(kParameterTransformLaunches), false);
  // The mixer's small parameters (convolution, dt bias, A, D, the norm's weight) are complete here.
  gradient_ready(local_.mamba - (in_width + inner) * s.hidden, false, *last_compute());
  if (transposes)
    (void)compute("mamba_in_proj_transpose_bwd", KernelClass::memcpy, high_precision_, 0.0,
                  2.0 * tokens * in_width * e);
  column_parallel_backward("mamba_in_proj_dgrad", "mamba_in_proj_wgrad", {tokens, in_width, s.hidden},
                           in_width * s.hidden, false);
}

}  // namespace chopsim::detail
