// libFuzzer target: the Nsight Systems SQLite reader (chopsim ingest --format nsys) on fuzzed rows. The input is not
// a database file (SQLite's own file format is SQLite's to fuzz): it chooses which of the tables the reader queries
// exist and fills their rows with integers (the extremes among them), reals, texts and NULLs, in columns without
// type or NOT NULL constraints, as a damaged export or another nsys version might have them.
#include <fuzzer/FuzzedDataProvider.h>
#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_trace.hpp"

namespace {

struct Table {
  const char* name;
  std::vector<const char*> columns;
};

/// The tables and columns the reader queries (traces/src/nsys_reader.cpp), as in an nsys 2024 export.
const std::array<Table, 9> kTables = {{
    {"StringIds", {"id", "value"}},
    {"CUPTI_ACTIVITY_KIND_KERNEL",
     {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "shortName", "demangledName", "gridX",
      "gridY", "gridZ", "blockX", "blockY", "blockZ"}},
    {"CUPTI_ACTIVITY_KIND_MEMCPY",
     {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes", "copyKind"}},
    {"CUPTI_ACTIVITY_KIND_MEMSET", {"start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"}},
    {"ENUM_CUDA_MEMCPY_OPER", {"id", "label"}},
    {"NVTX_EVENTS", {"start", "end", "eventType", "text", "textId", "globalTid"}},
    {"TARGET_INFO_GPU", {"vmId", "id", "name"}},
    {"TARGET_INFO_SESSION_START_TIME", {"utcEpochNs"}},
    {"EXPORT_META_DATA", {"name", "value"}},
}};

constexpr std::array<std::int64_t, 10> kIntegers = {0,
                                                    1,
                                                    -1,
                                                    34,  // NVTX event types the reader selects
                                                    39,
                                                    59,
                                                    std::numeric_limits<std::int64_t>::min(),
                                                    std::numeric_limits<std::int64_t>::max(),
                                                    1'700'000'000'000'000'000,  // a Unix time in ns
                                                    0x1000000};                 // one pid step of a GlobalId

void bind_value(sqlite3_stmt* insert, int column, FuzzedDataProvider& input) {
  switch (input.ConsumeIntegralInRange(0, 5)) {
    case 0:
      sqlite3_bind_null(insert, column);
      break;
    case 1:
      sqlite3_bind_int64(insert, column, input.PickValueInArray(kIntegers));
      break;
    case 2:
      sqlite3_bind_int64(insert, column, input.ConsumeIntegral<std::int64_t>());
      break;
    case 3:
      sqlite3_bind_double(insert, column, input.ConsumeFloatingPoint<double>());
      break;
    case 4: {
      const std::string text = "MPI Rank " + input.ConsumeRandomLengthString(12);
      sqlite3_bind_text(insert, column, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
      break;
    }
    default: {
      const std::string text = input.ConsumeRandomLengthString(40);
      sqlite3_bind_text(insert, column, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    }
  }
}

/// Writes the database the input describes; false if SQLite refuses (then the input is skipped).
bool write_database(const std::filesystem::path& path, FuzzedDataProvider& input) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return false;
  }
  bool ok = sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN", nullptr, nullptr, nullptr) ==
            SQLITE_OK;
  for (const Table& table : kTables) {
    if (!ok || !input.ConsumeBool()) continue;
    std::string create = std::string("CREATE TABLE ") + table.name + " (";
    std::string insert = std::string("INSERT INTO ") + table.name + " VALUES (";
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      create += (c ? ", " : "") + std::string(table.columns[c]);
      insert += c ? ", ?" : "?";
    }
    ok = sqlite3_exec(db, (create + ")").c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_stmt* statement = nullptr;
    ok = ok && sqlite3_prepare_v2(db, (insert + ")").c_str(), -1, &statement, nullptr) == SQLITE_OK;
    const int rows = input.ConsumeIntegralInRange(0, 8);
    for (int row = 0; ok && row < rows; ++row) {
      for (std::size_t c = 0; c < table.columns.size(); ++c) bind_value(statement, static_cast<int>(c) + 1, input);
      ok = sqlite3_step(statement) == SQLITE_DONE && sqlite3_reset(statement) == SQLITE_OK;
    }
    sqlite3_finalize(statement);
  }
  ok = ok && sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::filesystem::path path = chopsim::fuzz::input_file(".sqlite");
  if (!write_database(path, input)) return 0;
  return chopsim::fuzz::read_file_as("nsys-sqlite", path);
}
