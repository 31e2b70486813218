#include "csv.hpp"

#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

namespace {
constexpr std::size_t kLongestLine = 16u << 20;
}

LineReader::LineReader(std::unique_ptr<ByteSource> source, std::string file)
    : source_(std::move(source)), file_(std::move(file)), buffer_(1 << 20) {}

bool LineReader::next(std::string& line) {
  line.clear();
  const auto checked = [&] {
    if (line.find('\0') != std::string::npos)
      throw InputError({file_, line_number_}, "", "a NUL byte in a text line",
                       "the file is binary or damaged; pass the CSV the tool wrote");
    return true;
  };
  for (;;) {
    if (line.size() > kLongestLine)
      throw InputError({file_, line_number_ + 1}, "", "a line longer than 16 MiB",
                       "the file is not a CSV the tools write, or it is damaged");
    if (pos_ < end_) {
      const char* start = buffer_.data() + pos_;
      const void* newline = std::memchr(start, '\n', end_ - pos_);
      if (newline != nullptr) {
        const auto length = static_cast<std::size_t>(static_cast<const char*>(newline) - start);
        line.append(start, length);
        pos_ += length + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        ++line_number_;
        return checked();
      }
      line.append(start, end_ - pos_);
      pos_ = end_;
    }
    if (eof_) break;
    end_ = source_->read(buffer_.data(), buffer_.size());
    pos_ = 0;
    if (end_ == 0) eof_ = true;
  }
  if (line.empty()) return false;
  if (line.back() == '\r') line.pop_back();
  ++line_number_;
  return checked();
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::vector<std::string> split_csv_line(std::string_view line, char separator) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == separator) {
      fields.emplace_back(trim(field));
      field.clear();
    } else {
      field += c;
    }
  }
  fields.emplace_back(trim(field));
  return fields;
}

std::optional<double> parse_number_with_unit(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  double value = 0.0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  const std::string_view rest = trim(std::string_view(end, static_cast<std::size_t>(text.data() + text.size() - end)));
  // Only a unit may follow: letters, '%' (nvidia-smi "45 %", "1980 MHz", "123.45 W").
  for (char c : rest)
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '%')) return std::nullopt;
  return value;
}

}  // namespace chopsim::detail
