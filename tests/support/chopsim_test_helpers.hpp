#pragma once
// Helpers several test suites share: a fresh temporary folder per test, the message of an expected InputError, and
// a file's contents.

#include <gtest/gtest.h>
#include <unistd.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <system_error>

#include "chopsim/common/error.hpp"

namespace chopsim::test {

/// The message of the InputError `action` throws (and the error itself in `*out`); a test failure when it throws
/// nothing or something else.
inline std::string input_error(const std::function<void()>& action, InputError* out = nullptr) {
  try {
    action();
  } catch (const InputError& error) {
    if (out != nullptr) *out = error;
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected InputError, got: " << error.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return {};
}

/// The contents of `path`, byte for byte (empty when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A folder of this test process's own under the temp directory, removed with everything in it when the process's
/// tests end (a GoogleTest environment), whether they passed or not.
inline std::filesystem::path process_temp_dir() {
  struct Cleanup : ::testing::Environment {
    explicit Cleanup(std::filesystem::path dir) : dir(std::move(dir)) {}
    void TearDown() override {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
    std::filesystem::path dir;
  };
  static const std::filesystem::path dir = [] {
    auto made = std::filesystem::temp_directory_path() / ("chopsim_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(made);
    ::testing::AddGlobalTestEnvironment(new Cleanup(made));
    return made;
  }();
  return dir;
}

/// A fixture with a fresh folder per test (named after the process, suite and test), removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("chopsim_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  /// Writes `text` to dir_/name (creating its folders) and returns the path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = dir_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }

  std::filesystem::path dir_;
};

}  // namespace chopsim::test
