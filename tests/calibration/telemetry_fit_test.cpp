// Telemetry round trip: readings generated from a known power-vs-activity line and a first-order RC die, sampled
// the way rocm-smi logs them (separate power, temperature and use logs on one clock), fitted and recovered.

#include <gtest/gtest.h>

#include <cmath>

#include "chopsim/calibration/fits.hpp"

namespace chopsim {
namespace {

/// 1 GPU, 1 s readings for 20 min, power blocks of 90 s alternating between idle and load levels; temperature from
/// the exact solution of C dT/dt = P - (T - Ta) / R with power constant over each second.
MeasurementSet rc_readings(double ambient, double resistance, double tau, bool split_logs) {
  MeasurementSet set;
  double temperature = ambient + resistance * 150.0;
  const double levels[] = {150.0, 600.0, 300.0, 700.0};
  for (int second = 0; second < 1200; ++second) {
    const double power = levels[(second / 90) % 4];
    const double activity = (power - 150.0) / 550.0;
    const double t = 1.7e9 + second;  // Unix seconds
    if (split_logs) {  // power, temperature and use in separate readings, as three rocm-smi CSVs give them
      set.telemetry.push_back({0, "card0", t, power, NAN, NAN, NAN, NAN});
      set.telemetry.push_back({1, "card0", t + 0.2, NAN, NAN, NAN, NAN, temperature});
      set.telemetry.push_back({2, "card0", t - 0.1, NAN, activity, NAN, NAN, NAN});
    } else {
      set.telemetry.push_back({0, "card0", t, power, activity, NAN, NAN, temperature});
    }
    const double steady = ambient + resistance * power;
    temperature = steady + (temperature - steady) * std::exp(-1.0 / tau);
  }
  return set;
}

TEST(TelemetryRoundTrip, PowerLineAndRcConstants) {
  for (const bool split : {false, true}) {
    const TelemetryFit fit = fit_telemetry(rc_readings(30.0, 0.06, 12.0, split));
    EXPECT_EQ(fit.gpus, 1u);
    EXPECT_EQ(fit.sensor, "junction");
    ASSERT_TRUE(fit.power_fitted) << split;
    EXPECT_NEAR(fit.power_at_zero_activity_w, 150.0, 1e-6);
    EXPECT_NEAR(fit.power_per_activity_w, 550.0, 1e-6);
    EXPECT_DOUBLE_EQ(fit.idle_power_w, 150.0);
    EXPECT_DOUBLE_EQ(fit.load_power_w, 700.0);
    ASSERT_TRUE(fit.thermal_fitted) << split;
    // The generator holds each reading's power for the next second; the fit takes the mean of the two readings
    // around an interval (a log does not say which way its readings average), off by half a second at the 13
    // block edges: a few % on tau.
    EXPECT_NEAR(fit.resistance_k_per_w, 0.06, 0.002) << split;
    EXPECT_NEAR(fit.time_constant_s, 12.0, 1.0) << split;
    EXPECT_NEAR(fit.ambient_c, 30.0, 0.5) << split;
    EXPECT_NEAR(fit.capacitance_j_per_k, 200.0, 15.0) << split;
    EXPECT_GT(fit.thermal_stats.r2, 0.99) << split;
  }
}

TEST(TelemetryRoundTrip, NoPowerSwingNoThermalFit) {
  MeasurementSet set;
  for (int i = 0; i < 100; ++i) set.telemetry.push_back({0, "card0", 1.0 * i, 150.0, 0.0, NAN, NAN, 40.0});
  const TelemetryFit fit = fit_telemetry(set);
  EXPECT_FALSE(fit.thermal_fitted);
  EXPECT_FALSE(fit.power_fitted);  // no reading under load
  EXPECT_DOUBLE_EQ(fit.idle_power_w, 150.0);
  EXPECT_FALSE(fit.notes.empty());
}

// ---- the dynamic power from a trace and its telemetry ------------------------------------------------------------

/// A hardware reference with a cv2f power model (models/power.hpp) and the peaks the load is measured against.
HardwareReference power_hardware() {
  HardwareReference hw;
  hw.name = "test-gpu";
  hw.peak_flops_per_s["bf16"] = 1000e12;
  hw.peak_flops_per_s["fp32"] = 60e12;
  hw.hbm_bandwidth_bytes_per_s = 4e12;
  hw.boost_clock_hz = 2.0e9;
  hw.rated_clock_hz = 2.0e9;
  hw.idle_power_w = 80.0;
  hw.power_model.present = true;
  hw.power_model.dynamic_w = 1000.0;
  hw.power_model.hbm_w = 100.0;
  hw.power_model.leakage_w_per_k = 0.5;
  hw.power_model.reference_c = 40.0;
  hw.power_model.voltage = {1.3e9, 1.4, 2.5};
  return hw;
}

TEST(DynamicPowerFit, RecoversTheDynamicPowerThatMadeTheReadings) {
  const HardwareReference hw = power_hardware();
  const double true_dynamic_w = 1450.0;
  const double clock = 1.6e9;
  MeasurementSet set;
  set.kernel_spans.push_back({0, 100.0, 101.0});  // one second of kernels
  // 0.4 s of GEMM at 75 % of the peak at 1.6 GHz, 0.5 s of copies at 80 % of the HBM bandwidth, 0.1 s idle.
  const double peak_at_clock = 1000e12 * clock / 2.0e9;
  set.kernels.push_back({KernelClass::gemm, "bf16", 0.75 * peak_at_clock * 0.4, 0.0, 0.4, 0, "gemm"});
  set.kernels.push_back({KernelClass::elementwise, "", 0.0, 0.8 * 4e12 * 0.5, 0.5, 0, "copy"});
  // The power model's mean power over the span at that clock and 60 °C (leakage 10 W).
  const double busy = 0.9, tensor = 0.75 * 0.4, hbm = 0.8 * 0.5;
  const double activity = 0.3 * busy + 0.7 * tensor;
  const double power = 80.0 + 0.5 * 20.0 +
                       true_dynamic_w * dynamic_power_scale(hw.power_model.voltage, clock, 2.0e9) * activity +
                       100.0 * hbm;
  for (int i = 0; i < 10; ++i) set.telemetry.push_back({1, "0", 100.05 + 0.1 * i, power, 1.0, clock, NAN, 60.0});
  set.telemetry.push_back({1, "0", 99.0, 700.0, 1.0, 1.9e9, NAN, 60.0});  // before the span: not used
  TelemetryFit telemetry;                                                 // no idle readings: the file's idle power
  const DynamicPowerFit fit = fit_dynamic_power(set, hw, telemetry, clock);
  ASSERT_TRUE(fit.fitted) << fit.not_fitted_because;
  EXPECT_EQ(fit.readings, 10u);
  EXPECT_NEAR(fit.busy, busy, 1e-12);
  EXPECT_NEAR(fit.tensor, tensor, 1e-12);
  EXPECT_NEAR(fit.hbm, hbm, 1e-12);
  EXPECT_NEAR(fit.static_w, 90.0, 1e-9);
  EXPECT_NEAR(fit.dynamic_w, true_dynamic_w, 1e-9 * true_dynamic_w);
}

TEST(DynamicPowerFit, SaysWhyWhenNothingCanBeFitted) {
  HardwareReference hw = power_hardware();
  MeasurementSet set;
  set.kernel_spans.push_back({0, 100.0, 101.0});
  set.kernels.push_back({KernelClass::gemm, "bf16", 1e14, 0.0, 0.5, 0, "gemm"});
  set.telemetry.push_back({1, "0", 50.0, 600.0, 1.0, 1.6e9, NAN, 60.0});  // not while the kernels ran
  DynamicPowerFit fit = fit_dynamic_power(set, hw, {}, 0.0);
  EXPECT_FALSE(fit.fitted);
  EXPECT_NE(fit.not_fitted_because.find("while a trace's kernels ran"), std::string::npos);
  hw.power_model.present = false;
  fit = fit_dynamic_power(set, hw, {}, 0.0);
  EXPECT_FALSE(fit.fitted);
  EXPECT_NE(fit.not_fitted_because.find("no power_model"), std::string::npos);
}

}  // namespace
}  // namespace chopsim

