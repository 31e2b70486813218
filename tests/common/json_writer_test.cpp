#include "chopsim/common/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace chopsim {
namespace {

TEST(JsonWriter, WritesNestedStructuresCompactly) {
  std::ostringstream out;
  JsonWriter json(out, 0);
  json.begin_object();
  json.field("name", "ring \"all\"\n").field("n", 8).field("ok", true);
  json.key("sizes").begin_array().value(1.5).value(std::int64_t{-2}).null().end_array();
  json.key("empty").begin_object().end_object();
  json.end_object();
  EXPECT_EQ(out.str(), R"({"name":"ring \"all\"\n","n":8,"ok":true,"sizes":[1.5,-2,null],"empty":{}})");
}

TEST(JsonWriter, NumbersRoundTripExactly) {
  for (double value : {0.1, 1.0 / 3.0, 6.02214076e23, 989.4e12, 1e-9, 123456789.0}) {
    const std::string text = JsonWriter::format_number(value);
    EXPECT_EQ(std::stod(text), value) << text;
  }
  EXPECT_EQ(JsonWriter::format_number(-0.0), "0");
  EXPECT_EQ(JsonWriter::format_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(JsonWriter::format_number(std::nan("")), "null");
}

TEST(JsonWriter, EscapesControlCharacters) {
  EXPECT_EQ(JsonWriter::escape(std::string("a\x01"
                                           "b\\")),
            "a\\u0001b\\\\");
}

TEST(JsonWriter, IndentedOutputIsStable) {
  std::ostringstream out;
  JsonWriter json(out, 2);
  json.begin_object().field("a", 1).key("b").begin_array().value(2).end_array().end_object();
  EXPECT_EQ(out.str(), "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}\n");
}

}  // namespace
}  // namespace chopsim
