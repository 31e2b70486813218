#pragma once
// `chopsim calibrate --power-runs RUNS.yaml`: the power model fitted to whole measured runs. A GPU at its power
// limit trades clock for power, so the mean clock a run held says how much power its load draws per unit of g(f),
// and runs of different loads (micro-batches, models) say how that differs between loads and how steeply g(f) rises.
// The fit simulates each run with the profile being written and searches the voltage knee and the busy and
// tensor-core activity weights of the power model (models/power.hpp) for the measured mean power and mean clock.
// docs/calibration.md, "Power from whole runs".

#include <filesystem>
#include <string>
#include <vector>

#include "chopsim/calibration/profile.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/config/registries.hpp"

namespace chopsim {

/// One measured run: its run config and when it ran on the telemetry's clock.
struct PowerFitRun {
  std::string name;
  std::filesystem::path config;     ///< resolved against the runs file's folder
  double from_s = 0.0, to_s = 0.0;  ///< seconds since the Unix epoch
  SourceLocation where;             ///< of the run's entry
  std::string key;                  ///< "runs[2]", its path in messages
};

struct PowerFitRuns {
  std::filesystem::path file;
  std::vector<PowerFitRun> runs;
};

/// Reads a runs file (docs/calibration.md):
///   runs:
///     - name: mb1
///       config: ../../configs/validation/h200-llama3.2-1b-eager-mb1.yaml   # relative to this file
///       from: "2026-11-26 03:20:54.36"   # UTC, or seconds since the Unix epoch
///       to: "2026-11-26 03:20:55.34"
/// Throws InputError naming the file and key for unknown keys, missing configs, unreadable times, to <= from and
/// duplicated names.
[[nodiscard]] PowerFitRuns load_power_fit_runs(const std::filesystem::path& file);

/// Fits result.run_power (and lists the runs file and run configs in result.inputs): each run is simulated with
/// the profile `result` renders (shown in messages as `profile_name`); its measured mean power and clock are the
/// telemetry readings of `measurements` in its window. Throws InputError when a window holds no reading with a power
/// and a clock, a run's GPU is not result's hardware, a run names a calibration profile of its own or simulates no
/// power (power dynamics off), or there are fewer than two runs.
void fit_power_to_runs(CalibrationResult& result, const MeasurementSet& measurements, const PowerFitRuns& runs,
                       const ModelRegistries& registries, const std::string& profile_name);

}  // namespace chopsim
