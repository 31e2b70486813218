#pragma once
// YAML configuration: the one place where YAML is decoded, validated (unknown keys rejected, types,
// ranges, cross-field rules) and converted to SI units. Errors are InputError naming
// file:line:column, the key, what was expected and the fix. See docs/configs.md for every key.

#include <filesystem>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/config/run_spec.hpp"

namespace chopsim {

/// Where named hardware, model and cluster files are looked up: `<root>/hardware/NAME.yaml`,
/// `<root>/models/NAME.yaml`, `<root>/clusters/NAME.yaml`.
struct ConfigSearchPath {
  std::vector<std::filesystem::path> roots;
};

/// The default search path for a run file: the first of its directory and that directory's parents that holds a
/// `hardware/` folder; then the folders of the CHOPSIM_CONFIG_PATH environment variable (colon-separated); then the
/// configs chopsim ships, installed beside the executable (PREFIX/share/chopsim/configs) or else in its source tree,
/// so that a run file copied anywhere finds the shipped hardware, models and clusters by name.
[[nodiscard]] ConfigSearchPath default_search_path(const std::filesystem::path& run_file);

/// The same with `first`, a folder the user named (`--configs DIR`, Python's `configs=`; check it with
/// check_configs_folder), looked in before all of them. An empty `first` adds nothing.
[[nodiscard]] ConfigSearchPath default_search_path(const std::filesystem::path& run_file,
                                                   const std::filesystem::path& first);

/// Checks a configs folder given by the user (`--configs DIR`, Python's `configs=`), which goes first on a search
/// path: a folder that does not exist, or holds none of `hardware/`, `models/` and `clusters/`, throws an InputError
/// naming `origin` and the folder. Without the check a mistyped folder adds nothing, and every name silently comes
/// from the shipped configs.
void check_configs_folder(const std::filesystem::path& dir, const std::string& origin);

/// The run config `given` names: the file itself when it exists or is a path with folders; a bare name (with or
/// without .yaml) that is no file here is looked up in the folders of `search` (`chopsim run llama3-8b-fsdp`).
/// Returns `given` when nothing is found (loading it then reports what was looked at).
[[nodiscard]] std::filesystem::path find_run_config(const std::filesystem::path& given, const ConfigSearchPath& search);

/// A value for one key of a run config given outside its file: `chopsim run --set KEY=VALUE`, or a sweep axis.
struct ConfigOverride {
  std::string key;     ///< dotted path from the run's top level: training.micro_batch, parallelism.tp, cluster.nodes
  std::string value;   ///< YAML text: 4, bf16, true, [1, 2], {kind: none}
  std::string origin;  ///< where it was given, for messages: "--set", "sweep.yaml:7 (axis parallelism.tp)"
};

/// Parses the "KEY=VALUE" of `--set`; InputError naming `origin` when it has no '=' or an empty key or value.
[[nodiscard]] ConfigOverride parse_config_override(std::string_view text, std::string origin);

/// Loads a run config. Model names (compute, collective, topology, engine) are checked against
/// `registries`. `overrides` replace (or add) keys of the run file before it is decoded, so they are validated as
/// the file's own keys are; a key under a component given by name (`model: llama3-8b`, then `model.layers`) is
/// refused: override the name, or write the component inline. Throws InputError on any problem.
[[nodiscard]] RunSpec load_run_config(const std::filesystem::path& run_file, const ConfigSearchPath& search,
                                      const ModelRegistries& registries,
                                      const std::vector<ConfigOverride>& overrides = {});

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
/// The same for a profile's text (what `chopsim calibrate` is about to write), named `shown` in messages and in
/// run.calibration.
void apply_calibration_profile_text(RunSpec& run, const std::string& profile_yaml, const std::filesystem::path& shown);

/// The `hardware:` a calibration profile was fitted on (the whole file is checked as apply_calibration_profile does).
[[nodiscard]] std::string calibration_profile_hardware(const std::filesystem::path& profile);

/// Cross-field checks of a run built in code (the same rules load_run_config applies):
/// tp*pp*dp*cp == GPUs, heads % tp, kv_heads % tp, layers % (pp*virtual_stages),
/// global_batch % (dp*micro_batch), experts % ep, (dp*cp) % ep, seq_len % cp, ...
/// `where` names the file for messages.
void validate_run(const RunSpec& run, const SourceLocation& where);

}  // namespace chopsim
