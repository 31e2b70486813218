#pragma once
// Streaming walk over a large JSON document whose bulk is one or a few big arrays (Kineto's traceEvents,
// rocprofv3's buffer_records.kernel_dispatch). simdjson 3.0 (Debian 12) parses whole documents only, and its
// iterate_many needs whitespace-separated documents, so this walker splits the document itself:
//
//  * a byte scanner (SSE2 where available) tracks strings and nesting over a window of the input (4 MiB reads);
//  * the handler decides per value path what to do: descend into it, capture it whole (small metadata objects),
//    stream it (a big array: its elements are handed over in batches of about 1 MiB), or skip it;
//  * each batch of elements is copied into a padded buffer as "[e1,e2,...]" and parsed with simdjson On-Demand.
//
// Memory: the input window + one batch + simdjson's parser for that batch, whatever the file size; a single value
// larger than the window (a huge captured object or one enormous event) grows the window to hold it.

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "byte_source.hpp"

namespace chopsim::detail {

enum class JsonAction { descend, capture, stream, skip };

/// Path components are object keys; array elements appear as "*".
using JsonPath = std::vector<std::string>;

class JsonStreamHandler {
 public:
  virtual ~JsonStreamHandler() = default;
  /// What to do with the value at `path` (called for every value down to the depth the handler descends to).
  virtual JsonAction action(const JsonPath& path) = 0;
  /// A captured value, parsed: `value` is valid only during the call.
  virtual void captured(const JsonPath& path, simdjson::ondemand::value value) = 0;
  /// Whether an element of a streamed array (its raw JSON text) goes into a batch at all. A cheap look at the text
  /// lets a pass drop the events it ignores before simdjson parses them.
  virtual bool keep(const JsonPath& /*path*/, std::string_view /*element*/) { return true; }
  /// A batch of elements of a streamed array, in order: `elements` is valid only during the call.
  virtual void batch(const JsonPath& path, simdjson::ondemand::array elements) = 0;
};

class JsonStreamer {
 public:
  /// `file` names the input in error messages.
  JsonStreamer(ByteSource& source, std::string file);
  /// Walks the whole document. Throws InputError (file, byte offset, what was expected) for malformed or
  /// truncated JSON and for simdjson errors inside a batch.
  void run(JsonStreamHandler& handler);
  /// Bytes of content consumed so far.
  [[nodiscard]] std::uint64_t bytes_read() const { return base_ + end_; }

 private:
  static constexpr std::uint64_t kNoPin = ~std::uint64_t{0};
  // Buffer management: buf_[0] is content byte base_; bytes before pos_ and pin_ may be dropped on refill.
  bool refill();
  char peek_nonspace();  // skips whitespace; returns 0 at end of input
  void expect(char c, const char* what);
  std::string read_key();
  void walk_value(JsonPath& path);
  void walk_object(JsonPath& path);
  void walk_array(JsonPath& path);
  void stream_array(JsonPath& path);
  void capture_value(JsonPath& path);
  /// Advances pos_ past the value starting at pos_ (bytes after pin_ stay in the buffer).
  void scan_value();
  void scan_string_rest();
  void scan_container();
  void flush_batch(const JsonPath& path, std::uint64_t begin, std::uint64_t end);
  [[noreturn]] void fail(const std::string& problem) const;

  ByteSource& source_;
  std::string file_;
  std::vector<char> buf_;
  std::uint64_t base_ = 0;      // content offset of buf_[0]
  std::size_t pos_ = 0;         // next byte to look at (index into buf_)
  std::size_t end_ = 0;         // bytes valid in buf_
  std::uint64_t pin_ = kNoPin;  // content offset of the first byte that must survive a refill
  bool eof_ = false;
  JsonStreamHandler* handler_ = nullptr;
  simdjson::ondemand::parser parser_;
  std::vector<char> batch_;  // "[...]" + padding
  simdjson::padded_string capture_;
};

}  // namespace chopsim::detail
