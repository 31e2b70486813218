#pragma once
// Private to the StageGenerator's files (workload_layers.cpp, workload_mla.cpp): FLOPs per element of the
// memory-bound kernels and FlashAttention's backward ratio.

namespace chopsim::detail {

// Vector FLOPs per element of the memory-bound kernels (rough counts of the arithmetic; these kernels'
// time comes from their bytes, so the counts only matter for the compute-bound check).
inline constexpr double kRmsNormFlops = 4.0;       // square, sum, rsqrt-scale, weight
inline constexpr double kLayerNormFlops = 7.0;     // mean, centre, square, sum, rsqrt-scale, weight, bias
inline constexpr double kRotaryFlops = 3.0;        // x*cos + rotate(x)*sin
inline constexpr double kSwigluFlops = 6.0;        // silu(gate) = gate*sigmoid(gate) (4) times up (1), rounding up
inline constexpr double kGeluFlops = 8.0;          // tanh approximation
inline constexpr double kSquaredReluFlops = 2.0;   // max(x, 0), squared
inline constexpr double kSoftmaxFlops = 5.0;       // max, subtract, exp, sum, scale
inline constexpr double kBackwardFlopRatio = 2.0;  // elementwise backward reads more and does about twice the work

/// FlashAttention's backward executes 2.5x the forward's matmul FLOPs: five matmuls (recomputing
/// S = Q*K^T, then dV, dP, dQ, dK) against the forward's two (Dao 2023, FlashAttention-2, backward pass
/// algorithm; Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py counts backward FLOPs as
/// 2.5x forward). Model FLOPs (MFU) count 2x, as for any matmul.
inline constexpr double kFlashBackwardRatio = 2.5;

}  // namespace chopsim::detail
