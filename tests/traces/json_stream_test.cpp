// The streaming JSON walker: element splitting across read boundaries, strings with escapes and brackets,
// captured metadata, and truncated or malformed input.
#include "json_stream.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "chopsim/common/error.hpp"
#include "reader_util.hpp"

namespace chopsim::detail {
namespace {

/// Serves a string in pieces of `piece` bytes, so that every token boundary meets a refill somewhere.
class PieceSource final : public ByteSource {
 public:
  PieceSource(std::string text, std::size_t piece) : text_(std::move(text)), piece_(piece) {}
  std::size_t read(char* out, std::size_t size) override {
    const std::size_t n = std::min({size, piece_, text_.size() - pos_});
    std::memcpy(out, text_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string text_;
  std::size_t piece_;
  std::size_t pos_ = 0;
};

class Collect final : public JsonStreamHandler {
 public:
  JsonAction action(const JsonPath& path) override {
    if (path.empty()) return JsonAction::descend;
    if (path.size() == 1 && path[0] == "traceEvents") return JsonAction::stream;
    if (path.size() == 1 && path[0] == "meta") return JsonAction::capture;
    return JsonAction::skip;
  }
  void captured(const JsonPath&, simdjson::ondemand::value value) override {
    for (auto field : value.get_object()) {
      std::string_view key = field.unescaped_key();  // throws on malformed JSON, as the readers do
      if (key == "rank") rank = json_int(field.value()).value_or(-1);
    }
  }
  void batch(const JsonPath&, simdjson::ondemand::array elements) override {
    ++batches;
    for (auto element : elements) {
      for (auto field : element.get_object()) {
        std::string_view key = field.unescaped_key();
        if (key == "name") names.emplace_back(json_string(field.value()).value_or(""));
      }
    }
  }
  std::vector<std::string> names;
  std::int64_t rank = -1;
  int batches = 0;
};

void walk(const std::string& text, Collect& collect, std::size_t piece = 7) {
  PieceSource source(text, piece);
  JsonStreamer streamer(source, "test.json");
  streamer.run(collect);
}

TEST(JsonStream, SplitsElementsAcrossReadBoundaries) {
  const std::string text = R"({"skip": {"a": [1, 2, {"b": "]}"}]}, "traceEvents": [
      {"name": "plain", "args": {"x": [1, 2, 3]}},
      {"name": "quote \" and brace }", "ts": 1.5},
      {"name": "backslash \\", "args": {}},
      {"name": "unicode \u00e9"}
    ], "meta": {"rank": 3}, "tail": "x"})";
  for (std::size_t piece : {1, 3, 7, 64, 1 << 20}) {
    Collect collect;
    walk(text, collect, piece);
    ASSERT_EQ(collect.names.size(), 4U) << "piece " << piece;
    EXPECT_EQ(collect.names[0], "plain");
    EXPECT_EQ(collect.names[1], "quote \" and brace }");
    EXPECT_EQ(collect.names[2], "backslash \\");
    EXPECT_EQ(collect.names[3], "unicode \xc3\xa9");
    EXPECT_EQ(collect.rank, 3);
  }
}

TEST(JsonStream, LargeArraysArriveInSeveralBatches) {
  std::string text = R"({"traceEvents": [)";
  constexpr int kEvents = 60000;  // about 3 MB: several 1 MiB batches
  for (int i = 0; i < kEvents; ++i) {
    if (i) text += ",";
    text += R"({"name": "k)" + std::to_string(i) + R"(", "pad": "................................"})";
  }
  text += "]}";
  Collect collect;
  walk(text, collect, 1 << 16);
  ASSERT_EQ(collect.names.size(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(collect.names.back(), "k" + std::to_string(kEvents - 1));
  EXPECT_GE(collect.batches, 3);
}

TEST(JsonStream, EscapesAndBracketsInStringsAtEveryBlockOffset) {
  // The scanner works on 64-byte blocks: put runs of backslashes, escaped quotes and brackets inside strings at
  // every offset around a block boundary.
  // JSON text of each name: odd backslash runs before a quote escape it, even runs do not.
  const std::vector<std::string> tricky = {R"(a\\\"}])", R"(\\\\)", R"(x\\\\\"{[)", R"(\")", R"(q\\\\\\\"])"};
  for (std::size_t pad = 0; pad < 70; ++pad) {
    std::string text = R"({"traceEvents": [)";
    for (std::size_t i = 0; i < tricky.size(); ++i) {
      if (i) text += ",";
      text += R"({"pad": ")" + std::string(pad + i, '.') + R"(", "name": ")" + tricky[i] + R"(", "x": [{"y": "]}"}]})";
    }
    text += "]}";
    Collect collect;
    walk(text, collect, 1 << 20);
    ASSERT_EQ(collect.names.size(), tricky.size()) << "pad " << pad;
    EXPECT_EQ(collect.names[0], "a\\\"}]");
    EXPECT_EQ(collect.names[1], "\\\\");
    EXPECT_EQ(collect.names[2], "x\\\\\"{[");
  }
}

