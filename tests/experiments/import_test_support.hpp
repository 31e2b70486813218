#pragma once
// The import tests' fixture and helpers: a NeMo job imported and loaded as `chopsim run` would, the Hugging Face
// fixtures, and import options for DGX H100 nodes.

#include <filesystem>
#include <string>

#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/import.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim::test {

namespace fs = std::filesystem;

class Import : public TempDirTest {
 protected:
  static fs::path corpus() { return shared_data_dir() / "configs" / "charllm_ppt"; }
  /// Imports `job` for the GPU its study folder names and loads the result as chopsim run would.
  RunSpec import_and_load(const fs::path& job, ImportResult* out = nullptr) {
    const bool h100 = job.string().find("h100") != std::string::npos;
    ImportOptions options;
    options.hardware = h100 ? "H100-SXM5-80GB" : "H200-SXM-141GB";
    options.cluster = h100 ? "dgx-h100" : "dgx-h200";
    options.search = ConfigSearchPath{{configs_dir()}};
    const ImportResult result = import_nemo(job, options);
    if (out != nullptr) *out = result;
    const fs::path run = write(job.stem().string() + ".yaml", result.yaml);
    return load_run_config(run, options.search, registries_);
  }
  const ModelRegistries registries_ = ModelRegistries::with_builtins();
};

inline fs::path hf_fixture(const std::string& name) {
  return source_dir() / "tests" / "experiments" / "fixtures" / "hf" / name;
}

/// Import options for DGX H100 nodes with the shipped configs.
inline ImportOptions dgx_h100(int nodes) {
  ImportOptions options;
  options.hardware = "H100-SXM5-80GB";
  options.cluster = "dgx-h100";
  options.nodes = nodes;
  options.search = ConfigSearchPath{{configs_dir()}};
  return options;
}

}  // namespace chopsim::test
