#include "chopsim/common/json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

/// Text gathered before it goes to the stream.
constexpr std::size_t kFlushBytes = 1 << 16;

constexpr std::array<char, 16> kHexDigits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                             '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

/// Appends the JSON form of `text` (without quotes) to `out`: runs of plain characters in one piece.
void append_escaped(std::string& out, std::string_view text) {
  std::size_t plain_begin = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain_begin, i - plain_begin);
    plain_begin = i + 1;
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
        out += "\\u00";
        out += kHexDigits[c >> 4];
        out += kHexDigits[c & 0xf];
    }
  }
  out.append(text.data() + plain_begin, text.size() - plain_begin);
}

/// Appends the shortest decimal that reads back as `number` ("null" for NaN and infinities, "0" for both zeros).
void append_number(std::string& out, double number) {
  if (!std::isfinite(number)) {
    out += "null";
    return;
  }
  if (number == 0.0) {  // also folds -0
    out += '0';
    return;
  }
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  if (ec != std::errc()) throw OutputError("JsonWriter: cannot format number");
  out.append(buffer.data(), end);
}

template <class Integer>
void append_integer(std::string& out, Integer number) {
  std::array<char, 24> buffer{};
  auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  if (ec != std::errc()) throw OutputError("JsonWriter: cannot format number");
  out.append(buffer.data(), end);
}

}  // namespace

JsonWriter::JsonWriter(std::ostream& out, int indent) : out_(out), indent_(indent) { buffer_.reserve(kFlushBytes); }

JsonWriter::~JsonWriter() {
  try {
    flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the stream's state reports the error
  }
}

void JsonWriter::flush() {
  if (buffer_.empty()) return;
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void JsonWriter::maybe_flush() {
  if (buffer_.size() >= kFlushBytes || has_elements_.empty()) flush();
}

void JsonWriter::put_escaped(std::string_view text) { append_escaped(buffer_, text); }

void JsonWriter::put_number(double number) { append_number(buffer_, number); }

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  put('\n');
  buffer_.append(has_elements_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_elements_.empty()) {
    if (has_elements_.back()) put(',');
    has_elements_.back() = true;
    newline();
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  put('{');
  has_elements_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (has_elements_.empty()) throw OutputError("JsonWriter: end_object without begin_object");
  const bool had = has_elements_.back();
  has_elements_.pop_back();
  if (had) newline();
  put('}');
  if (has_elements_.empty() && indent_ > 0) put('\n');
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  put('[');
  has_elements_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (has_elements_.empty()) throw OutputError("JsonWriter: end_array without begin_array");
  const bool had = has_elements_.back();
  has_elements_.pop_back();
  if (had) newline();
  put(']');
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  put('"');
  put_escaped(name);
  put("\":");
  if (indent_ > 0) put(' ');
  after_key_ = true;
  return *this;
}

std::string JsonWriter::format_number(double number) {
  std::string text;
  append_number(text, number);
  return text;
}

JsonWriter& JsonWriter::value(double number) {
  before_value();
  put_number(number);
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  before_value();
  append_integer(buffer_, number);
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
  before_value();
  append_integer(buffer_, number);
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  put(flag ? std::string_view("true") : std::string_view("false"));
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  put('"');
  put_escaped(text);
  put('"');
  maybe_flush();
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  put("null");
  maybe_flush();
  return *this;
}

std::string JsonWriter::escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_escaped(out, text);
  return out;
}

}  // namespace chopsim
