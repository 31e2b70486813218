#pragma once
// What-if sweeps (issue 17; docs/sweeps.md): a base run config and axes over any of its keys, expanded into points,
// validated and pruned by the memory model before anything runs, simulated in parallel (TBB), and kept in a
// resumable SQLite store beside a results.csv.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/experiments/cost.hpp"
#include "chopsim/experiments/run.hpp"

namespace chopsim {

/// One axis of the grid: a single key, or several keys zipped (advanced together). values[step][k] is the YAML text
/// of keys[k] at that step.
struct SweepAxis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  SourceLocation where;
};

/// A constraint every point must meet ("tp * pp <= 32"): integers and axis keys (dotted, or their last part when
/// that names one axis) with + - * / %, comparisons, && || ! and parentheses.
struct SweepConstraint {
  std::string text;
  SourceLocation where;
};

/// What "best" means. cost_per_token needs the sweep's `cost:` (and `facility:` for owned GPUs), time_to_train its
/// `goal_tokens:`; both take each point's GPU count into account.
enum class SweepObjective { tokens_per_s, energy_per_token, mfu, cost_per_token, time_to_train };

struct SweepSpec {
  std::filesystem::path file;
  std::filesystem::path base;         ///< the run config every point starts from
  std::vector<ConfigOverride> fixed;  ///< `set:` keys every point overrides alike (e.g. a larger global batch)
  std::vector<SweepAxis> axes;
  std::vector<SweepConstraint> constraints;
  bool auto_dp = false;  ///< parallelism.dp: auto for every point (what tp * pp * cp leave of the GPUs)
  SweepObjective objective = SweepObjective::tokens_per_s;
  SourceLocation objective_where;     ///< where the objective was chosen (the file's key, or the command line)
  std::optional<GpuCost> cost;        ///< `cost:`: a GPU's price, for cost_per_token
  FacilityCost facility;              ///< `facility:`: PUE and electricity, for owned GPUs' cost per token
  std::optional<double> goal_tokens;  ///< `goal_tokens:`: tokens to train, for time_to_train
};

/// Reads a sweep file; InputError with file:line for unknown keys, empty axes, non-scalar values, a constraint that
/// does not parse or names no axis.
[[nodiscard]] SweepSpec load_sweep(const std::filesystem::path& file);

/// The objectives' names, as a sweep file and `--objective` take them (tokens_per_s, ...).
[[nodiscard]] std::vector<std::string> sweep_objective_names();
/// Sets the objective by its name (`chopsim sweep --objective NAME`); InputError listing the valid names.
void choose_objective(SweepSpec& spec, const std::string& name, const SourceLocation& where);
/// InputError when the objective needs what the sweep does not give (cost_per_token without `cost:`,
/// time_to_train without `goal_tokens:`); run_sweep checks it before any point runs.
void check_objective_inputs(const SweepSpec& spec);

struct SweepPoint {
  int index = 0;  ///< in expansion order: the grid with the last axis fastest
  std::vector<ConfigOverride> overrides;
  std::vector<std::pair<std::string, std::string>> values;  ///< axis key -> YAML text, in axis order
};

/// Every point of the grid, in order, constraints not yet applied.
[[nodiscard]] std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

/// The keys of every axis, in axis order (a zipped axis gives several).
[[nodiscard]] std::vector<std::string> axis_keys(const std::vector<SweepAxis>& axes);

/// Evaluates constraint `text` on `point` (InputError naming `where` for an unknown name or a non-numeric value).
[[nodiscard]] bool meets_constraint(const SweepConstraint& constraint, const SweepPoint& point);

enum class PointStatus { ok, oom, invalid, failed };
[[nodiscard]] const char* to_string(PointStatus status);

/// The figures a point keeps (every one also in summary.json, under these names).
struct PointFigures {
  double iteration_time_s = 0.0;
  double tokens_per_s = 0.0;
  double mfu = 0.0;
  double model_tflops_per_gpu = 0.0;
  double peak_bytes_per_gpu = 0.0;
  double capacity_bytes_per_gpu = 0.0;
  double compute_s = 0.0;
  double exposed_comm_s = 0.0;
  double pipeline_bubble_s = 0.0;
  double idle_s = 0.0;
  double mean_power_w = 0.0;
  double peak_power_1ms_w = 0.0;
  double peak_power_100ms_w = 0.0;
  double energy_per_token_j = 0.0;
  double clock_mean_mhz = 0.0;
  double throttled_fraction = 0.0;
  double gpus = 0.0;   ///< the point's GPU count (summary.json run.gpus), for cost per token
  double nodes = 0.0;  ///< its node count (run.nodes)
  /// The busiest host's launches per iteration x training.host_launch_us (RunReport::host): near iteration_time_s
  /// the point is host-bound.
  double host_launch_time_s = 0.0;
};

struct PointResult {
  SweepPoint point;
  std::string key;  ///< hash of the files its run reads, its overrides, chopsim's version and build
  PointStatus status = PointStatus::ok;
  std::string reason;    ///< invalid / failed: the message; oom: the memory figures
  PointFigures figures;  ///< ok: all; oom: the memory ones
  bool resumed = false;  ///< read back from the store, not computed by this call
};

/// The sweep's objective at a point's figures: tokens/s, J/token, MFU, USD per token or seconds to train the goal.
[[nodiscard]] double objective_value(const SweepSpec& spec, const PointFigures& figures);
/// Whether lower values of the objective are better (energy, cost, time).
[[nodiscard]] bool lower_is_better(SweepObjective objective);
/// Whether point `a` ranks before `b` by the sweep's objective; equal values keep expansion order.
[[nodiscard]] bool better_point(const SweepSpec& spec, const PointResult& a, const PointResult& b);

struct SweepOptions {
  std::filesystem::path out_dir;  ///< sweep.sqlite (resumable) and results.csv are written here
  int jobs = 1;
  /// A job array's share (`--shard I/N`): the points whose index % shard_count == shard_index.
  int shard_index = 0;
  int shard_count = 1;
  /// Told each point as it finishes (from one thread at a time), for progress reports.
  std::function<void(const PointResult&, std::size_t done, std::size_t total)> on_point;
};

struct SweepResult {
  std::vector<PointResult> points;  ///< every point (of the shard), in expansion order
  std::filesystem::path results_csv;
  std::filesystem::path store;
};

/// Runs every point not already in out_dir's store (same key: chopsim's version and build, the text of every file the
/// point's run config reads, its overrides), records each as it finishes, then writes results.csv from the store
/// (byte-identical whatever `jobs`).
[[nodiscard]] SweepResult run_sweep(const SweepSpec& spec, const ConfigSearchPath& search,
                                    const ModelRegistries& registries, const SweepOptions& options);

/// Joins the stores of a sweep's shards (`chopsim sweep merge`) into out_dir's store and writes results.csv for
/// every point; InputError naming the points no shard store holds.
[[nodiscard]] SweepResult merge_sweep(const SweepSpec& spec, const std::vector<std::filesystem::path>& shard_dirs,
                                      const std::filesystem::path& out_dir, const ConfigSearchPath& search,
                                      const ModelRegistries& registries);

/// The terminal's answer: the best points by the objective, the Pareto front of throughput vs energy per token,
/// and the best objective value per value of each axis.
void print_sweep_summary(std::ostream& out, const SweepSpec& spec, const SweepResult& result, int top = 5);

}  // namespace chopsim
