#pragma once
// YAML configuration: the one place where YAML is decoded, validated (unknown keys rejected, types,
// ranges, cross-field rules) and converted to SI units. Errors are InputError naming
// file:line:column, the key, what was expected and the fix. See docs/configs.md for every key.

#include <filesystem>
#include <vector>

#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/run_spec.hpp"

namespace chopsim {

/// Where named hardware, model and cluster files are looked up: `<root>/hardware/NAME.yaml`,
/// `<root>/models/NAME.yaml`, `<root>/clusters/NAME.yaml`.
struct ConfigSearchPath {
  std::vector<std::filesystem::path> roots;
};

/// The default search path for a run file: the first of its directory and that directory's parents
/// that holds a `hardware/` folder.
[[nodiscard]] ConfigSearchPath default_search_path(const std::filesystem::path& run_file);

/// Loads a run config. Model names (compute, collective, topology, engine) are checked against
/// `registries`. Throws InputError on any problem.
[[nodiscard]] RunSpec load_run_config(const std::filesystem::path& run_file, const ConfigSearchPath& search,
                                      const ModelRegistries& registries);

/// Loads one component file on its own (used by validation and tests).
[[nodiscard]] HardwareSpec load_hardware_config(const std::filesystem::path& file);
[[nodiscard]] TransformerSpec load_model_config(const std::filesystem::path& file);
[[nodiscard]] ClusterSpec load_cluster_config(const std::filesystem::path& file);

/// Cross-field checks of a run built in code (the same rules load_run_config applies):
/// tp*pp*dp*cp == GPUs, heads % tp, kv_heads % tp, layers % (pp*virtual_stages),
/// global_batch % (dp*micro_batch), experts % ep, (dp*cp) % ep, seq_len % cp, ...
/// `where` names the file for messages.
void validate_run(const RunSpec& run, const SourceLocation& where);

}  // namespace chopsim
