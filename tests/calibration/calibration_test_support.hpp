#pragma once
// Helpers of the calibration tests: a hardware reference with round numbers, and seeded noise.

#include <cmath>
#include <random>

#include "chopsim/calibration/hardware_reference.hpp"

namespace chopsim::test {

/// A GPU with round numbers: 1000 TFLOP/s bf16/fp16 and 3 TB/s at a 1.8 GHz rated clock, 18 links of 25 GB/s.
inline HardwareReference round_hardware() {
  HardwareReference hw;
  hw.name = "test-gpu";
  hw.vendor = "nvidia";
  hw.peak_flops_per_s = {{"fp32", 60e12}, {"tf32", 500e12}, {"bf16", 1000e12}, {"fp16", 1000e12}, {"fp8", 2000e12}};
  hw.hbm_bandwidth_bytes_per_s = 3e12;
  hw.boost_clock_hz = 1.8e9;
  hw.rated_clock_hz = 1.8e9;
  hw.intra_node_link_bandwidth_bytes_per_s = 25e9;
  hw.intra_node_links_per_gpu = 18;
  hw.intra_node_link_latency_s = 0.6e-6;
  hw.nic_bandwidth_bytes_per_s = 50e9;
  hw.launch_overhead_s = 2e-6;
  for (auto& e : hw.efficiency) e = {0.5, 0.5, 0.0};
  hw.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.5, 0.5, 10e9};
  hw.efficiency[static_cast<std::size_t>(KernelClass::attention)] = {0.5, 0.5, 10e9};
  return hw;
}

/// Multiplicative noise exp(N(0, sigma)) from a seeded generator: the same sequence on every run.
class Noise {
 public:
  Noise(double sigma, std::uint64_t seed) : sigma_(sigma), engine_(seed) {}
  double operator()() { return sigma_ > 0.0 ? std::exp(normal_(engine_) * sigma_) : 1.0; }

 private:
  double sigma_;
  std::mt19937_64 engine_;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

}  // namespace chopsim::test
