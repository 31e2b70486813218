// `chopsim validate` with and without calibration: every case whose GPU has a profile in calibration/profiles is
// predicted twice, with the profile applied exactly as the run key applies it, and the page shows both.

#include "chopsim/experiments/validation.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

#include "chopsim/experiments/config.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

fs::path profiles_dir() { return test::source_dir() / "calibration" / "profiles"; }

TEST(Validation, ProfilesAreFoundByTheHardwareTheyWereFittedOn) {
  const auto profiles = calibration_profiles_by_hardware(profiles_dir());
  ASSERT_EQ(profiles.count("H100-SXM5-80GB"), 1u);
  ASSERT_EQ(profiles.count("MI300X"), 1u);
  EXPECT_EQ(profiles.at("H100-SXM5-80GB").filename(), "h100.yaml");
  EXPECT_EQ(profiles.at("MI300X").filename(), "mi300x.yaml");
  EXPECT_EQ(profiles.count("A100-SXM4-80GB"), 0u);
  EXPECT_TRUE(calibration_profiles_by_hardware(test::source_dir() / "no-such-folder").empty());
}

TEST(Validation, EveryCaseOnAProfiledGpuGetsTheCalibratedRun) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_dev_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  const YAML::Node h100 = YAML::LoadFile((profiles_dir() / "h100.yaml").string());
  std::set<std::string> groups_with_profile;
  for (const ValidationCase& c : cases) {
    const std::string& gpu = c.run.hardware.name;
    const bool profiled = gpu == "H100-SXM5-80GB" || gpu == "MI300X";
    EXPECT_EQ(!c.profile.empty(), profiled) << c.id << " on " << gpu;
    if (!profiled) continue;
    groups_with_profile.insert(c.group);
    EXPECT_EQ(c.calibrated_run.calibration, c.profile);
    // The calibrated run is the run with only the profile's keys changed.
    EXPECT_EQ(c.calibrated_run.model.layers, c.run.model.layers);
    EXPECT_EQ(c.calibrated_run.hardware.compute.peak_flops_per_s, c.run.hardware.compute.peak_flops_per_s);
    if (gpu == "H100-SXM5-80GB") {
      EXPECT_EQ(c.calibrated_run.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)].compute,
                h100["kernels"]["efficiency"]["gemm"]["compute"].as<double>())
          << c.id;
      EXPECT_EQ(c.calibrated_run.hardware.intra_node_link_efficiency,
                h100["intra_node_link"]["efficiency"].as<double>());
    }
    if (!c.baseline_run.empty()) {
      EXPECT_EQ(c.calibrated_baseline.calibration, c.profile) << c.id;
    }
  }
  // The H100 groups the brief keeps: Megatron step time and memory, llm-foundry, and the seed findings.
  for (const char* group : {"megatron_lm", "llm_foundry", "seed_findings"})
    EXPECT_EQ(groups_with_profile.count(group), 1u) << group;
  EXPECT_EQ(groups_with_profile.count("perseus_a100"), 0u);
}

TEST(Validation, BothPredictionsAreMadeAndShown) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto registries = ModelRegistries::with_builtins();
  auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  std::vector<ValidationCase> chosen;
  for (const ValidationCase& c : cases)
    if (c.group == "megatron_lm" || c.group == "megatron_lm_a100") chosen.push_back(c);
  ASSERT_EQ(chosen.size(), 8u);
  const auto results = run_validation(chosen, registries, 2);
  for (const ValidationResult& r : results) {
    const ValidationCase& c = r.validation_case;
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    if (!r.has_profile()) {
      EXPECT_FALSE(r.calibrated.ok);
      continue;
    }
    ASSERT_TRUE(r.calibrated.ok) << r.calibrated.failure;
    if (c.metric == ValidationMetric::peak_memory_bytes) {
      // A profile holds no memory keys: the memory estimate is the same.
      EXPECT_EQ(r.calibrated.predicted, r.uncalibrated.predicted);
    } else {
      // Other kernel efficiencies, launch overhead and link efficiency: another step time.
      EXPECT_NE(r.calibrated.predicted, r.uncalibrated.predicted);
      EXPECT_NEAR(r.calibrated.relative_error, (r.calibrated.predicted - c.measured) / c.measured, 1e-12);
    }
  }
  std::ostringstream page;
  write_validation_markdown(page, results);
  const std::string text = page.str();
  EXPECT_NE(text.find("| calibrated | error |"), std::string::npos);
  EXPECT_NE(text.find("calibration profile calibration/profiles/h100.yaml"), std::string::npos);
  EXPECT_NE(text.find("No calibration profile in calibration/profiles is fitted on A100-SXM4-80GB"), std::string::npos);
  EXPECT_NE(text.find("| megatron_lm_a100 | s | 2 | 2 |"), std::string::npos);
}

}  // namespace
}  // namespace chopsim
