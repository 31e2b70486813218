// The board power sensor's view of a trace (experiments/src/power_sensor.hpp): 25 ms averages, one per 100 ms, at
// an unknown phase. Checked against a constant load, a square wave worked out by hand, and the limit of a long
// measurement, where some reading catches the trace's largest 25 ms average.

#include "power_sensor.hpp"

#include <gtest/gtest.h>

namespace chopsim::detail {
namespace {

TEST(PowerSensor, AConstantLoadReadsAsItself) {
  EXPECT_NEAR(largest_sensor_reading_w({{0.0, 640.0}}, 0.0, 0.37, 3.0), 640.0, 1e-9);
  // A window shorter than one update: the mean.
  EXPECT_NEAR(largest_sensor_reading_w({{0.0, 900.0}, {0.1, 500.0}}, 0.0, 0.2, 0.05), 700.0, 1e-9);
}

TEST(PowerSensor, ASquareWaveByHand) {
  // Period 0.2 s: 900 W for 30 ms, then 500 W. Readings average [s, s + 25 ms] with s = phase + 0.1 k; modulo the
  // period s is the phase or the phase + 0.1, so the largest reading's high-power overlap is 25 ms for phases up to
  // 5 ms, 30 ms - phase up to 30 ms, none up to 75 ms, phase - 75 ms beyond: zero for 45 % of the phases and
  // uniform on (0, 25 ms) for 50 %. The median overlap is therefore 2.5 ms: 500 + 400 x 2.5 / 25 = 540 W.
  const std::vector<std::pair<double, double>> trace{{0.0, 900.0}, {0.03, 500.0}};
  EXPECT_NEAR(largest_sensor_reading_w(trace, 0.0, 0.2, 1.0), 540.0, 2.0);
  // The same period shifted in time (the trace of a later iteration) reads the same.
  const std::vector<std::pair<double, double>> later{{5.0, 900.0}, {5.03, 500.0}, {5.2, 900.0}};
  EXPECT_NEAR(largest_sensor_reading_w(later, 5.0, 5.2, 1.0), 540.0, 2.0);
}

TEST(PowerSensor, ALongMeasurementCatchesTheLargest25msAverage) {
  // A 5 ms spike of 1,500 W every 123.4 ms (incommensurate with the 100 ms updates) over 500 W: the largest 25 ms
  // average is 500 + 1000 x 5 / 25 = 700 W. A few readings rarely catch it; a thousand nearly always do.
  const std::vector<std::pair<double, double>> trace{{0.0, 500.0}, {0.06, 1500.0}, {0.065, 500.0}};
  const double short_window = largest_sensor_reading_w(trace, 0.0, 0.1234, 0.3);
  const double long_window = largest_sensor_reading_w(trace, 0.0, 0.1234, 100.0);
  EXPECT_NEAR(long_window, 700.0, 1.0);
  EXPECT_LT(short_window, 650.0);
  EXPECT_GE(short_window, 500.0);
}

}  // namespace
}  // namespace chopsim::detail
