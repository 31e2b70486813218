// Nsight Systems SQLite export (nsys export --type sqlite), read with libsqlite3.
//
// Tables used (NVIDIA, "Nsight Systems user guide: SQLite schema reference"):
//   CUPTI_ACTIVITY_KIND_KERNEL (start, end ns; deviceId, streamId, correlationId, globalPid, demangledName ->
//     StringIds, gridX..Z, blockX..Z), CUPTI_ACTIVITY_KIND_MEMCPY (+ bytes, copyKind -> ENUM_CUDA_MEMCPY_OPER),
//   CUPTI_ACTIVITY_KIND_MEMSET (+ bytes), NVTX_EVENTS (start, end, eventType, text or textId -> StringIds,
//   globalTid), StringIds, TARGET_INFO_GPU (id, name), TARGET_INFO_SESSION_START_TIME (utcEpochNs),
//   EXPORT_META_DATA (schema 2.x) or META_DATA_EXPORT (schema 3.x) for the exporter version.
// Both schema versions in ../shared/data/traces/nsys (2.9.1 from nsys 2022.2, 3.13.2 from nsys 2024.5) have these
// columns; 3.x adds greenContextId and drops empty tables (no MEMSET or NVTX_EVENTS when nothing was recorded), so
// every table and column is checked before it is queried.
// Timestamps are ns since the session start; utcEpochNs anchors them to the Unix epoch.
// Ranks: nsys --trace=mpi names the thread "MPI Rank N" (NVTX eventType 39, NvtxThread); a process's rank is
// taken from there.

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/traces/classifier.hpp"
#include "reader_util.hpp"

