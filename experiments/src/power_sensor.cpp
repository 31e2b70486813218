#include "power_sensor.hpp"

#include <algorithm>
#include <cmath>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

double largest_sensor_reading_w(const std::vector<std::pair<double, double>>& trace, double start_s, double end_s,
                                double window_s, const PowerSensor& sensor, int phases) {
  const double period = end_s - start_s;
  if (!(period > 0.0) || trace.empty() || phases < 1 || !(sensor.update_s > 0.0) || !(sensor.averaging_s > 0.0))
    throw ModelError("power sensor: needs a trace over a positive period, phases and sensor times");
  // One period as segments from start_s, and the energy at each segment's start (prefix sums).
  std::vector<double> begin, power, energy;
  double p = trace.front().second;
  for (const auto& [t, w] : trace) {
    if (t > start_s) break;
    p = w;  // the power in force at start_s
  }
  begin.push_back(0.0);
  power.push_back(p);
  for (const auto& [t, w] : trace)
    if (t > start_s && t < end_s) {
      begin.push_back(t - start_s);
      power.push_back(w);
    }
  energy.assign(begin.size() + 1, 0.0);
  for (std::size_t i = 0; i < begin.size(); ++i)
    energy[i + 1] = energy[i] + power[i] * ((i + 1 < begin.size() ? begin[i + 1] : period) - begin[i]);
  const double per_period = energy.back();
  // E(t) for any t >= 0 of the periodic extension.
  const auto energy_at = [&](double t) {
    const double cycles = std::floor(t / period);
    const double x = t - cycles * period;
    const std::size_t i = static_cast<std::size_t>(std::upper_bound(begin.begin(), begin.end(), x) - begin.begin()) - 1;
    return cycles * per_period + energy[i] + power[i] * (x - begin[i]);
  };
  const int updates = static_cast<int>(std::floor(window_s / sensor.update_s));
  if (updates < 1) return per_period / period;
  std::vector<double> largest(static_cast<std::size_t>(phases));
  for (int k = 0; k < phases; ++k) {
    const double phase = sensor.update_s * k / phases;
    double best = 0.0;
    for (int u = 0; u < updates; ++u) {
      const double t = sensor.averaging_s + phase + u * sensor.update_s;  // each reading's window ends at t
      best = std::max(best, (energy_at(t) - energy_at(t - sensor.averaging_s)) / sensor.averaging_s);
    }
    largest[static_cast<std::size_t>(k)] = best;
  }
  std::nth_element(largest.begin(), largest.begin() + phases / 2, largest.end());
  return largest[static_cast<std::size_t>(phases / 2)];
}

}  // namespace chopsim::detail
