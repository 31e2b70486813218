#pragma once
// Kernel classification by name, refined by the framework op the kernel was launched from.
// Vendor naming follows ../shared/docs/domain-primer.md and the names seen in ../shared/data/traces
// (tests/traces/classifier_test.cpp lists real examples per class).

#include <optional>
#include <string_view>

#include "chopsim/common/kernel_class.hpp"

namespace chopsim {

/// The class of a GPU kernel from its (demangled or short) name alone.
[[nodiscard]] KernelClass classify_kernel_name(std::string_view name);

/// The class of a kernel given its name and the framework op that launched it (aten::mm,
/// aten::_flash_attention_forward,
/// ...; empty if not linked). The op decides only when the name alone says `other`: an unknown vendor kernel
/// launched by aten::mm is a GEMM ("classes from names and shapes").
[[nodiscard]] KernelClass classify_kernel(std::string_view name, std::string_view op);

/// The TensorIterator path of one of PyTorch's elementwise kernels from its name (vectorized_elementwise_kernel,
/// unrolled_elementwise_kernel, elementwise_kernel<...> and ROCm's elementwise_kernel_manual_unroll); `fused` for
/// any other kernel.
[[nodiscard]] ElementwisePath classify_elementwise_path(std::string_view name);

/// The collective a NCCL/RCCL kernel name implies (ncclKernel_AllReduce_RING_LL_Sum_float -> all_reduce);
/// nullopt for ncclDevKernel_Generic and non-NCCL kernels.
[[nodiscard]] std::optional<CollectiveKind> collective_from_kernel_name(std::string_view name);

/// The collective of a PyTorch c10d collective name as record_param_comms gives it ("allreduce",
/// "_allgather_base", "reduce_scatter_tensor_coalesced", "send", ...); nullopt for barrier-free unknowns.
[[nodiscard]] std::optional<CollectiveKind> collective_from_op_name(std::string_view name);

}  // namespace chopsim
