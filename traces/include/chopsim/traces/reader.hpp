#pragma once
// Trace readers: one interface, a registry keyed by format name, and format auto-detection.
//   trace file -> TraceReader -> KernelRecord[] / TelemetrySample[] -> RecordSink (the HDF5 KernelStore writer)

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/traces/records.hpp"

namespace chopsim {

/// The start of a file, for format detection: the raw bytes and, for gzip files, the decompressed start.
struct FilePreview {
  std::filesystem::path path;
  bool gzip = false;
  std::string head;  ///< up to 64 KiB of the (decompressed) content
};

/// Reads one file of one format. Readers stream: memory stays bounded by what a format needs to link records
/// (docs/traces.md states the bound per reader), not by the file size.
class TraceReader {
 public:
  virtual ~TraceReader() = default;
  /// Sends every record of `path` to `sink` and returns what the file says about itself (format, tool, GPU, rank,
  /// time origin, counts). `path`, `sha256` and `size_bytes` are filled by the caller.
  /// Throws InputError naming the file and the problem for malformed input.
  virtual SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const = 0;
};

struct TraceFormat {
  std::string name;         ///< "kineto", "rocprofv3-json", ...
  std::string description;  ///< one line for --help and error messages
  /// True if the preview looks like this format. Probes must be cheap and must not throw.
  std::function<bool(const FilePreview&)> probe;
  std::function<std::unique_ptr<TraceReader>()> create;
};

/// Reads `path` with `format`'s reader and checks every record before `sink` gets it: times finite and within
/// int64 nanoseconds of the source's origin, durations finite, >= 0 and under 11 days, ranks and devices in
/// 0..2^20 (or -1: unknown), FLOP and byte counts >= 0, telemetry within physical bounds (power, clocks,
/// temperatures, utilization fractions). Throws InputError naming the file, the record and the value.
SourceInfo read_trace_checked(const TraceFormat& format, const std::filesystem::path& path, RecordSink& sink);

/// Formats by name. An ordinary object (no global registry): build one with register_builtin_trace_formats().
class TraceFormatRegistry {
 public:
  /// Registering a name twice is a programming error (ModelError).
  void add(TraceFormat format);
  /// The format called `name`; UnknownNameError listing the valid names otherwise.
  [[nodiscard]] const TraceFormat& get(std::string_view name) const;
  /// The first registered format whose probe accepts `preview`; InputError naming the file and listing every
  /// format otherwise.
  [[nodiscard]] const TraceFormat& detect(const FilePreview& preview) const;
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] const std::vector<TraceFormat>& formats() const { return formats_; }

 private:
  std::vector<TraceFormat> formats_;
};

/// Reads the preview of `path` (decompressing gzip). Throws InputError if the file cannot be read.
[[nodiscard]] FilePreview read_preview(const std::filesystem::path& path);

/// Registers Kineto JSON, rocprofv3 JSON and CSV, Nsight Systems SQLite, nvidia-smi CSV, DCGM dmon and
/// AMD SMI (rocm-smi / amd-smi) CSV.
void register_builtin_trace_formats(TraceFormatRegistry& registry);

}  // namespace chopsim
