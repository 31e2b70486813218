// Reads the handful of hardware-file keys calibration needs (units as docs/configs.md states them). The full
// decoding and validation of hardware files stays in experiments/; a file that `chopsim run` accepts is read here
// the same way, and a missing required key is reported with the file and key named.

#include "chopsim/calibration/hardware_reference.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "chopsim/common/config_files.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/units.hpp"

namespace chopsim {

double HardwareReference::peak_for(const std::string& dtype) const {
  auto get = [&](const std::string& key) {
    const auto it = peak_flops_per_s.find(key);
    return it == peak_flops_per_s.end() ? 0.0 : it->second;
  };
  double peak = get(dtype);
  // As the roofline (models/src/compute_model.cpp): no fp8 unit -> bf16 rate, no tf32 unit -> fp32 rate.
  if (peak <= 0.0 && dtype == "fp8") peak = get("bf16");
  if (peak <= 0.0 && dtype == "tf32") peak = get("fp32");
  return peak;
}

double HardwareReference::efficiency_peak_for(KernelClass kernel_class, const std::string& dtype) const {
  const double peak = peak_for(dtype);
  const auto fp8 = peak_flops_per_s.find("fp8");
  const bool fp8_units = fp8 != peak_flops_per_s.end() && fp8->second > 0.0;
  return kernel_class == KernelClass::gemm && dtype == "fp8" && fp8_units ? peak * fp8_gemm_efficiency_ratio : peak;
}

NodeLinks HardwareReference::default_node_links() const {
  return vendor == "amd" ? NodeLinks::xgmi_mesh : NodeLinks::nvswitch;
}

namespace {

class Reader {
 public:
  Reader(const YAML::Node& root, std::string file) : root_(root), file_(std::move(file)) {}

  /// The number at `path` (dot-separated keys); nullopt if absent.
  std::optional<double> number(std::string_view path) const {
    YAML::Node node = root_;
    std::size_t begin = 0;
    while (begin <= path.size()) {
      const std::size_t end = std::min(path.find('.', begin), path.size());
      const std::string key(path.substr(begin, end - begin));
      if (!node.IsMap()) return std::nullopt;
      const YAML::Node child = node[key];
      if (!child) return std::nullopt;
      node.reset(child);
      begin = end + 1;
    }
    try {
      return node.as<double>();
    } catch (const YAML::Exception&) {
      throw InputError(
          SourceLocation{file_, node.Mark().line + 1, node.Mark().column + 1}, std::string(path),
          "expected a number, found '" + (node.IsScalar() ? node.Scalar() : std::string("a mapping")) + "'",
          "write a number as docs/configs.md describes");
    }
  }

  double required(std::string_view path) const {
    const auto value = number(path);
    if (!value || !(*value > 0.0))
      throw InputError(SourceLocation{file_}, std::string(path),
                       value ? "must be positive for calibration" : "required key is missing",
                       "add it to the hardware file (docs/configs.md lists every key)");
    return *value;
  }

  double optional(std::string_view path, double fallback) const { return number(path).value_or(fallback); }

  std::string text(std::string_view key) const {
    const YAML::Node node = root_[std::string(key)];
    return node && node.IsScalar() ? node.Scalar() : std::string();
  }

