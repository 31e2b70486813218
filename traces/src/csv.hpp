#pragma once
// Line-oriented CSV reading over a ByteSource (RFC 4180 quoting within a line; the tools read here never put
// newlines inside fields). Memory: one line plus a 1 MiB read buffer.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.hpp"

namespace chopsim::detail {

class LineReader {
 public:
  /// `file` names the file in errors.
  LineReader(std::unique_ptr<ByteSource> source, std::string file);
  /// The next line without its end-of-line; false at the end of the file. Throws InputError for a NUL byte (a binary
  /// or damaged file) or a line over 16 MiB (no tool writes one; memory stays bounded).
  bool next(std::string& line);
  /// 1-based number of the line last returned.
  [[nodiscard]] int line_number() const { return line_number_; }

 private:
  std::unique_ptr<ByteSource> source_;
  std::string file_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  int line_number_ = 0;
};

/// Splits one CSV line into fields (quotes removed, "" unescaped, surrounding spaces trimmed).
std::vector<std::string> split_csv_line(std::string_view line, char separator = ',');

/// Trims spaces and tabs at both ends.
std::string_view trim(std::string_view text);

/// Parses a number, ignoring a trailing unit ("123.45 W", "1980 MHz", "45 %"); nullopt for empty, "N/A",
/// "[N/A]", "[Not Supported]" and anything else that is not a number.
std::optional<double> parse_number_with_unit(std::string_view text);

}  // namespace chopsim::detail
