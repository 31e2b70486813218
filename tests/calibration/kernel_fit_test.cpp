// Calibration round trip for kernels: records generated from known roofline parameters (with and without seeded
// multiplicative noise) are fitted, and the parameters come back within tolerance. The generator below writes the
// model out independently of the library's roofline_duration_s.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibration_test_support.hpp"
#include "chopsim/calibration/fits.hpp"

namespace chopsim {
namespace {

struct Truth {
  double eta_max = 0.72;
  double f_half = 6e9;
  double eta_m = 0.85;
};

/// GEMM shapes from decode-like (M = 16, memory-bound) to large training GEMMs, bf16.
std::vector<KernelSample> gemm_samples(const Truth& truth, const HardwareReference& hw, double sigma,
                                       std::uint64_t seed) {
  test::Noise noise(sigma, seed);
  std::vector<KernelSample> samples;
  for (double m = 16.0; m <= 16384.0; m *= 2.0)
    for (const double n : {1024.0, 2048.0, 4096.0, 8192.0})
      for (const double k : {1024.0, 4096.0, 8192.0}) {
        KernelSample s;
        s.kernel_class = KernelClass::gemm;
        s.dtype = "bf16";
        s.flops = 2.0 * m * n * k;
        s.bytes = 2.0 * (m * k + k * n + m * n);
        const double eta = truth.eta_max * s.flops / (s.flops + truth.f_half);
        const double compute = s.flops / (hw.peak_for("bf16") * eta);
        const double memory = s.bytes / (hw.hbm_bandwidth_bytes_per_s * truth.eta_m);
        s.duration_s = std::max(compute, memory) * noise();
        samples.push_back(s);
      }
  return samples;
}

KernelFitOptions no_cutoff() {
  KernelFitOptions options;
  options.min_duration_s = 0.0;
  return options;
}

TEST(KernelRoundTrip, GemmWithoutNoiseIsExact) {
  const auto hw = test::round_hardware();
  const Truth truth;
  const auto samples = gemm_samples(truth, hw, 0.0, 1);
  const KernelClassFit fit = fit_kernel_class(KernelClass::gemm, "bf16", samples, hw, no_cutoff());
  ASSERT_TRUE(fit.compute_fitted && fit.half_fitted && fit.memory_fitted);
  EXPECT_NEAR(fit.compute, truth.eta_max, 1e-4 * truth.eta_max);
  EXPECT_NEAR(fit.half_efficiency_flops, truth.f_half, 1e-3 * truth.f_half);
  EXPECT_NEAR(fit.memory, truth.eta_m, 1e-4 * truth.eta_m);
  EXPECT_EQ(fit.stats.points, samples.size());
  EXPECT_GT(fit.stats.r2, 0.999999);
  EXPECT_LT(fit.stats.p90_rel_residual, 1e-4);
  EXPECT_GT(fit.memory_bound, 0u);  // the M = 16 shapes
  EXPECT_GT(fit.compute_bound, fit.memory_bound);
}

TEST(KernelRoundTrip, Fp8GemmsFitTheBf16EquivalentEfficiency) {
  // A GPU whose fp8 GEMMs reach 0.883 of the bf16 share of their (twice as high) peak, as H100's best measured
  // matmuls do: fitted against peak x kernels.fp8_gemm_efficiency_ratio, fp8 traces give back the bf16 curve the
  // hardware files and the roofline use, so a profile fitted on them does not fold the ratio in twice.
  auto hw = test::round_hardware();
  hw.peak_flops_per_s["fp8"] = 2.0 * hw.peak_for("bf16");
  hw.fp8_gemm_efficiency_ratio = 0.883;
  const Truth truth;
  std::vector<KernelSample> samples = gemm_samples(truth, hw, 0.0, 1);
  for (KernelSample& s : samples) {
    s.dtype = "fp8";
    const double eta = truth.eta_max * s.flops / (s.flops + truth.f_half);
    s.duration_s =
        std::max(s.flops / (hw.peak_for("fp8") * 0.883 * eta), s.bytes / (hw.hbm_bandwidth_bytes_per_s * truth.eta_m));
  }
  const KernelClassFit fit = fit_kernel_class(KernelClass::gemm, "fp8", samples, hw, no_cutoff());
  EXPECT_NEAR(fit.compute, truth.eta_max, 1e-3 * truth.eta_max);
  EXPECT_NEAR(fit.half_efficiency_flops, truth.f_half, 1e-2 * truth.f_half);
  // Without the ratio the same traces read as a GEMM efficiency 0.883 x as high.
  hw.fp8_gemm_efficiency_ratio = 1.0;
  EXPECT_NEAR(fit_kernel_class(KernelClass::gemm, "fp8", samples, hw, no_cutoff()).compute, 0.883 * truth.eta_max,
              1e-3 * truth.eta_max);
}

TEST(KernelRoundTrip, GemmWithFivePercentNoise) {
  const auto hw = test::round_hardware();
  const Truth truth;
  for (const std::uint64_t seed : {7u, 8u, 9u}) {
    const auto samples = gemm_samples(truth, hw, 0.05, seed);
    const KernelClassFit fit = fit_kernel_class(KernelClass::gemm, "bf16", samples, hw, no_cutoff());
    EXPECT_NEAR(fit.compute, truth.eta_max, 0.03 * truth.eta_max) << "seed " << seed;
    EXPECT_NEAR(fit.half_efficiency_flops, truth.f_half, 0.25 * truth.f_half) << "seed " << seed;
    EXPECT_NEAR(fit.memory, truth.eta_m, 0.04 * truth.eta_m) << "seed " << seed;
    // The residuals are the noise: median |e^x - 1| of N(0, 0.05) is about 3.4 %.
    EXPECT_NEAR(fit.stats.median_rel_residual, 0.034, 0.015) << "seed " << seed;
  }
}

TEST(KernelRoundTrip, ShortKernelsAreLeftOut) {
  const auto hw = test::round_hardware();
  const auto samples = gemm_samples(Truth{}, hw, 0.0, 1);
  KernelFitOptions options;
  options.min_duration_s = 50e-6;
  const std::size_t short_ones = static_cast<std::size_t>(
      std::count_if(samples.begin(), samples.end(), [](const KernelSample& s) { return s.duration_s < 50e-6; }));
  ASSERT_GT(short_ones, 0u);
  const KernelClassFit fit = fit_kernel_class(KernelClass::gemm, "bf16", samples, hw, options);
  EXPECT_EQ(fit.excluded_short, short_ones);
  EXPECT_EQ(fit.stats.points, samples.size() - short_ones);
}

TEST(KernelRoundTrip, ClockScalesTheEfficiency) {
  // Measured at 1.5 GHz instead of the rated 1.8 GHz: the same times mean a higher efficiency of the lower peak.
  const auto hw = test::round_hardware();
  const auto samples = gemm_samples(Truth{}, hw, 0.0, 1);
  KernelFitOptions options = no_cutoff();
  options.clock_hz = 1.5e9;
  const KernelClassFit fit = fit_kernel_class(KernelClass::gemm, "bf16", samples, hw, options);
  EXPECT_NEAR(fit.compute, 0.72 * 1.8 / 1.5, 1e-3);
}

TEST(KernelRoundTrip, OneProblemSizeKeepsHalfEfficiencyAtTheDefault) {
  const auto hw = test::round_hardware();
  std::vector<KernelSample> samples;
  for (int i = 0; i < 5; ++i) {
    KernelSample s;
    s.kernel_class = KernelClass::attention;
    s.dtype = "bf16";
    s.flops = 20e9;
    s.bytes = 50e6;
    s.duration_s = 20e9 / (1000e12 * 0.4 * 20.0 / 30.0);  // eta_max 0.4 with the default F_half of 10 GFLOP
    samples.push_back(s);
  }
  const KernelClassFit fit = fit_kernel_class(KernelClass::attention, "bf16", samples, hw, no_cutoff());
  EXPECT_TRUE(fit.compute_fitted);
  EXPECT_FALSE(fit.half_fitted);
  EXPECT_FALSE(fit.memory_fitted);
  EXPECT_DOUBLE_EQ(fit.half_efficiency_flops, 10e9);
  EXPECT_NEAR(fit.compute, 0.4, 1e-6);
  EXPECT_TRUE(std::isnan(fit.stats.r2));  // one size: nothing to explain
  ASSERT_FALSE(fit.notes.empty());
  EXPECT_NE(fit.notes.front().find("one problem size"), std::string::npos);
}

TEST(KernelRoundTrip, MemoryBoundClassWithNoise) {
  const auto hw = test::round_hardware();
  test::Noise noise(0.05, 42);
  std::vector<KernelSample> samples;
  for (double bytes = 10e6; bytes < 2e9; bytes *= 1.3) {
    KernelSample s;
    s.kernel_class = KernelClass::elementwise;
    s.bytes = bytes;
    s.duration_s = bytes / (3e12 * 0.65) * noise();
    samples.push_back(s);
  }
  const KernelClassFit fit = fit_kernel_class(KernelClass::elementwise, "", samples, hw, no_cutoff());
  EXPECT_FALSE(fit.compute_fitted);
  ASSERT_TRUE(fit.memory_fitted);
  EXPECT_NEAR(fit.memory, 0.65, 0.02);
  EXPECT_EQ(fit.memory_bound, samples.size());
}

// Two kinds of memory-bound kernel, vectorised casts at 0.9 of the HBM peak and broadcasting products at 0.3: the
// class's efficiency is the one at which the kernels take their measured total time, sum(B) / (BW sum(d)), not the
// geometric mean of the two (0.52) that a fit of log times gives, which would under-predict the class's time.
TEST(KernelRoundTrip, MemoryBoundClassReproducesTheTotalTimeOfMixedKernels) {
  const auto hw = test::round_hardware();
  std::vector<KernelSample> samples;
  double bytes = 0.0, seconds = 0.0;
  for (int i = 0; i < 10; ++i)
    for (const double eta : {0.9, 0.3}) {
      KernelSample s;
      s.kernel_class = KernelClass::elementwise;
      s.bytes = 1e8 * (1 + i);
      s.duration_s = s.bytes / (hw.hbm_bandwidth_bytes_per_s * eta);
      bytes += s.bytes;
      seconds += s.duration_s;
      samples.push_back(s);
    }
  const KernelClassFit fit = fit_kernel_class(KernelClass::elementwise, "", samples, hw, no_cutoff());
  ASSERT_TRUE(fit.memory_fitted);
  EXPECT_NEAR(fit.memory, bytes / (hw.hbm_bandwidth_bytes_per_s * seconds), 1e-12);
  EXPECT_NEAR(fit.memory, 2.0 / (1.0 / 0.9 + 1.0 / 0.3), 1e-12);  // equal bytes: the harmonic mean, 0.45
  EXPECT_NEAR(fit.predicted_s, fit.measured_s, 1e-12 * fit.measured_s);
  EXPECT_NEAR(fit.measured_s, seconds, 1e-12 * seconds);
  // The same kernels at the hardware file's efficiency.
  EXPECT_NEAR(fit.default_predicted_s, bytes / (hw.hbm_bandwidth_bytes_per_s * fit.defaults.memory), 1e-12 * seconds);
}

// The mixed kernels above, marked with TensorIterator paths: the class's fit is their mixture, and each path's fit
// (the profile's kernels.pytorch_elementwise_memory) recovers its own efficiency.
TEST(KernelRoundTrip, ElementwisePathsAreFittedEachOnItsOwn) {
  const auto hw = test::round_hardware();
  MeasurementSet set;
  for (int i = 0; i < 10; ++i)
    for (const auto& [path, eta] :
         {std::pair{ElementwisePath::vectorized, 0.9}, std::pair{ElementwisePath::strided, 0.3}}) {
      KernelSample s;
      s.kernel_class = KernelClass::elementwise;
      s.path = path;
      s.bytes = 1e8 * (1 + i);
      s.duration_s = s.bytes / (hw.hbm_bandwidth_bytes_per_s * eta);
      set.kernels.push_back(s);
    }
  const auto fits = fit_kernel_classes(set, hw, no_cutoff());
  ASSERT_EQ(fits.size(), 3u);  // the class, then vectorized and strided (no unrolled kernel: no fit)
  EXPECT_EQ(fits[0].path, ElementwisePath::fused);
  EXPECT_NEAR(fits[0].memory, 0.45, 1e-12);
  EXPECT_EQ(fits[1].path, ElementwisePath::vectorized);
  EXPECT_NEAR(fits[1].memory, 0.9, 1e-12);
  EXPECT_EQ(fits[2].path, ElementwisePath::strided);
  EXPECT_NEAR(fits[2].memory, 0.3, 1e-12);
  for (const auto& fit : fits) EXPECT_TRUE(fit.in_profile);
}

// Attention kernels at head dim 64 run at the hardware file's ratio of the head-dim-128 efficiency: the fit takes the
// ratio out, so the efficiency it returns is head dim 128's (what runs multiply by the ratio again); kernels of
// unknown head dimension are taken as they are.
TEST(KernelRoundTrip, AttentionAtNarrowHeadsIsReferredToHeadDim128) {
  auto hw = test::round_hardware();
  hw.attention_head_dim_64_ratio = 0.8;
  const double eta_max = 0.6, f_half = 10e9;
  std::vector<KernelSample> samples;
  for (const double flops : {20e9, 40e9, 80e9, 160e9, 320e9}) {
    KernelSample s;
    s.kernel_class = KernelClass::attention;
    s.dtype = "bf16";
    s.flops = flops;
    s.bytes = 1e6;
    s.head_dim = 64;
    s.duration_s = flops / (hw.peak_for("bf16") * 0.8 * eta_max * flops / (flops + f_half));
    samples.push_back(s);
  }
  const KernelClassFit fit = fit_kernel_class(KernelClass::attention, "bf16", samples, hw, no_cutoff());
  ASSERT_TRUE(fit.compute_fitted);
  EXPECT_NEAR(fit.compute, eta_max, 1e-4);
  EXPECT_NE(fit.notes.front().find("head-dimension factor"), std::string::npos);
  for (auto& s : samples) s.head_dim = 0.0;  // not known: the measured efficiency itself
  EXPECT_NEAR(fit_kernel_class(KernelClass::attention, "bf16", samples, hw, no_cutoff()).compute, 0.8 * eta_max, 1e-4);
}

TEST(KernelRoundTrip, ClassesPooledAndMarkedForTheProfile) {
  const auto hw = test::round_hardware();
  MeasurementSet set;
  auto bf16 = gemm_samples(Truth{}, hw, 0.0, 1);
  auto fp16 = gemm_samples(Truth{}, hw, 0.0, 1);
  for (auto& s : fp16) s.dtype = "fp16";
  auto fp32 = gemm_samples(Truth{}, hw, 0.0, 1);
  for (auto& s : fp32) s.dtype = "fp32";
  for (auto* group : {&bf16, &fp16, &fp32}) set.kernels.insert(set.kernels.end(), group->begin(), group->end());
  const auto fits = fit_kernel_classes(set, hw, no_cutoff());
  std::vector<std::string> groups, chosen;
  for (const auto& f : fits) {
    groups.push_back(f.dtype_group);
    if (f.in_profile) chosen.push_back(f.dtype_group);
  }
  EXPECT_EQ(groups, (std::vector<std::string>{"bf16", "fp16", "fp32", "bf16+fp16"}));
  EXPECT_EQ(chosen, (std::vector<std::string>{"bf16+fp16"}));
  EXPECT_NEAR(fits.back().compute, 0.72, 1e-4);
}

TEST(LaunchOverhead, MeanOfGapsWithoutHostStalls) {
  const auto hw = test::round_hardware();
  MeasurementSet set;
  LaunchGaps gaps;
  gaps.gaps_s = {1e-6, 2e-6, 3e-6, 2e-6, 5e-3};  // one 5 ms host stall
  set.gaps.push_back(gaps);
  const LaunchOverheadFit fit = fit_launch_overhead(set, hw, KernelFitOptions{});
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.gaps, 4u);
  EXPECT_EQ(fit.long_gaps, 1u);
  EXPECT_NEAR(fit.mean_s, 2e-6, 1e-15);
  EXPECT_NEAR(fit.median_s, 2e-6, 1e-15);
  EXPECT_FALSE(fit_launch_overhead(MeasurementSet{}, hw, KernelFitOptions{}).fitted);
}

TEST(HostLaunch, MedianOfTheWaitedIntervalsOfEveryThread) {
  MeasurementSet set;
  // Two threads: 15 intervals of 30 µs and 10 of 50 µs (and launches without waited intervals): median 30 µs.
  set.host_launches.push_back({0, "thread 1", 100, std::vector<double>(15, 30e-6)});
  set.host_launches.push_back({1, "thread 2", 40, std::vector<double>(10, 50e-6)});
  set.host_launches.push_back({1, "thread 3", 7, {}});
  const HostLaunchFit fit = fit_host_launch(set);
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.intervals, 25u);
  EXPECT_EQ(fit.launches, 147u);
  EXPECT_NEAR(fit.median_s, 30e-6, 1e-15);
  EXPECT_NEAR(fit.p75_s, 50e-6, 1e-15);
  EXPECT_EQ(fit.inputs, (std::vector<std::size_t>{0, 1}));
  // Fewer than 20 intervals: no fit.
  set.host_launches.resize(1);
  EXPECT_FALSE(fit_host_launch(set).fitted);
}

