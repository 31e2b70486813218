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

/// Applies a calibration profile (`chopsim calibrate` output, docs/calibration.md) to a run built in code, as the run
/// key `calibration:` does: its `kernels`, `intra_node_link` and `nic` sections override those keys of run.hardware
/// (same keys and units as the hardware file), its `collectives` section sets run.collectives, `telemetry_fit` is
/// checked and not used; records the file in run.calibration. Throws InputError when the file is missing or
/// malformed, has an unknown key or another profile_version, or was fitted on hardware other than run.hardware.name.
void apply_calibration_profile(RunSpec& run, const std::filesystem::path& profile);

/// The `hardware:` a calibration profile was fitted on (the whole file is checked as apply_calibration_profile does).
[[nodiscard]] std::string calibration_profile_hardware(const std::filesystem::path& profile);

/// Cross-field checks of a run built in code (the same rules load_run_config applies):
/// tp*pp*dp*cp == GPUs, heads % tp, kv_heads % tp, layers % (pp*virtual_stages),
/// global_batch % (dp*micro_batch), experts % ep, (dp*cp) % ep, seq_len % cp, ...
/// `where` names the file for messages.
void validate_run(const RunSpec& run, const SourceLocation& where);

}  // namespace chopsim
