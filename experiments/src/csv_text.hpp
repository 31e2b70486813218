#pragma once
// Fields of the CSV files chopsim writes (a sweep's and a study's results.csv): RFC 4180 quoting, numbers as
// summary.json writes them.

#include <cmath>
#include <string>

#include "chopsim/common/json_writer.hpp"

namespace chopsim::detail {

/// `text` as one CSV field: quoted when it holds a comma, a quote or a line break (line breaks become spaces).
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

/// A number as summary.json writes it; "" for NaN and infinities.
inline std::string csv_number(double value) { return std::isfinite(value) ? JsonWriter::format_number(value) : ""; }

}  // namespace chopsim::detail
