#pragma once
// Private to the config decoder: the component decoders (hardware, model, cluster), their own
// consistency checks, and the cross-field rules of a run with key locations.

#include <string_view>

#include "chopsim/experiments/run_spec.hpp"
#include "config_yaml.hpp"

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

}  // namespace chopsim::config_detail
