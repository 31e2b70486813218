#pragma once
// Private to validation*.cpp: helpers the case builders (validation_cases.cpp), the runner and page (validation.cpp)
// and the CSV (validation_csv.cpp) share.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chopsim/common/units.hpp"
#include "chopsim/experiments/validation.hpp"

namespace chopsim::validation_detail {

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

/// The unit a metric is shown in (the tables' and validation.csv's `unit` column).
inline std::string metric_unit(ValidationMetric metric) {
  switch (metric) {
    case ValidationMetric::iteration_time_s:
      return "s";
    case ValidationMetric::tokens_per_s_per_gpu:
      return "tokens/s/GPU";
    case ValidationMetric::peak_memory_bytes:
      return "GiB";
    case ValidationMetric::stage_time_s:
      return "stage s";
    case ValidationMetric::stage_energy_j:
      return "stage J";
    case ValidationMetric::relative_time:
      return "time ratio";
    case ValidationMetric::average_power_w:
      return "W/GPU";
    case ValidationMetric::model_tflops_per_gpu:
      return "TFLOP/s/GPU";
    case ValidationMetric::mean_clock_hz:
      return "MHz";
    case ValidationMetric::peak_power_w:
      return "peak W/GPU";
    case ValidationMetric::finding:
      return "finding";
  }
  return "";
}

/// `value` (SI) in metric_unit's unit.
inline double display_value(ValidationMetric metric, double value) {
  if (metric == ValidationMetric::peak_memory_bytes) return value / units::kGiB;
  if (metric == ValidationMetric::mean_clock_hz) return value / units::kMega;
  if (metric == ValidationMetric::model_tflops_per_gpu) return value / units::kTera;
  return value;
}

}  // namespace chopsim::validation_detail
