#pragma once
// Private to validation*.cpp: helpers the case builders (validation_cases.cpp) and the runner and page
// (validation.cpp) share.

#include <algorithm>
#include <cmath>
#include <vector>

namespace chopsim::validation_detail {

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace chopsim::validation_detail
