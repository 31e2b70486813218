// Published measurements of the shipped GPUs, predicted from their hardware files (configs/hardware): not numbers
// copied from chopsim's output.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

/// One GPU of a hardware file with its models, under the firmware governor at its TDP from an ambient-temperature
/// start: what a GEMM benchmark runs on.
struct GovernedGpu {
  explicit GovernedGpu(const std::string& hardware)
      : hw(load_hardware_config(test::configs_dir() / "hardware" / (hardware + ".yaml"))),
        registries(ModelRegistries::with_builtins()),
        compute(registries.compute.create("roofline", compute_params_for(hw, ""))),
        power(registries.power.create("cv2f", power_params_for(hw))),
        thermal(registries.thermal.create("rc", hw.thermal)),
        governor(registries.governor.create("firmware", hw.governor)),
        domain(*compute, *power, *thermal, *governor, settings_for(hw), nullptr, nullptr) {
    domain.start(0.0);
  }
  static PowerDomainSettings settings_for(const HardwareSpec& hw) {
    PowerDomainSettings settings;
    settings.cap_w = hw.tdp_w;
    settings.ceiling_hz = hw.compute.boost_clock_hz;
    settings.floor_hz = hw.min_clock_hz;
    settings.dies.push_back({0, hw.cooling.ambient_c, hw.cooling.ambient_c});
    return settings;
  }
  HardwareSpec hw;
  ModelRegistries registries;
  std::unique_ptr<ComputeModel> compute;
  std::unique_ptr<PowerModel> power;
  std::unique_ptr<ThermalModel> thermal;
  std::unique_ptr<Governor> governor;
  PowerDomain domain;
};

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
  GovernedGpu gpu(fact.hardware);
  const HardwareSpec& hw = gpu.hw;
  PowerDomain& domain = gpu.domain;
  const double m = 4096.0, n = 4864.0, k = 32896.0;
  const KernelWork gemm{KernelClass::gemm, Precision::bf16, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n)};
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
  const double flops_per_s =
      gemm.flops / (gpu.compute->timing(gemm, clock_hz).duration_s - hw.compute.launch_overhead_s);
  EXPECT_NEAR(flops_per_s / 1e12, fact.tflops, 0.05 * fact.tflops) << fact.hardware;

  SustainedClockLimits limits = sustained_clock_limits(hw, *gpu.thermal);
  limits.temperature_c = domain.temperature_c(0);
  EXPECT_NEAR(sustained_clock_hz(*gpu.compute, *gpu.power, gemm, limits), clock_hz, 2.0 * limits.step_hz)
      << fact.hardware;
}

INSTANTIATE_TEST_SUITE_P(Published, AmdMaxAchievableFlops, ::testing::ValuesIn(kAmdMaf),
                         [](const ::testing::TestParamInfo<MaxAchievableFlops>& info) {
                           return std::string(info.param.hardware);
                         });

/// A kernel run back to back for a minute under the firmware governor at the TDP (thermally settled), as a GEMM
/// benchmark runs it: its FLOP rate over the second half minute and the clock at the end. Each kernel takes the time
/// of the clock it starts at (the clock moves once per control period, every ~100 kernels).
struct SustainedRate {
  double flops_per_s = 0.0;
  double clock_hz = 0.0;
};

SustainedRate back_to_back(const std::string& hardware, const KernelWork& work) {
  GovernedGpu gpu(hardware);
  PowerDomain& domain = gpu.domain;
  PowerDomain::KernelHandle running = domain.kernel_begin(0.0, 0, work);
  double t = 0.0, measured_s = 0.0, measured_flops = 0.0;
  while (t < 60.0) {
    const double end = t + gpu.compute->timing(work, domain.clock_hz(0)).duration_s;
    domain.kernel_end(end, 0, running);
    if (t >= 30.0) {
      measured_s += end - t;
      measured_flops += work.flops;
    }
    t = end;
    running = domain.kernel_begin(t, 0, work);
  }
  return {measured_flops / measured_s, domain.clock_hz(0)};
}

