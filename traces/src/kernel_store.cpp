// The HDF5 kernel store (docs/traces.md). Its tables are hdf5::AppendTable (common/hdf5), as ops.h5's are:
// compound rows, 8 Ki-row chunks (about 1.3 MB, the order of HDF5's default 1 MB chunk cache, so that a small store
// is not written and read as whole 10 MB chunks: 0.70x the ingest time of 64 Ki-row chunks on a 2 MB trace, 0.90x
// on 93 MB, files 10 % larger), shuffle + deflate, object timestamps off for byte-identical files.
// Groups and attributes use the C API so that their creation property lists (timestamps off) are explicit.

#include "chopsim/traces/kernel_store.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "chopsim/hdf5/append_table.hpp"
#include "chopsim/hdf5/attributes.hpp"
#include "record_checks.hpp"

#ifndef CHOPSIM_VERSION
#define CHOPSIM_VERSION "unknown"
#endif

namespace chopsim {

namespace {

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

H5::EnumType class_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < kKernelClassCount; ++i)
    type.insert(std::string(kernel_class_name(static_cast<KernelClass>(i))), &i);
  return type;
}

H5::EnumType kind_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < 3; ++i) type.insert(std::string(to_string(static_cast<ActivityKind>(i))), &i);
  return type;
}

H5::EnumType collective_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < kCollectiveKindCount; ++i)
    type.insert(std::string(collective_kind_name(static_cast<CollectiveKind>(i))), &i);
  std::uint8_t none = kNoCollective;
  type.insert("none", &none);
  return type;
}

#define CHOPSIM_MEMBER(Row, member, h5type) type.insertMember(#member, HOFFSET(Row, member), h5type)

