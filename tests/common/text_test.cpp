// The shared text helpers: ASCII lower case and joined lists (error messages list valid names with them).

#include "chopsim/common/text.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

namespace chopsim {
namespace {

TEST(Text, ToLowerChangesOnlyAsciiLetters) {
  EXPECT_EQ(to_lower("NVIDIA H100 80GB HBM3"), "nvidia h100 80gb hbm3");
  EXPECT_EQ(to_lower("MI300X_VF-1.5"), "mi300x_vf-1.5");
  EXPECT_EQ(to_lower(""), "");
}

TEST(Text, JoinSeparatesItemsInTheirOrder) {
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string>{"x"}), "x");
  EXPECT_EQ(join(std::vector<std::string>{}), "");
  EXPECT_EQ(join(std::vector<std::string>{"a", "b"}, " and "), "a and b");
  EXPECT_EQ(join(std::set<std::string>{"b", "a"}), "a, b");  // a set's own (sorted) order
  EXPECT_EQ(join(std::initializer_list<const char*>{"ring", "tree"}), "ring, tree");
  // An empty first item still gets its separator: the items are joined as given.
  EXPECT_EQ(join(std::vector<std::string>{"", "b"}), ", b");
}

}  // namespace
}  // namespace chopsim