struct MaxAchievableMatmul {
  const char* hardware;
  Precision precision;
  double m, n, k;  ///< the best shape the search found (M x N x K)
  double tflops;   ///< the mean over 100 iterations of that shape
};

void PrintTo(const MaxAchievableMatmul& fact, std::ostream* out) {
  *out << fact.hardware << " " << to_string(fact.precision) << " " << fact.tflops << " TFLOPS";
}

// stas00/ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table" (MAMF):
// the fastest torch.matmul a brute-force search of shapes found, mean of 100 iterations after 50 warm-up ones, at
// default power settings (no clock lock); torch 2.7 (cu126/cu128), GB200 2.10 nightly (cu130).
constexpr MaxAchievableMatmul kMamf[] = {
    {"H100-SXM5-80GB", Precision::bf16, 2048, 2048, 13312, 794.5},
    {"H100-SXM5-80GB", Precision::fp8, 1024, 9216, 14336, 1402.6},
    {"H200-SXM-141GB", Precision::fp8, 1280, 4096, 12032, 1453.4},
    {"A100-SXM4-80GB", Precision::bf16, 1024, 10240, 5120, 271.2},
    {"B200", Precision::bf16, 1792, 16128, 3072, 1745.0},
    {"B200", Precision::fp8, 15360, 4096, 3072, 3432.5},
    {"GB200", Precision::bf16, 4096, 9728, 2048, 1822.0},
    {"GB200", Precision::fp8, 19456, 5120, 1536, 3615.6},
};

/// The table's best shape, run back to back on its GPU (bf16 outputs).
SustainedRate best_shape_back_to_back(const MaxAchievableMatmul& fact) {
  const double input_bytes = fact.precision == Precision::fp8 ? 1.0 : 2.0;
  const KernelWork gemm{KernelClass::gemm, fact.precision, 2.0 * fact.m * fact.n * fact.k,
                        input_bytes * (fact.m * fact.k + fact.k * fact.n) + 2.0 * fact.m * fact.n};
  return back_to_back(fact.hardware, gemm);
}

/// The kMamf row of a GPU and precision.
const MaxAchievableMatmul& mamf_row(const std::string& hardware, Precision precision) {
  for (const MaxAchievableMatmul& fact : kMamf)
    if (fact.hardware == hardware && fact.precision == precision) return fact;
  throw std::out_of_range("no MAMF row for " + hardware);
}

class MaxAchievableMatmulFlops : public ::testing::TestWithParam<MaxAchievableMatmul> {};

TEST_P(MaxAchievableMatmulFlops, TheBestMeasuredShapeIsNeverBeatenNorMissedByMoreThanAQuarter) {
  // The shape of the table run back to back for a minute under the firmware governor at the TDP (thermally settled).
  // One-sided on purpose: MAMF is the best of a search (a maximum over shapes, possibly still boosting before the
  // power limiter settles, as mamf-finder's own notes warn), while chopsim's GEMM efficiency is one curve over typical
  // training shapes at the sustained clock. So the prediction must stay below the measurement (a file that beats the
  // best measured matmul is too optimistic: the B200/GB200 files are estimates) and within a quarter of it.
  // Predicted today (docs/calibration.md, "GEMMs against published measurements"): H100 bf16 -22 %, fp8 -17 %;
  // H200 fp8 -20 %; A100 -15 %; B200 -22 % / -19 %; GB200 -15 % / -13 %. (fp8 with kernels.fp8_gemm_efficiency_ratio;
  // it was -10 % / -15 % / -9 % / -5 % without: fp8 came closer to its best measured shape than bf16 did. B200's
  // dynamic power is chosen so that its bf16 row is as far below as H100's: B200.yaml.)
  const MaxAchievableMatmul fact = GetParam();
  const SustainedRate rate = best_shape_back_to_back(fact);
  const double tflops = rate.flops_per_s / 1e12;
  EXPECT_LE(tflops, fact.tflops) << "predicted " << tflops << " TFLOP/s at " << rate.clock_hz / 1e6 << " MHz";
  EXPECT_GE(tflops, 0.75 * fact.tflops) << "predicted " << tflops << " TFLOP/s at " << rate.clock_hz / 1e6 << " MHz";
}