H5::CompType kernel_type() {
  H5::CompType type(sizeof(KernelRow));
  CHOPSIM_MEMBER(KernelRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(KernelRow, name, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, op, H5::PredType::NATIVE_UINT32);
  type.insertMember("class", HOFFSET(KernelRow, kernel_class), class_enum());
  CHOPSIM_MEMBER(KernelRow, kind, kind_enum());
  CHOPSIM_MEMBER(KernelRow, collective, collective_enum());
  CHOPSIM_MEMBER(KernelRow, start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, duration_s, H5::PredType::NATIVE_DOUBLE);
  const char* axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    type.insertMember(std::string("grid_") + axes[i], HOFFSET(KernelRow, grid) + i * sizeof(std::uint32_t),
                      H5::PredType::NATIVE_UINT32);
  }
  for (int i = 0; i < 3; ++i) {
    type.insertMember(std::string("block_") + axes[i], HOFFSET(KernelRow, block) + i * sizeof(std::uint32_t),
                      H5::PredType::NATIVE_UINT32);
  }
  CHOPSIM_MEMBER(KernelRow, flops, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, bytes, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, collective_bytes, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, group, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, group_size, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, correlation, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(KernelRow, launch_start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, launch_end_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, launch_thread, H5::PredType::NATIVE_INT64);
  return type;
}

H5::CompType telemetry_type() {
  H5::CompType type(sizeof(TelemetryRow));
  CHOPSIM_MEMBER(TelemetryRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(TelemetryRow, device, H5::PredType::NATIVE_INT32);
  for (auto [name, offset] : std::initializer_list<std::pair<const char*, std::size_t>>{
           {"time_s", HOFFSET(TelemetryRow, time_s)},
           {"power_w", HOFFSET(TelemetryRow, power_w)},
           {"power_limit_w", HOFFSET(TelemetryRow, power_limit_w)},
           {"gfx_clock_hz", HOFFSET(TelemetryRow, gfx_clock_hz)},
           {"mem_clock_hz", HOFFSET(TelemetryRow, mem_clock_hz)},
           {"temp_edge_c", HOFFSET(TelemetryRow, temp_edge_c)},
           {"temp_junction_c", HOFFSET(TelemetryRow, temp_junction_c)},
           {"temp_memory_c", HOFFSET(TelemetryRow, temp_memory_c)},
           {"util_gpu", HOFFSET(TelemetryRow, util_gpu)},
           {"util_memory", HOFFSET(TelemetryRow, util_memory)},
           {"memory_used_bytes", HOFFSET(TelemetryRow, memory_used_bytes)},
           {"energy_j", HOFFSET(TelemetryRow, energy_j)}})
    type.insertMember(name, offset, H5::PredType::NATIVE_DOUBLE);
  return type;
}

H5::CompType annotation_type() {
  H5::CompType type(sizeof(AnnotationRow));
  CHOPSIM_MEMBER(AnnotationRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(AnnotationRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(AnnotationRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(AnnotationRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(AnnotationRow, name, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(AnnotationRow, start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(AnnotationRow, duration_s, H5::PredType::NATIVE_DOUBLE);
  return type;
}

H5::CompType stream_type() {
  H5::CompType type(sizeof(StreamRow));
  CHOPSIM_MEMBER(StreamRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(StreamRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(StreamRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(StreamRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(StreamRow, record_count, H5::PredType::NATIVE_UINT64);
  CHOPSIM_MEMBER(StreamRow, busy_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(StreamRow, first_start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(StreamRow, last_end_s, H5::PredType::NATIVE_DOUBLE);
  return type;
}

#undef CHOPSIM_MEMBER

// ---- attributes (C API) ----

using hdf5::write_number_attribute;
using hdf5::write_string_attribute;

std::optional<std::string> read_string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(attribute);
  std::string value;
  if (H5Tget_class(type) == H5T_STRING && !H5Tis_variable_str(type)) {
    value.resize(H5Tget_size(type));
    const hid_t memory = H5Tcopy(type);
    H5Aread(attribute, memory, value.data());
    H5Tclose(memory);
    value.resize(std::strlen(value.c_str()));
  }
  H5Tclose(type);
  H5Aclose(attribute);
  return value;
}

template <class T>
T read_number_attribute(hid_t object, const char* name, hid_t type, T fallback) {
  if (H5Aexists(object, name) <= 0) return fallback;
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  T value = fallback;
  H5Aread(attribute, type, &value);
  H5Aclose(attribute);
  return value;
}

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

// ---------------------------------------------------------------------------------------------
// Writer

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

// ---------------------------------------------------------------------------------------------
// Reader

namespace {

H5::H5File open_store(const std::filesystem::path& path) {
  H5::Exception::dontPrint();
  if (!std::filesystem::is_regular_file(path))
    throw InputError({path.string()}, "", "no such file", "pass a store written by chopsim ingest");
  try {
    if (!H5::H5File::isHdf5(path.string()))
      throw InputError({path.string()}, "", "not an HDF5 file", "pass a store written by chopsim ingest");
    return H5::H5File(path.string(), H5F_ACC_RDONLY);
  } catch (const H5::Exception& error) {
    throw InputError({path.string()}, "", "HDF5 cannot open it: " + error.getDetailMsg(),
                     "pass a store written by chopsim ingest");
  }
}

template <class Row, class Visit>
void read_table(const std::filesystem::path& path, const char* name, const H5::CompType& type, Visit visit) {
  H5::H5File file = open_store(path);
  try {
    H5::DataSet dataset = file.openDataSet(name);
    H5::DataSpace space = dataset.getSpace();
    hsize_t rows = 0;
    space.getSimpleExtentDims(&rows);
    std::vector<Row> buffer;
    for (hsize_t offset = 0; offset < rows; offset += kChunkRows) {
      const hsize_t count[1] = {std::min<hsize_t>(kChunkRows, rows - offset)};
      const hsize_t start[1] = {offset};
      H5::DataSpace file_space = dataset.getSpace();
      file_space.selectHyperslab(H5S_SELECT_SET, count, start);
      H5::DataSpace memory_space(1, count);
      buffer.resize(count[0]);
      dataset.read(buffer.data(), type, memory_space, file_space);
      visit(std::span<const Row>(buffer));
    }
  } catch (const H5::Exception& error) {
    throw InputError({path.string()}, name, "cannot read the table: " + error.getDetailMsg(),
                     "the store may be damaged or from another chopsim version; ingest the traces again");
  }
}

/// A stored kernel row's enums and indices lie within their ranges and the store's tables.
void check_kernel_row(const KernelRow& row, std::uint64_t index, std::size_t strings, std::size_t sources,
                      const detail::RecordChecker& checker) {
  const std::string what = "row " + std::to_string(index) + " of /kernels";
  if (row.kernel_class >= kKernelClassCount)
    checker.fail(what, "kernel class " + std::to_string(row.kernel_class) + " is not a class (0 to " +
                           std::to_string(kKernelClassCount - 1) + ")");
  if (row.kind >= 3) checker.fail(what, "activity kind " + std::to_string(row.kind) + " is not one (0 to 2)");
  if (row.collective >= kCollectiveKindCount && row.collective != kNoCollective)
    checker.fail(what, "collective kind " + std::to_string(row.collective) + " is not one");
  for (const StringId id : {row.name, row.op, row.group})
    if (id >= strings)
      checker.fail(what, "string index " + std::to_string(id) + " is beyond the " + std::to_string(strings) +
                             " strings of /strings");
  if (row.source >= sources)
    checker.fail(what, "source " + std::to_string(row.source) + " is beyond the " + std::to_string(sources) +
                           " sources of /sources");
}

KernelRecord to_record(const KernelRow& row) {
  KernelRecord r;
  r.source = row.source;
  r.rank = row.rank;
  r.device = row.device;
  r.stream = row.stream;
  r.name = row.name;
  r.op = row.op;
  r.kernel_class =
      row.kernel_class < kKernelClassCount ? static_cast<KernelClass>(row.kernel_class) : KernelClass::other;
  r.kind = row.kind < 3 ? static_cast<ActivityKind>(row.kind) : ActivityKind::kernel;
  if (row.collective < kCollectiveKindCount) r.collective = static_cast<CollectiveKind>(row.collective);
  r.start_s = row.start_s;
  r.duration_s = row.duration_s;
  for (int i = 0; i < 3; ++i) {
    r.grid[i] = row.grid[i];
    r.block[i] = row.block[i];
  }
  r.flops = row.flops;
  r.bytes = row.bytes;
  r.collective_bytes = row.collective_bytes;
  r.group = row.group;
  r.group_size = row.group_size;
  r.correlation = row.correlation;
  r.launch_start_s = row.launch_start_s;
  r.launch_end_s = row.launch_end_s;
  r.launch_thread = row.launch_thread;
  return r;
}

}  // namespace

KernelStore KernelStore::open(const std::filesystem::path& path) {
  KernelStore store;
  store.path_ = path;
  H5::H5File file = open_store(path);
  const hid_t root = file.getId();
  const auto format = read_string_attribute(root, "format");
  if (!format || *format != kFormatName)
    throw InputError({path.string()}, "format", "an HDF5 file that is not a chopsim kernel store",
                     "pass a store written by chopsim ingest");
  store.schema_version_ = read_number_attribute<std::int32_t>(root, "schema_version", H5T_NATIVE_INT32, 0);
  if (store.schema_version_ != kKernelStoreSchemaVersion)
    throw InputError({path.string()}, "schema_version",
                     "store schema version " + std::to_string(store.schema_version_) + ", this chopsim reads " +
                         std::to_string(kKernelStoreSchemaVersion),
                     "ingest the traces again with this chopsim");
  store.chopsim_version_ = read_string_attribute(root, "chopsim_version").value_or("");
  try {
    H5::DataSet dataset = file.openDataSet("strings");
    H5::DataSpace space = dataset.getSpace();
    hsize_t count = 0;
    space.getSimpleExtentDims(&count);
    H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    type.setCset(H5T_CSET_UTF8);
    std::vector<char*> pointers(count, nullptr);
    if (count > 0) dataset.read(pointers.data(), type);
    StringTable strings;
    for (hsize_t i = 0; i < count; ++i) {
      const StringId id = strings.intern(pointers[i] ? pointers[i] : "");
      if (id != i && i != 0)
        throw InputError({path.string()}, "strings", "duplicate string at index " + std::to_string(i),
                         "the store is damaged; ingest the traces again");
    }
    if (count > 0) H5Dvlen_reclaim(type.getId(), space.getId(), H5P_DEFAULT, pointers.data());
    store.strings_ = std::move(strings);
    const hid_t group = H5Gopen2(root, "sources", H5P_DEFAULT);
    if (group < 0) throw InputError({path.string()}, "sources", "no /sources group", "ingest the traces again");
    const auto n = read_number_attribute<std::uint32_t>(group, "count", H5T_NATIVE_UINT32, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      const hid_t g = H5Gopen2(group, std::to_string(i).c_str(), H5P_DEFAULT);
      if (g < 0) continue;
      SourceInfo s;
      s.path = read_string_attribute(g, "path").value_or("");
      s.format = read_string_attribute(g, "format").value_or("");
      s.sha256 = read_string_attribute(g, "sha256").value_or("");
      s.size_bytes = read_number_attribute<std::uint64_t>(g, "size_bytes", H5T_NATIVE_UINT64, 0);
      s.tool = read_string_attribute(g, "tool").value_or("");
      s.gpu_name = read_string_attribute(g, "gpu_name").value_or("");
      s.rank = read_number_attribute<std::int32_t>(g, "rank", H5T_NATIVE_INT32, -1);
      s.world_size = read_number_attribute<std::int32_t>(g, "world_size", H5T_NATIVE_INT32, -1);
      s.time_origin_ns = read_number_attribute<std::int64_t>(g, "time_origin_ns", H5T_NATIVE_INT64, 0);
      s.time_origin_clock = read_string_attribute(g, "time_origin_clock").value_or("");
      s.notes = read_string_attribute(g, "notes").value_or("");
      s.kernel_count = read_number_attribute<std::uint64_t>(g, "kernel_count", H5T_NATIVE_UINT64, 0);
      s.telemetry_count = read_number_attribute<std::uint64_t>(g, "telemetry_count", H5T_NATIVE_UINT64, 0);
      s.annotation_count = read_number_attribute<std::uint64_t>(g, "annotation_count", H5T_NATIVE_UINT64, 0);
      s.linked_op_count = read_number_attribute<std::uint64_t>(g, "linked_op_count", H5T_NATIVE_UINT64, 0);
      store.sources_.push_back(std::move(s));
      H5Gclose(g);
    }
    H5Gclose(group);
  } catch (const H5::Exception& error) {
    throw InputError({path.string()}, "", "cannot read the store: " + error.getDetailMsg(), "ingest the traces again");
  }
  return store;
}

std::uint64_t KernelStore::kernel_count() const {
  std::uint64_t total = 0;
  for (const auto& s : sources_) total += s.kernel_count;
  return total;
}

void KernelStore::for_each_kernel(const std::function<void(std::span<const KernelRecord>)>& visit) const {
  // A store can come from elsewhere (another chopsim, an h5py script): its rows get the readers' checks, and their
  // indices must lie within the store's tables.
  const detail::RecordChecker checker(path_.string());
  std::vector<KernelRecord> records;
  std::uint64_t index = 0;
  read_table<KernelRow>(path_, "kernels", kernel_type(), [&](std::span<const KernelRow> rows) {
    records.clear();
    records.reserve(rows.size());
    for (const auto& row : rows) {
      check_kernel_row(row, index, strings_.size(), sources_.size(), checker);
      records.push_back(to_record(row));
      checker.kernel(records.back(), "row " + std::to_string(index) + " of /kernels");
      ++index;
    }
    visit(records);
  });
}

std::vector<KernelRecord> KernelStore::kernels() const {
  std::vector<KernelRecord> out;
  for_each_kernel([&](std::span<const KernelRecord> chunk) { out.insert(out.end(), chunk.begin(), chunk.end()); });
  return out;
}

std::vector<TelemetrySample> KernelStore::telemetry() const {
  const detail::RecordChecker checker(path_.string());
  std::vector<TelemetrySample> out;
  read_table<TelemetryRow>(path_, "telemetry", telemetry_type(), [&](std::span<const TelemetryRow> rows) {
    for (const auto& row : rows) {
      out.push_back(TelemetrySample{row.source, row.device, row.time_s, row.power_w, row.power_limit_w,
                                    row.gfx_clock_hz, row.mem_clock_hz, row.temp_edge_c, row.temp_junction_c,
                                    row.temp_memory_c, row.util_gpu, row.util_memory, row.memory_used_bytes,
                                    row.energy_j});
      const std::string what = "row " + std::to_string(out.size() - 1) + " of /telemetry";
      if (row.source >= sources_.size()) checker.fail(what, "source " + std::to_string(row.source) + " is not one");
      checker.telemetry(out.back(), what);
    }
  });
  return out;
}

std::vector<AnnotationRecord> KernelStore::annotations() const {
  const detail::RecordChecker checker(path_.string());
  std::vector<AnnotationRecord> out;
  read_table<AnnotationRow>(path_, "annotations", annotation_type(), [&](std::span<const AnnotationRow> rows) {
    for (const auto& row : rows) {
      out.push_back(
          AnnotationRecord{row.source, row.rank, row.device, row.stream, row.name, row.start_s, row.duration_s});
      const std::string what = "row " + std::to_string(out.size() - 1) + " of /annotations";
      if (row.name >= strings_.size() || row.source >= sources_.size())
        checker.fail(what, "its name or source index is beyond the store's tables");
      checker.annotation(out.back(), what);
    }
  });
  return out;
}

std::vector<StreamSummary> KernelStore::streams() const {
  std::vector<StreamSummary> out;
  read_table<StreamRow>(path_, "streams", stream_type(), [&](std::span<const StreamRow> rows) {
    for (const auto& row : rows)
      out.push_back(StreamSummary{row.source, row.rank, row.device, row.stream, row.record_count, row.busy_s,
                                  row.first_start_s, row.last_end_s});
  });
  return out;
}

}  // namespace chopsim
