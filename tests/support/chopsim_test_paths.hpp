#pragma once
// Paths tests read from: the source tree and the shared measured data (../shared/data next to the
// project, or $CHOPSIM_SHARED_DATA). Tests that need shared data skip with a message when it is absent.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace chopsim::test {

inline std::filesystem::path source_dir() { return std::filesystem::path(CHOPSIM_SOURCE_DIR); }
inline std::filesystem::path configs_dir() { return source_dir() / "configs"; }
/// The shipped calibration profiles (calibration/profiles).
inline std::filesystem::path profiles_dir() { return source_dir() / "calibration" / "profiles"; }

inline std::filesystem::path shared_data_dir() {
  if (const char* env = std::getenv("CHOPSIM_SHARED_DATA"); env != nullptr && *env != '\0') return env;
  return source_dir().parent_path() / "shared" / "data";
}

}  // namespace chopsim::test

/// Skips the current test when ../shared/data (or the given file inside it) is missing.
#define CHOPSIM_REQUIRE_SHARED_DATA(relative)                                                  \
  do {                                                                                         \
    const auto chopsim_required_path = ::chopsim::test::shared_data_dir() / (relative);        \
    if (!std::filesystem::exists(chopsim_required_path))                                       \
      GTEST_SKIP() << "shared data not found at " << chopsim_required_path.string()            \
                   << " (set CHOPSIM_SHARED_DATA to the shared/data folder to run this test)"; \
  } while (false)
