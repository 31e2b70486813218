// Kineto (PyTorch profiler) traces from ../shared/data/traces/kineto. Expected numbers were computed from the JSON
// independently (Python json module) and are stated next to each check.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "chopsim/common/error.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

using test::read_trace;

const std::string kKineto = "traces/kineto/";

TEST(KinetoReader, A100TwoRankNcclTrace) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "hta_a100_2rank_nccl.json.gz");
  const auto r = read_trace(test::shared_data_dir() / kKineto / "hta_a100_2rank_nccl.json.gz", "kineto");
  // 2700 kernels + 960 gpu_memcpy + 114 gpu_memset events.
  ASSERT_EQ(r.sink.kernels.size(), 3774U);
  std::map<ActivityKind, std::size_t> kinds;
  std::set<std::pair<std::int32_t, std::int64_t>> streams;
  for (const auto& k : r.sink.kernels) {
    ++kinds[k.kind];
    streams.insert({k.device, k.stream});
    EXPECT_EQ(k.rank, 0);
  }
  EXPECT_EQ(kinds[ActivityKind::kernel], 2700U);
  EXPECT_EQ(kinds[ActivityKind::memcpy], 960U);
  EXPECT_EQ(kinds[ActivityKind::memset], 114U);
  EXPECT_EQ(streams, (std::set<std::pair<std::int32_t, std::int64_t>>{{0, 7}, {0, 40}}));
  EXPECT_EQ(r.info.rank, 0);
  EXPECT_EQ(r.info.world_size, 2);
  EXPECT_EQ(r.info.gpu_name, "NVIDIA A100-PG509-200");
  // Sum of all GPU durations 165185.838 us; the top kernel (NCCL all-reduce, 15 launches) 46762.159 us = 28.31 %.
  EXPECT_NEAR(test::total_duration(r.sink), 165185.838e-6, 1e-9);
  auto classes = test::count_by_class(r.sink);
  EXPECT_EQ(classes[KernelClass::communication], 21U);  // 15 AllReduce + 6 Broadcast
  EXPECT_EQ(classes[KernelClass::memcpy], 1074U);
  // Time origin: baseTimeNanoseconds 1711964646000000000 + first GPU ts 4458676422880.181 us.
  EXPECT_EQ(r.info.time_origin_ns, 1711964646000000000 + 4458676422880181);
  EXPECT_EQ(r.info.time_origin_clock, "unix_epoch");
}

TEST(KinetoReader, NcclCollectivesCarrySizesAndGroupsFromRecordParamComms) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "hta_a100_2rank_nccl.json.gz");
  const auto r = read_trace(test::shared_data_dir() / kKineto / "hta_a100_2rank_nccl.json.gz", "kineto");
  std::size_t all_reduce = 0, broadcast = 0;
  for (const auto& k : r.sink.kernels) {
    if (k.kernel_class != KernelClass::communication) continue;
    ASSERT_TRUE(k.collective.has_value());
    EXPECT_EQ(r.sink.strings.at(k.group), "[0, 1]");
    EXPECT_EQ(k.group_size, 2);
    EXPECT_TRUE(std::isfinite(k.collective_bytes));
    all_reduce += *k.collective == CollectiveKind::all_reduce;
    broadcast += *k.collective == CollectiveKind::broadcast;
  }
  EXPECT_EQ(all_reduce, 15U);
  EXPECT_EQ(broadcast, 6U);
  // External id 2099: record_param_comms allreduce of 2049000 Float elements; the kernel ran at
  // ts 4458676524716.094 us for 3306.963 us.
  const KernelRecord* k = test::find_kernel(r.sink, "ncclKernel_AllReduce_RING_LL_Sum_float",
                                            (4458676524716.094 - 4458676422880.181) * 1e-6, 1e-9);
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(k->duration_s, 3306.963e-6, 1e-12);
  EXPECT_EQ(k->collective_bytes, 2049000.0 * 4);
  EXPECT_EQ(r.sink.strings.at(k->op), "allreduce");
  EXPECT_EQ(k->correlation, 25941);
  EXPECT_EQ(k->stream, 40);
}

