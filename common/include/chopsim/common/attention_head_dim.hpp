#pragma once
// How an attention kernel's efficiency depends on the head dimension, shared by the compute model's parameters
// (models/hardware.hpp, compute_params_for) and the calibration fits (calibration/, which sit below models/): both
// must refer an efficiency to the same head dimension.

namespace chopsim {

/// The factor on an attention kernel's compute efficiency at head dimension `head_dim`, for a kernel whose efficiency
/// is stated at head dimension 128 and reaches `ratio_at_64` of it at 64: 1 at 128 and above (and for an unknown
/// head dimension, <= 0), `ratio_at_64` at 64 and below, linear in between. Flash-style kernels do 4 d FLOPs per
/// score and one softmax per score whatever d is: the smaller d, the larger the softmax's share of a tile's time
/// (FlashAttention-3 paper's head-dim panels: hardware files, kernels.attention_head_dim_64_ratio).
[[nodiscard]] constexpr double attention_head_dim_factor(double ratio_at_64, double head_dim) {
  if (head_dim <= 0.0 || head_dim >= 128.0) return 1.0;
  if (head_dim <= 64.0) return ratio_at_64;
  return ratio_at_64 + (1.0 - ratio_at_64) * (head_dim - 64.0) / 64.0;
}

}  // namespace chopsim