namespace chopsim {
namespace {

// A power fit's measured side: the mean and the largest of the readings inside a run's window, edges included,
// readings without a power or a clock (a separate temperature log) skipped.
TEST(TelemetryWindow, MeanAndLargestOfTheReadingsInside) {
  MeasurementSet set;
  const double t0 = 1.8e9;
  //                       input gpu      time       power  util gfx clock temp edge/junction
  set.telemetry.push_back({0, "0", t0 - 0.05, 900.0, NAN, 1500e6, NAN, NAN});  // before the window
  set.telemetry.push_back({0, "0", t0, 600.0, NAN, 1800e6, NAN, NAN});
  set.telemetry.push_back({0, "0", t0 + 0.05, 700.0, NAN, 1700e6, NAN, NAN});
  set.telemetry.push_back({1, "0", t0 + 0.06, NAN, NAN, NAN, 55.0, NAN});  // temperature only
  set.telemetry.push_back({0, "0", t0 + 0.10, 800.0, NAN, 1600e6, NAN, NAN});
  set.telemetry.push_back({0, "0", t0 + 0.15, 2000.0, NAN, 1000e6, NAN, NAN});  // after
  const TelemetryWindowMean w = telemetry_window_mean(set, t0, t0 + 0.10);
  EXPECT_EQ(w.readings, 3u);
  EXPECT_DOUBLE_EQ(w.power_w, 700.0);
  EXPECT_DOUBLE_EQ(w.clock_hz, 1700e6);
  EXPECT_DOUBLE_EQ(w.largest_power_w, 800.0);
  EXPECT_EQ(telemetry_window_mean(set, t0 + 1.0, t0 + 2.0).readings, 0u);
}

}  // namespace
}  // namespace chopsim
