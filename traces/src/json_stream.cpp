#include "json_stream.hpp"

#include <algorithm>
#include <cstring>

#include "chopsim/common/error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chopsim::detail {

namespace {

constexpr std::size_t kReadSize = std::size_t{4} << 20;     // bytes asked from the source per refill
constexpr std::size_t kBatchTarget = std::size_t{1} << 20;  // elements per simdjson parse, in bytes

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// First '"' or '\\' in [p, end), or end.
const char* find_string_special(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (p + 16 <= end) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

// First '"', '{', '}', '[' or ']' in [p, end), or end.
[[maybe_unused]] const char* find_structural(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i open_square = _mm_set1_epi8('[');
  const __m128i close_square = _mm_set1_epi8(']');
  const __m128i open_curly = _mm_set1_epi8('{');
  const __m128i close_curly = _mm_set1_epi8('}');
  while (p + 16 <= end) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hits =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, open_square)),
                     _mm_or_si128(_mm_cmpeq_epi8(v, close_square),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, open_curly), _mm_cmpeq_epi8(v, close_curly))));
    const int mask = _mm_movemask_epi8(hits);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '{' && *p != '}' && *p != '[' && *p != ']') ++p;
  return p;
}

std::string path_text(const JsonPath& path) {
  std::string text;
  for (const auto& part : path) {
    if (part == "*")
      text += "[]";
    else
      text += (text.empty() ? "" : ".") + part;
  }
  return text.empty() ? "the document" : "'" + text + "'";
}

}  // namespace

JsonStreamer::JsonStreamer(ByteSource& source, std::string file) : source_(source), file_(std::move(file)) {
  buf_.resize(2 * kReadSize);
}

void JsonStreamer::fail(const std::string& problem) const {
  throw InputError({file_}, "", problem + " (at byte " + std::to_string(base_ + pos_) + ")",
                   "check that the file is a complete, valid JSON trace; re-export or copy it again if it was cut off");
}

bool JsonStreamer::refill() {
  if (eof_) return false;
  std::size_t drop = pos_;
  if (pin_ != kNoPin) drop = std::min<std::size_t>(drop, static_cast<std::size_t>(pin_ - base_));
  if (drop > 0) {
    std::memmove(buf_.data(), buf_.data() + drop, end_ - drop);
    base_ += drop;
    pos_ -= drop;
    end_ -= drop;
  }
  if (buf_.size() - end_ < kReadSize) buf_.resize(std::max(buf_.size() * 2, end_ + kReadSize));
  const std::size_t got = source_.read(buf_.data() + end_, buf_.size() - end_);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

char JsonStreamer::peek_nonspace() {
  for (;;) {
    while (pos_ < end_) {
      const char c = buf_[pos_];
      if (!is_space(c)) return c;
      ++pos_;
    }
    if (!refill()) return 0;
  }
}

void JsonStreamer::scan_string_rest() {
  for (;;) {
    const char* data = buf_.data();
    const char* p = find_string_special(data + pos_, data + end_);
    pos_ = static_cast<std::size_t>(p - data);
    if (pos_ >= end_) {
      if (!refill()) fail("the file ends inside a string: the trace is truncated");
      continue;
    }
    ++pos_;
    if (*p == '"') return;
    // A backslash escapes the next byte (\" \\ \uXXXX: only the first byte after it matters here).
    if (pos_ >= end_ && !refill()) fail("the file ends inside a string: the trace is truncated");
    ++pos_;
  }
}

namespace {

/// Bit masks of one 64-byte block: bit i is set if byte i is the character.
struct BlockMasks {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};

BlockMasks classify_block(const char* p) {
  BlockMasks m;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open_square = _mm_set1_epi8('[');
  const __m128i close_square = _mm_set1_epi8(']');
  const __m128i open_curly = _mm_set1_epi8('{');
  const __m128i close_curly = _mm_set1_epi8('}');
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const auto shift = 16 * i;
    auto bits = [&](__m128i eq) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(eq)) & 0xffffU) << shift;
    };
    m.quote |= bits(_mm_cmpeq_epi8(v, quote));
    m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
    m.open |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, open_square), _mm_cmpeq_epi8(v, open_curly)));
    m.close |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, close_square), _mm_cmpeq_epi8(v, close_curly)));
  }
#else
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    switch (p[i]) {
      case '"':
        m.quote |= bit;
        break;
      case '\\':
        m.backslash |= bit;
        break;
      case '[':
      case '{':
        m.open |= bit;
        break;
      case ']':
      case '}':
        m.close |= bit;
        break;
      default:
        break;
    }
  }
#endif
  return m;
}

