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

}  // namespace
}  // namespace chopsim
