#pragma once
// The records every trace reader produces (docs/traces.md): one KernelRecord per GPU activity (kernel, memcpy,
// memset), one TelemetrySample per GPU per telemetry row, one AnnotationRecord per user range (NVTX, profiler
// steps). They are plain structs in SI units (seconds, bytes, FLOP, watts, hertz; temperatures in degrees Celsius).
// Strings are interned in a StringTable and records carry indices, so a record stays small and fixed-size.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chopsim/common/kernel_class.hpp"

namespace chopsim {

/// Index into a StringTable. Index 0 is always the empty string ("not known").
using StringId = std::uint32_t;
inline constexpr StringId kNoString = 0;

/// Quiet NaN: the value of a numeric field the trace does not give.
inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

/// Interned strings. Ids are dense and assigned in first-seen order, so the same inputs give the same ids.
class StringTable {
 public:
  StringTable();
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  ~StringTable() = default;

  /// The id of `text`, adding it if new.
  StringId intern(std::string_view text);
  /// The id of `text` if present.
  [[nodiscard]] std::optional<StringId> find(std::string_view text) const;
  [[nodiscard]] const std::string& at(StringId id) const;
  [[nodiscard]] std::size_t size() const { return strings_.size(); }
  [[nodiscard]] const std::vector<std::string>& strings() const { return strings_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  void rebuild_index();

  std::vector<std::string> strings_;
  std::unordered_map<std::string, StringId, Hash, std::equal_to<>> index_;
};

/// What a GPU record is. Memcpys and memsets have KernelClass::memcpy; copy kernels launched by a runtime
/// (e.g. ROCm's __amd_rocclr_copyBuffer) are kernels of class memcpy.
enum class ActivityKind : std::uint8_t { kernel, memcpy, memset };
[[nodiscard]] std::string_view to_string(ActivityKind kind);

/// One GPU activity as measured.
struct KernelRecord {
  std::uint32_t source = 0;   ///< index of the input file in the store's /sources table
  std::int32_t rank = -1;     ///< global rank (distributedInfo, MPI rank); -1 = not known
  std::int32_t device = -1;   ///< GPU index on its node as the trace numbers it; -1 = not known
  std::int64_t stream = -1;   ///< CUDA stream id / HIP queue id as the trace numbers it
  StringId name = kNoString;  ///< kernel name as the trace gives it (demangled where the tool demangles)
  /// The framework op that launched it (aten::mm, record_param_comms' collective name, ...), where linked.
  StringId op = kNoString;
  KernelClass kernel_class = KernelClass::other;
  ActivityKind kind = ActivityKind::kernel;
  double start_s = 0.0;                  ///< seconds since the source's time origin (SourceInfo::time_origin_ns)
  double duration_s = 0.0;               ///< seconds
  std::array<std::uint32_t, 3> grid{};   ///< blocks per grid (x, y, z); 0 = not known
  std::array<std::uint32_t, 3> block{};  ///< threads per block (x, y, z); 0 = not known
  double flops = kUnknown;               ///< FLOP of the linked op given to this kernel (from input shapes)
  /// Bytes moved: memcpy/memset size; for GEMM and attention the minimal HBM traffic of the op's tensors.
  double bytes = kUnknown;
  /// An attention kernel's query/key head width from its op's shapes (the kernel that got the op's FLOPs); 0 = not
  /// known. In memory only: stores do not keep it.
  double attention_head_dim = 0.0;
  std::optional<CollectiveKind> collective;  ///< set for NCCL/RCCL kernels whose kind is known
  /// Collective size in bytes, with CollectiveKind's convention (chopsim/common/kernel_class.hpp).
  double collective_bytes = kUnknown;
  StringId group = kNoString;  ///< the process group's global ranks, e.g. "[0, 1]"
  std::int32_t group_size = -1;
  std::int64_t correlation = -1;  ///< the launch's correlation id in the trace; -1 = none
  /// The host's launch call (cudaLaunchKernel, cudaMemcpyAsync, hipLaunchKernel, ...), where the trace has it: its
  /// start and end on the same clock as start_s, and the CPU thread that made it.
  double launch_start_s = kUnknown;
  double launch_end_s = kUnknown;
  std::int64_t launch_thread = -1;
};

/// The global ranks of a process-group string as Kineto's record_param_comms writes it ("[0, 1, 2]"), in order.
/// Empty when the text holds no rank or a number does not fit an int.
[[nodiscard]] std::vector<int> process_group_ranks(std::string_view text);

/// One telemetry row for one GPU. Fields the tool did not report are kUnknown.
struct TelemetrySample {
  std::uint32_t source = 0;
  std::int32_t device = -1;
  double time_s = 0.0;  ///< seconds since the source's time origin
  double power_w = kUnknown;
  double power_limit_w = kUnknown;
  double gfx_clock_hz = kUnknown;  ///< SM clock (NVIDIA) / GFX clock (AMD)
  double mem_clock_hz = kUnknown;
  double temp_edge_c = kUnknown;      ///< GPU (NVIDIA temperature.gpu) or edge (AMD) temperature, Celsius
  double temp_junction_c = kUnknown;  ///< junction / hotspot, Celsius
  double temp_memory_c = kUnknown;    ///< HBM, Celsius
  double util_gpu = kUnknown;         ///< fraction 0..1 of time a kernel was running (utilization.gpu, GPU use %)
  double util_memory = kUnknown;      ///< fraction 0..1 (memory controller busy, DCGM MCUTL)
  double memory_used_bytes = kUnknown;
  double energy_j = kUnknown;  ///< cumulative energy counter where the tool has one
};

/// A user range: NVTX range, profiler step, gpu_user_annotation. Replay uses them for iteration boundaries.
struct AnnotationRecord {
  std::uint32_t source = 0;
  std::int32_t rank = -1;
  std::int32_t device = -1;  ///< -1 for ranges on a CPU thread
  std::int64_t stream = -1;  ///< GPU stream, or the CPU thread id for CPU ranges
  StringId name = kNoString;
  double start_s = 0.0;
  double duration_s = 0.0;  ///< 0 for instantaneous marks
};

/// What one input file said about itself, and its provenance in the store.
struct SourceInfo {
  std::string path;    ///< as given on the command line
  std::string format;  ///< reader name (kineto, rocprofv3-json, nsys-sqlite, ...)
  std::string sha256;  ///< of the file's bytes as stored (compressed if .gz)
  std::uint64_t size_bytes = 0;
  std::string tool;      ///< producing tool and version where the file says
  std::string gpu_name;  ///< e.g. "NVIDIA A100-SXM4-80GB"; empty if the trace does not say
  std::int32_t rank = -1;
  std::int32_t world_size = -1;
  /// Absolute time of start_s == 0 in ns: Unix epoch ns where the trace gives wall-clock time, otherwise the
  /// trace's own clock (see time_origin_clock).
  std::int64_t time_origin_ns = 0;
  std::string time_origin_clock;   ///< "unix_epoch" or a description of the trace's clock
  std::string notes;               ///< how units and fields were interpreted
  std::uint64_t kernel_count = 0;  ///< kernels + memcpys + memsets
  std::uint64_t telemetry_count = 0;
  std::uint64_t annotation_count = 0;
  std::uint64_t linked_op_count = 0;  ///< GPU records linked to a framework op
};

/// Where readers send records. The store writer and the summary implement it.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual StringId intern(std::string_view text) = 0;
  virtual void add_kernel(const KernelRecord& record) = 0;
  virtual void add_telemetry(const TelemetrySample& sample) = 0;
  virtual void add_annotation(const AnnotationRecord& annotation) = 0;
};

/// Keeps everything in memory (tests, small traces).
class VectorSink final : public RecordSink {
 public:
  StringId intern(std::string_view text) override { return strings.intern(text); }
  void add_kernel(const KernelRecord& record) override { kernels.push_back(record); }
  void add_telemetry(const TelemetrySample& sample) override { telemetry.push_back(sample); }
  void add_annotation(const AnnotationRecord& annotation) override { annotations.push_back(annotation); }

  StringTable strings;
  std::vector<KernelRecord> kernels;
  std::vector<TelemetrySample> telemetry;
  std::vector<AnnotationRecord> annotations;
};

}  // namespace chopsim
