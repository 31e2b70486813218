#pragma once
// HBM traffic of the memory-bound PyTorch ops a Kineto trace records with shapes (record_shapes=True): elementwise
// arithmetic, dtype casts and copies, fills, reductions, softmax, fused norms and fused Adam. A GEMM or attention
// op's FLOPs come from its shapes elsewhere (kineto_reader.cpp); these ops are limited by the bytes they move, so
// their bytes are what lets `chopsim calibrate` fit the memory efficiency of the elementwise, norm, reduction, copy
// and optimizer classes (issue 20: without them 5,072 of the H200 trace's 5,117 kernels were set aside).

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace chopsim::detail {

/// One input of a CPU op as "Input Dims" / "Input type" give it.
struct OpTensor {
  std::vector<std::int64_t> dims;                                   ///< empty for a scalar, a 0-d tensor or a list
  double element_bytes = std::numeric_limits<double>::quiet_NaN();  ///< NaN when the type is not a tensor dtype
                                                                    ///< ("Scalar", "TensorList", "")
  double list_elements = 0.0;  ///< a TensorList: the elements of all its tensors (their dtype is not recorded)
};

/// Bytes the op reads from and writes to HBM, assuming each tensor is read or written once (what a bandwidth-bound
/// kernel does): inputs read, plus the result written (the broadcast shape of the tensor inputs, in the widest of
/// their element types, as PyTorch's type promotion gives for the floating types these ops take). In-place ops
/// (name ending in '_') write their first input; copy_, fill_ and zero_ do not read it. A softmax over rows too long
/// for PyTorch's on-chip kernels reads its input three times, a log-softmax backward its output gradient twice
/// (common/pytorch_softmax.hpp). nullopt for ops whose traffic the shapes do not give (indexing, embedding, scatter,
/// unknown names).
[[nodiscard]] std::optional<double> memory_bound_op_bytes(std::string_view op, std::span<const OpTensor> inputs);

/// Whether memory_bound_op_bytes knows the op (so a reader parses its shapes only then).
[[nodiscard]] bool has_memory_bound_rule(std::string_view op);

}  // namespace chopsim::detail
