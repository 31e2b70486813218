// The HDF5 kernel store's writer (docs/traces.md; the tables: kernel_store_schema.hpp). Groups and attributes use the
// C API so that their creation property lists (timestamps off) are explicit.

#include <H5Cpp.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "chopsim/hdf5/append_table.hpp"
#include "chopsim/hdf5/attributes.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "kernel_store_schema.hpp"

#ifndef CHOPSIM_VERSION
#define CHOPSIM_VERSION "unknown"
#endif

namespace chopsim {

using namespace store_detail;

namespace {

using hdf5::write_number_attribute;
using hdf5::write_string_attribute;

hid_t create_group(hid_t parent, const std::string& name) {
  const hid_t properties = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(properties, 0);
  const hid_t group = H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, properties, H5P_DEFAULT);
  H5Pclose(properties);
  if (group < 0) throw OutputError("cannot create HDF5 group " + name);
  return group;
}

/// A table of the store: an hdf5::AppendTable with its description attribute.
template <class Row>
hdf5::AppendTable<Row> make_table(H5::H5File& file, const char* name, H5::CompType type,
                                  const std::string& description) {
  hdf5::AppendTable<Row> table(file, name, std::move(type), kChunkRows);
  write_string_attribute(table.dataset().getId(), "description", description);
  return table;
}

}  // namespace

struct KernelStoreWriter::State {
  std::filesystem::path path;
  H5::H5File file;
  hdf5::AppendTable<KernelRow> kernels;
  hdf5::AppendTable<TelemetryRow> telemetry;
  hdf5::AppendTable<AnnotationRow> annotations;
  StringTable strings;
  std::uint32_t source = 0;
  // (source, rank, device, stream) -> summary, ordered for a deterministic /streams table.
  std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t, std::int64_t>, StreamRow> streams;
  bool finished = false;

  static H5::H5File create(const std::filesystem::path& path) {
    H5::FileCreatPropList properties;
    H5Pset_obj_track_times(properties.getId(), 0);  // the root group too
    return H5::H5File(path.string(), H5F_ACC_TRUNC, properties);
  }

  explicit State(const std::filesystem::path& p)
      : path(p),
        file(create(p)),
        kernels(make_table<KernelRow>(
            file, "kernels", kernel_type(),
            "one row per GPU activity (kernel, memcpy, memset); start_s/duration_s in seconds since the source's "
            "time origin; flops in FLOP, bytes and collective_bytes in bytes (NaN = not known); name, op and group "
            "index /strings")),
        telemetry(make_table<TelemetryRow>(
            file, "telemetry", telemetry_type(),
            "one row per GPU per telemetry sample; SI units (W, Hz, bytes, J), temperatures in degrees Celsius, "
            "utilisation as a fraction; NaN = not reported")),
        annotations(make_table<AnnotationRow>(
            file, "annotations", annotation_type(),
            "user ranges (NVTX, profiler steps, gpu_user_annotation); device -1 = CPU range; name indexes "
            "/strings")) {}
};

KernelStoreWriter::KernelStoreWriter(const std::filesystem::path& path) {
  H5::Exception::dontPrint();
  try {
    state_ = std::make_unique<State>(path);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot create " + path.string() + ": " + error.getDetailMsg());
  }
}

KernelStoreWriter::~KernelStoreWriter() = default;

void KernelStoreWriter::begin_source(std::uint32_t index) { state_->source = index; }

StringId KernelStoreWriter::intern(std::string_view text) { return state_->strings.intern(text); }

const StringTable& KernelStoreWriter::strings() const { return state_->strings; }

// Rows are zeroed with memset before they are filled: compound rows have padding bytes, which HDF5 writes as they
// are, and the same input must give the same bytes.
template <class Row>
Row zeroed() {
  Row row;
  std::memset(&row, 0, sizeof row);
  return row;
}

void KernelStoreWriter::add_kernel(const KernelRecord& r) {
  auto row = zeroed<KernelRow>();
  row.source = state_->source;
  row.rank = r.rank;
  row.device = r.device;
  row.stream = r.stream;
  row.name = r.name;
  row.op = r.op;
  row.kernel_class = static_cast<std::uint8_t>(r.kernel_class);
  row.kind = static_cast<std::uint8_t>(r.kind);
  row.collective = r.collective ? static_cast<std::uint8_t>(*r.collective) : kNoCollective;
  row.start_s = r.start_s;
  row.duration_s = r.duration_s;
  for (int i = 0; i < 3; ++i) {
    row.grid[i] = r.grid[i];
    row.block[i] = r.block[i];
  }
  row.flops = r.flops;
  row.bytes = r.bytes;
  row.collective_bytes = r.collective_bytes;
  row.group = r.group;
  row.group_size = r.group_size;
  row.correlation = r.correlation;
  row.launch_start_s = r.launch_start_s;
  row.launch_end_s = r.launch_end_s;
  row.launch_thread = r.launch_thread;
  auto [it, inserted] = state_->streams.try_emplace({state_->source, r.rank, r.device, r.stream}, zeroed<StreamRow>());
  StreamRow& stream = it->second;
  if (inserted) {
    stream.source = state_->source;
    stream.rank = r.rank;
    stream.device = r.device;
    stream.stream = r.stream;
    stream.first_start_s = r.start_s;
    stream.last_end_s = r.start_s;
  }
  ++stream.record_count;
  stream.busy_s += r.duration_s;
  stream.first_start_s = std::min(stream.first_start_s, r.start_s);
  stream.last_end_s = std::max(stream.last_end_s, r.start_s + r.duration_s);
  try {
    state_->kernels.add(row);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + state_->path.string() + ": " + error.getDetailMsg());
  }
}

