#pragma once
// The config library's decoding parts, for its own sources and the decoders of sweeps, studies and imports that
// build on them (detail: not an interface for users): the component decoders (hardware, model, cluster), their own
// consistency checks, and the cross-field rules of a run with key locations.

#include <filesystem>
#include <string_view>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/config/run_spec.hpp"

namespace chopsim::config_detail {

/// Apply the keys present in `m` to `spec`. Need::required demands every key a complete definition
/// needs (a component file or an inline definition); Need::optional applies overrides on top of a
/// loaded file. Unknown keys are left for the caller's m.finish().
void apply_hardware(Mapping& m, HardwareSpec& hardware, Need need);
void apply_model(Mapping& m, TransformerSpec& model, Need need);
/// The cooling keys (ambient_c, profile, rear_rise_k, slot_offsets_k) of a hardware file's `cooling:` or a run's
/// `thermal:` section.
void apply_cooling(Mapping& m, CoolingSpec& cooling);
/// `in_run`: the mapping is in a run file, where `nodes` belongs; a cluster file may not set it.
void apply_cluster(Mapping& m, ClusterSpec& cluster, Need need, bool in_run);

/// Consistency of one component on its own. `prefix` is how its keys are recorded ("model." in a run,
/// "" when the file is loaded on its own).
void check_hardware(const HardwareSpec& hardware, const Locator& locate, std::string_view prefix);
void check_model(const TransformerSpec& model, const Locator& locate, std::string_view prefix);
void check_cluster(const ClusterSpec& cluster, const Locator& locate, std::string_view prefix);

/// The cross-field rules of validate_run(), with each message placed at the key to change.
void validate_run_at(const RunSpec& run, const Locator& locate);

/// The keys of a run's `collectives:` section (also a calibration profile's).
void decode_collectives(Mapping& c, CollectiveParams& params);

/// Decodes the calibration profile `file` (config/src/calibration_profile.cpp) and returns the hardware it was fitted
/// on. With `hardware`, checks that it is that hardware (InputError naming both; `shown_reference` names the run in the
/// message) and applies the profile's kernels, intra_node_link and nic sections to it; with `collectives`, applies
/// the profile's collectives section. Keys are recorded in `locations` as "hardware.KEY" and "collectives.KEY".
std::string apply_profile(const std::filesystem::path& file, const std::string& shown_reference, HardwareSpec* hardware,
                          CollectiveParams* collectives, KeyLocations* locations);
/// The same for a profile already parsed (`shown` names it in messages).
std::string apply_profile_root(const YAML::Node& root, const std::string& shown, const std::string& shown_reference,
                               HardwareSpec* hardware, CollectiveParams* collectives, KeyLocations* locations);

/// Resolves a run's `calibration:` text: an absolute path, or a path relative to the run's folder, a configs root
/// or a configs root's parent (in that order). Fails at `owner.key` listing the places it looked.
[[nodiscard]] std::filesystem::path find_profile(const std::string& text, const ConfigSearchPath& search,
                                                 const std::filesystem::path& run_dir, const Mapping& owner,
                                                 std::string_view key);

/// Whether the folders [first, last) hold `root` under any spelling (relative, absolute, through ..).
bool holds_folder(std::vector<std::filesystem::path>::const_iterator first,
                  std::vector<std::filesystem::path>::const_iterator last, const std::filesystem::path& root);

}  // namespace chopsim::config_detail
