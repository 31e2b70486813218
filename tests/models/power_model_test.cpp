// Physics of the power, thermal and governor models: C V^2 f scaling with a voltage floor, leakage linear in
// temperature, the RC closed form (steady state inlet + P R, time constant R C), slot inlet profiles, and the
// governor's clock search on its steps.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "chopsim/common/error.hpp"
#include "power_test_support.hpp"

namespace chopsim {
namespace {

using namespace power_test;

// ---- power model ---------------------------------------------------------------------------------------------

TEST(PowerModel, DynamicPowerIsCV2fWithAVoltageFloor) {
  const Models m = make_models(test_power(), {0.1, 100.0, 90.0}, {});
  const PowerModel& p = *m.power;
  EXPECT_DOUBLE_EQ(p.dynamic_scale(1.4e9), 1.0);
  // Below the knee the voltage is at its floor: dynamic power is linear in f, V_min^2 = (1/1.4)^2 of V_max^2.
  EXPECT_NEAR(p.dynamic_scale(0.45e9), 0.45 / 1.4 / (1.4 * 1.4), 1e-15);
  EXPECT_NEAR(p.dynamic_scale(0.9e9) / p.dynamic_scale(0.45e9), 2.0, 1e-12);
  // Above the knee it grows faster than f.
  EXPECT_GT(p.dynamic_scale(1.4e9) / p.dynamic_scale(1.15e9), 1.4 / 1.15);
  // P = idle + P_dyn g(f) activity + P_hbm u.
  DieActivity gemm_activity;
  gemm_activity.busy = 1.0;
  gemm_activity.tensor = 0.8;
  gemm_activity.hbm = 0.1;
  const double expected = 60.0 + 600.0 * 1.0 * (0.3 + 0.7 * 0.8) + 60.0 * 0.1;
  EXPECT_NEAR(p.power_w(gemm_activity, 1.4e9, 40.0), expected, 1e-9);
  EXPECT_DOUBLE_EQ(p.power_w(DieActivity{}, 1.0e9, 40.0), 60.0);
  double previous = 0.0;
  for (double f = 0.2e9; f <= 1.4e9; f += 0.05e9) {
    const double now = p.power_w(gemm_activity, f, 40.0);
    EXPECT_GT(now, previous) << "power must grow with the clock at " << f;
    previous = now;
  }
}

TEST(PowerModel, LeakageGrowsLinearlyWithTemperature) {
  PowerParams params = test_power();
  params.leakage_w_per_k = 0.5;
  params.reference_c = 40.0;
  const Models m = make_models(params, {0.1, 100.0, 90.0}, {});
  EXPECT_NEAR(m.power->power_w(DieActivity{}, 1e9, 80.0) - m.power->power_w(DieActivity{}, 1e9, 40.0), 20.0, 1e-12);
}

TEST(PowerModel, ExpectedMaximumOfStandardNormalsMatchesItsClosedForms) {
  const double pi = std::acos(-1.0);
  EXPECT_EQ(expected_maximum_of_standard_normals(1), 0.0);
  // E[max] of 2 and 3 standard normals: 1 / sqrt(pi) and 3 / (2 sqrt(pi)) (David and Nagaraja, "Order Statistics").
  EXPECT_NEAR(expected_maximum_of_standard_normals(2), 1.0 / std::sqrt(pi), 1e-9);
  EXPECT_NEAR(expected_maximum_of_standard_normals(3), 1.5 / std::sqrt(pi), 1e-9);
  // Tabulated expected normal order statistics (Harter 1961): n = 5, 10, 100, 1000.
  EXPECT_NEAR(expected_maximum_of_standard_normals(5), 1.16296, 1e-5);
  EXPECT_NEAR(expected_maximum_of_standard_normals(10), 1.53875, 1e-5);
  EXPECT_NEAR(expected_maximum_of_standard_normals(100), 2.50759, 1e-5);
  EXPECT_NEAR(expected_maximum_of_standard_normals(1000), 3.24144, 1e-5);
  EXPECT_THROW((void)expected_maximum_of_standard_normals(0), ModelError);
  // The slowest of one chip is that chip; of more, it grows with the draws and the spread.
  EXPECT_EQ(slowest_chip_dynamic_scale(0.045, 1), 1.0);
  EXPECT_NEAR(slowest_chip_dynamic_scale(0.045, 2), 1.0 + 0.045 / std::sqrt(pi), 1e-9);
  EXPECT_EQ(slowest_chip_dynamic_scale(0.0, 4096), 1.0);
  EXPECT_THROW((void)slowest_chip_dynamic_scale(-0.01, 8), ModelError);
}

// ---- thermal model -------------------------------------------------------------------------------------------

TEST(ThermalModel, RcClosedForm) {
  const Models m = make_models(test_power(), {0.08, 100.0, 90.0}, {});
  const ThermalModel& t = *m.thermal;
  const double tau = 0.08 * 100.0;
  EXPECT_DOUBLE_EQ(t.steady_state_c(25.0, 500.0), 25.0 + 500.0 * 0.08);
  // One time constant covers 1 - 1/e of the way to the steady state.
  EXPECT_NEAR(t.advance_c(30.0, 25.0, 500.0, tau), 65.0 + (30.0 - 65.0) / std::exp(1.0), 1e-12);
  EXPECT_NEAR(t.advance_c(30.0, 25.0, 500.0, 50.0 * tau), 65.0, 1e-9);
  // Advancing in pieces equals advancing at once (the closed form composes).
  EXPECT_NEAR(t.advance_c(t.advance_c(30.0, 25.0, 500.0, 1.3), 25.0, 500.0, 2.9), t.advance_c(30.0, 25.0, 500.0, 4.2),
              1e-12);
  // time_to_reach inverts advance.
  const double dt = t.time_to_reach_s(30.0, 25.0, 500.0, 50.0);
  EXPECT_NEAR(t.advance_c(30.0, 25.0, 500.0, dt), 50.0, 1e-12);
  EXPECT_EQ(t.time_to_reach_s(30.0, 25.0, 500.0, 70.0), kInf);  // beyond the steady state
  EXPECT_EQ(t.time_to_reach_s(30.0, 25.0, 500.0, 20.0), kInf);  // the wrong way
  EXPECT_NEAR(t.power_for_steady_w(25.0, 65.0), 500.0, 1e-12);
}

TEST(ThermalModel, SlotInletProfiles) {
  CoolingSpec front_to_back;
  front_to_back.ambient_c = 24.0;
  front_to_back.rear_rise_k = 6.0;
  for (int r = 0; r < 16; ++r)
    EXPECT_DOUBLE_EQ(slot_inlet_c(front_to_back, r, 8, 1), 24.0 + ((r % 8) >= 4 ? 6.0 : 0.0)) << r;
  // Two dies per package share a slot: packages 0-1 front, 2-3 rear of an 8-GCD node.
  for (int r = 0; r < 8; ++r) EXPECT_DOUBLE_EQ(slot_inlet_c(front_to_back, r, 8, 2), 24.0 + (r >= 4 ? 6.0 : 0.0));
  CoolingSpec per_slot;
  per_slot.profile = CoolingSpec::Profile::per_slot;
  per_slot.slot_offsets_k = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_DOUBLE_EQ(slot_inlet_c(per_slot, 13, 8, 1), 25.0 + 5.0);
  per_slot.slot_offsets_k = {1, 2};
  EXPECT_THROW((void)slot_inlet_c(per_slot, 0, 8, 1), ModelError);
}

// ---- the governor's clock search -----------------------------------------------------------------------------

TEST(Governor, HighestClockWithinTargetIsOnAStep) {
  auto power = [](double f) { return 100.0 + 400.0 * f / 1.41e9; };
  const double f = highest_clock_within(0.21e9, 1.41e9, 15e6, 400.0, power);
  EXPECT_LE(power(f), 400.0);
  EXPECT_GT(power(f + 15e6), 400.0);
  EXPECT_NEAR(std::fmod(f, 15e6), 0.0, 1e-3);
  EXPECT_DOUBLE_EQ(highest_clock_within(0.21e9, 1.41e9, 15e6, 1e9, power), 1.41e9);  // fits: the ceiling
  EXPECT_DOUBLE_EQ(highest_clock_within(0.21e9, 1.41e9, 15e6, 1.0, power), 0.21e9);  // nothing fits: the floor
}

}  // namespace
}  // namespace chopsim
