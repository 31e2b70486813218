#pragma once
// Procurement studies (issue 17; docs/studies.md): one training job on several candidate systems. Each candidate
// runs the study's sweep (the job's base run config with the candidate's hardware and cluster set) to find its best
// parallelism mix and micro-batch; its best point is then priced from a cost catalog: time to train, GPU and
// facility energy, cost, tokens per dollar and per kW, racks and the facility power to provision.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chopsim/experiments/cost.hpp"
#include "chopsim/experiments/sweep.hpp"

namespace chopsim {

struct CostCatalog {
  FacilityCost facility;
  std::map<std::string, GpuCost> gpus;  ///< by hardware name (configs/hardware/NAME.yaml)
};

struct StudyCandidate {
  std::string name;
  std::vector<ConfigOverride> set;  ///< hardware, cluster, ... over the sweep's base
  std::string hardware;             ///< the hardware `set` names: its catalog entry
  std::optional<GpuCost> cost;      ///< the catalog entry of its hardware with the candidate's `cost:` keys over it
  SourceLocation where;
};

struct StudySpec {
  std::filesystem::path file;
  SweepSpec sweep;             ///< the job and the search every candidate runs
  double tokens_to_train = 0;  ///< the goal (tokens)
  CostCatalog catalog;         ///< the catalog file with the study's `facility:` keys over it
  std::filesystem::path catalog_file;
  std::vector<StudyCandidate> candidates;
};

/// Reads a study file and its catalog; InputError with file:line for unknown keys, a missing goal, non-numeric or
/// negative prices, a candidate without a name or whose hardware the catalog does not price.
[[nodiscard]] StudySpec load_study(const std::filesystem::path& file);

/// What one candidate comes to at its best point. Energies in J, powers in W, times in s, costs in USD.
struct CandidateResult {
  std::string name;
  std::string hardware;
  int gpus = 0, nodes = 0;
  bool feasible = false;  ///< some point of its sweep ran (ok); false: every point was invalid, oom or failed
  std::string why_not;    ///< !feasible: the count of points per status
  PointResult best;       ///< its best point by the sweep's objective
  double tokens_per_s = 0.0;
  double time_to_train_s = 0.0;
  double gpu_energy_j = 0.0;       ///< the GPUs' energy over the training (mean power x GPUs x time)
  double facility_energy_j = 0.0;  ///< (GPU + node overhead power) x PUE x time
  double cost_usd = 0.0;           ///< rental, or amortised capex + facility electricity
  double tokens_per_dollar = 0.0;
  double facility_power_w = 0.0;  ///< to provision: (GPUs at their largest 100 ms power + node overhead) x PUE
  double tokens_per_s_per_kw = 0.0;
  int racks = 0;  ///< by space (gpus_per_rack) or by power (rack_power_kw), whichever needs more
  std::filesystem::path sweep_dir;
};

/// The cost arithmetic of one candidate from its best point's figures (docs/studies.md; tested by hand).
[[nodiscard]] CandidateResult price_candidate(const std::string& name, const std::string& hardware, int gpus, int nodes,
                                              const PointResult& best, double tokens_to_train, const GpuCost& cost,
                                              const FacilityCost& facility);

struct StudyOptions {
  std::filesystem::path out_dir;  ///< results.csv, and one sweep folder per candidate (resumable)
  int jobs = 1;
  std::function<void(const std::string& candidate, const PointResult&, std::size_t done, std::size_t total)> on_point;
  /// Runs one candidate's sweep; empty = run_sweep in this process. Returning nothing means another process holds
  /// the merged result (an MPI rank other than 0: `chopsim study --mpi`): the study is then not priced here.
  std::function<std::optional<SweepResult>(const SweepSpec&, const SweepOptions&)> run_candidate_sweep;
};

struct StudyResult {
  std::vector<CandidateResult> candidates;  ///< in the study's order
  std::filesystem::path results_csv;
  /// False on a process that ran only its share of the sweeps (an MPI rank other than 0): no candidates, no file.
  bool priced = true;
};

/// Runs every candidate's sweep (resuming what its folder holds), prices each best point and writes results.csv
/// (byte-identical whatever `jobs`).
[[nodiscard]] StudyResult run_study(const StudySpec& spec, const ConfigSearchPath& search,
                                    const ModelRegistries& registries, const StudyOptions& options);

/// The terminal's answer: one line per candidate, ranked by tokens per dollar.
void print_study_summary(std::ostream& out, const StudySpec& spec, const StudyResult& result);

}  // namespace chopsim
