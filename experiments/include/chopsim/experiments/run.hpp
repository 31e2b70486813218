#pragma once
// Simulate one run end to end: memory check, workload, topology, engine, reports.

#include <array>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/run_spec.hpp"
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

struct RunOptions {
  std::filesystem::path output_dir;  ///< empty: write no files
  bool simulate_when_out_of_memory = false;
};

struct RunReport {
  std::string name;
  int gpus = 0;
  MemoryBreakdown memory;
  bool out_of_memory = false;
  bool simulated = false;                 ///< false when skipped for lack of memory
  double iteration_time_s = 0.0;          ///< mean over the simulated iterations
  std::vector<double> iteration_times_s;  ///< each iteration
  double tokens_per_s = 0.0;
  double model_tflops_per_gpu = 0.0;     ///< model FLOPs (MFU convention) per GPU per second / 1e12
  double hardware_tflops_per_gpu = 0.0;  ///< executed FLOPs (with recomputation) per GPU per second / 1e12
  double mfu = 0.0;                      ///< model FLOP/s per GPU over the dense peak at the boost clock
  TimeBreakdown breakdown;
  SimulationStats stats;
  double wall_time_s = 0.0;  ///< host time the whole run took
  std::vector<std::filesystem::path> files_written;
};

[[nodiscard]] RunReport run_simulation(const RunSpec& run, const ModelRegistries& registries,
                                       const RunOptions& options = {});

/// The terminal summary `chopsim run` prints.
void print_run_summary(std::ostream& out, const RunSpec& run, const RunReport& report);

}  // namespace chopsim
