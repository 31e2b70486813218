// Helpers of the power tests (power_model_test.cpp, power_dynamics_test.cpp): test parameters, the models by
// registry name, scripted kernels and a telemetry collector.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/power.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/thermal.hpp"

namespace chopsim::power_test {

constexpr double kInf = std::numeric_limits<double>::infinity();

inline PowerParams test_power() {
  PowerParams p;
  p.idle_w = 60.0;
  p.dynamic_w = 600.0;
  p.hbm_w = 60.0;
  p.leakage_w_per_k = 0.0;  // power independent of temperature: energies have closed forms
  p.max_clock_hz = 1.4e9;
  p.voltage = {0.9e9, 1.4, 2.5};
  return p;
}

inline ComputeParams test_compute() {
  ComputeParams c;
  c.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] = 300e12;
  c.hbm_bandwidth_bytes_per_s = 2e12;
  c.boost_clock_hz = 1.4e9;
  for (auto& e : c.efficiency) e = {0.8, 0.8, 0.0};
  c.launch_overhead_s = 0.0;
  return c;
}

struct Models {
  std::unique_ptr<ComputeModel> compute;
  std::unique_ptr<PowerModel> power;
  std::unique_ptr<ThermalModel> thermal;
  std::unique_ptr<Governor> governor;
};

inline Models make_models(const PowerParams& power, const ThermalParams& thermal, const GovernorParams& governor,
                          const std::string& governor_name = "firmware") {
  ComputeModelRegistry compute_registry("compute model");
  register_builtin_compute_models(compute_registry);
  PowerModelRegistry power_registry("power model");
  register_builtin_power_models(power_registry);
  ThermalModelRegistry thermal_registry("thermal model");
  register_builtin_thermal_models(thermal_registry);
  GovernorRegistry governor_registry("governor");
  register_builtin_governors(governor_registry);
  Models m;
  m.compute = compute_registry.create("roofline", test_compute());
  m.power = power_registry.create("cv2f", power);
  m.thermal = thermal_registry.create("rc", thermal);
  m.governor = governor_registry.create(governor_name, governor);
  return m;
}

/// A GEMM of `seconds` at the max clock at eta 0.8 (compute-bound).
inline KernelWork gemm(double seconds) { return {KernelClass::gemm, Precision::bf16, seconds * 300e12 * 0.8, 1e6}; }
/// A memory-bound kernel of `seconds` (bytes at 0.8 of 2 TB/s).
inline KernelWork copy(double seconds) {
  return {KernelClass::elementwise, Precision::bf16, 1e6, seconds * 2e12 * 0.8};
}

class Collect final : public TelemetrySink {
 public:
  void on_telemetry(const GpuStateSample& s) override { samples.push_back(s); }
  std::vector<GpuStateSample> samples;
};

}  // namespace chopsim::power_test
