#pragma once
// Simulate one run end to end: memory check, workload, topology, engine, reports.

#include <array>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/config/run_spec.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim {

/// Where one iteration's time goes on an average GPU. The parts sum to the iteration time.
struct TimeBreakdown {
  double compute_s = 0.0;  ///< a compute kernel was running
  /// No compute running but communication of this category was (split evenly when several were).
  std::array<double, kCommCategoryCount> exposed_comm_s{};
  double pipeline_bubble_s = 0.0;  ///< nothing running on a GPU of a pipeline (pp > 1)
  double idle_s = 0.0;             ///< nothing running, no pipeline (waiting on other ranks, launch gaps)

  [[nodiscard]] double exposed_comm_total_s() const;
  [[nodiscard]] double total_s() const;
};

/// The Chopper-style split of an iteration (Kurzynski, Aga, Wu, arXiv:2512.08242): the ideal time (every kernel at
/// its peak roofline at the max clock: FLOPs / peak or bytes / HBM bandwidth, no launch cost, no communication) and
/// what separates it from the predicted time. Per iteration, mean over GPUs; the parts sum to the iteration time.
struct LossBreakdown {
  double ideal_s = 0.0;
  double efficiency_loss_s = 0.0;  ///< kernels below their roofline (eta < 1) at the max clock
  double frequency_s = 0.0;        ///< kernels stretched by a clock below the max clock (DVFS, caps, locks)
  double launch_s = 0.0;           ///< per-kernel launch overhead
  double comm_contention_s = 0.0;  ///< kernels slowed by communication kernels sharing the GPU
  double exposed_comm_s = 0.0;     ///< communication with no compute running
  double pipeline_bubble_s = 0.0;
  double idle_s = 0.0;

  [[nodiscard]] double total_s() const;
};

/// Power, clock and temperature over a run (runs with power dynamics). Per GPU unless said otherwise.
struct PowerReport {
  bool available = false;
  double cap_w = 0.0;         ///< power cap per GPU
  double ceiling_hz = 0.0;    ///< the governor's ceiling (locked clock or max clock)
  double max_clock_hz = 0.0;  ///< the hardware's max clock
  /// The governors hold the cap for the job's slowest chip, which draws this many times the modelled chip's dynamic
  /// power (power.chip_variation; 1 = identical chips or one GPU).
  double slowest_chip_dynamic_scale = 1.0;
  int chips = 1;            ///< the chips (GPU packages) of the run, of which that is the slowest
  double mean_w = 0.0;      ///< energy / run time, mean over GPUs
  double peak_w = 0.0;      ///< highest instantaneous power of any GPU
  double peak_1ms_w = 0.0;  ///< highest average over any 1 ms window, any GPU
  /// Highest average over any 25 ms window, any GPU: the most an NVML/nvidia-smi power reading of A100/H100-class
  /// boards can show, as their sensor averages 25 ms of every 100 ms (Yang, Adamek, Armour, "Accurate and Convenient
  /// Energy Measurements for GPUs", SC24, arXiv:2312.02741).
  double peak_25ms_w = 0.0;
  double peak_100ms_w = 0.0;            ///< highest average over any 100 ms window, any GPU
  double max_rise_w_per_ms = 0.0;       ///< largest rise of the 1 ms average power within 1 ms, any GPU
  double energy_per_iteration_j = 0.0;  ///< all GPUs
  double energy_per_token_j = 0.0;
  double clock_mean_hz = 0.0;              ///< time-weighted while a compute kernel runs, mean over GPUs
  double clock_mean_all_hz = 0.0;          ///< time-weighted over the whole run
  double clock_min_hz = 0.0;               ///< lowest clock any GPU ran a compute kernel at
  double below_90pct_fraction = 0.0;       ///< of compute-kernel time, clock below 90 % of the max clock
  double below_90pct_s = 0.0;              ///< the same, seconds per GPU per iteration
  std::vector<double> peak_temperature_c;  ///< per GPU (°C)
  std::vector<double> thermal_throttled_fraction_per_gpu;
  std::vector<double> first_thermal_throttle_s;  ///< per GPU: when it first throttled for temperature, -1 = never
  double throttled_fraction = 0.0;               ///< of GPU time below the ceiling for power or temperature
  double power_capped_fraction = 0.0;
  double thermal_throttled_fraction = 0.0;
};

/// The timeline's file format: the Chrome trace event format (timeline.json), or Perfetto's protobuf trace
/// (timeline.pftrace, 38-41 % of the JSON's size; ui.perfetto.dev opens both).
enum class TimelineFormat : std::uint8_t { json, perfetto };
/// The formats' names as the command line and Python take them, in TimelineFormat's order.
inline constexpr std::string_view kTimelineFormatNames[] = {"json", "perfetto"};
/// The format called `name`, or nothing for an unknown name.
[[nodiscard]] inline std::optional<TimelineFormat> timeline_format_named(std::string_view name) {
  if (name == kTimelineFormatNames[0]) return TimelineFormat::json;
  if (name == kTimelineFormatNames[1]) return TimelineFormat::perfetto;
  return std::nullopt;
}

