#pragma once
// The validation table: every measured case in ../shared/data/validation and ../shared/data/power predicted by
// chopsim (plus the seed papers' findings as checks), with sources and errors. `chopsim validate` regenerates
// docs/validation.md from it.

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/config/run_spec.hpp"

namespace chopsim {

/// What a case compares.
enum class ValidationMetric {
  iteration_time_s,
  tokens_per_s_per_gpu,
  peak_memory_bytes,
  stage_time_s,          ///< time of one pipeline-stage pass (Perseus stage profiles)
  stage_energy_j,        ///< energy of one pipeline-stage pass, one GPU
  relative_time,         ///< iteration time over that of a baseline run (Zeus power-limit sweeps)
  average_power_w,       ///< mean power per GPU over the run
  model_tflops_per_gpu,  ///< model FLOP/s per GPU in Megatron's convention (model_training_flops_per_token)
  mean_clock_hz,         ///< mean SM/GFX clock per GPU while kernels run
  peak_power_w,          ///< largest short-window power per GPU
  finding,               ///< a published qualitative finding: measured 1 (it holds), predicted 1 or 0
};

struct ValidationCase {
  std::string id;
  std::string group;   ///< "megatron_lm", "llm_foundry", ...
  std::string source;  ///< repository, path, commit, table: where the measurement was published
  ValidationMetric metric = ValidationMetric::iteration_time_s;
  double measured = 0.0;       ///< in the metric's SI unit
  double measured_mfu = -1.0;  ///< as published, when the source prints one (its own convention)
  /// model_tflops_per_gpu as Narayanan et al. (SC'21) count it, activation recomputation's extra forward included
  /// (validation_detail::narayanan_flops_per_token), instead of model_training_flops_per_token.
  bool flops_count_recompute = false;
  std::string notes;
  RunSpec run;
  /// Micro-batches to predict `run` with when the source does not print its own (a published throughput table shows
  /// tuned runs): the fastest counts and the prediction's notes name it. Empty: run.training.micro_batch alone.
  std::vector<int> micro_batch_choices;
  /// Why chopsim cannot predict this measured case (a model it cannot describe, a field the record lacks); empty when
  /// it can. Such a case is listed with the reason and not run.
  std::string not_modelled;
  /// (dimension, value) pairs the validation page groups errors by: source, GPU, dense/MoE, precision, GPU count.
  std::vector<std::pair<std::string, std::string>> categories;
  /// Power cases read a quantity from a simulation that several cases share: `probe` names the quantity (see
  /// validation.cpp), `shared_run` the simulation (cases with equal keys share one), `baseline_run` the simulation a
  /// relative_time divides by, `baseline` its RunSpec.
  std::string probe;
  std::string shared_run;
  std::string baseline_run;
  RunSpec baseline;
  double label = 0.0;     ///< the swept value (clock in MHz, power limit in W) for the tables
  double window_s = 0.0;  ///< a measurement over a window (the largest sensor reading): its length (s)
  /// The calibration profile of the case's GPU: the file of the profiles folder whose `hardware:` is
  /// run.hardware.name; empty when there is none. The case is then also predicted with `calibrated_run` (and
  /// `calibrated_baseline`): run and baseline with the profile applied (apply_calibration_profile).
  std::filesystem::path profile;
  RunSpec calibrated_run;
  RunSpec calibrated_baseline;
};

/// One prediction of a case.
struct ValidationPrediction {
  bool ok = false;         ///< predicted (false: the run failed or did not fit)
  std::string failure;     ///< why not, when !ok
  double predicted = 0.0;  ///< in the metric's SI unit
  double predicted_mfu = 0.0;
  double relative_error = 0.0;  ///< (predicted - measured) / measured; findings: predicted - 1
  std::string notes;            ///< findings: the predicted values behind the verdict
};

struct ValidationResult {
  ValidationCase validation_case;
  ValidationPrediction uncalibrated;  ///< with the hardware files of configs/hardware
  ValidationPrediction calibrated;    ///< with validation_case.profile; not ok when the case has none

  [[nodiscard]] bool has_profile() const { return !validation_case.profile.empty(); }
};

/// Builds the cases from `data_dir` (../shared/data) and the configs under `configs_dir`, and pairs each with the
/// calibration profile of its GPU from `profiles_dir` (default: calibration/profiles next to `configs_dir`; a
/// missing folder means no profiles). Cases whose data files are missing are left out; throws InputError on malformed
/// data or profiles.
[[nodiscard]] std::vector<ValidationCase> load_validation_cases(const std::filesystem::path& data_dir,
                                                                const std::filesystem::path& configs_dir,
                                                                const ModelRegistries& registries,
                                                                const std::filesystem::path& profiles_dir = {});

/// The profiles of `profiles_dir` by the hardware they were fitted on (calibration_profile_hardware); the first file
/// in name order wins when two name the same hardware.
[[nodiscard]] std::map<std::string, std::filesystem::path> calibration_profiles_by_hardware(
    const std::filesystem::path& profiles_dir);

/// Predicts every case, and again with its calibration profile where it has one (in parallel in this process, `jobs`
/// simulations at a time).
/// `on_progress(done, total)` is told after each simulation (from the jobs' threads). With `summaries_dir`, every
/// simulated throughput or step-time case also leaves its run's summary.json there as `<case id>.json` (calibrated:
/// `<case id>.calibrated.json`): where the predicted time goes, to see why a row is off.
[[nodiscard]] std::vector<ValidationResult> run_validation(
    const std::vector<ValidationCase>& cases, const ModelRegistries& registries, int jobs,
    const std::function<void(std::size_t done, std::size_t total)>& on_progress = {},
    const std::filesystem::path& summaries_dir = {});

/// The cases whose id or group contains any of `patterns` (comma-separated, case-sensitive), in their order; all
/// cases when `patterns` is empty (the result may be empty).
[[nodiscard]] std::vector<ValidationCase> select_validation_cases(std::vector<ValidationCase> cases,
                                                                  const std::string& patterns);

/// The Markdown page (docs/validation.md): tables per group with the uncalibrated and the calibrated prediction,
/// error statistics of both, sources.
void write_validation_markdown(std::ostream& out, const std::vector<ValidationResult>& results);

/// The same results as data (validation.csv, read by `chopsim report`): one row per case with its group, the unit
/// of the tables, measured and predicted values in that unit, the relative errors (fractions, (predicted -
/// measured) / measured), the calibrated prediction where a profile exists, status (ok, failed, not_modelled), the
/// reason and the source. Findings have measured 1 and predicted 1 (holds) or 0.
void write_validation_csv(std::ostream& out, const std::vector<ValidationResult>& results);

}  // namespace chopsim
