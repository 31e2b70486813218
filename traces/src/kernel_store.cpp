// The HDF5 kernel store's reader (docs/traces.md): opens a store, checks its format and every row, and gives the
// records back. The tables: kernel_store_schema.hpp; the writer: kernel_store_writer.cpp.

#include "chopsim/traces/kernel_store.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>

#include "chopsim/common/error.hpp"
#include "kernel_store_schema.hpp"
#include "record_checks.hpp"

namespace chopsim {

using namespace store_detail;

namespace {

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