// Every shipped config runs end to end, its results obey the identities a prediction must satisfy, and they
// match the reference values in tests/golden/ within a tolerance.
//
// Why goldens at all: the physics tests pin each model in isolation; these pin the shipped predictions as a
// whole, so that a change in any model that moves them is seen and explained. Tolerance 2 %: predictions are
// deterministic (bit-identical on one machine), the margin only absorbs floating-point differences between
// compilers and libm versions. When a change is intended, run scripts/update-goldens.sh and say why in the commit.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

constexpr double kGoldenTolerance = 0.02;

std::vector<std::filesystem::path> shipped_configs() {
  std::vector<std::filesystem::path> configs;
  for (const auto& dir : {test::configs_dir(), test::configs_dir() / "validation"})
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".yaml") configs.push_back(entry.path());
  std::sort(configs.begin(), configs.end());
  return configs;
}

class ShippedConfig : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(ShippedConfig, RunsObeysIdentitiesAndMatchesGolden) {
  const auto config = GetParam();
  const auto registries = ModelRegistries::with_builtins();
  const RunSpec run = load_run_config(config, default_search_path(config), registries);
  const RunReport report = run_simulation(run, registries);

  ASSERT_TRUE(report.memory.fits()) << config << " must fit in memory";
  ASSERT_TRUE(report.simulated);
  // The breakdown charges every instant of every GPU once, so it sums to the iteration time.
  EXPECT_NEAR(report.breakdown.total_s(), report.iteration_time_s, 1e-9 * report.iteration_time_s);
  EXPECT_NEAR(report.tokens_per_s * report.iteration_time_s, run.training.tokens_per_iteration(),
              1e-9 * run.training.tokens_per_iteration());
  EXPECT_GT(report.mfu, 0.0);
  EXPECT_LT(report.mfu, 1.0);
  EXPECT_GT(report.breakdown.compute_s, 0.0);

  const auto golden_file = test::source_dir() / "tests" / "golden" / (config.stem().string() + ".json");
  ASSERT_TRUE(std::filesystem::exists(golden_file))
      << "no golden for " << config << "; run scripts/update-goldens.sh and commit tests/golden/";
  const YAML::Node golden = YAML::LoadFile(golden_file.string());
  auto expect_close = [&](const char* key, double actual) {
    const double expected = golden[key].as<double>();
    EXPECT_NEAR(actual, expected, kGoldenTolerance * std::abs(expected))
        << key << " of " << config.filename() << " moved from the golden value; if intended, run "
        << "scripts/update-goldens.sh and explain the change";
  };
  expect_close("iteration_time_s", report.iteration_time_s);
  expect_close("tokens_per_s", report.tokens_per_s);
  expect_close("mfu", report.mfu);
  expect_close("peak_bytes_per_gpu", report.memory.total_bytes);
}

std::string config_test_name(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

// Transformer Engine's userbuffers (training.overlap.tp) on the shipped CharLLM-PPT run that uses them
// (ub_tp_comm_overlap true): they can only hide tensor-parallel communication that was exposed, so the iteration
// gets shorter by at most the exposed tp time of the run without them, and the tp communication left exposed shrinks.
// (Here tp 8 makes each GEMM about as short as its collective, so only part of it can hide.)
TEST(Userbuffers, HideAtMostTheExposedTensorParallelCommunication) {
  const auto config = test::configs_dir() / "llama3-70b-scaleout-h100.yaml";
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  ASSERT_TRUE(run.training.overlap.tp && run.parallelism.sequence_parallel);
  const RunReport with = run_simulation(run, registries);
  run.training.overlap.tp = false;
  const RunReport without = run_simulation(run, registries);
  const auto tp = static_cast<std::size_t>(CommCategory::tp);
  const double exposed_without = without.breakdown.exposed_comm_s[tp];
  const double saved = without.iteration_time_s - with.iteration_time_s;
  EXPECT_GT(exposed_without, 0.05 * without.iteration_time_s);  // the case is worth testing: tp comm is exposed
  EXPECT_GT(saved, 0.0);
  EXPECT_LE(saved, exposed_without * (1.0 + 1e-9));
  EXPECT_LT(with.breakdown.exposed_comm_s[tp], exposed_without);
}

INSTANTIATE_TEST_SUITE_P(Configs, ShippedConfig, ::testing::ValuesIn(shipped_configs()), config_test_name);

}  // namespace
}  // namespace chopsim
