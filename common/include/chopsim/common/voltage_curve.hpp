#pragma once
// The core's voltage over its clock range and the dynamic power it implies, C_eff V(f)^2 f (CMOS switching power;
// Rabaey, "Digital Integrated Circuits", ch. 5). Shared by the power model (models/power.hpp), which simulates with
// it, and calibration, which fits the dynamic power from telemetry with the same curve.

#include <algorithm>
#include <cmath>

namespace chopsim {

/// Core voltage over the clock range, relative to its floor: V(f)/V_min = 1 at and below `knee_hz`, then
/// 1 + (max_ratio - 1) * ((f - knee) / (f_max - knee))^exponent up to `max_ratio` at the max clock.
struct VoltageCurve {
  double knee_hz = 0.0;    ///< clock below which the voltage sits at its floor
  double max_ratio = 1.0;  ///< V(f_max) / V(knee), >= 1
  double exponent = 1.0;   ///< shape of the rise above the knee (1 = linear)
};

/// V(f) / V_min on `curve` for a core whose top clock is `max_clock_hz`.
[[nodiscard]] inline double relative_voltage(const VoltageCurve& curve, double clock_hz, double max_clock_hz) {
  if (clock_hz <= curve.knee_hz || max_clock_hz <= curve.knee_hz) return 1.0;
  const double x = std::min((clock_hz - curve.knee_hz) / (max_clock_hz - curve.knee_hz), 1.0);
  return 1.0 + (curve.max_ratio - 1.0) * std::pow(x, curve.exponent);
}

/// g(f) = (f / f_max) * (V(f) / V(f_max))^2: dynamic power at `clock_hz` relative to the max clock at equal activity.
[[nodiscard]] inline double dynamic_power_scale(const VoltageCurve& curve, double clock_hz, double max_clock_hz) {
  const double f = std::max(clock_hz, 0.0);
  const double v = relative_voltage(curve, f, max_clock_hz) / curve.max_ratio;
  return f / max_clock_hz * v * v;
}

}  // namespace chopsim