struct RunOptions {
  std::filesystem::path output_dir;  ///< empty: write no files
  bool simulate_when_out_of_memory = false;
  /// Also told every op event and telemetry sample (validation probes); not owned.
  SimulationObserver* observer = nullptr;
  /// GPUs the timeline shows (empty: every GPU simulated, i.e. one per symmetry class). Under symmetry a GPU that
  /// is not simulated is shown through the representative of its class.
  std::vector<int> timeline_ranks;
  TimelineFormat timeline_format = TimelineFormat::json;
  /// Simulate even a run larger than kLargestRunOps, and write a timeline larger than kLargestTimelineBytes
  /// (`chopsim run --force`).
  bool force = false;
  /// Run the observers (breakdown, losses, power report, output writers, `observer`) on a second thread while the
  /// engine simulates (ObserverThread): one run then uses two cores, for the same figures bit for bit. Off by
  /// default: callers that run points in parallel keep their cores busy already (a sweep or study turns it on only
  /// with one job; validation runs its cases in parallel). Not with an engine that simulates in a child process
  /// (Engine::simulates_in_child_process): the child is the second core, and it must be forked from one thread.
  bool observer_thread = false;
};

/// Ops a run may simulate (every GPU's ops per iteration x iterations) unless RunOptions::force: a bound on runaway
/// runs (10^9 iterations ran until killed). The Llama 3 paper's 405B setup on 16,384 GPUs has ~6e8 per iteration.
inline constexpr double kLargestRunOps = 2e10;

/// Estimated timeline.json bytes a run may write unless RunOptions::force: the estimate (the GPUs it shows x their
/// ops x iterations x the bytes of an op event and of the power, clock and temperature points around it) is made
/// before the first event, so a run that would write more stops at once instead of filling the disk (a 512-GPU run
/// showing every GPU wrote 2.8 GB). 2 GiB is about the largest JSON trace the Perfetto UI loads in a browser tab.
inline constexpr double kLargestTimelineBytes = 2.0 * 1024 * 1024 * 1024;
/// The host's launch work per iteration, on the GPU whose host launches most (docs/design.md, "The host"): its
/// kernel launches (IssueStep::launches) times training.host_launch_s. The host issues them one after another, so
/// an iteration takes at least `launch_time_s`; near it the run is host-bound, and its GPUs' gaps are idle time.
/// Zero without a host model (replayed traces, whose measured gaps are the host).
struct HostLoad {
  /// The share of an iteration from which on a run counts as host-bound (terminal, summary.json, sweep summary).
  static constexpr double kBoundShare = 0.9;
  double launches_per_iteration = 0.0;
  double launch_time_s = 0.0;  ///< launches_per_iteration x training.host_launch_s
  /// Whether these launches take kBoundShare of an iteration of `iteration_time_s` or more.
  [[nodiscard]] bool binds(double iteration_time_s) const {
    return iteration_time_s > 0.0 && launch_time_s >= kBoundShare * iteration_time_s;
  }
};

struct RunReport {
  std::string name;
  int gpus = 0;
  MemoryBreakdown memory;                        ///< the stage with the largest peak
  std::vector<MemoryBreakdown> memory_by_stage;  ///< every pipeline stage, stage 0 first
  bool out_of_memory = false;
  bool simulated = false;                 ///< false when skipped for lack of memory
  double iteration_time_s = 0.0;          ///< mean over the simulated iterations
  std::vector<double> iteration_times_s;  ///< each iteration
  double tokens_per_s = 0.0;
  double model_tflops_per_gpu = 0.0;     ///< model FLOPs (MFU convention) per GPU per second / 1e12
  double hardware_tflops_per_gpu = 0.0;  ///< executed FLOPs (with recomputation) per GPU per second / 1e12
  double mfu = 0.0;                      ///< model FLOP/s per GPU over the dense peak at the boost clock
  TimeBreakdown breakdown;
  LossBreakdown losses;
  HostLoad host;
  PowerReport power;
  SimulationStats stats;
  /// Micro-batches per pipeline per iteration, and how many of them were simulated: fewer when the steady ones were
  /// folded (RunSpec::fold, docs/design.md "Folding").
  int micro_batches = 0;
  int simulated_micro_batches = 0;
  std::string fold_limit;  ///< why simulation.fold did not fold ("" when it did or was off)
  /// With simulation.fold off: the micro-batches per pipeline it would simulate if it were on (0: it would not fold,
  /// or it is on). The text report suggests it.
  int foldable_simulated_micro_batches = 0;
  double wall_time_s = 0.0;  ///< host time the whole run took
  std::vector<std::filesystem::path> files_written;
};

/// The workload run_simulation simulates for `run`: its model, parallelism and training, and the KernelFacts of its
/// hardware. A RunOptions::observer sees the events of exactly this workload.
[[nodiscard]] Workload build_run_workload(const RunSpec& run);

/// summary.json's text for a finished run (what `--out` writes; the Python API parses it).
[[nodiscard]] std::string summary_json(const RunSpec& run, const RunReport& report);

/// A run's report before any simulation: its name, GPU count and the memory model's estimate per stage (with the
/// out-of-memory verdict). run_simulation starts from it; `chopsim.load_config` returns it.
[[nodiscard]] RunReport unsimulated_report(const RunSpec& run);

[[nodiscard]] RunReport run_simulation(const RunSpec& run, const ModelRegistries& registries,
                                       const RunOptions& options = {});

/// The terminal summary `chopsim run` prints.
void print_run_summary(std::ostream& out, const RunSpec& run, const RunReport& report);

}  // namespace chopsim