/// Bits of the characters escaped by a backslash, carrying an escape across blocks in `prev_escaped` (0 or 1):
/// the odd-length-backslash-run method of simdjson's stage 1 (Langdale and Lemire, "Parsing gigabytes of JSON per
/// second", VLDB Journal 2019, section 3.1.1).
std::uint64_t escaped_bits(std::uint64_t backslash, std::uint64_t& prev_escaped) {
  constexpr std::uint64_t kEvenBits = 0x5555555555555555ULL;
  backslash &= ~prev_escaped;  // a backslash escaped by the previous block's last byte escapes nothing
  const std::uint64_t follows_escape = (backslash << 1) | prev_escaped;
  // Runs of backslashes that start on an odd bit: adding the run to its start bit clears it and carries past it.
  const std::uint64_t odd_sequence_starts = backslash & ~kEvenBits & ~follows_escape;
  std::uint64_t sequences_starting_on_even_bits = 0;
  prev_escaped = __builtin_add_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits) ? 1 : 0;
  const std::uint64_t invert_mask = sequences_starting_on_even_bits << 1;
  return (kEvenBits ^ invert_mask) & follows_escape;
}

/// Prefix XOR: bit i = xor of bits 0..i (inside-string mask from quote positions) without carry-less multiply.
std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

void JsonStreamer::scan_container() {
  // 64 bytes at a time: quotes that are not escaped toggle the in-string state; brackets outside strings change the
  // depth. Only the bracket bits are visited one by one (a few per hundred bytes in traces).
  int depth = 0;
  std::uint64_t prev_escaped = 0;
  std::uint64_t prev_in_string = 0;  // all ones when the previous block ended inside a string
  char tail[64];
  for (;;) {
    if (end_ - pos_ < 64 && !eof_) {
      refill();
      continue;
    }
    const std::size_t available = end_ - pos_;
    if (available == 0) fail("the file ends inside an object or array: the trace is truncated");
    const char* block = buf_.data() + pos_;
    if (available < 64) {  // the end of the file: pad with spaces
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, block, available);
      block = tail;
    }
    const BlockMasks m = classify_block(block);
    const std::uint64_t quotes = m.quote & ~escaped_bits(m.backslash, prev_escaped);
    const std::uint64_t in_string = prefix_xor(quotes) ^ prev_in_string;
    prev_in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(in_string) >> 63);
    std::uint64_t brackets = (m.open | m.close) & ~in_string;
    while (brackets != 0) {
      const int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if ((m.open >> i) & 1U) {
        ++depth;
      } else if (--depth == 0) {
        pos_ += static_cast<std::size_t>(i) + 1;
        return;
      }
    }
    if (available < 64) fail("the file ends inside an object or array: the trace is truncated");
    pos_ += 64;
  }
}

void JsonStreamer::scan_value() {
  const char c = buf_[pos_];
  if (c == '"') {
    ++pos_;
    scan_string_rest();
    return;
  }
  if (c == '{' || c == '[') {
    scan_container();
    return;
  }
  if (c == '}' || c == ']' || c == ',' || c == ':')
    fail(std::string("unexpected '") + c + "' where a value was expected");
  for (;;) {
    while (pos_ < end_) {
      const char d = buf_[pos_];
      if (d == ',' || d == '}' || d == ']' || d == ':' || is_space(d)) return;
      ++pos_;
    }
    if (!refill()) return;
  }
}

std::string JsonStreamer::read_key() {
  const std::uint64_t start = base_ + pos_;
  pin_ = start;
  ++pos_;
  scan_string_rest();
  const std::size_t begin = static_cast<std::size_t>(start - base_) + 1;
  std::string key(buf_.data() + begin, pos_ - 1 - begin);
  pin_ = kNoPin;
  return key;
}

void JsonStreamer::run(JsonStreamHandler& handler) {
  handler_ = &handler;
  if (peek_nonspace() == 0) fail("the file is empty");
  JsonPath path;
  walk_value(path);
  if (peek_nonspace() != 0) fail("unexpected data after the end of the JSON document");
}

void JsonStreamer::walk_value(JsonPath& path) {
  const char c = peek_nonspace();
  if (c == 0) fail("the file ends where a value of " + path_text(path) + " was expected: the trace is truncated");
  switch (handler_->action(path)) {
    case JsonAction::descend:
      if (c == '{')
        walk_object(path);
      else if (c == '[')
        walk_array(path);
      else
        scan_value();
      return;
    case JsonAction::capture:
      capture_value(path);
      return;
    case JsonAction::stream:
      if (c != '[') fail("expected an array for " + path_text(path));
      stream_array(path);
      return;
    case JsonAction::skip:
      scan_value();
      return;
  }
}

