#pragma once
// The HDF5 kernel store's tables (docs/traces.md), shared by its writer (kernel_store_writer.cpp) and its reader
// (kernel_store.cpp). They are hdf5::AppendTable (common/hdf5), as ops.h5's are: compound rows, 8 Ki-row chunks
// (about 1.3 MB, the order of HDF5's default 1 MB chunk cache, so that a small store is not written and read as
// whole 10 MB chunks: 0.70x the ingest time of 64 Ki-row chunks on a 2 MB trace, 0.90x on 93 MB, files 10 % larger),
// shuffle + deflate, object timestamps off for byte-identical files.

#include <H5Cpp.h>

#include <cstdint>

namespace chopsim::store_detail {

constexpr hsize_t kChunkRows = 8192;
constexpr std::uint8_t kNoCollective = 255;
constexpr const char* kFormatName = "chopsim-kernel-store";

struct KernelRow {
  std::uint32_t source;
  std::int32_t rank;
  std::int32_t device;
  std::int64_t stream;
  std::uint32_t name;
  std::uint32_t op;
  std::uint8_t kernel_class;
  std::uint8_t kind;
  std::uint8_t collective;
  double start_s;
  double duration_s;
  std::uint32_t grid[3];
  std::uint32_t block[3];
  double flops;
  double bytes;
  double collective_bytes;
  std::uint32_t group;
  std::int32_t group_size;
  std::int64_t correlation;
  double launch_start_s;
  double launch_end_s;
  std::int64_t launch_thread;
};

struct TelemetryRow {
  std::uint32_t source;
  std::int32_t device;
  double time_s;
  double power_w;
  double power_limit_w;
  double gfx_clock_hz;
  double mem_clock_hz;
  double temp_edge_c;
  double temp_junction_c;
  double temp_memory_c;
  double util_gpu;
  double util_memory;
  double memory_used_bytes;
  double energy_j;
};

struct AnnotationRow {
  std::uint32_t source;
  std::int32_t rank;
  std::int32_t device;
  std::int64_t stream;
  std::uint32_t name;
  double start_s;
  double duration_s;
};

struct StreamRow {
  std::uint32_t source;
  std::int32_t rank;
  std::int32_t device;
  std::int64_t stream;
  std::uint64_t record_count;
  double busy_s;
  double first_start_s;
  double last_end_s;
};

/// The rows' HDF5 compound types: every field by name, the enums by their names (kernel classes, activity kinds,
/// collectives and "none").
[[nodiscard]] H5::CompType kernel_type();
[[nodiscard]] H5::CompType telemetry_type();
[[nodiscard]] H5::CompType annotation_type();
[[nodiscard]] H5::CompType stream_type();

}  // namespace chopsim::store_detail