TEST(KinetoReader, GemmAndFlashAttentionFlopsFromInputShapes) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "tracelens_h100_qwen05b.json.gz");
  const auto r = read_trace(test::shared_data_dir() / kKineto / "tracelens_h100_qwen05b.json.gz", "kineto");
  EXPECT_EQ(r.sink.kernels.size(), 1707U);  // 1465 kernels, 241 memsets, 1 memcpy
  EXPECT_EQ(r.info.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.info.rank, -1);  // single GPU: no distributedInfo
  // aten::addmm [[1024], [8944, 1024], [1024, 1024]] bf16 -> sm90_xmma GEMM at 16038.456 us after the origin.
  const KernelRecord* gemm = test::find_kernel(r.sink, "sm90_xmma_gemm_bf16bf16", 16038.456e-6, 1e-9);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kernel_class, KernelClass::gemm);
  EXPECT_EQ(r.sink.strings.at(gemm->op), "aten::addmm");
  EXPECT_DOUBLE_EQ(gemm->flops, 2.0 * 8944 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(gemm->bytes, 2.0 * (8944 * 1024 + 1024 * 1024 + 8944 * 1024 + 1024));
  // aten::_flash_attention_forward q,k,v [16, 559, 16, 64] bf16, is_causal True (Concrete Inputs[8]):
  // 4*B*H*S*S*D / 2.
  std::size_t flash = 0;
  for (const auto& k : r.sink.kernels) {
    if (k.kernel_class != KernelClass::attention || !std::isfinite(k.flops)) continue;
    ++flash;
    EXPECT_DOUBLE_EQ(k.flops, 4.0 * 16 * 16 * 559.0 * 559.0 * 64 / 2);
    EXPECT_DOUBLE_EQ(k.bytes, 2.0 * 4 * 16 * 559 * 16 * 64);
    EXPECT_DOUBLE_EQ(k.attention_head_dim, 64.0);  // the calibration refers its efficiency to head dim 128
  }
  EXPECT_GT(flash, 0U);
  // FLOPs go to GEMM/attention kernels only, never to the memsets cuBLAS launches under the same op.
  for (const auto& k : r.sink.kernels) {
    if (std::isfinite(k.flops)) {
      EXPECT_TRUE(k.kernel_class == KernelClass::gemm || k.kernel_class == KernelClass::attention);
    }
  }
  EXPECT_GT(r.info.linked_op_count, 0U);
}

TEST(KinetoReader, NanosecondResolutionTraceKeepsMicrosecondUnits) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "hta_v100_ns_resolution.json.gz");
  const auto r = read_trace(test::shared_data_dir() / kKineto / "hta_v100_ns_resolution.json.gz", "kineto");
  // displayTimeUnit is "ns", but ts/dur are microseconds with three decimals (ts 1712195495505582.988, dur 4.928).
  ASSERT_EQ(r.sink.kernels.size(), 6095U);
  EXPECT_NEAR(test::total_duration(r.sink), 472454.441e-6, 1e-9);
  const KernelRecord* first = test::find_kernel(r.sink, "void at::native::(anonymous namespace)::CatArrayBatched", 0.0);
  ASSERT_NE(first, nullptr);
  EXPECT_NEAR(first->duration_s, 4.928e-6, 1e-15);
  EXPECT_EQ(r.info.time_origin_ns, 1712195495505582988);  // exact to the nanosecond
  EXPECT_EQ(first->grid[1], 106U);
  EXPECT_EQ(first->block[0], 128U);
}

