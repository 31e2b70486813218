#include "op_traffic.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "chopsim/common/pytorch_softmax.hpp"

namespace chopsim::detail {

namespace {

enum class Traffic : std::uint8_t {
  elementwise,           ///< inputs read, broadcast result written
  in_place,              ///< first input read and written, the others read
  overwrite,             ///< first input written only (copy_, fill_, zero_), the others read
  reduction,             ///< inputs read, a result much smaller than the input
  softmax,               ///< input read (three times over long rows), a result of the same shape written
  softmax_backward,      ///< grad_output and output read, grad_input written (grad_output's shape and type)
  log_softmax_backward,  ///< as softmax_backward, grad_output read twice over long rows
  norm_forward,          ///< x (and weight/bias) read, y written: fused LayerNorm/RMSNorm
  norm_backward,         ///< grad_out, x (and weight) read, grad_in written
  adam,                  ///< fused Adam(W): params, grads and both moments read; params and moments written
};

struct OpRule {
  std::string_view name;
  Traffic traffic;
};

// Names as aten records them (native_functions.yaml). Out-of-place ops and their in-place '_' variants (found by
// stripping the '_'), so that `aten::add_` is the in-place form of `aten::add`.
constexpr std::array<OpRule, 48> kRules = {{
    {"aten::add", Traffic::elementwise},
    {"aten::sub", Traffic::elementwise},
    {"aten::mul", Traffic::elementwise},
    {"aten::div", Traffic::elementwise},
    {"aten::pow", Traffic::elementwise},
    {"aten::neg", Traffic::elementwise},
    {"aten::rsqrt", Traffic::elementwise},
    {"aten::sqrt", Traffic::elementwise},
    {"aten::reciprocal", Traffic::elementwise},
    {"aten::exp", Traffic::elementwise},
    {"aten::log", Traffic::elementwise},
    {"aten::abs", Traffic::elementwise},
    {"aten::cos", Traffic::elementwise},
    {"aten::sin", Traffic::elementwise},
    {"aten::tanh", Traffic::elementwise},
    {"aten::sigmoid", Traffic::elementwise},
    {"aten::silu", Traffic::elementwise},
    {"aten::gelu", Traffic::elementwise},
    {"aten::relu", Traffic::elementwise},
    {"aten::silu_backward", Traffic::elementwise},
    {"aten::gelu_backward", Traffic::elementwise},
    {"aten::sigmoid_backward", Traffic::elementwise},
    {"aten::tanh_backward", Traffic::elementwise},
    {"aten::threshold_backward", Traffic::elementwise},
    {"aten::where", Traffic::elementwise},
    {"aten::clamp", Traffic::elementwise},
    {"aten::masked_fill", Traffic::elementwise},
    {"aten::lerp", Traffic::elementwise},
    {"aten::addcmul", Traffic::elementwise},
    {"aten::addcdiv", Traffic::elementwise},
    {"aten::maximum", Traffic::elementwise},
    {"aten::minimum", Traffic::elementwise},
    {"aten::copy_", Traffic::overwrite},
    {"aten::fill_", Traffic::overwrite},
    {"aten::zero_", Traffic::overwrite},
    {"aten::sum", Traffic::reduction},
    {"aten::mean", Traffic::reduction},
    {"aten::amax", Traffic::reduction},
    {"aten::linalg_vector_norm", Traffic::reduction},
    {"aten::_softmax", Traffic::softmax},
    {"aten::_log_softmax", Traffic::softmax},
    {"aten::_softmax_backward_data", Traffic::softmax_backward},
    {"aten::_log_softmax_backward_data", Traffic::log_softmax_backward},
    {"aten::native_layer_norm", Traffic::norm_forward},
    {"aten::_fused_rms_norm", Traffic::norm_forward},
    {"aten::native_layer_norm_backward", Traffic::norm_backward},
    {"aten::_fused_adamw_", Traffic::adam},
    {"aten::_fused_adam_", Traffic::adam},
}};

std::optional<OpRule> rule_for(std::string_view op) {
  for (const OpRule& rule : kRules)
    if (rule.name == op) return rule;
  // An in-place variant of an out-of-place elementwise op: aten::mul_ -> aten::mul.
  if (op.size() > 1 && op.back() == '_') {
    const std::string_view base = op.substr(0, op.size() - 1);
    for (const OpRule& rule : kRules)
      if (rule.name == base && rule.traffic == Traffic::elementwise) return OpRule{op, Traffic::in_place};
  }
  return std::nullopt;
}

double numel(const std::vector<std::int64_t>& dims) {
  double n = 1.0;
  for (const auto d : dims) n *= static_cast<double>(d);
  return n;
}

bool is_tensor(const OpTensor& t) { return std::isfinite(t.element_bytes); }
double tensor_bytes(const OpTensor& t) { return numel(t.dims) * t.element_bytes; }
/// Elements of a tensor's last dimension (1 for a scalar).
double row_elements(const OpTensor& t) { return t.dims.empty() ? 1.0 : static_cast<double>(t.dims.back()); }

/// NumPy broadcasting of the tensor inputs' shapes (0-d tensors and scalars take part as size 1).
double broadcast_elements(std::span<const OpTensor> inputs) {
  std::size_t rank = 0;
  for (const auto& t : inputs)
    if (is_tensor(t)) rank = std::max(rank, t.dims.size());
  std::vector<std::int64_t> shape(rank, 1);
  for (const auto& t : inputs) {
    if (!is_tensor(t)) continue;
    const std::size_t offset = rank - t.dims.size();
    for (std::size_t i = 0; i < t.dims.size(); ++i) shape[offset + i] = std::max(shape[offset + i], t.dims[i]);
  }
  return numel(shape);
}

}  // namespace

bool has_memory_bound_rule(std::string_view op) { return rule_for(op).has_value(); }

std::optional<double> memory_bound_op_bytes(std::string_view op, std::span<const OpTensor> inputs) {
  const std::optional<OpRule> rule = rule_for(op);
  if (!rule) return std::nullopt;
  double read = 0.0, widest = 0.0;
  const OpTensor* first = nullptr;
  for (const auto& t : inputs) {
    if (!is_tensor(t)) continue;
    if (first == nullptr) first = &t;
    read += tensor_bytes(t);
    if (!t.dims.empty()) widest = std::max(widest, t.element_bytes);
  }
  if (rule->traffic == Traffic::adam) {
    // _fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, ...): the lists' dtypes are
    // not recorded; Adam's states are fp32 in every framework chopsim models, and so are the params it updates
    // (master weights) -- 4 bytes each, 4 lists read and 3 written.
    if (inputs.empty() || !(inputs[0].list_elements > 0.0)) return std::nullopt;
    return 7.0 * 4.0 * inputs[0].list_elements;
  }
  if (first == nullptr) return std::nullopt;
  if (widest == 0.0) widest = first->element_bytes;
  switch (rule->traffic) {
    case Traffic::elementwise:
      return read + broadcast_elements(inputs) * widest;
    case Traffic::in_place:
      return read + tensor_bytes(*first);
    case Traffic::overwrite:
      return read;
    case Traffic::reduction:
      return read;
    case Traffic::softmax:
      // Over the last dimension (the only one chopsim's workloads and the traces' models take a softmax over):
      // PyTorch's kernel by row length (common/pytorch_softmax.hpp).
      return numel(first->dims) *
             pytorch_softmax_forward_bytes(row_elements(*first), first->element_bytes, first->element_bytes);
    case Traffic::softmax_backward:
      return read + tensor_bytes(*first);
    case Traffic::log_softmax_backward: {
      // _log_softmax_backward_data(grad_output, output, dim, input_dtype): the input gradient has grad_output's type.
      const double output_bytes =
          inputs.size() > 1 && is_tensor(inputs[1]) ? inputs[1].element_bytes : first->element_bytes;
      return numel(first->dims) *
             pytorch_log_softmax_backward_bytes(row_elements(*first), first->element_bytes, output_bytes);
    }
    case Traffic::norm_forward:
      return read + tensor_bytes(*first);
    case Traffic::norm_backward:
      return read + tensor_bytes(*first);
    case Traffic::adam:
      break;
  }
  return std::nullopt;
}

}  // namespace chopsim::detail
