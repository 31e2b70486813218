#include "chopsim/models/hardware.hpp"

#include <array>
#include <string>
#include <utility>

#include "chopsim/common/error.hpp"
#include "chopsim/models/parallelism.hpp"

namespace chopsim {

namespace {
constexpr std::array<std::string_view, kPrecisionCount> kPrecisionNames = {"fp32", "tf32", "bf16", "fp16", "fp8"};
}  // namespace

std::string_view to_string(Precision precision) { return kPrecisionNames[static_cast<std::size_t>(precision)]; }

std::optional<Precision> precision_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kPrecisionNames.size(); ++i)
    if (kPrecisionNames[i] == name) return static_cast<Precision>(i);
  return std::nullopt;
}

double bytes_per_element(Precision precision) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32:
      return 4.0;
    case Precision::bf16:
    case Precision::fp16:
      return 2.0;
    case Precision::fp8:
      return 1.0;
  }
  return 4.0;
}

std::string_view to_string(KernelClass kernel_class) { return kernel_class_name(kernel_class); }

std::optional<KernelClass> kernel_class_from_string(std::string_view name) {
  for (std::size_t i = 0; i < kKernelClassCount; ++i)
    if (kernel_class_name(static_cast<KernelClass>(i)) == name) return static_cast<KernelClass>(i);
  return std::nullopt;
}

PowerParams power_params_for(const HardwareSpec& hardware) {
  PowerParams params = hardware.power;
  params.idle_w = hardware.idle_power_w;
  params.max_clock_hz = hardware.compute.boost_clock_hz;
  return params;
}

ComputeParams compute_params_for(const HardwareSpec& hardware, std::string_view attention, double head_dim) {
  ComputeParams params = hardware.compute;
  params.host_to_device_bytes_per_s = hardware.host_link_bandwidth_bytes_per_s > 0.0
                                          ? hardware.host_link_bandwidth_bytes_per_s
                                          : hardware.pcie_bandwidth_bytes_per_s;
  if (attention == kEagerAttention) return params;  // eager: GEMM and elementwise kernels
  auto& efficiency = params.efficiency[static_cast<std::size_t>(KernelClass::attention)];
  double head_dim_64_ratio = hardware.attention_head_dim_64_ratio;
  if (!attention.empty()) {
    const auto it = hardware.attention_implementations.find(attention);
    if (it == hardware.attention_implementations.end())
      throw ModelError("hardware " + hardware.name + " has no attention implementation '" + std::string(attention) +
                       "' (kernels.attention_implementations)");
    efficiency = it->second.efficiency;
    params.deterministic_attention = it->second.deterministic;
    params.attention_dropout_slowdown = it->second.dropout_slowdown;
    head_dim_64_ratio = it->second.head_dim_64_ratio;
  }
  efficiency.compute *= attention_head_dim_factor(head_dim_64_ratio, head_dim);
  return params;
}

}  // namespace chopsim
