#pragma once
// The HDF5 kernel store written by `chopsim ingest` and read by calibration and replay (docs/traces.md has the
// schema). No HDF5 type appears here: the store's handles stay inside traces/.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chopsim/traces/records.hpp"

namespace chopsim {

inline constexpr int kKernelStoreSchemaVersion = 2;

/// Writes records into a new store file as they arrive (64 Ki-row chunks, shuffle + deflate); strings, sources and
/// the per-stream table are written by finish(). Object timestamps are off: the same records in the same order
/// give a byte-identical file.
class KernelStoreWriter final : public RecordSink {
 public:
  /// Creates (truncates) `path`. Throws OutputError if HDF5 cannot create it.
  explicit KernelStoreWriter(const std::filesystem::path& path);
  ~KernelStoreWriter() override;
  KernelStoreWriter(const KernelStoreWriter&) = delete;
  KernelStoreWriter& operator=(const KernelStoreWriter&) = delete;

  /// Records added from now on belong to source `index` (their `source` field is overwritten with it).
  void begin_source(std::uint32_t index);

  StringId intern(std::string_view text) override;
  void add_kernel(const KernelRecord& record) override;
  void add_telemetry(const TelemetrySample& sample) override;
  void add_annotation(const AnnotationRecord& annotation) override;

  [[nodiscard]] const StringTable& strings() const;

  /// Writes /strings, /sources (provenance attributes per source) and /streams, then closes the file.
  void finish(const std::vector<SourceInfo>& sources);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One row of /streams: what ran on one (source, rank, device, stream).
struct StreamSummary {
  std::uint32_t source = 0;
  std::int32_t rank = -1;
  std::int32_t device = -1;
  std::int64_t stream = -1;
  std::uint64_t record_count = 0;
  double busy_s = 0.0;  ///< sum of durations
  double first_start_s = 0.0;
  double last_end_s = 0.0;
};

/// Read access to a store. Each call opens the file, reads, and closes it.
class KernelStore {
 public:
  /// Reads the store's header (sources, strings). Throws InputError if `path` is not a chopsim kernel store.
  static KernelStore open(const std::filesystem::path& path);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] const std::vector<SourceInfo>& sources() const { return sources_; }
  [[nodiscard]] const StringTable& strings() const { return strings_; }
  [[nodiscard]] const std::string& chopsim_version() const { return chopsim_version_; }
  [[nodiscard]] int schema_version() const { return schema_version_; }

  [[nodiscard]] std::uint64_t kernel_count() const;
  /// Calls `visit` with consecutive chunks of kernel records (bounded memory for large stores).
  void for_each_kernel(const std::function<void(std::span<const KernelRecord>)>& visit) const;
  [[nodiscard]] std::vector<KernelRecord> kernels() const;
  [[nodiscard]] std::vector<TelemetrySample> telemetry() const;
  [[nodiscard]] std::vector<AnnotationRecord> annotations() const;
  [[nodiscard]] std::vector<StreamSummary> streams() const;

 private:
  std::filesystem::path path_;
  std::vector<SourceInfo> sources_;
  StringTable strings_;
  std::string chopsim_version_;
  int schema_version_ = 0;
};

}  // namespace chopsim