TEST(KinetoReader, NanosecondTimestampsAreDetected) {
  // A trace written with integer nanoseconds (17+ digit timestamps).
  const auto r = read_trace(test::fixture("kineto_ns_units.json"), "kineto");
  ASSERT_EQ(r.sink.kernels.size(), 2U);
  EXPECT_NEAR(r.sink.kernels[0].duration_s, 4928e-9, 1e-15);
  EXPECT_NEAR(r.sink.kernels[1].start_s, 1000e-9, 1e-15);
  EXPECT_NE(r.info.notes.find("nanoseconds"), std::string::npos);
  // JSON escapes in names are undone.
  EXPECT_EQ(r.sink.strings.at(r.sink.kernels[1].name), "nvjet_tst_64x64 \"quoted\" \\ name");
  EXPECT_EQ(r.sink.kernels[1].kernel_class, KernelClass::gemm);
}

TEST(KinetoReader, AmdTracesAndOtherRanks) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "tracelens_mi300x_resnet_train_actckpt.json.gz");
  const auto mi300 =
      read_trace(test::shared_data_dir() / kKineto / "tracelens_mi300x_resnet_train_actckpt.json.gz", "kineto");
  EXPECT_EQ(mi300.sink.kernels.size(), 3653U);  // 2995 + 550 + 108
  EXPECT_EQ(mi300.info.gpu_name, "AMD Instinct MI300X");
  // The RCCL kernel has no External id: it is linked through its launch's correlation id to record_param_comms.
  std::size_t linked_collectives = 0;
  for (const auto& k : mi300.sink.kernels)
    if (k.kernel_class == KernelClass::communication && k.collective) {
      ++linked_collectives;
      EXPECT_EQ(mi300.sink.strings.at(k.group), "[0, 1, 2, 3, 4, 5, 6, 7]");
    }
  EXPECT_GT(linked_collectives, 0U);
  // ncclDevKernel_Generic: 71516.523 us of 100230.072 us.
  double comm = 0.0;
  for (const auto& k : mi300.sink.kernels)
    if (k.kernel_class == KernelClass::communication) comm += k.duration_s;
  EXPECT_NEAR(comm / test::total_duration(mi300.sink), 71516.523 / 100230.072, 1e-6);

  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "hta_a100_rank3of8_dlrm.json.gz");
  const auto dlrm = read_trace(test::shared_data_dir() / kKineto / "hta_a100_rank3of8_dlrm.json.gz", "kineto");
  EXPECT_EQ(dlrm.info.rank, 3);
  EXPECT_EQ(dlrm.info.world_size, 8);
  EXPECT_EQ(dlrm.sink.kernels.size(), 9450U);
  std::set<std::int64_t> streams;
  for (const auto& k : dlrm.sink.kernels) {
    streams.insert(k.stream);
    EXPECT_EQ(k.device, 3);
  }
  EXPECT_EQ(streams, (std::set<std::int64_t>{7, 20, 21, 22}));
}

TEST(KinetoReader, TraceWithoutGpuEventsYieldsNoRecords) {
  CHOPSIM_REQUIRE_SHARED_DATA(kKineto + "hta_no_distributed_info.json.gz");
  const auto r = read_trace(test::shared_data_dir() / kKineto / "hta_no_distributed_info.json.gz", "kineto");
  EXPECT_TRUE(r.sink.kernels.empty());
  EXPECT_EQ(r.info.rank, -1);
  EXPECT_TRUE(r.sink.annotations.empty());  // 43 CPU user_annotation ranges, but nothing to align them with
}

TEST(KinetoReader, JsonWithoutTraceEventsIsTheWrongSchema) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  VectorSink sink;
  try {
    (void)formats.get("kineto").create()->read(test::fixture("kineto_no_trace_events.json"), sink);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("traceEvents"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("kineto_no_trace_events.json"), std::string::npos) << error.what();
  }
}

