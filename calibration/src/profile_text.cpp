// Number and text formats shared by the calibration profile (profile.cpp) and the fit report (fit_report.cpp).

#include "profile_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace chopsim::calibration_detail {

/// 4 significant digits without an exponent (numbers from 1e-4 to 1e6 occur); "-0" folded to "0".
std::string num(double value, int digits) {
  if (!std::isfinite(value)) return "nan";
  if (value == 0.0) return "0";
  char buffer[64];
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e4) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else {
    const int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    const int decimals = std::max(digits - 1 - exponent, 0);
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    // Trim trailing zeros of the fraction ("0.7000" -> "0.7").
    std::string text = buffer;
    if (text.find('.') != std::string::npos) {
      while (text.back() == '0') text.pop_back();
      if (text.back() == '.') text.pop_back();
    }
    if (text == "-0") return "0";
    return text;
  }
  return buffer;
}

/// Residuals as percentages with 3 significant digits, below 0.001 % shown as 0 (fits through one point).
std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return (std::fabs(fraction) < 1e-5 ? std::string("0") : num(100.0 * fraction, 3)) + " %";
}
/// R² with three decimals; "-" when undefined (one point, or all measured values equal).
std::string r2(double value) {
  if (!std::isfinite(value)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", value);
  return std::string(buffer) == "-0.000" ? "0.000" : buffer;
}

/// A byte count with a decimal unit: "2.05 kB", "67.1 MB", "1.71 GB".
std::string bytes_text(double bytes) {
  const char* units_[] = {"B", "kB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000.0 && unit < 4) {
    bytes /= 1000.0;
    ++unit;
  }
  return num(bytes, 3) + " " + units_[unit];
}

std::string stats_comment(const FitStats& s) {
  if (s.points == 0) return "no points";
  return std::to_string(s.points) + (s.points == 1 ? " point" : " points") + ", R² " + r2(s.r2) +
         ", median rel. residual " + percent(s.median_rel_residual) + ", p90 " + percent(s.p90_rel_residual);
}

std::string input_refs(const std::vector<std::size_t>& inputs) {
  std::string text;
  for (const auto i : inputs) text += (text.empty() ? "" : ",") + std::to_string(i + 1);
  return text.empty() ? "" : "[" + text + "]";
}

/// "key: value" padded so that comments line up.
std::string line(int indent, const std::string& key, const std::string& value, const std::string& comment) {
  std::string text(static_cast<std::size_t>(indent), ' ');
  text += key + ":";
  if (!value.empty()) text += " " + value;
  if (!comment.empty()) {
    if (text.size() < 34) text.resize(34, ' ');
    text += "  # " + comment;
  }
  return text + "\n";
}

}  // namespace chopsim::calibration_detail
