#pragma once
// What calibration fits to: measured kernels, collectives, inter-kernel gaps and telemetry, gathered from kernel
// stores (`chopsim ingest`), the trace and telemetry formats ingest reads, and the published tables in
// ../shared/data (TraceLens per-op CSVs, Vidur op and collective profiles, TraceLens NCCL/RCCL summaries).
// Plain structs in SI units (seconds, bytes, FLOP, watts; temperatures in degrees Celsius).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/kernel_class.hpp"

namespace chopsim {

/// One measured kernel (or framework op timed as the sum of its kernels).
struct KernelSample {
  KernelClass kernel_class = KernelClass::other;
  /// Element type the arithmetic runs in: "bf16", "fp16", "fp32", "tf32", "fp8"; empty for memory-bound classes.
  std::string dtype;
  double flops = 0.0;  ///< FLOP; 0 = not a compute kernel (memory-bound classes)
  double bytes = 0.0;  ///< minimal HBM traffic of the op's tensors (bytes); 0 = not known
  double duration_s = 0.0;
  std::size_t input = 0;  ///< index into MeasurementSet::inputs
  std::string label;      ///< e.g. "aten::mm 8944x2816x1024" or "mlp_up_proj T=512 TP=2", for reports
  /// An elementwise kernel's TensorIterator path, from its name (PyTorch's own kernels; also the multi-pass softmax
  /// reduction kernels, which stream as vectorized ones do); `fused` for any other.
  ElementwisePath path = ElementwisePath::fused;
  /// An attention kernel's query/key head width (from a Kineto trace's shapes); 0 = not known.
  double head_dim = 0.0;
};

/// Whether a collective stayed inside one node (NVLink/NVSwitch, xGMI) or crossed the network.
enum class LinkScope : std::uint8_t { intra_node, inter_node };
[[nodiscard]] std::string_view to_string(LinkScope scope);

/// One measured collective call (or the median of repeated calls of one size).
struct CollectiveSample {
  CollectiveKind kind = CollectiveKind::all_reduce;
  int group_size = 0;
  LinkScope scope = LinkScope::intra_node;
  double bytes = 0.0;  ///< with CollectiveKind's size convention (nccl-tests' "size")
  double duration_s = 0.0;
  std::size_t input = 0;
};

/// Gaps between consecutive GPU records on one stream of one trace: the GPU idle time that chopsim's
/// launch_overhead_s stands for.
struct LaunchGaps {
  std::size_t input = 0;
  std::string stream;  ///< "rank 0 device 7 stream 7"
  std::vector<double> gaps_s;
};

/// One kernel of a trace (same name, grid and block on one GPU) timed with and without a communication kernel
/// (NCCL/RCCL) running on the same GPU: the data of the compute/communication interference fit.
struct OverlapGroup {
  std::size_t input = 0;
  KernelClass kernel_class = KernelClass::other;
  std::string label;                 ///< kernel name (shortened) and launch shape, for reports
  std::vector<double> isolated_s;    ///< durations of the runs no communication kernel overlapped
  std::vector<double> overlapped_s;  ///< durations of the runs a communication kernel overlapped throughout
};

/// The host's kernel launches on one CPU thread of one trace: the intervals between consecutive launch calls where
/// the GPU waited for the later launch (its record started within HostLaunches::kWaitedWithin of the call's end, and
/// the earlier record had ended by then). There the interval is the host's own time per launch, not the GPU's.
struct HostLaunches {
  static constexpr double kWaitedWithin = 15e-6;  ///< s: launch latency allowed before "the GPU waited" fails
  std::size_t input = 0;
  std::string thread;  ///< "thread 3126441"
  std::size_t launches = 0;
  std::vector<double> waited_intervals_s;
};

/// One telemetry reading of one GPU, on an absolute clock so that separate logs (power, temperature, use) of one
/// run can be joined. NaN = not in this reading.
struct TelemetryReading {
  std::size_t input = 0;
  std::string gpu;      ///< "card0" / device index as the log names it
  double time_s = 0.0;  ///< seconds since the Unix epoch where the log says (else the log's own clock)
  double power_w = 0.0;
  double util = 0.0;  ///< GPU activity 0..1
  double gfx_clock_hz = 0.0;
  double temp_edge_c = 0.0;
  double temp_junction_c = 0.0;
};

/// One input file and what was read from it.
struct InputFile {
  std::string path;  ///< as given
  std::string kind;  ///< "kernel-store", "tracelens-gemm", "vidur-mlp", "kineto", ...
  std::string sha256;
  std::vector<std::string> notes;  ///< provenance of a store's own sources, assumptions made while reading
  std::size_t kernels = 0, collectives = 0, gaps = 0, telemetry = 0;
};

/// When an input's kernels ran, on the clock its telemetry uses (seconds since the Unix epoch where the trace says).
struct KernelSpan {
  std::size_t input = 0;
  double start_s = 0.0;
  double end_s = 0.0;
};

struct MeasurementSet {
  std::vector<InputFile> inputs;
  std::vector<KernelSpan> kernel_spans;
  std::vector<KernelSample> kernels;
  std::vector<CollectiveSample> collectives;
  std::vector<LaunchGaps> gaps;
  std::vector<OverlapGroup> overlaps;
  std::vector<HostLaunches> host_launches;
  std::vector<TelemetryReading> telemetry;
};

struct LoadOptions {
  /// GPUs per node: a collective whose group's ranks all lie in one block of this many ranks is intra-node.
  int gpus_per_node = 8;
  /// Element type assumed for GEMM/attention records of a trace whose kernel name does not say it.
  std::string default_dtype = "bf16";
  /// Told after each input is read: inputs done, inputs in all, the input's path.
  std::function<void(std::size_t done, std::size_t total, const std::filesystem::path& input)> on_input;
};

/// The supported table kinds, with the header columns that identify each (for --help and error messages).
[[nodiscard]] std::vector<std::string> supported_input_kinds();

/// Reads every input: HDF5 kernel stores, the supported CSV tables (recognised by their header) and any trace or
/// telemetry file `chopsim ingest` reads (read in memory). Throws InputError naming the file for unreadable files,
/// an unknown CSV layout (listing the supported kinds), tables with missing columns, bad numbers or no rows, and
/// inputs that yield nothing to fit.
[[nodiscard]] MeasurementSet load_measurements(const std::vector<std::filesystem::path>& paths,
                                               const LoadOptions& options = {});

/// The element type ("bf16", "fp16", "fp32", "tf32", "fp8") of a GEMM/attention kernel as its name spells it
/// (cuBLAS/CUTLASS `sm90_xmma_gemm_bf16bf16_...`, Tensile `Cijk_Alik_Bljk_B_...`); "" when the name does not say.
[[nodiscard]] std::string dtype_from_kernel_name(const std::string& name);

/// Lower-case hex SHA-256 of a file's bytes. Throws InputError if it cannot be read.
[[nodiscard]] std::string file_sha256(const std::filesystem::path& path);

}  // namespace chopsim
