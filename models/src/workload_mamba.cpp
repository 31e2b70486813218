// The kernels of a Mamba-2 mixer (TransformerSpec::hybrid_pattern 'M' layers): Megatron-Core's MambaMixer
// (megatron/core/ssm/mamba_mixer.py) on its memory-efficient path, mamba_ssm's mamba_split_conv1d_scan_combined
// (mamba_ssm/ops/triton/ssd_combined.py), one micro-batch of T tokens on one tensor-parallel rank (H heads of
// P channels, G groups of B and C of state size N, chunks of Q tokens; heads and groups split over tp):
//
//   in_proj      column-parallel GEMM, h -> z, x (H P each), B, C (G N each), dt (H)
//   conv1d       causal depthwise convolution over x, B, C with SiLU (causal_conv1d_fwd)
//   SSD          the chunked scan (Dao and Gu 2024, "Transformers are SSMs", Sec. 6, the ssd_combined kernels):
//                  chunk_cumsum   dt softplus and the cumulative decay within each chunk (fp32)
//                  chunk_state    each chunk's final state B^T x (fp32 states: H P N per chunk)
//                  state_passing  the states carried across chunks (written in the activations' dtype)
//                  bmm_chunk      C B^T within each chunk (fp32, G Q x Q per chunk)
//                  chunk_scan     the outputs: masked (C B^T) x within the chunk plus C times the carried state, + D x
//   gated norm   RMSNorm of the output, gated by silu(z), in groups (RMSNormGated, a Triton kernel)
//   out_proj     row-parallel GEMM, H P -> h
//
// The backward (_mamba_chunk_scan_combined_bwd) recomputes the scan's states and C B^T, then runs the gradient
// kernels; the memory-efficient path also recomputes the convolution's output. Byte counts below are per token from
// the tensors each kernel reads and writes; the scan's kernels multiply on tensor cores (Triton tl.dot in bf16) and
// at these sizes are memory-bound, so they are GEMM-class kernels of one problem each, the others elementwise.

#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

namespace {
/// Bytes of an fp32 element (the scan's decays, states and C B^T).
constexpr double kFp32Bytes = 4.0;
/// Vector FLOPs per element of the convolution: conv_kernel multiply-adds and the SiLU (counted as in the MLP).
constexpr double kSiluFlops = 4.0;
}  // namespace

