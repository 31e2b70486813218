#pragma once
// What a board power sensor shows of a power trace (private to chopsim_experiments). NVML's "instantaneous" power on
// A100/H100-class boards is not instantaneous: the sensor averages 25 ms of every 100 ms and the reading holds that
// average until the next update (Yang et al., "Part-time Power Measurements: nvidia-smi's Lack of Attention", SC24).
// A tool polling faster than the updates (the H200 probe polls every ~10 ms) therefore sees one value per update,
// and the largest reading of a measurement is the largest of a few dozen 25 ms averages taken at a phase nobody
// controls, not the largest 25 ms average of the trace.

#include <utility>
#include <vector>

namespace chopsim::detail {

struct PowerSensor {
  double update_s = 0.1;       ///< one new reading every update_s
  double averaging_s = 0.025;  ///< each the average power over the averaging_s before it
};

/// The largest reading `sensor` gives over a measurement of `window_s` of a steady, periodic load whose one period
/// is the piecewise-constant `trace` ((time, power from then on) in time order) over [start_s, end_s): the median,
/// over the sensor's phase (`phases` evenly spaced offsets in one update period), of the largest of the
/// floor(window_s / update_s) readings. A window shorter than one update gives the mean power.
[[nodiscard]] double largest_sensor_reading_w(const std::vector<std::pair<double, double>>& trace, double start_s,
                                              double end_s, double window_s, const PowerSensor& sensor = {},
                                              int phases = 1000);

}  // namespace chopsim::detail
