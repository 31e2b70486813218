#include "chopsim/common/registry.hpp"

#include <gtest/gtest.h>

namespace chopsim {
namespace {

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
};
struct Square final : Shape {
  explicit Square(double side) : side_(side) {}
  double area() const override { return side_ * side_; }
  double side_;
};

TEST(Registry, CreatesByNameWithArguments) {
  Registry<Shape, double> shapes("shape");
  shapes.add("square", "a square", [](double side) { return std::make_unique<Square>(side); });
  EXPECT_TRUE(shapes.contains("square"));
  EXPECT_DOUBLE_EQ(shapes.create("square", 3.0)->area(), 9.0);
}

TEST(Registry, UnknownNameListsValidNames) {
  Registry<Shape, double> shapes("shape");
  shapes.add("square", "", [](double side) { return std::make_unique<Square>(side); });
  shapes.add("circle", "", [](double side) { return std::make_unique<Square>(side); });
  try {
    (void)shapes.create("hexagon", 1.0);
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& error) {
    EXPECT_EQ(error.name(), "hexagon");
    EXPECT_EQ(error.valid_names(), (std::vector<std::string>{"circle", "square"}));
    EXPECT_STREQ(error.what(), "unknown shape 'hexagon'; valid names: circle, square");
  }
}

TEST(Registry, DuplicateRegistrationIsAnError) {
  Registry<Shape, double> shapes("shape");
  shapes.add("square", "", [](double side) { return std::make_unique<Square>(side); });
  EXPECT_THROW(shapes.add("square", "", [](double side) { return std::make_unique<Square>(side); }), ModelError);
}

TEST(Registry, SeveralRegistriesCoexist) {
  Registry<Shape, double> a("shape");
  Registry<Shape, double> b("shape");
  a.add("square", "", [](double side) { return std::make_unique<Square>(side); });
  EXPECT_TRUE(a.contains("square"));
  EXPECT_FALSE(b.contains("square"));
}

}  // namespace
}  // namespace chopsim
