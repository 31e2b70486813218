// `chopsim calibrate --power-runs`: the runs file, and what the fit refuses. The fit itself is checked end to end on
// the H200 probe: calibration_cli compares calibration/profiles/h200.yaml with what calibrate makes, and
// EagerH200.StepTimePowerClockAndPeaksWithAndWithoutTheProfile the profile's runs with the measurement.

#include "chopsim/experiments/power_fit.hpp"

#include <gtest/gtest.h>

#include "chopsim/calibration/hardware_reference.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

class PowerFitRunsFile : public test::TempDirTest {
 protected:
  /// A runs file beside a copy of a shipped H200 run config.
  std::filesystem::path runs_file(const std::string& runs) {
    std::filesystem::copy_file(test::configs_dir() / "validation" / "h200-llama3.2-1b-eager-mb1.yaml",
                               dir_ / "mb1.yaml", std::filesystem::copy_options::overwrite_existing);
    return write("runs.yaml", "runs:\n" + runs);
  }
};

TEST_F(PowerFitRunsFile, TimesAreReadExactlyAndConfigsBesideTheFile) {
  const PowerFitRuns runs = load_power_fit_runs(
      runs_file("  - {name: a, config: mb1.yaml, from: \"2026-11-26 03:20:54.371\", to: \"2026-11-26T03:20:55.337Z\"}\n"
                "  - {name: b, config: mb1.yaml, from: 1795663254.5, to: 1795663255}\n"));
  ASSERT_EQ(runs.runs.size(), 2u);
  // 2026-11-26 03:20:54 UTC = 1795663254 s since the epoch (date -u -d '2026-11-26 03:20:54' +%s).
  EXPECT_DOUBLE_EQ(runs.runs[0].from_s, 1795663254.371);
  EXPECT_DOUBLE_EQ(runs.runs[0].to_s, 1795663255.337);
  EXPECT_DOUBLE_EQ(runs.runs[1].from_s, 1795663254.5);
  EXPECT_EQ(runs.runs[0].config, dir_ / "mb1.yaml");
  EXPECT_EQ(runs.runs[1].name, "b");
}

TEST_F(PowerFitRunsFile, BadEntriesNameTheRunAndKey) {
  const std::string ok_times = "from: 1795663254, to: 1795663255";
  struct Case {
    std::string runs, expected;
  };
  const Case cases[] = {
      {"  - {name: a, config: mb1.yaml, " + ok_times + ", window: 3}\n", "window"},
      {"  - {name: a, config: nowhere.yaml, " + ok_times + "}\n", "no run config at"},
      {"  - {name: a, config: mb1.yaml, from: yesterday, to: 1795663255}\n", "is not a time"},
      {"  - {name: a, config: mb1.yaml, from: 1795663255, to: 1795663254}\n", "ends before it starts"},
      {"  - {name: a, config: mb1.yaml, " + ok_times + "}\n  - {name: a, config: mb1.yaml, " + ok_times + "}\n",
       "two runs are named 'a'"},
      {"  - {config: mb1.yaml, " + ok_times + "}\n", "name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.runs);
    const std::string message = test::input_error([&] { (void)load_power_fit_runs(runs_file(c.runs)); });
    EXPECT_NE(message.find("runs.yaml"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
  EXPECT_NE(
      test::input_error([&] { (void)load_power_fit_runs(write("empty.yaml", "runs: []\n")); }).find("non-empty list"),
      std::string::npos);
}

TEST_F(PowerFitRunsFile, AWindowWithoutTelemetryIsRefusedBeforeAnySimulation) {
  const PowerFitRuns runs =
      load_power_fit_runs(runs_file("  - {name: a, config: mb1.yaml, from: 1795663254, to: 1795663255}\n"));
  CalibrationResult result;
  result.hardware = load_hardware_reference("H200-SXM-141GB", test::configs_dir());
  MeasurementSet measurements;  // readings an hour before the window
  measurements.telemetry.push_back({0, "0", 1795659654.0, 690.0, 1.0, 1700e6, 55.0, 60.0});
  const auto registries = ModelRegistries::with_builtins();
  const std::string message =
      test::input_error([&] { fit_power_to_runs(result, measurements, runs, registries, "profile.yaml"); });
  EXPECT_NE(message.find("no telemetry reading"), std::string::npos) << message;
  EXPECT_NE(message.find("runs[0]"), std::string::npos) << message;
  EXPECT_FALSE(result.run_power.fitted);
}

TEST_F(PowerFitRunsFile, OneRunCannotFitTheKneeAndTheWeights) {
  const PowerFitRuns runs =
      load_power_fit_runs(runs_file("  - {name: a, config: mb1.yaml, from: 1795663254, to: 1795663255}\n"));
  CalibrationResult result;
  result.hardware = load_hardware_reference("H200-SXM-141GB", test::configs_dir());
  MeasurementSet measurements;  // one reading inside the window
  measurements.telemetry.push_back({0, "0", 1795663254.5, 690.0, 1.0, 1700e6, 55.0, 60.0});
  const auto registries = ModelRegistries::with_builtins();
  const std::string message =
      test::input_error([&] { fit_power_to_runs(result, measurements, runs, registries, "profile.yaml"); });
  EXPECT_NE(message.find("at least two runs"), std::string::npos) << message;
  EXPECT_FALSE(result.run_power.fitted);
}

}  // namespace
}  // namespace chopsim
