// rocprofv3 JSON (../shared/data/traces/rocprofv3, 8x MI350X FSDP, rank 0) and the kernel trace CSV (a fixture of
// 24 dispatches copied from that trace into the CSV layout of rocprofv3 >= ROCm 6.4, "Agent N" ids included).
#include <gtest/gtest.h>

#include <set>

#include "chopsim/common/error.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

TEST(RocprofReader, Mi350xJsonHas43915Dispatches) {
  const std::string file = "traces/rocprofv3/tracelens_mi350x_fsdp_train_rank0.json.gz";
  CHOPSIM_REQUIRE_SHARED_DATA(file);
  const auto r = test::read_trace(test::shared_data_dir() / file, "rocprofv3-json");
  ASSERT_EQ(r.sink.kernels.size(), 43915U);
  EXPECT_EQ(r.info.gpu_name, "AMD Instinct MI350X (gfx950)");
  EXPECT_NE(r.info.notes.find("256 CUs, 8 XCCs, wavefront 64, max engine clock 2200 MHz"), std::string::npos)
      << r.info.notes;
  std::set<std::int64_t> queues;
  for (const auto& k : r.sink.kernels) {
    queues.insert(k.stream);
    EXPECT_EQ(k.device, 0);  // agent 37946 is GPU index 0
  }
  EXPECT_EQ(queues, (std::set<std::int64_t>{16, 17, 18, 19, 20}));
  // Sum of end - start over all dispatches: 4441741378 ns; RCCL's ncclDevKernel_Generic_1: 4158756678 ns.
  EXPECT_NEAR(test::total_duration(r.sink), 4.441741378, 1e-9);
  double rccl = 0.0;
  for (const auto& k : r.sink.kernels)
    if (k.kernel_class == KernelClass::communication) rccl += k.duration_s;
  EXPECT_NEAR(rccl, 4.158756678, 1e-9);
  auto classes = test::count_by_class(r.sink);
  EXPECT_EQ(classes[KernelClass::communication], 1310U);
  EXPECT_GT(classes[KernelClass::gemm], 5000U);  // Tensile Cijk_* kernels
  // The first dispatch: __amd_rocclr_copyBuffer, 2840 ns, grid 512 work-items in workgroups of 512 -> 1 block.
  const KernelRecord& first = r.sink.kernels.front();
  EXPECT_EQ(r.sink.strings.at(first.name), "__amd_rocclr_copyBuffer.kd");
  EXPECT_EQ(first.kernel_class, KernelClass::memcpy);
  EXPECT_DOUBLE_EQ(first.start_s, 0.0);
  EXPECT_NEAR(first.duration_s, 2840e-9, 1e-15);
  EXPECT_EQ(first.grid[0], 1U);
  EXPECT_EQ(first.block[0], 512U);
  EXPECT_EQ(r.info.time_origin_ns, 63857982592000);
}

TEST(RocprofReader, KernelTraceCsv) {
  const auto r = test::read_trace(test::fixture("rocprofv3_kernel_trace.csv"), "rocprofv3-csv");
  ASSERT_EQ(r.sink.kernels.size(), 24U);
  EXPECT_NEAR(test::total_duration(r.sink), 364762e-9, 1e-12);
  EXPECT_EQ(r.info.time_origin_ns, 63857982592000);
  EXPECT_EQ(test::count_by_class(r.sink)[KernelClass::communication], 4U);
  const KernelRecord& first = r.sink.kernels.front();
  EXPECT_EQ(first.device, 2);  // "Agent 2"
  EXPECT_EQ(first.stream, 16);
  EXPECT_EQ(first.grid[0], 1U);
  EXPECT_EQ(first.block[0], 512U);
}

TEST(RocprofReader, CsvWithoutTimestampsIsRejected) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  VectorSink sink;
  EXPECT_THROW((void)formats.get("rocprofv3-csv").create()->read(test::fixture("nvidia_smi.csv"), sink), InputError);
}

}  // namespace
}  // namespace chopsim
