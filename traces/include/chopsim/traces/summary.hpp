#pragma once
// Where the GPU time went, the way Nsight Systems' cuda_gpu_kern_sum and TraceLens' kernel summaries report it:
// time per kernel class, the top kernels and their share, and the same per rank.
// GPU time = the sum of the durations of all GPU records (kernels, memcpys, memsets); overlapping records on
// different streams each count in full, as in those tools' "Time (%)" columns.

#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "chopsim/traces/records.hpp"

namespace chopsim {

struct KernelStat {
  std::string name;
  KernelClass kernel_class = KernelClass::other;
  std::uint64_t count = 0;
  double total_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  double share = 0.0;  ///< of GPU time
};

struct ClassStat {
  KernelClass kernel_class = KernelClass::other;
  std::uint64_t count = 0;
  double total_s = 0.0;
  double share = 0.0;
};

struct RankStat {
  std::string label;  ///< "rank 3", or "source 1 (rank not known)"
  std::uint64_t count = 0;
  double gpu_time_s = 0.0;
  double span_s = 0.0;  ///< last end - first start
  std::array<double, kKernelClassCount> class_time_s{};
  std::string top_kernel;
  double top_kernel_share = 0.0;
};

struct TelemetryStat {
  std::uint32_t source = 0;
  std::int32_t device = -1;
  std::uint64_t samples = 0;
  double power_min_w = 0.0, power_mean_w = 0.0, power_max_w = 0.0;  ///< NaN if no power column
  double temp_max_c = 0.0;                                          ///< hottest of edge/junction/memory
};

struct TraceSummary {
  std::uint64_t record_count = 0;
  std::uint64_t annotation_count = 0;
  double gpu_time_s = 0.0;
  std::size_t stream_count = 0;
  std::vector<ClassStat> classes;       ///< by total time, largest first
  std::vector<KernelStat> top_kernels;  ///< by total time, largest first
  std::vector<RankStat> ranks;
  std::vector<TelemetryStat> telemetry;
};

/// Accumulates records; finish() resolves names. Memory: one entry per distinct kernel name and stream.
class SummaryBuilder {
 public:
  void add(const KernelRecord& record);
  void add(const TelemetrySample& sample);
  void add_annotation() { ++annotations_; }
  [[nodiscard]] TraceSummary finish(const StringTable& strings, std::size_t top_n = 10) const;

 private:
  struct NameAcc {
    KernelClass kernel_class = KernelClass::other;
    std::uint64_t count = 0;
    double total = 0.0, min = 0.0, max = 0.0;
  };
  struct RankAcc {
    std::uint64_t count = 0;
    double total = 0.0, first = 0.0, last = 0.0;
    std::array<double, kKernelClassCount> classes{};
    std::map<StringId, double> names;
  };
  struct TelemetryAcc {
    std::uint64_t samples = 0, power_samples = 0;
    double power_sum = 0.0, power_min = 0.0, power_max = 0.0, temp_max = 0.0;
    bool has_temp = false;
  };
  std::map<StringId, NameAcc> names_;
  std::map<std::pair<std::int32_t, std::int64_t>, RankAcc> ranks_;  // (rank, source if rank unknown)
  std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t, std::int64_t>, bool> streams_;
  std::map<std::pair<std::uint32_t, std::int32_t>, TelemetryAcc> telemetry_;
  std::uint64_t annotations_ = 0;
};

/// Prints the summary as aligned text tables.
void print_summary(std::ostream& out, const TraceSummary& summary);

}  // namespace chopsim