INSTANTIATE_TEST_SUITE_P(Published, MaxAchievableMatmulFlops, ::testing::ValuesIn(kMamf),
                         [](const ::testing::TestParamInfo<MaxAchievableMatmul>& info) {
                           std::string name =
                               std::string(info.param.hardware) + "_" + std::string(to_string(info.param.precision));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(MaxAchievableMatmulFlops, B200IsAsFarBelowItsBestMatmulAsH100AndTheFp8RatioFollows) {
  // B200.yaml's dynamic power has no measurement of its own: it is chosen so that B200's best bf16 matmul is predicted
  // as far below the table as H100's is (H100's power model is fitted on the H200 probe; the same benchmark measured
  // both). Checked here within a percentage point; the fp8 rows, not used to choose it, must then give the measured
  // B200 / H100 speed-up (3,432.5 / 1,402.6 = 2.45x) within 5 %.
  const auto fraction = [](const MaxAchievableMatmul& fact) {
    return best_shape_back_to_back(fact).flops_per_s / (fact.tflops * 1e12);
  };
  const MaxAchievableMatmul& h100_bf16 = mamf_row("H100-SXM5-80GB", Precision::bf16);
  const MaxAchievableMatmul& b200_bf16 = mamf_row("B200", Precision::bf16);
  EXPECT_NEAR(fraction(b200_bf16), fraction(h100_bf16), 0.01);
  const MaxAchievableMatmul& h100_fp8 = mamf_row("H100-SXM5-80GB", Precision::fp8);
  const MaxAchievableMatmul& b200_fp8 = mamf_row("B200", Precision::fp8);
  const double predicted =
      best_shape_back_to_back(b200_fp8).flops_per_s / best_shape_back_to_back(h100_fp8).flops_per_s;
  EXPECT_NEAR(predicted / (b200_fp8.tflops / h100_fp8.tflops), 1.0, 0.05) << "predicted " << predicted << "x";
}

TEST(MaxAchievableMatmulFlops, Fp8GemmEfficiencyRatioIsTheMeasuredFp8ShareOverTheBf16Share) {
  // The hardware files' kernels.fp8_gemm_efficiency_ratio, recomputed from the MAMF rows above and the files' own
  // peaks: (fp8 MAMF / fp8 peak) / (bf16 MAMF / bf16 peak). The table has no H200 bf16 row ("H200 is the same" as
  // H100's), so H200's fp8 share is taken over H100's bf16 one.
  const auto share = [](const char* hardware, Precision precision) {
    const HardwareSpec hw = load_hardware_config(test::configs_dir() / "hardware" / (std::string(hardware) + ".yaml"));
    return mamf_row(hardware, precision).tflops * 1e12 /
           hw.compute.peak_flops_per_s[static_cast<std::size_t>(precision)];
  };
  for (const char* gpu : {"H100-SXM5-80GB", "H200-SXM-141GB", "B200", "GB200"}) {
    const HardwareSpec hw = load_hardware_config(test::configs_dir() / "hardware" / (std::string(gpu) + ".yaml"));
    const char* bf16_row = std::string(gpu) == "H200-SXM-141GB" ? "H100-SXM5-80GB" : gpu;
    const double measured = share(gpu, Precision::fp8) / share(bf16_row, Precision::bf16);
    EXPECT_NEAR(hw.compute.fp8_gemm_efficiency_ratio, measured, 0.001) << gpu;
  }
  // A100 has no fp8 units; the AMD rows have no fp8 measurement: no ratio.
  for (const char* gpu : {"A100-SXM4-80GB", "MI300X", "MI325X", "MI355X"})
    EXPECT_EQ(load_hardware_config(test::configs_dir() / "hardware" / (std::string(gpu) + ".yaml"))
                  .compute.fp8_gemm_efficiency_ratio,
              1.0)
        << gpu;
}

// flash-attn 2 on Blackwell (what Transformer Engine runs for deterministic training with dropout there): its
// Ampere-style kernels taken at H100's measured rate per SM and clock (132 SMs at 1830 MHz; 148 on B200 and GB200 at
// their rated clocks), with H100's measured deterministic backward. Not a measurement: this pins the derivation.
TEST(BlackwellFlashAttention2, RunsAtHoppersRatePerSmAndClock) {
  const auto load = [](const char* gpu) {
    return load_hardware_config(test::configs_dir() / "hardware" / (std::string(gpu) + ".yaml"));
  };
  const HardwareSpec h100 = load("H100-SXM5-80GB");
  const auto per_sm_and_clock = [](const HardwareSpec& hw, double sms) {
    const AttentionImplementation& flash2 = hw.attention_implementations.at("flash2");
    return flash2.efficiency.compute * hw.compute.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] /
           (sms * hw.compute.rated_clock_hz);
  };
  const double hopper = per_sm_and_clock(h100, 132.0);
  for (const char* gpu : {"B200", "GB200"}) {
    SCOPED_TRACE(gpu);
    const HardwareSpec blackwell = load(gpu);
    EXPECT_NEAR(per_sm_and_clock(blackwell, 148.0) / hopper, 1.0, 0.005);
    EXPECT_DOUBLE_EQ(blackwell.attention_implementations.at("flash2").deterministic.backward_slowdown,
                     h100.attention_implementations.at("flash2").deterministic.backward_slowdown);
    // Half of the peak share cuDNN's kernel gets there: the tensor-core path flash-attn 2 does not use.
    EXPECT_LT(blackwell.attention_implementations.at("flash2").efficiency.compute,
              0.5 * blackwell.compute.efficiency[static_cast<std::size_t>(KernelClass::attention)].compute);
  }
}

TEST(VidurH100Gemms, MegatronSizeGemmsRunWithinTheMeasuredSpreadUnderThePowerLimit) {
  // Vidur's Llama-2-70B op profile on H100 (../shared/data/kernels/vidur_llama2_70b_ops/h100.csv): its 254 MLP
  // projections of 1.0-3.8 TFLOP (2048-4096 tokens, TP 1-2, fp16) ran at 0.60-0.75 of the 989.4 TFLOP/s dense peak,
  // median 0.698. The H100 file's GEMM efficiency and power model together must put such a GEMM, run back to back at
  // 700 W, inside that spread. They give 0.663 at 1560 MHz: below the median, because Vidur times each op in a short
  // burst (the clock need not have settled at the power limit) while the measured H200 training steps
  // (docs/validation.md, h200_eager) are already predicted 5-10 % fast with this efficiency (docs/calibration.md,
  // "GEMMs against published measurements").
  const HardwareSpec hw = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const double tokens = 4096.0, hidden = 8192.0, ffn = 28672.0;  // mlp_down_proj at TP 1: 1.92 TFLOP
  const KernelWork gemm{KernelClass::gemm, Precision::fp16, 2.0 * tokens * ffn * hidden,
                        2.0 * (tokens * ffn + ffn * hidden + tokens * hidden)};
  const SustainedRate rate = back_to_back("H100-SXM5-80GB", gemm);
  const double fraction = rate.flops_per_s / hw.compute.peak_flops_per_s[static_cast<std::size_t>(Precision::fp16)];
  EXPECT_GE(fraction, 0.60) << "at " << rate.clock_hz / 1e6 << " MHz";
  EXPECT_LE(fraction, 0.75) << "at " << rate.clock_hz / 1e6 << " MHz";
}

}  // namespace
}  // namespace chopsim
