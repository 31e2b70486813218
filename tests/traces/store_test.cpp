// The HDF5 kernel store: write records, read them back unchanged, byte-identical files for identical input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <limits>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "chopsim_test_helpers.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("chopsim_store_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Writes three kernels (one collective), two telemetry samples and one annotation over two sources.
void write_sample_store(const std::filesystem::path& path, std::size_t extra_kernels = 0) {
  KernelStoreWriter writer(path);
  writer.begin_source(0);
  KernelRecord gemm;
  gemm.rank = 1;
  gemm.device = 1;
  gemm.stream = 7;
  gemm.name = writer.intern("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");
  gemm.op = writer.intern("aten::mm");
  gemm.kernel_class = KernelClass::gemm;
  gemm.start_s = 1.5e-3;
  gemm.duration_s = 31.967e-6;
  gemm.grid = {132, 1, 1};
  gemm.block = {384, 1, 1};
  gemm.flops = 2.0 * 8944 * 1024 * 1024;
  gemm.bytes = 38733824.0;
  gemm.correlation = 675771;
  writer.add_kernel(gemm);
  KernelRecord nccl;
  nccl.rank = 1;
  nccl.device = 1;
  nccl.stream = 40;
  nccl.name = writer.intern("ncclKernel_AllReduce_RING_LL_Sum_float");
  nccl.kernel_class = KernelClass::communication;
  nccl.collective = CollectiveKind::all_reduce;
  nccl.collective_bytes = 8196000.0;
  nccl.group = writer.intern("[0, 1]");
  nccl.group_size = 2;
  nccl.start_s = 2e-3;
  nccl.duration_s = 3.3e-3;
  writer.add_kernel(nccl);
  for (std::size_t i = 0; i < extra_kernels; ++i) {
    KernelRecord copy = gemm;
    copy.start_s += static_cast<double>(i) * 1e-6;
    writer.add_kernel(copy);
  }
  writer.begin_source(1);
  KernelRecord memset;
  memset.kind = ActivityKind::memset;
  memset.kernel_class = KernelClass::memcpy;
  memset.name = writer.intern("Memset (Device)");
  memset.bytes = 4.0;
  memset.duration_s = 0.769e-6;
  writer.add_kernel(memset);
  TelemetrySample sample;
  sample.device = 3;
  sample.time_s = 1.0;
  sample.power_w = 402.125;
  sample.gfx_clock_hz = 1.98e9;
  writer.add_telemetry(sample);
  sample.time_s = 2.0;
  writer.add_telemetry(sample);
  AnnotationRecord step;
  step.name = writer.intern("ProfilerStep#6");
  step.start_s = 0.5;
  step.duration_s = 0.034;
  writer.add_annotation(step);
  SourceInfo a;
  a.path = "a.json.gz";
  a.format = "kineto";
  a.sha256 = std::string(64, 'a');
  a.gpu_name = "NVIDIA H100 80GB HBM3";
  a.rank = 1;
  a.world_size = 2;
  a.time_origin_ns = 1716423322422880181;
  a.kernel_count = 2 + extra_kernels;
  SourceInfo b;
  b.path = "b.sqlite";
  b.format = "nsys-sqlite";
  b.kernel_count = 1;
  b.telemetry_count = 2;
  writer.finish({a, b});
}

