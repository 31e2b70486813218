#pragma once
// How much memory traffic PyTorch's CUDA softmax kernels make per element of the softmax dimension, shared by the
// workloads that emit them (models/) and by the calibration that reads them off traces (traces/op_traffic): both
// must count the same bytes for a kernel, or a fitted efficiency would not carry over.
//
// aten/src/ATen/native/cuda/SoftMax.cu (host_softmax, host_softmax_backward; PyTorch 2.x, inner size 1, i.e. a
// softmax over the last dimension) picks a kernel by the row's length:
//  * rows of at most 1024 elements and 4 KiB: the persistent warp softmax, each element read once and written once;
//  * rows that fit in one block's shared memory (sharedMemPerBlock, 48 KiB on NVIDIA GPUs, less the reduction's
//    few words): cunn_SoftMaxForwardSmem / cunn_SoftMaxBackwardSmem (or the register variant), which keep the row on
//    chip: again one read and one write;
//  * longer rows, such as a language model's logits over its vocabulary: cunn_SoftMaxForward reads the row three
//    times (its maximum, the sum of exponentials, then the output it writes), and cunn_SoftMaxBackward of a
//    log-softmax reads the output gradient twice (its sum, then the result) and the output once.
// The H200 probe's Kineto trace (../shared/data/measured/h200_llama32_1b, 16,384 rows of 128,256 fp32 logits) shows
// the multi-pass kernels: cunn_SoftMaxForward 7.88 ms and cunn_SoftMaxBackward 8.39 ms, 0.89 and 0.84 of the HBM
// peak with these passes counted (0.44 and 0.63 with one read per operand).
// ROCm builds run the same kernels with 64 KiB of shared memory per block; that moves the bound only for rows of
// 12k-16k fp32 elements, never for a vocabulary's.

#include "chopsim/common/kernel_class.hpp"

namespace chopsim {

/// Shared memory per block a kernel gets without opting in (cudaDeviceProp::sharedMemPerBlock), bytes.
inline constexpr double kPytorchSoftmaxSharedMemoryBytes = 48.0 * 1024.0;

/// True when PyTorch's softmax over rows of `row_elements` elements of `element_bytes` each runs the multi-pass
/// kernels (the row is too long for the persistent and the shared-memory variants).
[[nodiscard]] constexpr bool pytorch_softmax_is_multi_pass(double row_elements, double element_bytes) {
  const bool persistent = row_elements <= 1024.0 && row_elements * element_bytes <= 4096.0;
  const bool on_chip = row_elements * element_bytes < kPytorchSoftmaxSharedMemoryBytes;
  return !persistent && !on_chip;
}

/// Bytes per element of a softmax or log-softmax forward: the input read once or three times, the output written.
[[nodiscard]] constexpr double pytorch_softmax_forward_bytes(double row_elements, double input_bytes,
                                                             double output_bytes) {
  const double reads = pytorch_softmax_is_multi_pass(row_elements, input_bytes) ? 3.0 : 1.0;
  return reads * input_bytes + output_bytes;
}

/// Bytes per element of a log-softmax backward: the output gradient read once or twice, the output read, the input
/// gradient written (`gradient_bytes` each for the two gradients).
[[nodiscard]] constexpr double pytorch_log_softmax_backward_bytes(double row_elements, double gradient_bytes,
                                                                  double output_bytes) {
  const double gradient_reads = pytorch_softmax_is_multi_pass(row_elements, output_bytes) ? 2.0 : 1.0;
  return gradient_reads * gradient_bytes + output_bytes + gradient_bytes;
}

/// The code path whose share of the HBM peak times the softmax kernel over such rows: the multi-pass kernels stream
/// every pass with 16-byte vector loads as vectorized_elementwise_kernel does (the H200 trace: 0.89 and 0.84 of the
/// peak, vectorized 0.89); the on-chip variants are kernels of their own (the class's efficiency).
[[nodiscard]] constexpr ElementwisePath pytorch_softmax_path(double row_elements, double element_bytes) {
  return pytorch_softmax_is_multi_pass(row_elements, element_bytes) ? ElementwisePath::vectorized
                                                                    : ElementwisePath::fused;
}

}  // namespace chopsim
