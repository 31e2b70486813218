#include "chopsim/common/json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chopsim/common/error.hpp"

namespace chopsim {

JsonWriter::JsonWriter(std::ostream& out, int indent) : out_(out), indent_(indent) {}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_ << '\n';
  for (std::size_t i = 0; i < has_elements_.size() * static_cast<std::size_t>(indent_); ++i) out_ << ' ';
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_elements_.empty()) {
    if (has_elements_.back()) out_ << ',';
    has_elements_.back() = true;
    newline();
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ << '{';
  has_elements_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (has_elements_.empty()) throw OutputError("JsonWriter: end_object without begin_object");
  const bool had = has_elements_.back();
  has_elements_.pop_back();
  if (had) newline();
  out_ << '}';
  if (has_elements_.empty() && indent_ > 0) out_ << '\n';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ << '[';
  has_elements_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (has_elements_.empty()) throw OutputError("JsonWriter: end_array without begin_array");
  const bool had = has_elements_.back();
  has_elements_.pop_back();
  if (had) newline();
  out_ << ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ << '"' << escape(name) << "\":";
  if (indent_ > 0) out_ << ' ';
  after_key_ = true;
  return *this;
}

std::string JsonWriter::format_number(double number) {
  if (!std::isfinite(number)) return "null";
  if (number == 0.0) return "0";  // also folds -0
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  if (ec != std::errc()) throw OutputError("JsonWriter: cannot format number");
  return std::string(buffer.data(), end);
}

JsonWriter& JsonWriter::value(double number) {
  before_value();
  out_ << format_number(number);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  before_value();
  out_ << number;
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
  before_value();
  out_ << number;
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  out_ << (flag ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  out_ << '"' << escape(text) << '"';
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ << "null";
  return *this;
}

std::string JsonWriter::escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          std::array<char, 8> hex{};
          std::snprintf(hex.data(), hex.size(), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += hex.data();
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace chopsim