void JsonStreamer::walk_object(JsonPath& path) {
  ++pos_;  // '{'
  char c = peek_nonspace();
  if (c == '}') {
    ++pos_;
    return;
  }
  for (;;) {
    if (c == 0) fail("the file ends inside " + path_text(path) + ": the trace is truncated");
    if (c != '"') fail("expected a key in " + path_text(path));
    path.push_back(read_key());
    if (peek_nonspace() != ':') fail("expected ':' after key '" + path.back() + "'");
    ++pos_;
    walk_value(path);
    path.pop_back();
    c = peek_nonspace();
    if (c == ',') {
      ++pos_;
      c = peek_nonspace();
      continue;
    }
    if (c == '}') {
      ++pos_;
      return;
    }
    fail(c == 0 ? "the file ends inside " + path_text(path) + ": the trace is truncated"
                : "expected ',' or '}' in " + path_text(path));
  }
}

void JsonStreamer::walk_array(JsonPath& path) {
  ++pos_;  // '['
  char c = peek_nonspace();
  if (c == ']') {
    ++pos_;
    return;
  }
  path.emplace_back("*");
  for (;;) {
    walk_value(path);
    c = peek_nonspace();
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c == ']') {
      ++pos_;
      path.pop_back();
      return;
    }
    path.pop_back();
    fail(c == 0 ? "the file ends inside " + path_text(path) + ": the trace is truncated"
                : "expected ',' or ']' in " + path_text(path));
  }
}

void JsonStreamer::stream_array(JsonPath& path) {
  ++pos_;  // '['
  char c = peek_nonspace();
  if (c == ']') {
    ++pos_;
    return;
  }
  // Elements the handler keeps are copied into batch_ as "[e1,e2,...]"; only the current element is pinned in the
  // input window, so the window does not grow with the batch.
  batch_.assign(1, '[');
  std::uint64_t batch_begin = base_ + pos_;
  for (;;) {
    if (c == ']' || c == ',') fail("missing element in " + path_text(path));
    const std::uint64_t element_begin = base_ + pos_;
    pin_ = element_begin;
    scan_value();
    const std::string_view element(buf_.data() + (element_begin - base_),
                                   static_cast<std::size_t>(base_ + pos_ - element_begin));
    if (handler_->keep(path, element)) {
      if (batch_.size() > 1) batch_.push_back(',');
      batch_.insert(batch_.end(), element.begin(), element.end());
    }
    pin_ = kNoPin;
    const std::uint64_t element_end = base_ + pos_;
    c = peek_nonspace();
    if (c != ',' && c != ']')
      fail(c == 0 ? "the file ends inside " + path_text(path) + ": the trace is truncated"
                  : "expected ',' or ']' in " + path_text(path));
    const bool more = c == ',';
    ++pos_;
    if (!more || batch_.size() >= kBatchTarget) {
      flush_batch(path, batch_begin, element_end);
      batch_.assign(1, '[');
      if (!more) return;
      batch_begin = base_ + pos_;
    }
    c = peek_nonspace();
  }
}

void JsonStreamer::flush_batch(const JsonPath& path, std::uint64_t begin, std::uint64_t end) {
  if (batch_.size() <= 1) return;  // the handler kept nothing
  batch_.push_back(']');
  const std::size_t length = batch_.size();
  batch_.resize(length + simdjson::SIMDJSON_PADDING, ' ');
  try {
    simdjson::ondemand::document doc =
        parser_.iterate(simdjson::padded_string_view(batch_.data(), length, batch_.size()));
    simdjson::ondemand::array elements = doc.get_array();
    handler_->batch(path, elements);
  } catch (const simdjson::simdjson_error& error) {
    throw InputError({file_}, "",
                     std::string("invalid JSON in ") + path_text(path) + " between bytes " + std::to_string(begin) +
                         " and " + std::to_string(end) + " (simdjson: " + error.what() + ")",
                     "check that the file is a valid JSON trace");
  }
}

void JsonStreamer::capture_value(JsonPath& path) {
  const std::uint64_t start = base_ + pos_;
  pin_ = start;
  scan_value();
  const auto length = static_cast<std::size_t>(base_ + pos_ - start);
  // Wrapped in an array so that scalars (displayTimeUnit, baseTimeNanoseconds) parse like any other value.
  std::string text;
  text.reserve(length + 2);
  text += '[';
  text.append(buf_.data() + (start - base_), length);
  text += ']';
  pin_ = kNoPin;
  capture_ = simdjson::padded_string(text);
  try {
    simdjson::ondemand::document doc = parser_.iterate(capture_);
    for (simdjson::ondemand::value value : doc.get_array()) {
      handler_->captured(path, value);
      break;
    }
  } catch (const simdjson::simdjson_error& error) {
    throw InputError({file_}, "",
                     std::string("invalid JSON in ") + path_text(path) + " at byte " + std::to_string(start) +
                         " (simdjson: " + error.what() + ")",
                     "check that the file is a valid JSON trace");
  }
}

}  // namespace chopsim::detail
