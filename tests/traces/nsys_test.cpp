// Nsight Systems SQLite exports of both schema versions in ../shared/data/traces/nsys:
//   pipit_a100x2_cloverleaf.sqlite (nsys 2024.5, schema 3.13.2) against the `nsys stats` GPU trace CSV of the same
//   run (pipit_a100x2_cloverleaf_nsys_stats_gputrace.csv: one Enter and one Leave row per kernel or memcpy);
//   pipit_a100_saxpy_mpi.sqlite (nsys 2022.2, schema 2.9.1), a different run with no CSV: checked against values
//   queried from the database with the sqlite3 shell (stated below).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "csv.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

const std::string kNsys = "traces/nsys/";

TEST(NsysReader, Schema3AgreesWithNsysStatsCsvOfTheSameRun) {
  CHOPSIM_REQUIRE_SHARED_DATA(kNsys + "pipit_a100x2_cloverleaf_nsys_stats_gputrace.csv");
  const auto r = test::read_trace(test::shared_data_dir() / kNsys / "pipit_a100x2_cloverleaf.sqlite", "nsys-sqlite");
  EXPECT_NE(r.info.tool.find("3.13.2"), std::string::npos) << r.info.tool;
  EXPECT_EQ(r.info.gpu_name, "NVIDIA A100-SXM4-80GB");

  // (start ns, end ns, memcpy?) from the CSV; Enter rows name their Leave partner in _matching_event.
  std::ifstream csv(test::shared_data_dir() / kNsys / "pipit_a100x2_cloverleaf_nsys_stats_gputrace.csv");
  std::string line;
  std::getline(csv, line);
  std::multiset<std::tuple<std::int64_t, std::int64_t, bool>> expected;
  std::vector<std::pair<std::int64_t, std::string>> enters;  // (start, name)
  std::vector<std::string> rows;
  while (std::getline(csv, line)) rows.push_back(line);
  std::int64_t csv_min = std::numeric_limits<std::int64_t>::max();
  double csv_bytes = 0.0;
  std::size_t kernels = 0, memcpys = 0;
  for (const auto& row : rows) {
    const auto f = detail::split_csv_line(row);
    ASSERT_GE(f.size(), 9U);
    if (f[5] != "Enter") continue;
    const std::int64_t start = std::stoll(f[6]);
    const std::int64_t end = std::stoll(f[8]);  // _matching_timestamp
    const bool memcpy = f[2] != "kernel";       // CUDA_MEMCPY_KIND_HTOD / _DTOH
    memcpys += memcpy;
    kernels += !memcpy;
    if (memcpy) csv_bytes += std::stod(f[3]);
    csv_min = std::min(csv_min, start);
    expected.emplace(start, end, memcpy);
    enters.emplace_back(start, f[0]);
  }
  EXPECT_EQ(kernels, 1312U);
  EXPECT_EQ(memcpys, 279U);

  std::multiset<std::tuple<std::int64_t, std::int64_t, bool>> got;
  double bytes = 0.0;
  for (const auto& k : r.sink.kernels) {
    const std::int64_t start = csv_min + std::llround(k.start_s * 1e9);
    const std::int64_t end = start + std::llround(k.duration_s * 1e9);
    got.emplace(start, end, k.kind == ActivityKind::memcpy);
    if (k.kind == ActivityKind::memcpy) bytes += k.bytes;
    EXPECT_EQ(k.stream, 7);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(bytes, csv_bytes);
  EXPECT_EQ(bytes, 225116952.0);
  // Names: the CSV has nsys' short names, the store the demangled ones that contain them.
  std::map<std::int64_t, std::string> name_at;
  for (const auto& k : r.sink.kernels) name_at[csv_min + std::llround(k.start_s * 1e9)] = r.sink.strings.at(k.name);
  std::size_t checked = 0;
  for (const auto& [start, name] : enters) {
    if (name.starts_with("CUDA_MEMCPY")) continue;
    EXPECT_NE(name_at[start].find(name), std::string::npos) << name_at[start] << " vs " << name;
    ++checked;
  }
  EXPECT_EQ(checked, 1312U);
}

TEST(NsysReader, Schema2SaxpyMpi) {
  CHOPSIM_REQUIRE_SHARED_DATA(kNsys + "pipit_a100_saxpy_mpi.sqlite");
  const auto r = test::read_trace(test::shared_data_dir() / kNsys / "pipit_a100_saxpy_mpi.sqlite", "nsys-sqlite");
  EXPECT_NE(r.info.tool.find("2.9.1"), std::string::npos) << r.info.tool;
  EXPECT_EQ(r.info.rank, 0);  // thread named "MPI Rank 0" (NVTX eventType 39)
  EXPECT_EQ(r.info.gpu_name, "NVIDIA A100-SXM4-40GB");
  // sqlite3: SELECT COUNT(*), SUM(end-start) FROM CUPTI_ACTIVITY_KIND_KERNEL -> 5, 88573480;
  //          MEMCPY -> 15, 284699600 ns, 3932160000 bytes; no MEMSET rows; 22 NVTX push/pop ranges.
  std::size_t kernels = 0, memcpys = 0;
  double kernel_time = 0.0, memcpy_time = 0.0, bytes = 0.0;
  for (const auto& k : r.sink.kernels) {
    EXPECT_EQ(k.rank, 0);
    if (k.kind == ActivityKind::kernel) {
      ++kernels;
      kernel_time += k.duration_s;
      EXPECT_EQ(r.sink.strings.at(k.name), "saxpy(double *, double *, double *, double, int)");
    } else {
      ++memcpys;
      memcpy_time += k.duration_s;
      bytes += k.bytes;
    }
  }
  EXPECT_EQ(kernels, 5U);
  EXPECT_EQ(memcpys, 15U);
  EXPECT_NEAR(kernel_time, 88573480e-9, 1e-12);
  EXPECT_NEAR(memcpy_time, 284699600e-9, 1e-12);
  EXPECT_EQ(bytes, 3932160000.0);
  EXPECT_EQ(r.sink.annotations.size(), 22U);
  // utcEpochNs 1687813257637297504 + earliest activity (a memcpy at 887857742 ns).
  EXPECT_EQ(r.info.time_origin_ns, 1687813257637297504 + 887857742);
  std::size_t mpi_send = 0;
  for (const auto& a : r.sink.annotations) mpi_send += r.sink.strings.at(a.name) == "MPI_Send";
  EXPECT_EQ(mpi_send, 10U);
}

TEST(NsysReader, SqliteFileThatIsNotAnNsysExportIsRejected) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  const auto preview = read_preview(test::fixture("not_nsys.sqlite"));
  ASSERT_EQ(formats.detect(preview).name, "nsys-sqlite");
  VectorSink sink;
  try {
    (void)formats.get("nsys-sqlite").create()->read(test::fixture("not_nsys.sqlite"), sink);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("CUPTI_ACTIVITY_KIND"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("not_nsys.sqlite"), std::string::npos);
  }
}

}  // namespace
}  // namespace chopsim
