#pragma once
// Small text helpers shared by the readers, the calibration inputs and the experiments.

#include <string>
#include <string_view>

namespace chopsim {

/// `text` in ASCII lower case (names, units and dtypes in traces and tables compare case-insensitively).
[[nodiscard]] inline std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace chopsim
