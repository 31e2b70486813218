#pragma once
// `chopsim replay`: a measured run (a kernel store written by `chopsim ingest`) turned into a workload and run
// through the engine, on the hardware it was measured on or on another (docs/replay.md).
//
//   kernel store --per rank and stream, on one clock--> ops: measured kernels, host gaps (delays), inferred
//   cross-stream dependencies, collectives matched across ranks --durations: measured, or scaled by the compute
//   model's target/source ratio--> Workload --Engine--> replayed time per kernel class and in total

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "chopsim/common/kernel_class.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"  // TimelineFormat

namespace chopsim {

struct ReplayOptions {
  std::filesystem::path store;  ///< the kernel store (chopsim ingest -o STORE.h5)
  /// The GPU to replay on: a hardware name (configs/hardware/NAME.yaml) or a path; empty = the measured GPU.
  std::string hardware;
  /// The GPU the trace was measured on: a name or path; empty = detected from the store's GPU name.
  std::string measured_hardware;
  /// The cluster to replay on: a name (configs/clusters/NAME.yaml) or a path; empty = the usual node of the target
  /// GPU (dgx-h100 for H100, ...). Nodes: as many as the store's highest rank needs.
  std::string cluster;
  std::filesystem::path configs_dir = "configs";  ///< where hardware/ and clusters/ are
  /// Calibration profiles (docs/calibration.md) applied to the target and to the measured GPU's models.
  std::filesystem::path calibration;
  std::filesystem::path measured_calibration;
  /// Re-simulate matched collectives whose kind and size are known even on the measured hardware (default: only
  /// when the hardware or the cluster changes).
  bool simulate_collectives = false;
  /// A kernel that starts within this time after a kernel of another stream of its rank ends depends on it.
  double dependency_window_s = 5e-6;
  std::filesystem::path output_dir;  ///< empty: no files; else summary.json and the timeline (all or nothing)
  TimelineFormat timeline_format = TimelineFormat::json;  ///< timeline.json or timeline.pftrace
  std::string engine = "fast";                            ///< engine registry name
};

/// Measured and replayed GPU time of one kernel class (sum of record durations; a collective's time includes its
/// wait for the other members, in the measurement as in the replay).
struct ReplayClassTime {
  KernelClass kernel_class = KernelClass::other;
  std::uint64_t records = 0;
  double measured_s = 0.0;
  double replayed_s = 0.0;
};

/// Span of one rank's GPU work: first start to last end of its records.
struct ReplayRankSpan {
  int rank = 0;
  std::uint64_t records = 0;
  std::uint64_t streams = 0;
  double measured_s = 0.0;
  double replayed_s = 0.0;
};

struct ReplayReport {
  std::string store;         ///< as given
  std::string measured_gpu;  ///< the store's GPU name(s)
  std::string measured_hardware;
  std::string target_hardware;
  std::string cluster;
  int nodes = 0;
  bool same_hardware = true;  ///< kernels keep their measured durations
  std::vector<ReplayClassTime> classes;
  std::vector<ReplayRankSpan> ranks;
  double measured_span_s = 0.0;  ///< first start to last end of GPU work over all ranks
  double replayed_span_s = 0.0;
  std::uint64_t records = 0;
  std::uint64_t delays = 0;  ///< host gaps kept as fixed delays
  double delay_s = 0.0;      ///< their total
  std::uint64_t cross_stream_dependencies = 0;
  std::uint64_t collectives_matched = 0;      ///< communication records matched across ranks (per record)
  std::uint64_t collectives_simulated = 0;    ///< of them, re-simulated by the collective model
  std::uint64_t collectives_measured = 0;     ///< communication records that kept their measured time alone
  std::uint64_t kernels_scaled_by_work = 0;   ///< scaled with their FLOPs/bytes (other hardware)
  std::uint64_t kernels_scaled_by_class = 0;  ///< scaled by their class's roofline peak ratio
  std::vector<std::string> notes;             ///< how the trace was read and what was assumed
  double wall_time_s = 0.0;
  std::vector<std::filesystem::path> files_written;

  /// (replayed - measured) / measured of the span.
  [[nodiscard]] double span_error() const {
    return measured_span_s > 0.0 ? (replayed_span_s - measured_span_s) / measured_span_s : 0.0;
  }
};

/// Replays `options.store`. Throws InputError (missing or empty store, unknown hardware or cluster, a calibration
/// profile of another GPU, an undetectable GPU when another is asked for) before anything is written.
[[nodiscard]] ReplayReport run_replay(const ReplayOptions& options, const ModelRegistries& registries);

/// The terminal report `chopsim replay` prints.
void print_replay_summary(std::ostream& out, const ReplayReport& report);

/// The hardware file name for a GPU name as traces report it ("NVIDIA H100 80GB HBM3" -> "H100-SXM5-80GB",
/// "AMD Instinct MI300X VF" -> "MI300X"); empty when no shipped file matches.
[[nodiscard]] std::string hardware_for_gpu_name(const std::string& gpu_name);

}  // namespace chopsim
