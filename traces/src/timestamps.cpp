// Timestamps of telemetry logs and of `chopsim calibrate --power-runs` windows (timestamps.hpp).

#include "chopsim/traces/timestamps.hpp"

#include <cctype>
#include <cstdio>
#include <string>

#include "csv.hpp"

namespace chopsim {

namespace {

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, "chrono-compatible low-level date algorithms").
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

/// Parses "SSSS[.fff]" into nanoseconds exactly (no double rounding of epoch times).
std::optional<std::int64_t> seconds_to_ns(std::string_view text) {
  text = detail::trim(text);
  std::size_t i = 0;
  std::int64_t whole = 0;
  // int64 nanoseconds hold 9.22e9 s (until the year 2262): more is not a time in seconds (milliseconds, a corrupt
  // field), and would overflow.
  constexpr std::int64_t kLargestSeconds = 9'000'000'000;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + (text[i++] - '0');
    if (whole > kLargestSeconds) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  std::int64_t fraction = 0, scale = 100'000'000;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, scale /= 10)
      fraction += (text[i] - '0') * scale;
  }
  if (i != text.size()) return std::nullopt;
  return whole * 1'000'000'000 + fraction;
}

}  // namespace

std::optional<std::int64_t> parse_timestamp_ns(std::string_view text) {
  text = detail::trim(text);
  if (!text.empty() && text.back() == 'Z') text.remove_suffix(1);
  if (text.find(':') == std::string_view::npos) return seconds_to_ns(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, consumed = 0;
  char s1 = 0, s2 = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "%d%c%d%c%d%*[ T]%d:%d:%n", &year, &s1, &month, &s2, &day, &hour, &minute, &consumed) <
          7 ||
      consumed == 0)
    return std::nullopt;
  const auto seconds = seconds_to_ns(text.substr(static_cast<std::size_t>(consumed)));
  if (!seconds) return std::nullopt;
  // Dates int64 nanoseconds since the epoch can hold (1678-2262), fields in their ranges.
  if (year < 1678 || year > 2261 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || *seconds >= std::int64_t{61'000'000'000})
    return std::nullopt;
  const std::int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return (days * 86400 + hour * 3600 + minute * 60) * std::int64_t{1'000'000'000} + *seconds;
}

}  // namespace chopsim
