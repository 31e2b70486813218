#include "op_flops.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace chopsim::detail {

namespace {

double numel(const std::vector<std::int64_t>& dims) {
  double n = 1.0;
  for (auto d : dims) n *= static_cast<double>(d);
  return n;
}

constexpr std::array<AttentionSignature, 12> kAttentionOps = {{
    {"aten::_flash_attention_forward", AttentionLayout::bshd, 8, false},
    {"aten::_flash_attention_backward", AttentionLayout::bshd, 11, true},
    {"aten::_scaled_dot_product_flash_attention", AttentionLayout::bhsd, 4, false},
    {"aten::_scaled_dot_product_flash_attention_backward", AttentionLayout::bhsd, 11, true},
    {"aten::_scaled_dot_product_efficient_attention", AttentionLayout::bhsd, 6, false},
    {"aten::_scaled_dot_product_efficient_attention_backward", AttentionLayout::bhsd, 11, true},
    {"aten::_efficient_attention_forward", AttentionLayout::bshd, 9, false},
    {"aten::_efficient_attention_backward", AttentionLayout::bshd, 14, true},
    {"aten::_scaled_dot_product_cudnn_attention", AttentionLayout::bhsd, 6, false},
    {"aten::_scaled_dot_product_cudnn_attention_backward", AttentionLayout::bhsd, 11, true},
    // The ops PyTorch >= 2.9 records inside the cuDNN SDPA ones (and that launch its kernels): is_causal is the 11th
    // input forward (after compute_log_sumexp and dropout_p) and the 15th backward, as in the H200 trace of
    // ../shared/data/measured/h200_llama32_1b (Concrete Inputs "True" there).
    {"aten::_cudnn_attention_forward", AttentionLayout::bhsd, 10, false},
    {"aten::_cudnn_attention_backward", AttentionLayout::bhsd, 14, true},
}};

}  // namespace

const AttentionSignature* attention_signature(std::string_view name) {
  for (const auto& signature : kAttentionOps)
    if (signature.op == name) return &signature;
  return nullptr;
}

bool is_gemm_op(std::string_view name) {
  return name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm" ||
         name == "aten::matmul" || name == "aten::linear" || name == "aten::_scaled_mm";
}

std::optional<OpCost> gemm_cost(std::string_view op, std::span<const OpTensor> inputs) {
  auto tensor = [&](std::size_t i) -> const OpTensor* { return i < inputs.size() ? &inputs[i] : nullptr; };
  double batch = 1.0, m = 0.0, n = 0.0, k = 0.0, bias = 0.0;
  const OpTensor* a = nullptr;
  if (op == "aten::mm" || op == "aten::_scaled_mm") {
    a = tensor(0);
    const OpTensor* b = tensor(1);
    if (!a || !b || a->dims.size() != 2 || b->dims.size() != 2) return std::nullopt;
    m = static_cast<double>(a->dims[0]);
    k = static_cast<double>(a->dims[1]);
    n = static_cast<double>(b->dims[1]);
  } else if (op == "aten::addmm") {
    a = tensor(1);
    const OpTensor* b = tensor(2);
    if (!a || !b || a->dims.size() != 2 || b->dims.size() != 2) return std::nullopt;
    m = static_cast<double>(a->dims[0]);
    k = static_cast<double>(a->dims[1]);
    n = static_cast<double>(b->dims[1]);
    if (const OpTensor* c = tensor(0)) bias = numel(c->dims);
  } else if (op == "aten::bmm" || op == "aten::baddbmm") {
    const std::size_t first = op == "aten::bmm" ? 0 : 1;
    a = tensor(first);
    const OpTensor* b = tensor(first + 1);
    if (!a || !b || a->dims.size() != 3 || b->dims.size() != 3) return std::nullopt;
    batch = static_cast<double>(a->dims[0]);
    m = static_cast<double>(a->dims[1]);
    k = static_cast<double>(a->dims[2]);
    n = static_cast<double>(b->dims[2]);
  } else if (op == "aten::linear") {
    a = tensor(0);
    const OpTensor* w = tensor(1);  // weight [N, K]
    if (!a || !w || a->dims.empty() || w->dims.size() != 2) return std::nullopt;
    k = static_cast<double>(a->dims.back());
    m = numel(a->dims) / std::max(k, 1.0);
    n = static_cast<double>(w->dims[0]);
    if (const OpTensor* c = tensor(2)) bias = numel(c->dims);
  } else if (op == "aten::matmul") {
    a = tensor(0);
    const OpTensor* b = tensor(1);
    if (!a || !b || a->dims.size() < 2 || b->dims.size() < 2) return std::nullopt;
    k = static_cast<double>(a->dims.back());
    n = static_cast<double>(b->dims.back());
    if (b->dims.size() == 2) {
      m = numel(a->dims) / std::max(k, 1.0);
    } else {
      m = static_cast<double>(a->dims[a->dims.size() - 2]);
      batch = numel(a->dims) / std::max(m * k, 1.0);
    }
  } else {
    return std::nullopt;
  }
  if (m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  OpCost cost;
  cost.flops = 2.0 * batch * m * n * k;
  if (a && std::isfinite(a->element_bytes)) cost.bytes = a->element_bytes * (batch * (m * k + k * n + m * n) + bias);
  return cost;
}

std::optional<OpCost> attention_cost(const AttentionSignature& signature, std::span<const OpTensor> inputs,
                                     std::span<const std::string> concrete) {
  std::vector<const OpTensor*> four_d;
  for (const OpTensor& t : inputs)
    if (t.dims.size() == 4) four_d.push_back(&t);
  // Backward ops take grad_out first: q, k, v are the 2nd-4th 4-D inputs.
  const std::size_t q_index = signature.backward ? 1 : 0;
  if (four_d.size() < q_index + 3) return std::nullopt;
  const OpTensor& q = *four_d[q_index];
  const OpTensor& k = *four_d[q_index + 1];
  const OpTensor& v = *four_d[q_index + 2];
  const bool bshd = signature.layout == AttentionLayout::bshd;
  const double batch = static_cast<double>(q.dims[0]);
  const double heads = static_cast<double>(bshd ? q.dims[2] : q.dims[1]);
  const double sq = static_cast<double>(bshd ? q.dims[1] : q.dims[2]);
  const double sk = static_cast<double>(bshd ? k.dims[1] : k.dims[2]);
  const double d = static_cast<double>(q.dims[3]);
  bool causal = false;
  if (signature.causal_index >= 0 && static_cast<std::size_t>(signature.causal_index) < concrete.size()) {
    const auto& flag = concrete[static_cast<std::size_t>(signature.causal_index)];
    causal = flag == "True" || flag == "true" || flag == "1";
  }
  double flops = 4.0 * batch * heads * sq * sk * d;
  if (causal) flops *= 0.5;
  if (signature.backward) flops *= 2.5;
  OpCost cost;
  cost.flops = flops;
  cost.head_dim = d;
  if (std::isfinite(q.element_bytes)) {
    const double nq = numel(q.dims), nk = numel(k.dims), nv = numel(v.dims);
    cost.bytes = q.element_bytes * (signature.backward ? 4.0 * nq + 2.0 * nk + 2.0 * nv : 2.0 * nq + nk + nv);
  }
  return cost;
}

}  // namespace chopsim::detail
