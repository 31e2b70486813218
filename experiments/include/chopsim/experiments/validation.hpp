#pragma once
// The validation table: every measured case in ../shared/data/validation and ../shared/data/power predicted by
// chopsim (plus the seed papers' findings as checks), with sources and errors. `chopsim validate` regenerates
// docs/validation.md from it.

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/run_spec.hpp"

namespace chopsim {

/// What a case compares.
enum class ValidationMetric {
  iteration_time_s,
  tokens_per_s_per_gpu,
  peak_memory_bytes,
  stage_time_s,     ///< time of one pipeline-stage pass (Perseus stage profiles)
  stage_energy_j,   ///< energy of one pipeline-stage pass, one GPU
  relative_time,    ///< iteration time over that of a baseline run (Zeus power-limit sweeps)
  average_power_w,  ///< mean power per GPU over the run
  finding,          ///< a published qualitative finding: measured 1 (it holds), predicted 1 or 0
};

struct ValidationCase {
  std::string id;
  std::string group;   ///< "megatron_lm", "llm_foundry", ...
  std::string source;  ///< repository, path, commit, table: where the measurement was published
  ValidationMetric metric = ValidationMetric::iteration_time_s;
  double measured = 0.0;       ///< in the metric's SI unit
  double measured_mfu = -1.0;  ///< as published, when the source prints one (its own convention)
  std::string notes;
  RunSpec run;
  /// Power cases read a quantity from a simulation that several cases share: `probe` names the quantity (see
  /// validation.cpp), `shared_run` the simulation (cases with equal keys share one), `baseline_run` the simulation a
  /// relative_time divides by, `baseline` its RunSpec.
  std::string probe;
  std::string shared_run;
  std::string baseline_run;
  RunSpec baseline;
  double label = 0.0;  ///< the swept value (clock in MHz, power limit in W) for the tables
};

struct ValidationResult {
  ValidationCase validation_case;
  bool ok = false;         ///< predicted (false: the run failed or did not fit)
  std::string failure;     ///< why not, when !ok
  double predicted = 0.0;  ///< in the metric's SI unit
  double predicted_mfu = 0.0;
  double relative_error = 0.0;  ///< (predicted - measured) / measured
};

/// Builds the cases from `data_dir` (../shared/data) and the configs under `configs_dir`.
/// Cases whose data files are missing are left out; throws InputError on malformed data.
[[nodiscard]] std::vector<ValidationCase> load_validation_cases(const std::filesystem::path& data_dir,
                                                                const std::filesystem::path& configs_dir,
                                                                const ModelRegistries& registries);

/// Predicts every case (in parallel, `jobs` at a time; each simulation runs in its own child process).
[[nodiscard]] std::vector<ValidationResult> run_validation(const std::vector<ValidationCase>& cases,
                                                           const ModelRegistries& registries, int jobs);

/// The Markdown page (docs/validation.md): tables per group, error statistics, sources.
void write_validation_markdown(std::ostream& out, const std::vector<ValidationResult>& results);

}  // namespace chopsim
