#pragma once
// FLOPs and HBM bytes of the GEMM and attention ops a Kineto trace records with shapes (record_shapes=True), from
// their "Input Dims", "Input type" and "Concrete Inputs": what lets a GEMM or attention kernel launched by the op be
// placed on its roofline. The memory-bound ops' bytes: op_traffic.hpp.

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "op_traffic.hpp"

namespace chopsim::detail {

/// What an op's shapes give.
struct OpCost {
  double flops = std::nan("");
  double bytes = std::nan("");  ///< NaN when the element type is not recorded
  double head_dim = 0.0;        ///< attention: the query/key head width
};

/// Whether `name` is one of the GEMM ops gemm_cost knows (aten::mm, addmm, bmm, baddbmm, matmul, linear,
/// _scaled_mm).
[[nodiscard]] bool is_gemm_op(std::string_view name);

/// FLOPs (2 per multiply-add) and minimal HBM bytes (inputs, result and bias once each) of a GEMM op from its input
/// shapes; nullopt when they do not give M, N and K.
[[nodiscard]] std::optional<OpCost> gemm_cost(std::string_view op, std::span<const OpTensor> inputs);

/// How q, k and v are laid out: (batch, sequence, heads, head dim) or (batch, heads, sequence, head dim).
enum class AttentionLayout : std::uint8_t { bshd, bhsd };

/// Attention ops: layout of q/k/v and the position of is_causal (or custom_mask_type) among the inputs, from the
/// signatures in PyTorch's aten/src/ATen/native/native_functions.yaml.
struct AttentionSignature {
  std::string_view op;
  AttentionLayout layout;
  int causal_index;
  bool backward;
};

/// The signature of attention op `name`, or null when it is none of PyTorch's fused attention ops.
[[nodiscard]] const AttentionSignature* attention_signature(std::string_view name);

/// FLOPs of an attention op: 4*B*H*Sq*Sk*D forward (QK^T and PV), halved when causal, and 2.5x the forward for the
/// backward pass (five matmuls instead of two) -- the convention of FlashAttention's benchmarks
/// (Dao et al., benchmarks/benchmark_flash_attention.py).
/// Bytes: q, k, v read and the output written once forward; the backward also reads the output and its gradient and
/// writes the three gradients. nullopt when q, k and v are not among the 4-D inputs.
[[nodiscard]] std::optional<OpCost> attention_cost(const AttentionSignature& signature,
                                                   std::span<const OpTensor> inputs,
                                                   std::span<const std::string> concrete);

}  // namespace chopsim::detail
