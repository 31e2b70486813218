#pragma once
// The configuration tests' fixture and helpers: runs loaded against the shipped configs/ folder, small runs written
// into a fresh directory, and checks that an error message names what it should.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim::test {

namespace fs = std::filesystem;

/// A fresh directory per test (dir_, write()), removed afterwards.
class ConfigTest : public TempDirTest {
 protected:
  /// Loads a run whose component names resolve in the shipped configs/ folder.
  RunSpec load(const fs::path& run_file) const {
    return load_run_config(run_file, ConfigSearchPath{{configs_dir()}}, registries_);
  }

  /// A run on one DGX H100 node (fabric none) with the given parallelism and training lines.
  std::string small_run(const std::string& model, const std::string& parallelism, const std::string& training,
                        const std::string& cluster = "{name: dgx-h100, nodes: 1, fabric: {kind: none}}") const {
    return "model: " + model + "\nhardware: H100-SXM5-80GB\ncluster: " + cluster + "\nparallelism:\n" + parallelism +
           "training:\n" + training;
  }

  /// A run of llama3-8b with DP 8 on one DGX H100 node whose H100 overrides `kernels` (a YAML flow mapping's body).
  static std::string h100_kernels_run(const std::string& kernels) {
    return "model: llama3-8b\nhardware: {name: H100-SXM5-80GB, kernels: {" + kernels +
           "}}\ncluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\nparallelism:\n  dp: 8\n"
           "training:\n  global_batch: 8\n";
  }

  ModelRegistries registries_ = ModelRegistries::with_builtins();
};

inline void expect_contains(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in:\n" << message;
}

inline std::vector<fs::path> yaml_files(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

inline std::string indent(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

inline std::size_t idx(Precision p) { return static_cast<std::size_t>(p); }
inline std::size_t idx(KernelClass k) { return static_cast<std::size_t>(k); }

}  // namespace chopsim::test
