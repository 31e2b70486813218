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

/// `name` as a file or folder name: every character but ASCII letters, digits, '-', '.' and '_' becomes '_'.
[[nodiscard]] inline std::string file_name_slug(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!keep) c = '_';
  }
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