void KernelStoreWriter::add_telemetry(const TelemetrySample& s) {
  auto row = zeroed<TelemetryRow>();
  row.source = state_->source;
  row.device = s.device;
  row.time_s = s.time_s;
  row.power_w = s.power_w;
  row.power_limit_w = s.power_limit_w;
  row.gfx_clock_hz = s.gfx_clock_hz;
  row.mem_clock_hz = s.mem_clock_hz;
  row.temp_edge_c = s.temp_edge_c;
  row.temp_junction_c = s.temp_junction_c;
  row.temp_memory_c = s.temp_memory_c;
  row.util_gpu = s.util_gpu;
  row.util_memory = s.util_memory;
  row.memory_used_bytes = s.memory_used_bytes;
  row.energy_j = s.energy_j;
  try {
    state_->telemetry.add(row);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + state_->path.string() + ": " + error.getDetailMsg());
  }
}

void KernelStoreWriter::add_annotation(const AnnotationRecord& a) {
  auto row = zeroed<AnnotationRow>();
  row.source = state_->source;
  row.rank = a.rank;
  row.device = a.device;
  row.stream = a.stream;
  row.name = a.name;
  row.start_s = a.start_s;
  row.duration_s = a.duration_s;
  try {
    state_->annotations.add(row);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + state_->path.string() + ": " + error.getDetailMsg());
  }
}

void KernelStoreWriter::finish(const std::vector<SourceInfo>& sources) {
  if (state_->finished) return;
  try {
    state_->kernels.close();
    state_->telemetry.close();
    state_->annotations.close();
    {
      auto streams =
          make_table<StreamRow>(state_->file, "streams", stream_type(),
                                "one row per (source, rank, device, stream): record count, busy time (sum of "
                                "durations, s), first start and last end (s)");
      for (const auto& [key, row] : state_->streams) streams.add(row);
      streams.close();
    }
    // /strings: variable-length UTF-8 strings; index 0 is "".
    {
      const auto& strings = state_->strings.strings();
      H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
      type.setCset(H5T_CSET_UTF8);
      const hsize_t size[1] = {strings.size()};
      const hsize_t maximum[1] = {H5S_UNLIMITED};
      H5::DataSpace space(1, size, maximum);
      H5::DSetCreatPropList properties;
      const hsize_t chunk[1] = {4096};
      properties.setChunk(1, chunk);
      H5Pset_obj_track_times(properties.getId(), 0);
      H5::DataSet dataset = state_->file.createDataSet("strings", type, space, properties);
      std::vector<const char*> pointers;
      pointers.reserve(strings.size());
      for (const auto& s : strings) pointers.push_back(s.c_str());
      dataset.write(pointers.data(), type);
      write_string_attribute(dataset.getId(), "description",
                             "interned strings: kernel and op names, process-group rank lists, annotation names");
      dataset.close();
    }
    const hid_t root = state_->file.getId();
    write_string_attribute(root, "format", kFormatName);
    write_number_attribute<std::int32_t>(root, "schema_version", kKernelStoreSchemaVersion, H5T_NATIVE_INT32);
    write_string_attribute(root, "chopsim_version", CHOPSIM_VERSION);
    write_string_attribute(root, "created_by", "chopsim ingest");
    const hid_t group = create_group(root, "sources");
    write_number_attribute<std::uint32_t>(group, "count", static_cast<std::uint32_t>(sources.size()),
                                          H5T_NATIVE_UINT32);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const SourceInfo& s = sources[i];
      const hid_t g = create_group(group, std::to_string(i));
      write_string_attribute(g, "path", s.path);
      write_string_attribute(g, "format", s.format);
      write_string_attribute(g, "sha256", s.sha256);
      write_number_attribute<std::uint64_t>(g, "size_bytes", s.size_bytes, H5T_NATIVE_UINT64);
      write_string_attribute(g, "tool", s.tool);
      write_string_attribute(g, "gpu_name", s.gpu_name);
      write_number_attribute<std::int32_t>(g, "rank", s.rank, H5T_NATIVE_INT32);
      write_number_attribute<std::int32_t>(g, "world_size", s.world_size, H5T_NATIVE_INT32);
      write_number_attribute<std::int64_t>(g, "time_origin_ns", s.time_origin_ns, H5T_NATIVE_INT64);
      write_string_attribute(g, "time_origin_clock", s.time_origin_clock);
      write_string_attribute(g, "notes", s.notes);
      write_number_attribute<std::uint64_t>(g, "kernel_count", s.kernel_count, H5T_NATIVE_UINT64);
      write_number_attribute<std::uint64_t>(g, "telemetry_count", s.telemetry_count, H5T_NATIVE_UINT64);
      write_number_attribute<std::uint64_t>(g, "annotation_count", s.annotation_count, H5T_NATIVE_UINT64);
      write_number_attribute<std::uint64_t>(g, "linked_op_count", s.linked_op_count, H5T_NATIVE_UINT64);
      write_string_attribute(g, "chopsim_version", CHOPSIM_VERSION);
      H5Gclose(g);
    }
    H5Gclose(group);
    state_->file.close();
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + state_->path.string() + ": " + error.getDetailMsg());
  }
  state_->finished = true;
}

}  // namespace chopsim