TEST(Interference, TimeWeightedRatioOfTheSameKernelsAloneAndOverlapped) {
  const auto hw = test::round_hardware();
  MeasurementSet set;
  // Ten GEMMs: 100 µs alone; under NCCL 120 and 180 µs (a grid pushed into a second wave): 150 µs on average.
  for (int g = 0; g < 10; ++g)
    set.overlaps.push_back({0, KernelClass::gemm, "gemm", {90e-6, 100e-6, 110e-6}, {120e-6, 180e-6}});
  // Elementwise kernels that do not mind: 50 µs either way.
  for (int g = 0; g < 4; ++g)
    set.overlaps.push_back({1, KernelClass::elementwise, "add", {50e-6, 50e-6, 50e-6}, {50e-6, 50e-6}});
  // Left out: too few runs alone, too few overlapped, too short alone.
  set.overlaps.push_back({0, KernelClass::gemm, "few alone", {100e-6, 100e-6}, {900e-6, 900e-6}});
  set.overlaps.push_back({0, KernelClass::gemm, "few overlapped", {100e-6, 100e-6, 100e-6}, {900e-6}});
  set.overlaps.push_back({0, KernelClass::gemm, "short", {10e-6, 10e-6, 10e-6}, {90e-6, 90e-6}});
  const InterferenceFit fit = fit_comm_compute_interference(set, hw, KernelFitOptions{});
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.groups, 14u);
  EXPECT_EQ(fit.compute_groups, 10u);
  EXPECT_EQ(fit.short_groups, 1u);
  EXPECT_EQ(fit.overlapped_runs, 28u);
  EXPECT_NEAR(fit.compute_ratio, 1.5, 1e-12);
  EXPECT_NEAR(fit.other_ratio, 1.0, 1e-12);
  EXPECT_NEAR(fit.ratio, (10 * 300e-6 + 4 * 100e-6) / (10 * 200e-6 + 4 * 100e-6), 1e-12);
  // The profile takes the GEMMs' ratio: what LLM training overlaps with its collectives.
  EXPECT_TRUE(fit.from_compute_kernels);
  EXPECT_NEAR(fit.slowdown, 1.0 - 1.0 / 1.5, 1e-12);
  EXPECT_EQ(fit.inputs, (std::vector<std::size_t>{0, 1}));
  // Fewer than ten GEMMs: all kernels' ratio; fewer than ten kernels: no fit.
  set.overlaps.erase(set.overlaps.begin() + 7, set.overlaps.begin() + 10);
  const InterferenceFit mixed = fit_comm_compute_interference(set, hw, KernelFitOptions{});
  ASSERT_TRUE(mixed.fitted);
  EXPECT_FALSE(mixed.from_compute_kernels);
  EXPECT_NEAR(mixed.slowdown, 1.0 - (7 * 200e-6 + 4 * 100e-6) / (7 * 300e-6 + 4 * 100e-6), 1e-12);
  set.overlaps.resize(9);
  EXPECT_FALSE(fit_comm_compute_interference(set, hw, KernelFitOptions{}).fitted);
}

}  // namespace
}  // namespace chopsim
