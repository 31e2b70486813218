// Calibration profiles (`chopsim calibrate` output; docs/calibration.md "The profile") applied to runs. A profile is
// data shaped like the sections of a hardware file it replaces, so it is decoded by the hardware decoder itself:
//
//   profile_version: 1              # must be kCalibrationProfileVersion
//   hardware: H100-SXM5-80GB        # the hardware file it was fitted against: must be the run's hardware
//   kernels: {...}                  # hardware-file keys and units: override the run's hardware
//   intra_node_link: {...}          #   "
//   nic: {...}                      #   "
//   power_w: {idle: ...}            #   "  (idle only: the TDP is the datasheet's)
//   power_model: {...}              #   "
//   governor: {...}                 #   "
//   collectives: {...}              # the run's `collectives:` keys (the run's own section wins)
//   telemetry_fit: {...}            # informational: checked, not applied
//
// Precedence in a run: hardware file < profile < the run's `hardware:` overrides; collective defaults < profile <
// the run's `collectives:` section.

#include <yaml-cpp/yaml.h>

#include <array>
#include <string>
#include <system_error>

#include "chopsim/calibration/profile.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/decode.hpp"

namespace chopsim::config_detail {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 10> kProfileKeys = {
    "profile_version", "hardware",    "kernels",  "intra_node_link", "nic",
    "power_w",         "power_model", "governor", "collectives",     "telemetry_fit"};

/// Rejects top-level keys other than kProfileKeys before the hardware decoder sees the file (it would otherwise accept
/// every hardware key, e.g. peak_tflops, which a profile may not change).
void reject_foreign_sections(const YAML::Node& root, const std::string& shown) {
  std::vector<std::string> valid(kProfileKeys.begin(), kProfileKeys.end());
  for (const auto& entry : root) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    bool known = false;
    for (const auto& k : kProfileKeys) known = known || key == k;
    if (known) continue;
    const std::string suggestion = closest_match(key, valid);
    throw InputError(location_of(entry.first, shown), key,
                     "unknown key '" + key + "' in a calibration profile; valid keys: " + join(valid),
                     suggestion.empty()
                         ? "a profile overrides only kernels, intra_node_link, nic, power_w.idle, "
                           "power_model and governor of the hardware file and the run's collectives; put other "
                           "changes in the run's 'hardware:' mapping (docs/configs.md)"
                         : "did you mean '" + suggestion + "'?");
  }
}

void decode_telemetry_fit(Mapping& t) {
  double ignored = 0.0;
  for (const char* key :
       {"idle_power_w", "load_power_w", "power_at_zero_activity_w", "power_per_activity_w", "thermal_ambient_c",
        "thermal_resistance_k_per_w", "thermal_time_constant_s", "thermal_capacitance_j_per_k", "thermal_fit_points"})
    t.read(key, ignored, 1.0, RealRule{}, "");
  std::string sensor;
  t.read_choice<std::string>("thermal_sensor", sensor, {{"junction", "junction"}, {"edge", "edge"}});
}

}  // namespace

std::string apply_profile(const fs::path& file, const std::string& shown_reference, HardwareSpec* hardware,
                          CollectiveParams* collectives, KeyLocations* locations) {
  return apply_profile_root(load_yaml_file(file, "calibration profile"), display_path(file), shown_reference, hardware,
                            collectives, locations);
}

