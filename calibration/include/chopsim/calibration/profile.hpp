#pragma once
// `chopsim calibrate`: measured data in, a calibration profile (YAML shaped like the hardware file's sections it
// overrides) and a Markdown fit report out. docs/calibration.md describes both.

#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chopsim/calibration/fits.hpp"

namespace chopsim {

/// Version of the profile layout (the `profile_version` key); a config hook should reject others.
inline constexpr int kCalibrationProfileVersion = 1;

struct CalibrationResult {
  HardwareReference hardware;
  std::vector<InputFile> inputs;
  KernelFitOptions kernel_options;
  std::vector<KernelClassFit> kernels;
  LaunchOverheadFit launch;
  InterferenceFit interference;
  HostLaunchFit host_launch;
  CollectiveCalibration collectives;
  TelemetryFit telemetry;
  DynamicPowerFit power_model;
  RunPowerFit run_power;     ///< `--power-runs`: filled by the caller's CalibrateOptions::refine
  std::string report_label;  ///< where the report is written, as named in the profile's header ("" = none)
};

/// Sets options.clock_hz (and clock_source) to the mean SM/GFX clock of the telemetry readings taken while the
/// measurements' kernels ran, when telemetry of the same run covers them (Unix-epoch clocks on both); leaves the
/// options alone otherwise. A power-capped GPU runs below its rated clock: an efficiency fitted at the rated clock
/// would count that loss twice, once in the efficiency and once in the simulated clock.
void measurement_clock_from_telemetry(const MeasurementSet& measurements, KernelFitOptions& options);

/// Runs every fit on `measurements`.
[[nodiscard]] CalibrationResult calibrate(const MeasurementSet& measurements, const HardwareReference& hardware,
                                          const KernelFitOptions& kernel_options, NodeLinks node_links);

/// The profile YAML. Deterministic: the same result gives the same bytes (numbers with 4 significant digits).
[[nodiscard]] std::string render_profile_yaml(const CalibrationResult& result);
/// The fit report (Markdown): per class and per collective group the points, R², median and p90 relative residual,
/// fitted values and the hardware-file values they replace.
[[nodiscard]] std::string render_fit_report(const CalibrationResult& result);

struct CalibrateOptions {
  std::vector<std::filesystem::path> inputs;
  std::string hardware;  ///< name (configs_dir/hardware/NAME.yaml) or path
  std::filesystem::path configs_dir = "configs";
  std::filesystem::path output;                 ///< the profile
  std::optional<std::filesystem::path> report;  ///< the fit report
  double clock_hz = 0.0;                        ///< see KernelFitOptions::clock_hz
  bool held_clock = false;                      ///< see KernelFitOptions::held_clock
  std::set<KernelClass> keep_asymptote;         ///< see KernelFitOptions::keep_asymptote
  double min_kernel_s = 10e-6;                  ///< see KernelFitOptions::min_duration_s
  double max_gap_s = 100e-6;                    ///< see KernelFitOptions::max_gap_s
  int gpus_per_node = 8;
  std::optional<NodeLinks> node_links;  ///< default: HardwareReference::default_node_links()
  /// Told after each input is read (LoadOptions::on_input).
  std::function<void(std::size_t done, std::size_t total, const std::filesystem::path& input)> on_input;
  /// Called with the fitted result and the measurements it was fitted from before anything is written: a layer
  /// above may refine the result (the app fits the power model to whole simulated runs, `--power-runs`).
  std::function<void(CalibrationResult& result, const MeasurementSet& measurements)> refine;
};

/// Loads, fits and writes the profile (and report) through temporary files renamed together at the end: on any
/// error nothing is written. Throws InputError for bad inputs or options.
CalibrationResult run_calibration(const CalibrateOptions& options);

}  // namespace chopsim
