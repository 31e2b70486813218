// Published measurements of the shipped GPUs, predicted from their hardware files (configs/hardware): not numbers
// copied from chopsim's output.

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

struct MaxAchievableFlops {
  const char* hardware;
  double clock_mhz;  ///< AMD's median clock while the GEMM ran
  double tflops;     ///< achieved BF16 TFLOP/s
};

void PrintTo(const MaxAchievableFlops& fact, std::ostream* out) {
  *out << fact.hardware << " " << fact.clock_mhz << " MHz " << fact.tflops << " TFLOPS";
}

// AMD, "Measuring Max-Achievable FLOPs - Part 2" (ROCm blogs, 2025-02-28), Table 1: hipBLASLt BF16 GEMM
// 4096 x 4864 x 32896 with normally distributed inputs, after warm-up (thermally stable), cold caches.
constexpr MaxAchievableFlops kAmdMaf[] = {{"MI300X", 1207.0, 708.0}, {"MI325X", 1447.0, 843.0}};

class AmdMaxAchievableFlops : public ::testing::TestWithParam<MaxAchievableFlops> {};

TEST_P(AmdMaxAchievableFlops, TheDenseGemmHoldsTheMeasuredClockUnderThePowerLimit) {
  // The firmware governor, given the GEMM as a steady load, settles where the power model draws the TDP:
  // that clock is AMD's within 3 %, and the roofline's FLOP/s at it AMD's within 5 %. The same clock is what replay
  // scales kernels at (sustained_clock_hz), within two clock steps of the governor's.
  const MaxAchievableFlops fact = GetParam();
  const auto registries = ModelRegistries::with_builtins();
  const HardwareSpec hw =
      load_hardware_config(test::configs_dir() / "hardware" / (std::string(fact.hardware) + ".yaml"));
  const auto compute = registries.compute.create("roofline", compute_params_for(hw, ""));
  const auto power = registries.power.create("cv2f", power_params_for(hw));
  const auto thermal = registries.thermal.create("rc", hw.thermal);
  const auto governor = registries.governor.create("firmware", hw.governor);
  const double m = 4096.0, n = 4864.0, k = 32896.0;
  const KernelWork gemm{KernelClass::gemm, Precision::bf16, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)};

  PowerDomainSettings settings;
  settings.cap_w = hw.tdp_w;
  settings.ceiling_hz = hw.compute.boost_clock_hz;
  settings.floor_hz = hw.min_clock_hz;
  settings.dies.push_back({0, hw.cooling.ambient_c, hw.cooling.ambient_c});
  PowerDomain domain(*compute, *power, *thermal, *governor, settings, nullptr, nullptr);
  domain.start(0.0);
  // Back-to-back GEMMs for a minute (~9 thermal time constants: the leakage has settled too), as hipBLASLt-bench
  // runs them; each start is a load change at which the domain takes its temperature into account.
  PowerDomain::KernelHandle running = domain.kernel_begin(0.0, 0, gemm);
  for (int i = 1; i <= 30000; ++i) {
    const double t = 2e-3 * i;
    domain.kernel_end(t, 0, running);
    running = domain.kernel_begin(t, 0, gemm);
  }
  const double clock_hz = domain.clock_hz(0);
  EXPECT_NEAR(clock_hz / 1e6, fact.clock_mhz, 0.03 * fact.clock_mhz) << fact.hardware;
  // The firmware holds its averaged power at the limit; a clock step above it for part of a control period is how
  // it gets there (the step below would leave power unused).
  EXPECT_LE(domain.filtered_power(), hw.tdp_w * (1.0 + 1e-9));
  EXPECT_LE(domain.power_w(0), hw.tdp_w * 1.01);
  const double flops_per_s = gemm.flops / (compute->timing(gemm, clock_hz).duration_s - hw.compute.launch_overhead_s);
  EXPECT_NEAR(flops_per_s / 1e12, fact.tflops, 0.05 * fact.tflops) << fact.hardware;

  SustainedClockLimits limits = sustained_clock_limits(hw, *thermal);
  limits.temperature_c = domain.temperature_c(0);
  EXPECT_NEAR(sustained_clock_hz(*compute, *power, gemm, limits), clock_hz, 2.0 * limits.step_hz) << fact.hardware;
}

INSTANTIATE_TEST_SUITE_P(Published, AmdMaxAchievableFlops, ::testing::ValuesIn(kAmdMaf),
                         [](const ::testing::TestParamInfo<MaxAchievableFlops>& info) {
                           return std::string(info.param.hardware);
                         });

}  // namespace
}  // namespace chopsim