namespace chopsim::detail {

namespace {

class Database {
 public:
  explicit Database(const std::filesystem::path& path) : file_(path.string()) {
    if (sqlite3_open_v2(file_.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw InputError({file_}, "", "SQLite cannot open the file: " + message,
                       "pass an nsys export --type sqlite file");
    }
  }
  ~Database() { sqlite3_close(db_); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  class Statement {
   public:
    Statement(Database& db, const std::string& sql) : db_(db) {
      if (sqlite3_prepare_v2(db.db_, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
        throw InputError({db.file_}, "", "SQLite error '" + std::string(sqlite3_errmsg(db.db_)) + "' in: " + sql,
                         "the file may be damaged or not an Nsight Systems export");
    }
    ~Statement() { sqlite3_finalize(stmt_); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    bool step() {
      const int status = sqlite3_step(stmt_);
      if (status == SQLITE_ROW) return true;
      if (status == SQLITE_DONE) return false;
      throw InputError({db_.file_}, "", "SQLite error while reading: " + std::string(sqlite3_errmsg(db_.db_)),
                       "the file may be damaged");
    }
    bool null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
    std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
    std::string_view text(int column) const {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
      return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
               : std::string_view();
    }

   private:
    Database& db_;
    sqlite3_stmt* stmt_ = nullptr;
  };

  bool has_table(const std::string& name) {
    Statement s(*this, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = '" + name + "'");
    return s.step();
  }
  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> out;
    Statement s(*this, "PRAGMA table_info(" + table + ")");
    while (s.step()) out.emplace(s.text(1));
    return out;
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  sqlite3* db_ = nullptr;
};

constexpr std::int64_t kTidBits = 0xFFFFFF;  // GlobalId: ... | pid (24 bits) | tid (24 bits)

/// Names of CUPTI memcpy kinds where the export lacks ENUM_CUDA_MEMCPY_OPER (CUpti_ActivityMemcpyKind).
std::string memcpy_label(std::int64_t kind) {
  switch (kind) {
    case 1:
      return "Host-to-Device";
    case 2:
      return "Device-to-Host";
    case 8:
      return "Device-to-Device";
    case 9:
      return "Host-to-Host";
    case 10:
      return "Peer-to-Peer";
    default:
      return "kind " + std::to_string(kind);
  }
}

class NsysReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    Database db(path);
    const std::string file = path.string();
    const bool kernels = db.has_table("CUPTI_ACTIVITY_KIND_KERNEL");
    const bool memcpys = db.has_table("CUPTI_ACTIVITY_KIND_MEMCPY");
    const bool memsets = db.has_table("CUPTI_ACTIVITY_KIND_MEMSET");
    if (!db.has_table("StringIds") || (!kernels && !memcpys && !memsets && !db.has_table("NVTX_EVENTS")))
      throw InputError({file}, "", "an SQLite file without StringIds and CUPTI_ACTIVITY_KIND_* tables",
                       "pass an Nsight Systems export (nsys export --type sqlite report.nsys-rep) recorded with "
                       "--trace=cuda");
    SourceInfo info;
    info.format = "nsys-sqlite";
    info.tool = exporter(db);

    // Time origin: the earliest GPU activity, anchored to the Unix epoch by the session start.
    std::int64_t origin = std::numeric_limits<std::int64_t>::max();
    for (const char* table :
         {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
      if (!db.has_table(table)) continue;
      Database::Statement s(db, std::string("SELECT MIN(start) FROM ") + table);
      if (s.step() && !s.null(0)) origin = std::min(origin, s.integer(0));
    }
    if (origin == std::numeric_limits<std::int64_t>::max()) origin = 0;
    std::int64_t epoch = 0;
    if (db.has_table("TARGET_INFO_SESSION_START_TIME")) {
      Database::Statement s(db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
      if (s.step() && !s.null(0)) epoch = s.integer(0);
    }
    info.time_origin_ns = ns_sum_saturated(epoch, origin);
    info.time_origin_clock = epoch != 0 ? "unix_epoch" : "nsys session clock (ns since capture start)";
    info.notes = "timestamps in ns since the session start (TARGET_INFO_SESSION_START_TIME)";

    const auto ranks = mpi_ranks(db);
    if (ranks.size() == 1) info.rank = ranks.begin()->second;
    auto rank_of = [&](std::int64_t global_pid) {
      auto it = ranks.find(global_pid & ~kTidBits);
      return it == ranks.end() ? -1 : it->second;
    };
    auto seconds = [&](std::int64_t t) { return ns_interval(t, origin) * units::kNanosecond; };

    std::unordered_map<StringId, KernelClass> classes;
    std::int64_t first_device = -1;
    if (kernels) {
      const auto cols = db.columns("CUPTI_ACTIVITY_KIND_KERNEL");
      const std::string name_column = cols.count("demangledName") ? "demangledName" : "shortName";
      Database::Statement s(db,
                            "SELECT k.start, k.end, k.deviceId, k.streamId, k.correlationId, k.globalPid, s.value, "
                            "k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                            "LEFT JOIN StringIds s ON s.id = k." +
                                name_column);
      while (s.step()) {
        KernelRecord r;
        const std::string_view name = s.text(6);
        r.name = sink.intern(name);
        auto known = classes.find(r.name);
        if (known == classes.end()) known = classes.emplace(r.name, classify_kernel_name(name)).first;
        r.kernel_class = known->second;
        if (r.kernel_class == KernelClass::communication) r.collective = collective_from_kernel_name(name);
        fill_common(s, r, seconds, rank_of);
        for (int i = 0; i < 3; ++i) {
          r.grid[i] = static_cast<std::uint32_t>(s.integer(7 + i));
          r.block[i] = static_cast<std::uint32_t>(s.integer(10 + i));
        }
        if (first_device < 0) first_device = r.device;
        sink.add_kernel(r);
        ++info.kernel_count;
      }
    }
    if (memcpys) {
      std::map<std::int64_t, std::string> labels;
      if (db.has_table("ENUM_CUDA_MEMCPY_OPER")) {
        Database::Statement e(db, "SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER");
        while (e.step()) labels[e.integer(0)] = std::string(e.text(1));
      }
      Database::Statement s(db,
                            "SELECT start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind "
                            "FROM CUPTI_ACTIVITY_KIND_MEMCPY");
      while (s.step()) {
        KernelRecord r;
        r.kind = ActivityKind::memcpy;
        r.kernel_class = KernelClass::memcpy;
        const auto kind = s.integer(7);
        const auto label = labels.count(kind) ? labels[kind] : memcpy_label(kind);
        r.name = sink.intern("[CUDA memcpy " + label + "]");  // nsys stats' cuda_gpu_trace naming
        fill_common(s, r, seconds, rank_of);
        r.bytes = static_cast<double>(s.integer(6));
        sink.add_kernel(r);
        ++info.kernel_count;
      }
    }
    if (memsets) {
      Database::Statement s(db,
                            "SELECT start, end, deviceId, streamId, correlationId, globalPid, bytes "
                            "FROM CUPTI_ACTIVITY_KIND_MEMSET");
      while (s.step()) {
        KernelRecord r;
        r.kind = ActivityKind::memset;
        r.kernel_class = KernelClass::memcpy;
        r.name = sink.intern("[CUDA memset]");
        fill_common(s, r, seconds, rank_of);
        r.bytes = static_cast<double>(s.integer(6));
        sink.add_kernel(r);
        ++info.kernel_count;
      }
    }
    if (db.has_table("NVTX_EVENTS")) {
      // eventType (ENUM_NSYS_EVENT_TYPE): 34 NvtxMark, 59 NvtxPushPopRange, 60 NvtxStartEndRange.
      Database::Statement s(db,
                            "SELECT n.start, n.end, n.text, t.value, n.globalTid FROM NVTX_EVENTS n "
                            "LEFT JOIN StringIds t ON t.id = n.textId WHERE n.eventType IN (34, 59, 60)");
      while (s.step()) {
        AnnotationRecord a;
        const std::string_view text = s.null(2) ? s.text(3) : s.text(2);
        a.name = sink.intern(text);
        a.start_s = seconds(s.integer(0));
        a.duration_s = s.null(1) ? 0.0 : ns_interval(s.integer(1), s.integer(0)) * units::kNanosecond;
        a.stream = s.integer(4) & kTidBits;
        a.rank = rank_of(s.integer(4));
        sink.add_annotation(a);
        ++info.annotation_count;
      }
    }
    if (db.has_table("TARGET_INFO_GPU")) {
      Database::Statement s(
          db, "SELECT id, name FROM TARGET_INFO_GPU ORDER BY (id = " + std::to_string(first_device) + ") DESC, id");
      if (s.step()) info.gpu_name = std::string(s.text(1));
    }
    return info;
  }

 private:
  template <class Seconds, class RankOf>
  static void fill_common(Database::Statement& s, KernelRecord& r, Seconds seconds, RankOf rank_of) {
    r.start_s = seconds(s.integer(0));
    r.duration_s = ns_interval(s.integer(1), s.integer(0)) * units::kNanosecond;
    r.device = static_cast<std::int32_t>(s.integer(2));
    r.stream = s.integer(3);
    r.correlation = s.null(4) ? -1 : s.integer(4);
    r.rank = s.null(5) ? -1 : rank_of(s.integer(5));
  }

  static std::string exporter(Database& db) {
    for (const char* table : {"EXPORT_META_DATA", "META_DATA_EXPORT"}) {
      if (!db.has_table(table)) continue;
      std::string product, schema;
      Database::Statement s(db, std::string("SELECT name, value FROM ") + table);
      while (s.step()) {
        if (s.text(0) == "EXPORT_PRODUCT_VERSION") product = std::string(s.text(1));
        if (s.text(0) == "EXPORT_SCHEMA_VERSION") schema = std::string(s.text(1));
      }
      return "Nsight Systems " + product + " (SQLite schema " + schema + ")";
    }
    return "Nsight Systems (SQLite schema version not recorded)";
  }

  /// globalPid (tid bits cleared) -> MPI rank, from threads named "MPI Rank N".
  static std::map<std::int64_t, std::int32_t> mpi_ranks(Database& db) {
    std::map<std::int64_t, std::int32_t> out;
    if (!db.has_table("NVTX_EVENTS")) return out;
    Database::Statement s(db,
                          "SELECT n.globalTid, COALESCE(n.text, t.value) FROM NVTX_EVENTS n "
                          "LEFT JOIN StringIds t ON t.id = n.textId WHERE n.eventType = 39");
    while (s.step()) {
      const std::string_view name = s.text(1);
      constexpr std::string_view kPrefix = "MPI Rank ";
      if (!name.starts_with(kPrefix)) continue;
      try {
        out[s.integer(0) & ~kTidBits] = std::stoi(std::string(name.substr(kPrefix.size())));
      } catch (const std::exception&) {
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<TraceReader> make_nsys_sqlite_reader() { return std::make_unique<NsysReader>(); }

bool probe_nsys_sqlite(const FilePreview& preview) {
  // Every SQLite 3 database starts with this 16-byte header string (sqlite.org/fileformat.html).
  return !preview.gzip && preview.head.starts_with(std::string_view("SQLite format 3\0", 16));
}

}  // namespace chopsim::detail
