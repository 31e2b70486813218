#pragma once
// Private to replay*.cpp: measured GPU records turned into a Workload (replay_build.cpp), independent of hardware
// models: the caller says how long each kernel lasts.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chopsim/common/kernel_class.hpp"
#include "chopsim/models/workload.hpp"

namespace chopsim::replay_detail {

/// One GPU record of a kernel store on the replay's clock: seconds since the earliest record of the store (sources
/// put on one clock with their time origins). A copy of the store's KernelRecord, so that only the file that reads
/// the store (replay_store.cpp) sees traces/ types.
struct MeasuredRecord {
  int rank = 0;  ///< the replay rank: the record's global rank, or its device's index when the store has no ranks
  std::int32_t device = -1;
  std::int64_t stream = -1;
  std::uint32_t name = 0;  ///< index into MeasuredTrace::names
  KernelClass kernel_class = KernelClass::other;
  double start_s = 0.0;
  double end_s = 0.0;
  double flops = std::numeric_limits<double>::quiet_NaN();
  double bytes = std::numeric_limits<double>::quiet_NaN();
  std::optional<CollectiveKind> collective;
  double collective_bytes = std::numeric_limits<double>::quiet_NaN();
  std::uint32_t group = 0;  ///< index into MeasuredTrace::names: the process group's ranks, e.g. "[0, 1]"
};

struct MeasuredTrace {
  std::vector<MeasuredRecord> records;
  std::vector<std::string> names;  ///< the store's strings (index 0 is "")
  std::set<std::string> gpu_names;
  int world_size = -1;           ///< of the kernel sources, -1 when not stated
  bool world_consistent = true;  ///< all kernel sources state the same world size
};

/// Reads a kernel store (replay_store.cpp). Throws InputError for a missing file, a file that is not a store, and a
/// store without GPU records.
[[nodiscard]] MeasuredTrace read_measured_trace(const std::filesystem::path& store);

struct BuildOptions {
  double dependency_window_s = 5e-6;
  /// Every rank of the world is in the store (world_size of its sources): communication records without a process
  /// group are matched across all ranks by order.
  bool whole_world = false;
  /// Matched collectives of known kind and size are re-simulated by the collective model (else: their members meet
  /// and they last their measured time).
  bool simulate_collectives = false;
  /// The replayed duration of a non-communication record (measured, or scaled to the target hardware).
  std::function<double(const MeasuredRecord&)> kernel_duration;
  /// The precision of a record for the compute model.
  std::function<Precision(const MeasuredRecord&)> precision;
};

struct ReplayWorkload {
  Workload workload;
  /// [program][stream][op] -> index into the records, -1 for delays. Program p is rank p's.
  std::vector<std::vector<std::vector<std::int64_t>>> record_of_op;
  std::vector<int> ranks;  ///< ranks with records, ascending
  std::uint64_t delays = 0;
  double delay_s = 0.0;
  std::uint64_t dependencies = 0;
  std::uint64_t collectives_matched = 0;
  std::uint64_t collectives_simulated = 0;
  std::uint64_t collectives_measured = 0;
  std::uint64_t same_stream_overlaps = 0;  ///< records that start before the previous one of their stream ends
  std::vector<std::string> notes;
};

/// Builds one program per rank: per stream, the records in start order, each preceded by a delay for its host gap
/// (from the previous record's end, or from time 0 for the first) unless a kernel of another stream of the rank
/// ends within `dependency_window_s` before it starts and after its stream was ready: then it depends on that
/// kernel, and a delay of the remaining gap follows the dependency. Communication records become collectives over
/// explicit groups (Workload::groups): matched across ranks by process group and order, or alone with their
/// measured time.
[[nodiscard]] ReplayWorkload build_replay_workload(const MeasuredTrace& trace, const BuildOptions& options);

}  // namespace chopsim::replay_detail