TEST(KernelStore, RoundTripsEveryField) {
  const auto path = temp_dir() / "roundtrip.h5";
  write_sample_store(path);
  const KernelStore store = KernelStore::open(path);
  EXPECT_EQ(store.schema_version(), kKernelStoreSchemaVersion);
  ASSERT_EQ(store.sources().size(), 2U);
  EXPECT_EQ(store.sources()[0].gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(store.sources()[0].time_origin_ns, 1716423322422880181);
  EXPECT_EQ(store.sources()[0].rank, 1);
  EXPECT_EQ(store.sources()[1].format, "nsys-sqlite");
  const auto kernels = store.kernels();
  ASSERT_EQ(kernels.size(), 3U);
  const auto& gemm = kernels[0];
  EXPECT_EQ(store.strings().at(gemm.name), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");
  EXPECT_EQ(store.strings().at(gemm.op), "aten::mm");
  EXPECT_EQ(gemm.kernel_class, KernelClass::gemm);
  EXPECT_EQ(gemm.rank, 1);
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(gemm.start_s, 1.5e-3);
  EXPECT_EQ(gemm.duration_s, 31.967e-6);
  EXPECT_EQ(gemm.grid[0], 132U);
  EXPECT_EQ(gemm.block[0], 384U);
  EXPECT_EQ(gemm.flops, 2.0 * 8944 * 1024 * 1024);
  EXPECT_FALSE(gemm.collective.has_value());
  EXPECT_FALSE(std::isfinite(gemm.collective_bytes));
  EXPECT_EQ(gemm.correlation, 675771);
  const auto& nccl = kernels[1];
  ASSERT_TRUE(nccl.collective.has_value());
  EXPECT_EQ(*nccl.collective, CollectiveKind::all_reduce);
  EXPECT_EQ(nccl.collective_bytes, 8196000.0);
  EXPECT_EQ(store.strings().at(nccl.group), "[0, 1]");
  EXPECT_EQ(nccl.group_size, 2);
  EXPECT_FALSE(std::isfinite(nccl.flops));
  EXPECT_EQ(kernels[2].source, 1U);
  EXPECT_EQ(kernels[2].kind, ActivityKind::memset);
  const auto telemetry = store.telemetry();
  ASSERT_EQ(telemetry.size(), 2U);
  EXPECT_EQ(telemetry[1].source, 1U);
  EXPECT_EQ(telemetry[1].power_w, 402.125);
  EXPECT_FALSE(std::isfinite(telemetry[1].temp_edge_c));
  const auto annotations = store.annotations();
  ASSERT_EQ(annotations.size(), 1U);
  EXPECT_EQ(store.strings().at(annotations[0].name), "ProfilerStep#6");
  const auto streams = store.streams();
  ASSERT_EQ(streams.size(), 3U);  // (0,1,1,7), (0,1,1,40), (1,-1,-1,-1)
  EXPECT_EQ(streams[1].stream, 40);
  EXPECT_DOUBLE_EQ(streams[1].busy_s, 3.3e-3);
  std::filesystem::remove_all(path.parent_path());
}

TEST(KernelStore, SameRecordsGiveByteIdenticalFiles) {
  const auto dir = temp_dir();
  write_sample_store(dir / "one.h5", 70000);  // several 8 Ki-row chunks (traces/src/kernel_store.cpp)
  write_sample_store(dir / "two.h5", 70000);
  EXPECT_EQ(test::read_text(dir / "one.h5"), test::read_text(dir / "two.h5"));
  const KernelStore store = KernelStore::open(dir / "one.h5");
  EXPECT_EQ(store.kernel_count(), 70003U);
  std::size_t chunks = 0, rows = 0;
  store.for_each_kernel([&](std::span<const KernelRecord> chunk) {
    ++chunks;
    rows += chunk.size();
  });
  EXPECT_EQ(rows, 70003U);
  EXPECT_EQ(chunks, (70003U + 8191U) / 8192U);  // visited chunk by chunk, not all at once
  std::filesystem::remove_all(dir);
}

TEST(KernelStore, OpeningSomethingElseIsAnInputError) {
  EXPECT_THROW((void)KernelStore::open(test::fixture("nvidia_smi.csv")), InputError);
  EXPECT_THROW((void)KernelStore::open(test::fixture("missing.h5")), InputError);
}

// A store can be written by anything that writes HDF5 (h5py, another chopsim): rows whose enums, indices or numbers
// are out of range are refused with the row named, not mapped to something valid (kernel class 200 was read as
// "other", a name index past /strings crashed replay).
TEST(KernelStore, OutOfRangeRowsAreRefusedWhenRead) {
  const auto dir = temp_dir();
  auto damaged = [&](const std::string& name, const std::function<void(KernelRecord&)>& damage) {
    const auto path = dir / (name + ".h5");
    {
      KernelStoreWriter writer(path);
      writer.begin_source(0);
      KernelRecord r;
      r.name = writer.intern("k");
      r.duration_s = 1e-6;
      writer.add_kernel(r);
      damage(r);
      writer.add_kernel(r);
      SourceInfo info;
      info.path = "t.json";
      info.kernel_count = 2;
      writer.finish({info});
    }
    const KernelStore store = KernelStore::open(path);
    const std::string message = test::input_error([&] { (void)store.kernels(); });
    EXPECT_NE(message.find("row 1 of /kernels"), std::string::npos) << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    return message;
  };
  EXPECT_NE(damaged("class", [](KernelRecord& r) { r.kernel_class = static_cast<KernelClass>(200); })
                .find("kernel class 200"),
            std::string::npos);
  EXPECT_NE(damaged("name", [](KernelRecord& r) { r.name = 9999; }).find("string index 9999"), std::string::npos);
  EXPECT_NE(damaged("duration", [](KernelRecord& r) { r.duration_s = -1.0; }).find("negative"), std::string::npos);
  EXPECT_NE(
      damaged("start", [](KernelRecord& r) { r.start_s = std::numeric_limits<double>::infinity(); }).find("not a time"),
      std::string::npos);
  EXPECT_NE(damaged("rank", [](KernelRecord& r) { r.rank = 2147483647; }).find("rank 2.14748e+09 is out of range"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chopsim
