#pragma once
// Vocabulary shared by every layer that talks about GPU kernels: the trace readers (traces/) classify measured
// kernels into these classes, calibration fits per class, and the compute model (models/) predicts per class.
// It lives in common/ because traces/ sits below models/ (docs/design.md) and both must use the same enums;
// models/hardware.hpp and models/collective.hpp include this header.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chopsim {

/// Kernel classes, shared by the compute model, the workload and the trace classifier.
enum class KernelClass : std::uint8_t {
  gemm,           ///< matrix multiplications (cuBLAS/hipBLASLt/CUTLASS)
  attention,      ///< fused flash-style attention
  elementwise,    ///< activations, residual adds, rotary embedding, dropout
  norm,           ///< RMSNorm / LayerNorm
  reduction,      ///< softmax/cross-entropy, sums
  communication,  ///< NCCL/RCCL kernels
  memcpy,         ///< copies and memsets
  optimizer,      ///< fused AdamW and similar
  other,
};
inline constexpr std::size_t kKernelClassCount = 9;

/// The lower-case name of a class ("gemm", ...), as YAML and outputs spell it; models' to_string(KernelClass) is this.
[[nodiscard]] constexpr std::string_view kernel_class_name(KernelClass kernel_class) {
  switch (kernel_class) {
    case KernelClass::gemm:
      return "gemm";
    case KernelClass::attention:
      return "attention";
    case KernelClass::elementwise:
      return "elementwise";
    case KernelClass::norm:
      return "norm";
    case KernelClass::reduction:
      return "reduction";
    case KernelClass::communication:
      return "communication";
    case KernelClass::memcpy:
      return "memcpy";
    case KernelClass::optimizer:
      return "optimizer";
    case KernelClass::other:
      return "other";
  }
  return "other";
}

/// The code path of one of PyTorch's own elementwise kernels (TensorIterator's gpu_kernel,
/// aten/src/ATen/native/cuda/CUDALoops.cuh). The paths reach very different shares of HBM bandwidth on the same
/// bytes, so a roofline with one efficiency per class cannot time eager PyTorch: on the H200 Kineto trace of
/// ../shared/data/measured/h200_llama32_1b (time-weighted) vectorized kernels reach 0.89 of the HBM peak, unrolled
/// and strided ones 0.43 (docs/calibration.md, "PyTorch's elementwise kernels by code path").
enum class ElementwisePath : std::uint8_t {
  /// Not a TensorIterator kernel (a framework's fused kernel, a copy engine transfer): the class's efficiency.
  fused,
  /// vectorized_elementwise_kernel: every operand contiguous and of one dtype (and the float -> bfloat16 copy,
  /// which has a vectorized kernel of its own). Also PyTorch's multi-pass softmax over long rows
  /// (cunn_SoftMaxForward/Backward: reduction-class kernels that stream each pass with the same 16-byte vector loads;
  /// common/pytorch_softmax.hpp).
  vectorized,
  /// unrolled_elementwise_kernel: contiguous operands of different dtypes, loaded and stored with a cast per element
  /// (a bf16 -> fp32 copy, an fp32 + bf16 add).
  unrolled,
  /// elementwise_kernel<128, ...> (ROCm: elementwise_kernel_manual_unroll): a broadcast or non-contiguous operand,
  /// its offsets computed per element (a norm's weight or 1/rms broadcast over a row, a transposed view's copy).
  strided,
};
inline constexpr std::size_t kElementwisePathCount = 4;
/// The paths of PyTorch's own kernels, each with an efficiency of its own (every path but `fused`).
inline constexpr std::array<ElementwisePath, 3> kPytorchElementwisePaths{
    ElementwisePath::vectorized, ElementwisePath::unrolled, ElementwisePath::strided};

/// The lower-case name of a path ("vectorized", ...), as YAML and reports spell it.
[[nodiscard]] constexpr std::string_view elementwise_path_name(ElementwisePath path) {
  switch (path) {
    case ElementwisePath::fused:
      return "fused";
    case ElementwisePath::vectorized:
      return "vectorized";
    case ElementwisePath::unrolled:
      return "unrolled";
    case ElementwisePath::strided:
      return "strided";
  }
  return "fused";
}

/// Collective operations. Size conventions for a collective's bytes (as nccl-tests reports them):
/// all_reduce: the buffer S each member holds; all_gather: the gathered output (n shards);
/// reduce_scatter: the input (n shards); all_to_all: what one member sends in total (n equal parts,
/// one kept); broadcast: the buffer; send_recv: the message.
enum class CollectiveKind : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
inline constexpr std::size_t kCollectiveKindCount = 6;

/// The lower-case name of a collective ("all_reduce", ...); models' to_string(CollectiveKind) is this.
[[nodiscard]] constexpr std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::all_to_all:
      return "all_to_all";
    case CollectiveKind::broadcast:
      return "broadcast";
    case CollectiveKind::send_recv:
      return "send_recv";
  }
  return "send_recv";
}

}  // namespace chopsim