 private:
  YAML::Node root_;
  std::string file_;
};

}  // namespace

HardwareReference load_hardware_reference(const std::string& name_or_path, const std::filesystem::path& configs_dir) {
  if (name_or_path.empty())
    throw InputError(SourceLocation{"command line"}, "--hardware", "no hardware named",
                     "name the GPU the data was measured on, e.g. --hardware H100-SXM5-80GB");
  std::filesystem::path file;
  if (looks_like_config_path(name_or_path)) {
    file = name_or_path;
  } else {
    file = configs_dir / "hardware" / (name_or_path + ".yaml");
    if (!std::filesystem::exists(file)) {
      const std::string names = join(config_names_in(configs_dir / "hardware"));
      throw InputError(SourceLocation{"command line"}, "--hardware",
                       "no hardware named '" + name_or_path + "': looked for " + file.string() +
                           (names.empty() ? std::string("") : "; available: " + names),
                       "give a name from that list, a path to a hardware YAML file, or --configs DIR");
    }
  }
  if (!std::filesystem::is_regular_file(file))
    throw InputError(SourceLocation{file.string()}, "", "hardware file not found",
                     "give the path of a hardware YAML file (configs/hardware/*.yaml)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& error) {
    throw InputError(SourceLocation{file.string(), error.mark.line + 1, error.mark.column + 1}, "",
                     "YAML syntax error: " + error.msg, "correct the YAML at this position");
  }
  if (!root.IsMap())
    throw InputError(SourceLocation{file.string()}, "", "a hardware file must be a YAML mapping",
                     "see configs/hardware/H100-SXM5-80GB.yaml");
  const Reader yaml(root, file.string());

  HardwareReference hw;
  hw.name = looks_like_config_path(name_or_path) ? file.stem().string() : name_or_path;
  hw.path = file.string();
  hw.vendor = yaml.text("vendor");
  for (const char* dtype : {"fp32", "tf32", "bf16", "fp16", "fp8"})
    hw.peak_flops_per_s[dtype] = yaml.optional(std::string("peak_tflops.") + dtype, 0.0) * units::kTera;
  (void)yaml.required("peak_tflops.bf16");
  (void)yaml.required("peak_tflops.fp32");
  hw.boost_clock_hz = yaml.required("clocks_mhz.boost") * units::kMega;
  hw.rated_clock_hz = yaml.optional("clocks_mhz.rated", 0.0) * units::kMega;
  if (hw.rated_clock_hz <= 0.0) hw.rated_clock_hz = hw.boost_clock_hz;
  hw.hbm_bandwidth_bytes_per_s = yaml.required("hbm.bandwidth_tb_s") * units::kTera;
  hw.intra_node_link_bandwidth_bytes_per_s = yaml.optional("intra_node_link.bandwidth_gb_s", 0.0) * units::kGiga;
  hw.intra_node_link_efficiency = yaml.optional("intra_node_link.efficiency", 1.0);
  hw.intra_node_links_per_gpu = static_cast<int>(yaml.optional("intra_node_link.links_per_gpu", 0.0));
  hw.intra_node_link_latency_s = yaml.optional("intra_node_link.latency_us", 0.0) * units::kMicrosecond;
  hw.nic_bandwidth_bytes_per_s = yaml.optional("nic.bandwidth_gbit_s", 0.0) * units::kGiga / 8.0;
  hw.nic_efficiency = yaml.optional("nic.efficiency", 1.0);
  hw.nic_latency_s = yaml.optional("nic.latency_us", 0.0) * units::kMicrosecond;
  hw.launch_overhead_s = yaml.optional("kernels.launch_overhead_us", 0.0) * units::kMicrosecond;
  hw.comm_compute_slowdown = yaml.optional("kernels.comm_compute_slowdown", 0.0);
  hw.fp8_gemm_efficiency_ratio = yaml.optional("kernels.fp8_gemm_efficiency_ratio", 1.0);
  hw.attention_head_dim_64_ratio = yaml.optional("kernels.attention_head_dim_64_ratio", 1.0);
  hw.idle_power_w = yaml.optional("power_w.idle", 0.0);
  hw.tdp_w = yaml.optional("power_w.tdp", 0.0);
  hw.thermal_resistance_k_per_w = yaml.optional("thermal.resistance_k_per_w", 0.0);
  hw.thermal_capacitance_j_per_k = yaml.optional("thermal.capacitance_j_per_k", 0.0);
  hw.ambient_c = yaml.optional("cooling.ambient_c", hw.ambient_c);
  hw.min_clock_hz = yaml.optional("clocks_mhz.min", 0.0) * units::kMega;
  PowerModelReference& pm = hw.power_model;
  pm.present = yaml.optional("power_model.dynamic_w", -1.0) >= 0.0;
  pm.dynamic_w = yaml.optional("power_model.dynamic_w", 0.0);
  pm.hbm_w = yaml.optional("power_model.hbm_w", 0.0);
  pm.busy_activity = yaml.optional("power_model.busy_activity", pm.busy_activity);
  pm.tensor_activity = yaml.optional("power_model.tensor_activity", pm.tensor_activity);
  pm.vector_activity = yaml.optional("power_model.vector_activity", pm.vector_activity);
  pm.leakage_w_per_k = yaml.optional("power_model.leakage_w_per_k", 0.0);
  pm.reference_c = yaml.optional("power_model.reference_c", pm.reference_c);
  pm.voltage.knee_hz = yaml.optional("power_model.voltage.knee_mhz", 0.0) * units::kMega;
  pm.voltage.max_ratio = yaml.optional("power_model.voltage.max_ratio", 1.0);
  pm.voltage.exponent = yaml.optional("power_model.voltage.exponent", 1.0);
  for (std::size_t c = 0; c < kKernelClassCount; ++c) {
    const std::string prefix = "kernels.efficiency." + std::string(kernel_class_name(static_cast<KernelClass>(c)));
    EfficiencyDefaults& e = hw.efficiency[c];
    e.compute = yaml.optional(prefix + ".compute", 1.0);
    e.memory = yaml.optional(prefix + ".memory", 1.0);
    e.half_efficiency_flops = yaml.optional(prefix + ".half_efficiency_gflop", 0.0) * units::kGiga;
  }
  for (const ElementwisePath path : kPytorchElementwisePaths)
    hw.elementwise_path_memory[static_cast<std::size_t>(path)] =
        yaml.optional("kernels.pytorch_elementwise_memory." + std::string(elementwise_path_name(path)), 0.0);
  return hw;
}

}  // namespace chopsim
