#pragma once
// Number and text formats shared by the calibration profile (profile.cpp) and the fit report (fit_report.cpp),
// private to chopsim_calibration. Fixed formats: the same inputs give the same bytes.

#include <string>
#include <vector>

#include "chopsim/calibration/fits.hpp"

namespace chopsim::calibration_detail {

/// 4 significant digits without an exponent (numbers from 1e-4 to 1e6 occur); "-0" folded to "0".
[[nodiscard]] std::string num(double value, int digits = 4);
/// Residuals as percentages with 3 significant digits, below 0.001 % shown as 0 (fits through one point).
[[nodiscard]] std::string percent(double fraction);
/// R² with three decimals; "-" when undefined (one point, or all measured values equal).
[[nodiscard]] std::string r2(double value);
/// A byte count with a decimal unit: "2.05 kB", "67.1 MB", "1.71 GB".
[[nodiscard]] std::string bytes_text(double bytes);
/// "N points, R² ..., median rel. residual ..., p90 ..." of a fit.
[[nodiscard]] std::string stats_comment(const FitStats& s);
/// "[1,3]": the inputs' numbers in the profile's header.
[[nodiscard]] std::string input_refs(const std::vector<std::size_t>& inputs);
/// "key: value" padded so that comments line up.
[[nodiscard]] std::string line(int indent, const std::string& key, const std::string& value,
                               const std::string& comment = "");

}  // namespace chopsim::calibration_detail
