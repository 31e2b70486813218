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

/// `items` (strings, in their order) separated by `separator`: "a, b, c".
template <class Strings>
[[nodiscard]] std::string join(const Strings& items, std::string_view separator = ", ") {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += separator;
    out += item;
    first = false;
  }
  return out;
}

}  // namespace chopsim