TEST(JsonStream, EmptyArrayAndEmptyObject) {
  Collect collect;
  walk(R"({"traceEvents": [], "meta": {}})", collect);
  EXPECT_TRUE(collect.names.empty());
  EXPECT_EQ(collect.batches, 0);
}

void expect_input_error(const std::string& text, const std::string& needle) {
  Collect collect;
  try {
    walk(text, collect);
    FAIL() << "no error for: " << text;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("test.json"), std::string::npos) << error.what();
  }
}

TEST(JsonStream, TruncatedAndMalformedInputFailWithTheFileAndPlace) {
  expect_input_error("", "empty");
  expect_input_error(R"({"traceEvents": [{"name": "a"}, {"name": "b")", "truncated");
  expect_input_error(R"({"traceEvents": [{"name": "a"}, )", "truncated");
  expect_input_error(R"({"traceEvents": [{"name": "unterminated)", "truncated");
  expect_input_error(R"({"skip": "unterminated)", "string");
  expect_input_error(R"({"traceEvents": [{"name": "a"}] "x": 1})", "expected ',' or '}'");
  expect_input_error(R"({"traceEvents": [{"name" "a"}]})", "invalid JSON");
  expect_input_error(R"({"traceEvents": [1,,2]})", "missing element");
  expect_input_error(R"({"traceEvents": []} trailing)", "after the end");
}

TEST(JsonStream, MicrosecondTokensBecomeExactNanoseconds) {
  EXPECT_EQ(parse_microseconds_as_ns("4458676981028.392"), 4458676981028392);
  EXPECT_EQ(parse_microseconds_as_ns("1712195495505583.0"), 1712195495505583000);  // epoch us, exact
  EXPECT_EQ(parse_microseconds_as_ns("1712195495505583.123"), 1712195495505583123);
  EXPECT_EQ(parse_microseconds_as_ns("1682725898082228"), 1682725898082228000);
  EXPECT_EQ(parse_microseconds_as_ns("4.928"), 4928);
  EXPECT_EQ(parse_microseconds_as_ns("0.7685"), 769);  // rounds the fourth decimal
  EXPECT_EQ(parse_microseconds_as_ns("-2.5"), -2500);
  EXPECT_EQ(parse_microseconds_as_ns("1.5e3"), 1500000);
  EXPECT_FALSE(parse_microseconds_as_ns("abc").has_value());
  // 19 digits beyond INT64_MAX (fuzz_kineto, CI 2026-11-26: a signed overflow in the digit loop): not an int64 of
  // nanoseconds, refused without overflowing; INT64_MAX itself still reads exactly in nanoseconds.
  EXPECT_FALSE(parse_time_as_ns("9223372036854775808", true).has_value());
  EXPECT_FALSE(parse_time_as_ns("-92233720368547758084", false).has_value());
  EXPECT_FALSE(parse_time_as_ns("9999999999999999999", true).has_value());
  EXPECT_EQ(parse_time_as_ns("1732000000000000000", true), 1732000000000000000);  // epoch ns, exact
  EXPECT_EQ(canonical_rank_list("[0,1,  2]"), "[0, 1, 2]");
  EXPECT_EQ(canonical_rank_list("[]"), "[]");
  EXPECT_EQ(dtype_bytes("c10::BFloat16"), 2.0);
  EXPECT_EQ(dtype_bytes("Float"), 4.0);
  EXPECT_EQ(dtype_bytes("long int"), 8.0);
  EXPECT_FALSE(dtype_bytes("Scalar").has_value());
}

}  // namespace
}  // namespace chopsim::detail
