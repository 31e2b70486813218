#pragma once
// A small streaming JSON writer with deterministic number formatting (shortest round-trip decimal),
// so the same results always give byte-identical files. Text is gathered in a buffer and handed to the stream in
// blocks (a timeline has millions of small values; going through the stream per character cost more than the
// simulation): the buffer goes out when it fills, when the outermost value is closed, on flush() and on destruction.

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace chopsim {

class JsonWriter {
 public:
  /// `indent` spaces per level; 0 writes everything on one line (used for large traces).
  explicit JsonWriter(std::ostream& out, int indent = 2);
  ~JsonWriter();
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  /// Hands the buffered text to the stream (before writing to the stream directly).
  void flush();

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// Names the next value inside an object.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(double number);  // NaN and infinities are written as null
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(unsigned number) { return value(static_cast<std::uint64_t>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& null();

  /// Shorthand for key(name).value(v).
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  /// Formats a double the way value() does (shortest representation that reads back exactly).
  static std::string format_number(double number);
  /// Escapes a string for JSON, without the surrounding quotes.
  static std::string escape(std::string_view text);

 private:
  void before_value();
  void newline();
  void put(char c) { buffer_.push_back(c); }
  void put(std::string_view text) { buffer_.append(text); }
  void put_escaped(std::string_view text);
  void put_number(double number);
  void maybe_flush();

  std::ostream& out_;
  std::string buffer_;
  int indent_;
  // One entry per open container: true once it holds an element (a comma is then needed).
  std::vector<bool> has_elements_;
  bool after_key_ = false;
};

}  // namespace chopsim
