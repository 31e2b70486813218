// Transformer Engine's fp8 casts ahead of its fp8 GEMMs, by scaling recipe (TrainingSpec::fp8_recipe), private to the
// StageGenerator: moved out of workload_layers.cpp.

#include <string>

#include "workload_stage.hpp"

namespace chopsim::detail {

// Transformer Engine runs an fp8 GEMM on fp8 copies of its bf16 operands (delayed scaling, as TE's fp8 recipes
// run it): a cast_transpose kernel reads each operand once and writes it as fp8 in both layouts that the forward
// and the backward GEMMs read (TN: the forward reads X and W, dgrad dY and W^T, wgrad dY^T and X^T), recording the
// operand's amax in the same pass: 2 + 1 + 1 bytes per element. The inputs are cast at every forward (and
// recomputed forward), the output gradient before the dgrad; the weights at the first micro-batch's forward only,
// TE keeping their fp8 copies for the step (Megatron passes is_first_microbatch). Simplifications: TE's fused
// variants (LayerNormLinear writing the norm's output in fp8 and transposing it, 2 bytes per element less) are
// counted as the plain cast, and the per-step amax reductions and scaling-factor updates (a few small kernels per
// step) are left out. MXFP8 finds its block scales in the same single pass. Current scaling
// (training.fp8_recipe: current; TE's Float8CurrentScalingQuantizer::quantize_impl) first reduces the tensor to its
// amax (nvte_compute_amax: reads it, 2 bytes per element) and computes the scale from it (nvte_compute_scale_from_amax,
// a one-thread kernel) before the cast: two more launches and one more read. Where a norm wrote the tensor in the same
// Transformer Engine module (LayerNormLinear: QKV and fc1), TE's fused norm computes the amax while it writes
// (normalization.cpp, FUSED_NORM_AMAX_FP8), leaving the scale's launch; a later chunk of a tensor already scaled (the
// userbuffers split) needs neither.
void StageGenerator::fp8_cast(const std::string& name, double elements, CastScale scale) {
  constexpr double kCastFlops = 2.0;  // scale, amax
  constexpr double kCastBytes = 2.0 + 1.0 + 1.0;
  if (training_.fp8_recipe == Fp8Recipe::current && scale != CastScale::known) {
    const bool own_amax = scale == CastScale::own_amax;
    const OpRef amax = own_amax ? elementwise(name + "_amax", elements, 1.0, 2.0, KernelClass::reduction)
                                : elementwise(name + "_scale", 1.0, 1.0, 8.0);
    builder_.set_host_issue(amax, own_amax ? 2 : 1, false);  // the amax (if its own) and the scale
  }
  (void)elementwise(name, elements, kCastFlops, kCastBytes);
}

// Current scaling with sequence parallelism: the input of a column-parallel GEMM and the output gradient of a
// row-parallel one are quantized as shards and gathered in fp8, so their quantizers all-reduce the amax (4 bytes,
// MAX) over the tensor-parallel group before the cast (TE module/linear.py, set_quantizer_amax_reduction_group); the
// compute stream waits for it (the quantizer's work->wait()).
void StageGenerator::fp8_amax_reduction(const std::string& name) {
  if (training_.fp8_recipe != Fp8Recipe::current || gemm_precision_ != Precision::fp8 ||
      !parallelism_.sequence_parallel || parallelism_.tp < 2)
    return;
  (void)blocking({name + "_fp8_amax_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp, 4.0});
}

}  // namespace chopsim::detail