std::string apply_profile_root(const YAML::Node& root, const std::string& shown, const std::string& shown_reference,
                               HardwareSpec* hardware, CollectiveParams* collectives, KeyLocations* locations) {
  Mapping top(root, Scope{shown, "", "hardware", locations});
  reject_foreign_sections(root, shown);

  int version = 0;
  top.read("profile_version", version, kPositiveInt, Need::required);
  if (version != kCalibrationProfileVersion)
    top.fail("profile_version",
             "profile_version " + std::to_string(version) + " is not supported; this chopsim reads version " +
                 std::to_string(kCalibrationProfileVersion),
             "regenerate the profile with this chopsim's `chopsim calibrate` (docs/calibration.md)");
  std::string fitted_on;
  top.read("hardware", fitted_on, Need::required);
  if (hardware != nullptr && fitted_on != hardware->name)
    top.fail("hardware",
             "the profile was fitted on " + fitted_on + ", but the run" +
                 (shown_reference.empty() ? std::string() : " (" + shown_reference + ")") + " uses hardware '" +
                 hardware->name + "'",
             "use a profile fitted on " + hardware->name + " (chopsim calibrate ... --hardware " + hardware->name +
                 "), run on " + fitted_on + ", or remove 'calibration'");

  // A profile measures the idle power; the power limit is the datasheet's (or the run's `power:` section's).
  if (top.has("power_w")) {
    const YAML::Node power = root["power_w"];
    if (power.IsMap() && power["tdp"])
      throw InputError(location_of(power["tdp"], shown), "power_w.tdp",
                       "a calibration profile may not change the TDP (a datasheet figure)",
                       "remove power_w.tdp from the profile; set a power limit with the run's power.power_cap_w");
  }
  // kernels, intra_node_link, nic, power_w, power_model: the hardware decoder with nothing required, as a run's
  // override mapping.
  HardwareSpec scratch;
  apply_hardware(top, hardware != nullptr ? *hardware : scratch, Need::optional);

  CollectiveParams scratch_collectives;
  if (top.has("collectives")) {
    Mapping c(top.value("collectives"), Scope{shown, "collectives", "collectives", locations});
    decode_collectives(c, collectives != nullptr ? *collectives : scratch_collectives);
    c.finish();
  }
  if (top.has("telemetry_fit")) {
    Mapping t = top.child("telemetry_fit");
    decode_telemetry_fit(t);
    t.finish();
  }
  top.finish();
  return fitted_on;
}

fs::path find_profile(const std::string& text, const ConfigSearchPath& search, const fs::path& run_dir,
                      const Mapping& owner, std::string_view key) {
  std::error_code error;
  const fs::path given(text);
  if (given.is_absolute()) {
    if (fs::is_regular_file(given, error)) return given;
    owner.fail(key, "calibration profile not found: looked at " + given.lexically_normal().string(),
               "check the path (profiles are written by `chopsim calibrate -o FILE`)");
  }
  // The run's folder, each configs root, and each root's parent (the project folder holding configs/ and
  // calibration/, so that `calibration/profiles/h100.yaml` works from configs/validation/ too).
  std::vector<fs::path> candidates{(run_dir.empty() ? fs::path(".") : run_dir) / given};
  for (const auto& root : search.roots) {
    candidates.push_back(root / given);
    candidates.push_back(root.parent_path() / given);
  }
  std::vector<std::string> looked;
  for (const auto& candidate : candidates) {
    const fs::path normal = candidate.lexically_normal();
    if (fs::is_regular_file(normal, error)) return normal;
    looked.push_back(display_path(normal));
  }
  owner.fail(key, "calibration profile '" + text + "' not found: looked at " + join(looked, ", "),
             "give a path relative to the run file's folder, to the configs folder or to the folder holding it "
             "(e.g. calibration: calibration/profiles/h100.yaml)");
}

}  // namespace chopsim::config_detail

namespace chopsim {

void apply_calibration_profile(RunSpec& run, const std::filesystem::path& profile) {
  using namespace config_detail;
  KeyLocations locations;
  apply_profile(profile, run.source.empty() ? std::string() : display_path(run.source), &run.hardware, &run.collectives,
                &locations);
  check_hardware(run.hardware, Locator(SourceLocation{display_path(profile)}, &locations), "hardware.");
  run.calibration = profile;
}

void apply_calibration_profile_text(RunSpec& run, const std::string& profile_yaml, const std::filesystem::path& shown) {
  using namespace config_detail;
  KeyLocations locations;
  YAML::Node root;
  try {
    root = YAML::Load(profile_yaml);
  } catch (const YAML::Exception& e) {
    throw InputError({display_path(shown), e.mark.is_null() ? 0 : e.mark.line + 1}, "", "YAML syntax error: " + e.msg,
                     "report this: chopsim wrote a profile it cannot read");
  }
  apply_profile_root(root, display_path(shown), run.source.empty() ? std::string() : display_path(run.source),
                     &run.hardware, &run.collectives, &locations);
  check_hardware(run.hardware, Locator(SourceLocation{display_path(shown)}, &locations), "hardware.");
  run.calibration = shown;
}

std::string calibration_profile_hardware(const std::filesystem::path& profile) {
  return config_detail::apply_profile(profile, "", nullptr, nullptr, nullptr);
}

}  // namespace chopsim