// The H200 eager trace (../shared/data/measured/h200_llama32_1b, record_shapes=True): the memory-bound ops' bytes come
// from their shapes, and no kernel then moves more than the HBM can (H200 datasheet: 4.8 TB/s).
TEST(KinetoReader, MemoryBoundKernelsGetTheBytesOfTheirOpsShapes) {
  const std::string file = "measured/h200_llama32_1b/kineto_mb4.json.gz";
  CHOPSIM_REQUIRE_SHARED_DATA(file);
  const auto r = read_trace(test::shared_data_dir() / file, "kineto");
  double memory_bound_s = 0.0, with_bytes_s = 0.0;
  for (const auto& k : r.sink.kernels) {
    const bool memory_bound = k.kernel_class == KernelClass::elementwise || k.kernel_class == KernelClass::norm ||
                              k.kernel_class == KernelClass::reduction;
    if (k.kind != ActivityKind::kernel || !memory_bound) continue;
    memory_bound_s += k.duration_s;
    if (!std::isfinite(k.bytes)) continue;
    with_bytes_s += k.duration_s;
    // Kernels of 20 µs and more stream from HBM (shorter ones may hit in the 50 MB L2).
    if (k.duration_s >= 20e-6) {
      EXPECT_LE(k.bytes / k.duration_s, 4.8e12) << r.sink.strings.at(k.op);
    }
  }
  // Elementwise, norm and reduction kernels are 35 % of the GPU time; 96.6 % of that has bytes (the rest:
  // embedding's gather and backward, indexing, cat of tensor lists whose dtypes are not recorded).
  EXPECT_GT(with_bytes_s / memory_bound_s, 0.95);
  // A tensor of more than 2^31 elements is split over several kernels, which share its op's bytes: the four casts of
  // logits.float() at micro-batch 4 (4 x 4096 x 128256 elements, 2 + 4 bytes each) carry a quarter each, as do the
  // four casts of its gradient back to bf16.
  int casts = 0;
  for (const auto& k : r.sink.kernels)
    if (r.sink.strings.at(k.op) == "aten::copy_" && std::abs(k.bytes - 4.0 * 4096 * 128256 * 6 / 4) < 1.0) ++casts;
  EXPECT_EQ(casts, 16);  // two steps
}

// cuDNN's attention backward launches a dO·O pre-pass, the main kernel and reductions: the op's FLOPs go to the
// longest of them, the main kernel.
TEST(KinetoReader, AnAttentionOpsFlopsGoToItsMainKernel) {
  const std::string file = "measured/h200_llama32_1b/kineto_mb4.json.gz";
  CHOPSIM_REQUIRE_SHARED_DATA(file);
  const auto r = read_trace(test::shared_data_dir() / file, "kineto");
  int backward = 0;
  for (const auto& k : r.sink.kernels) {
    if (k.kernel_class != KernelClass::attention || !std::isfinite(k.flops)) continue;
    const std::string& name = r.sink.strings.at(k.name);
    EXPECT_NE(name.find("flash"), std::string::npos) << name;
    if (name.find("bprop") == std::string::npos) continue;
    ++backward;
    // 2.5 x the causal forward: 2.5 x 4 x 4 x 32 x 4096^2 x 64 / 2.
    EXPECT_DOUBLE_EQ(k.flops, 2.5 * 4.0 * 4 * 32 * 4096.0 * 4096 * 64 / 2);
  }
  EXPECT_EQ(backward, 32);  // 16 layers, two steps
}

// record_param_comms writes a process group as "[0, 1, 2]"; replay and calibration both read it through this.
TEST(ProcessGroupRanks, ReadsTheRanksInOrderAndRejectsOverflow) {
  EXPECT_EQ(process_group_ranks("[0, 1, 2]"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(process_group_ranks("[8,16,24]"), (std::vector<int>{8, 16, 24}));
  EXPECT_EQ(process_group_ranks("[5]"), (std::vector<int>{5}));
  EXPECT_TRUE(process_group_ranks("[]").empty());
  EXPECT_TRUE(process_group_ranks("").empty());
  EXPECT_TRUE(process_group_ranks("[0, 99999999999]").empty());  // does not fit an int: no group, not a wrong one
}

}  // namespace
}  // namespace chopsim
