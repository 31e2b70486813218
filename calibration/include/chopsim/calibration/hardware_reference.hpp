#pragma once
// The few numbers of a hardware file (configs/hardware/NAME.yaml, docs/configs.md) that calibration needs: the
// roofline's peaks and clocks (to turn measured times into efficiencies), the links (to turn bus bandwidth into a
// per-link bandwidth), and the current parameter values (the defaults a profile replaces, for the fit report).
// calibration sits below models/ (docs/design.md), so it reads these keys itself instead of using HardwareSpec.

#include <array>
#include <filesystem>
#include <map>
#include <string>

#include "chopsim/common/kernel_class.hpp"
#include "chopsim/common/voltage_curve.hpp"

namespace chopsim {

/// A class's efficiencies as the hardware file states them (docs/configs.md `kernels.efficiency`).
struct EfficiencyDefaults {
  double compute = 1.0;
  double memory = 1.0;
  double half_efficiency_flops = 0.0;
};

/// How GPUs of one node are joined: decides how many links a ring collective drives at once.
enum class NodeLinks { nvswitch, xgmi_mesh };

/// The hardware file's power model (`power_model`, models/power.hpp): what the dynamic-power fit holds fixed.
struct PowerModelReference {
  bool present = false;  ///< the file has a power_model section with dynamic_w
  double dynamic_w = 0.0;
  double hbm_w = 0.0;
  double busy_activity = 0.3;  ///< the power model's defaults (models/power.hpp) when the file omits them
  double tensor_activity = 0.7;
  double vector_activity = 0.35;
  double leakage_w_per_k = 0.0;
  double reference_c = 40.0;
  VoltageCurve voltage;
};

struct HardwareReference {
  std::string name;    ///< file stem, e.g. "H100-SXM5-80GB"
  std::string path;    ///< the file read
  std::string vendor;  ///< "nvidia" or "amd"
  /// Dense peak FLOP/s at `rated_clock_hz`, by element type ("fp32", "tf32", "bf16", "fp16", "fp8"); 0 = none.
  std::map<std::string, double> peak_flops_per_s;
  double hbm_bandwidth_bytes_per_s = 0.0;
  double boost_clock_hz = 0.0;
  double rated_clock_hz = 0.0;                         ///< clock of the peak figures (clocks_mhz.rated, else boost)
  double intra_node_link_bandwidth_bytes_per_s = 0.0;  ///< one link, one direction (nominal)
  /// Fraction of the nominal link bandwidth collectives achieve (`intra_node_link.efficiency`, default 1).
  double intra_node_link_efficiency = 1.0;
  int intra_node_links_per_gpu = 0;
  double intra_node_link_latency_s = 0.0;
  double nic_bandwidth_bytes_per_s = 0.0;  ///< nominal, one direction
  double nic_efficiency = 1.0;             ///< `nic.efficiency` (default 1)
  double nic_latency_s = 0.0;
  double launch_overhead_s = 0.0;
  double comm_compute_slowdown = 0.0;      ///< `kernels.comm_compute_slowdown`
  double fp8_gemm_efficiency_ratio = 1.0;  ///< `kernels.fp8_gemm_efficiency_ratio` (default 1)
  /// `kernels.attention_head_dim_64_ratio` (default 1): attention kernels at head dim 64 are fitted against the peak
  /// times attention_head_dim_factor(this, head dim), so the fitted efficiency is the head-dim-128 one runs scale.
  double attention_head_dim_64_ratio = 1.0;
  double idle_power_w = 0.0;
  double tdp_w = 0.0;
  double thermal_resistance_k_per_w = 0.0;   ///< 0 = not in the file
  double thermal_capacitance_j_per_k = 0.0;  ///< 0 = not in the file
  double ambient_c = 25.0;                   ///< `cooling.ambient_c`: inlet of the usual chassis's front slots (°C)
  double min_clock_hz = 0.0;                 ///< `clocks_mhz.min` (0 = not in the file)
  PowerModelReference power_model;
  std::array<EfficiencyDefaults, kKernelClassCount> efficiency{};
  /// `kernels.pytorch_elementwise_memory.<path>` by ElementwisePath; 0 = not in the file (the class's memory).
  std::array<double, kElementwisePathCount> elementwise_path_memory{};

  /// The peak for a kernel of element type `dtype` (fp8 falls back to bf16, tf32 to fp32, as the roofline does);
  /// 0 if the GPU has none.
  [[nodiscard]] double peak_for(const std::string& dtype) const;
  /// The rate a fitted efficiency of `kernel_class` is a fraction of: peak_for(dtype), except that an fp8 GEMM on
  /// fp8 units is scaled by fp8_gemm_efficiency_ratio, so fp8 kernels fit the bf16-equivalent GEMM efficiency the
  /// hardware files and the roofline use (models/src/compute_model.cpp).
  [[nodiscard]] double efficiency_peak_for(KernelClass kernel_class, const std::string& dtype) const;
  /// nvswitch for NVIDIA, xgmi_mesh for AMD (MI300X's full mesh); what the shipped cluster files use.
  [[nodiscard]] NodeLinks default_node_links() const;
};

/// Reads `name_or_path`: a hardware name looked up as `configs_dir/hardware/NAME.yaml`, or a path to a YAML file
/// (any text containing '/' or ending in .yaml). Throws InputError naming the file (or listing the available
/// names) when it is missing or lacks a required key (peak_tflops.bf16, peak_tflops.fp32, clocks_mhz.boost,
/// hbm.bandwidth_tb_s).
[[nodiscard]] HardwareReference load_hardware_reference(const std::string& name_or_path,
                                                        const std::filesystem::path& configs_dir);

}  // namespace chopsim