void StageGenerator::mamba_forward() {
  const Sizes& s = sizes_;
  const double e = s.activation_bytes;
  const double tokens = s.tokens;
  const double heads = s.mamba_heads, groups = s.mamba_groups, inner = s.mamba_inner;
  const double state = model_.mamba_state_dim, head_dim = model_.mamba_head_dim, chunk = model_.mamba_chunk_size;
  const double channels = s.mamba_channels, in_width = s.mamba_in_width, states = s.mamba_states;

  (void)column_parallel_gemm("mamba_in_proj", {tokens, in_width, s.hidden}, true);  // MambaMixer's norm-fused in_proj
  (void)elementwise("mamba_conv1d", tokens * channels, 2.0 * model_.mamba_conv_kernel + kSiluFlops, 2.0 * e);
  (void)elementwise("mamba_chunk_cumsum", tokens * heads, 4.0, e + 2.0 * kFp32Bytes);
  (void)compute("mamba_chunk_state", KernelClass::gemm, high_precision_, tokens * 2.0 * state * head_dim * heads,
                tokens * ((groups * state + inner) * e + 2.0 * heads * kFp32Bytes + states * kFp32Bytes));
  (void)elementwise("mamba_state_passing", tokens * states, 2.0, kFp32Bytes + e);
  (void)compute("mamba_bmm_chunk", KernelClass::gemm, high_precision_, tokens * 2.0 * chunk * state * groups,
                tokens * (2.0 * groups * state * e + groups * chunk * kFp32Bytes));
  (void)compute("mamba_chunk_scan", KernelClass::gemm, high_precision_,
                tokens * (2.0 * chunk * head_dim * heads + 2.0 * state * head_dim * heads),
                tokens * (groups * chunk * kFp32Bytes + 2.0 * inner * e + groups * state * e +
                          2.0 * heads * kFp32Bytes + states * e));
  // Reads y and z, writes the gated, normalised output.
  (void)elementwise("mamba_gated_norm", tokens * inner, kRmsNormFlops + kSiluFlops, 3.0 * e, KernelClass::norm);
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

  row_parallel_backward("mamba_out_proj_dgrad", "mamba_out_proj_wgrad", {tokens, s.hidden, inner}, inner * s.hidden);
  // Reads y, z and the output gradient; writes dy and dz.
  (void)elementwise("mamba_gated_norm_bwd", tokens * inner, kBackwardFlopRatio * (kRmsNormFlops + kSiluFlops), 5.0 * e,
                    KernelClass::norm);
  // The memory-efficient path recomputes the convolution's output, then the scan's forward intermediates.
  (void)elementwise("mamba_conv1d_recompute", tokens * channels, 2.0 * model_.mamba_conv_kernel + kSiluFlops, 2.0 * e);
  (void)elementwise("mamba_chunk_cumsum_recompute", tokens * heads, 4.0, e + 2.0 * kFp32Bytes);
  (void)compute("mamba_chunk_state_recompute", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * ((groups * state + inner) * e + 2.0 * heads * kFp32Bytes + states * kFp32Bytes));
  (void)elementwise("mamba_state_passing_recompute", tokens * states, 2.0, kFp32Bytes + e);
  (void)compute("mamba_bmm_chunk_recompute", KernelClass::gemm, high_precision_, tokens * 2.0 * chunk * state * groups,
                tokens * (2.0 * groups * state * e + groups * chunk * kFp32Bytes));
  // The gradients: of the carried states (from dout and C), back across the chunks, of x and dt (from dout, C B^T,
  // B and the state gradients), of C (from dout and the carried states), of B (from x and the state gradients), of
  // C B^T into B and C, and of the decays.
  (void)compute("mamba_chunk_scan_bwd_dstates", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + groups * state * e + heads * kFp32Bytes + states * kFp32Bytes));
  (void)elementwise("mamba_state_passing_bwd", tokens * states, 2.0, 2.0 * kFp32Bytes + e);
  (void)compute("mamba_chunk_scan_bwd_dx", KernelClass::gemm, high_precision_,
                tokens * (2.0 * chunk * head_dim * heads + scan_flops),
                tokens * (3.0 * inner * e + groups * chunk * kFp32Bytes + groups * state * e +
                          2.0 * heads * kFp32Bytes + states * kFp32Bytes));
  (void)compute("mamba_chunk_scan_bwd_dc", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + states * e + groups * state * e));
  (void)compute("mamba_chunk_state_bwd_db", KernelClass::gemm, high_precision_, tokens * scan_flops,
                tokens * (inner * e + states * kFp32Bytes + heads * kFp32Bytes + groups * state * e));
  (void)compute("mamba_bmm_chunk_bwd", KernelClass::gemm, high_precision_, tokens * 4.0 * chunk * state * groups,
                tokens * (4.0 * groups * state * e + groups * chunk * kFp32Bytes));
  (void)elementwise("mamba_chunk_cumsum_bwd", tokens * heads, 4.0, e + 3.0 * kFp32Bytes);
  // causal_conv1d_bwd: reads x and the output gradient, writes dx (and the taps' gradient, negligible).
  (void)elementwise("mamba_conv1d_bwd", tokens * channels, kBackwardFlopRatio * (2.0 * model_.mamba_conv_kernel),
                    3.0 * e);
  // The mixer's small parameters (convolution, dt bias, A, D, the gated norm's weight) are complete here.
  gradient_ready(local_.mamba - (in_width + inner) * s.hidden, false, *last_compute());
  column_parallel_backward("mamba_in_proj_dgrad", "mamba_in_proj_wgrad", {tokens, in_width, s.hidden},
                           in_width * s.hidden, false);
}

}  // namespace chopsim::detail
