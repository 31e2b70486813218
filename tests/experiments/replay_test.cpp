// `chopsim replay` (docs/replay.md): on the measured hardware a replay reproduces the measured span of GPU work of
// real traces (single-rank, and eight ranks whose collectives are matched across ranks); on other hardware kernels
// scale as the roofline says (compute-bound GEMMs with the peak, memory-bound kernels with HBM bandwidth, host gaps
// kept), collectives are re-simulated; bad inputs are InputErrors that write nothing.

#include "chopsim/experiments/replay.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/models/collective.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "replay_test_stores.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

/// A folder per test, and stores ingested once per process (ingest is the slow part).
using test::input_error;

class ReplayTest : public ::testing::Test {
 protected:
  static fs::path shared_dir() {
    static const fs::path dir = [] {
      const fs::path d = fs::temp_directory_path() / ("chopsim_replay_test_" + std::to_string(::getpid()));
      fs::create_directories(d);
      return d;
    }();
    return dir;
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(shared_dir(), ignored);
  }
  void SetUp() override {
    dir_ = shared_dir() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
  }

  /// The store of shared-data traces (relative to ../shared/data), ingested on first use.
  static fs::path store_of(const std::string& name, const std::vector<std::string>& traces) {
    const fs::path store = shared_dir() / (name + ".h5");
    if (!fs::exists(store)) {
      std::vector<fs::path> paths;
      for (const auto& t : traces) paths.push_back(test::shared_data_dir() / t);
      test::ingest_store(paths, store);
    }
    return store;
  }
  /// The 8 rank traces of PARAM's DLRM run (V100), extracted from their archive.
  static fs::path param_store() {
    const fs::path store = shared_dir() / "param8.h5";
    if (fs::exists(store)) return store;
    const fs::path folder = shared_dir() / "param8";
    fs::create_directories(folder);
    const std::string command =
        "tar xzf '" + (test::shared_data_dir() / "traces/execution-trace/param_v100x8_dlrm_kineto.tar.gz").string() +
        "' -C '" + folder.string() + "'";
    if (std::system(command.c_str()) != 0) ADD_FAILURE() << "cannot extract the PARAM archive";
    std::vector<fs::path> traces;
    for (const auto& entry : fs::recursive_directory_iterator(folder))
      if (entry.path().extension() == ".json") traces.push_back(entry.path());
    std::sort(traces.begin(), traces.end());
    EXPECT_EQ(traces.size(), 8u);
    test::ingest_store(traces, store);
    return store;
  }

  ReplayReport replay(const fs::path& store, const std::string& hardware = "", const std::string& cluster = "",
                      const std::string& measured_hardware = "") const {
    ReplayOptions options;
    options.store = store;
    options.hardware = hardware;
    options.cluster = cluster;
    options.measured_hardware = measured_hardware;
    options.configs_dir = test::configs_dir();
    return run_replay(options, registries_);
  }

  /// configs/hardware/H100-SXM5-80GB.yaml with every peak_tflops multiplied by `peak` and the HBM bandwidth by `hbm`;
  /// with `uncapped`, a power limit (5 kW) that no load reaches, so that every kernel runs at the boost clock.
  fs::path scaled_h100(const std::string& name, double peak, double hbm, bool uncapped = false) const {
    std::ifstream in(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
    std::ostringstream out;
    const std::regex peak_line(R"(^(  (fp32|tf32|bf16|fp16|fp8): )([0-9.]+)(.*)$)");
    const std::regex hbm_line(R"(^(  bandwidth_tb_s: )([0-9.]+)(.*)$)");
    const std::regex tdp_line(R"(^(  tdp: )([0-9.]+)(.*)$)");
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (uncapped && std::regex_match(line, m, tdp_line)) line = m[1].str() + "5000" + m[3].str();
      if (std::regex_match(line, m, peak_line))
        line = m[1].str() + std::to_string(std::stod(m[3].str()) * peak) + m[4].str();
      else if (std::regex_match(line, m, hbm_line))
        line = m[1].str() + std::to_string(std::stod(m[2].str()) * hbm) + m[3].str();
      out << line << "\n";
    }
    const fs::path file = dir_ / (name + ".yaml");
    std::ofstream(file) << out.str();
    return file;
  }

  static double class_time(const ReplayReport& r, KernelClass c, bool replayed) {
    for (const auto& t : r.classes)
      if (t.kernel_class == c) return replayed ? t.replayed_s : t.measured_s;
    return 0.0;
  }

  fs::path dir_;
  ModelRegistries registries_ = ModelRegistries::with_builtins();
};

struct TraceCase {
  const char* name;
  std::vector<std::string> traces;
};

// ---- the measured hardware: the measured span within 5 % ----------------------------------------------------------

TEST_F(ReplayTest, SameHardwareReproducesTheMeasuredSpanOfRealTraces) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_2rank_nccl.json.gz");
  const TraceCase cases[] = {
      {"qwen_h100", {"traces/kineto/tracelens_h100_qwen05b.json.gz"}},                     // one stream, inference
      {"nccl_a100", {"traces/kineto/hta_a100_2rank_nccl.json.gz"}},                        // rank 0 of 2, NCCL stream
      {"dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"}},                     // 4 streams
      {"resnet_mi300x", {"traces/kineto/tracelens_mi300x_resnet_train_actckpt.json.gz"}},  // AMD, 2 streams
      {"fsdp_mi350x", {"traces/rocprofv3/tracelens_mi350x_fsdp_train_rank0.json.gz"}},     // read as MI350X
      {"cloverleaf_nsys", {"traces/nsys/pipit_a100x2_cloverleaf.sqlite"}},
  };
  for (const TraceCase& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path store = store_of(c.name, c.traces);
    const test::StoreFacts facts = test::store_facts(store);
    const ReplayReport r = replay(store);
    EXPECT_TRUE(r.same_hardware);
    // The measured span is the store's (read independently here).
    EXPECT_NEAR(r.measured_span_s, facts.span_s, 1e-9 * facts.span_s);
    EXPECT_LT(std::abs(r.span_error()), 0.05) << r.measured_span_s << " -> " << r.replayed_span_s;
    // Every kernel lasts its measured duration: per class, replayed GPU time = the store's.
    std::size_t records = 0;
    for (const auto& t : r.classes) {
      const double busy = facts.busy_s[static_cast<std::size_t>(t.kernel_class)];
      EXPECT_NEAR(t.measured_s, busy, 1e-9 * busy + 1e-12) << kernel_class_name(t.kernel_class);
      EXPECT_NEAR(t.replayed_s, busy, 1e-6 * busy + 1e-12) << kernel_class_name(t.kernel_class);
      records += t.records;
    }
    EXPECT_EQ(records, facts.records);
  }
}

TEST_F(ReplayTest, EightRanksMeetInTheirCollectives) {
  // PARAM's DLRM on 8 V100s: every rank's 5 all-to-all (send/recv) and 3 all-reduce kernels carry no process group;
  // the store holds the whole world, so they are matched over all 8 ranks by order and their members meet. V100
  // has no hardware file: replayed as measured.
  CHOPSIM_REQUIRE_SHARED_DATA("traces/execution-trace/param_v100x8_dlrm_kineto.tar.gz");
  const fs::path store = param_store();
  const test::StoreFacts facts = test::store_facts(store);
  ASSERT_EQ(facts.ranks, 8u);
  const ReplayReport r = replay(store);
  EXPECT_EQ(r.collectives_matched, facts.communication_records);
  EXPECT_EQ(r.collectives_measured, 0u);
  EXPECT_NEAR(r.measured_span_s, facts.span_s, 1e-9 * facts.span_s);
  EXPECT_LT(std::abs(r.span_error()), 0.05) << r.measured_span_s << " -> " << r.replayed_span_s;
  ASSERT_EQ(r.ranks.size(), 8u);
  for (const auto& rank : r.ranks)
    EXPECT_LT(std::abs(rank.replayed_s - rank.measured_s), 0.05 * rank.measured_s) << "rank " << rank.rank;
  // Asking for other hardware needs to know what V100 is.
  EXPECT_NE(input_error([&] { (void)replay(store, "H100-SXM5-80GB"); }).find("--measured-hardware"), std::string::npos);
}

// ---- what-if: predictable directions and sizes ---------------------------------------------------------------------

TEST_F(ReplayTest, TwiceThePeakAndBandwidthHalvesEveryKernelButNotTheHostGaps) {
  // Doubling both roofline limits halves every kernel (both terms of max(F / peak, B / BW) halve); the host gaps stay.
  // On a single stream without cross-stream dependencies the new span is exactly the old span minus half the GPU time.
  // Both GPUs without a binding power limit, so that every kernel runs at the boost clock on both: with the H100's
  // 700 W, the utilisation of a kernel (its launch overhead does not halve) and so its sustained clock could differ.
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/tracelens_h100_qwen05b.json.gz");
  const fs::path store = store_of("qwen_h100", {"traces/kineto/tracelens_h100_qwen05b.json.gz"});
  const std::string h100_uncapped = scaled_h100("H100free", 1.0, 1.0, true).string();
  const ReplayReport r = replay(store, scaled_h100("H100x2", 2.0, 2.0, true).string(), "dgx-h100", h100_uncapped);
  EXPECT_FALSE(r.same_hardware);
  double busy = 0.0;
  for (const auto& t : r.classes) {
    EXPECT_NEAR(t.replayed_s, t.measured_s / 2, 1e-9 * t.measured_s) << kernel_class_name(t.kernel_class);
    busy += t.measured_s;
  }
  EXPECT_GT(r.kernels_scaled_by_work, 0u);   // GEMMs and attention with shapes
  EXPECT_GT(r.kernels_scaled_by_class, 0u);  // elementwise kernels without byte counts
  EXPECT_NEAR(r.replayed_span_s, r.measured_span_s - busy / 2, 1e-9 * r.measured_span_s);

  // Four streams, cross-stream dependencies, NCCL kernels kept as measured (rank 3 of 8 alone): the span shrinks,
  // by at most half the non-communication GPU time.
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_rank3of8_dlrm.json.gz");
  const fs::path dlrm = store_of("dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"});
  const ReplayReport d = replay(dlrm, scaled_h100("H100x2", 2.0, 2.0, true).string(), "dgx-h100");
  const ReplayReport same = replay(dlrm, h100_uncapped, "dgx-h100");
  double scaled_busy = 0.0;
  for (const auto& t : same.classes)
    if (t.kernel_class != KernelClass::communication) scaled_busy += t.replayed_s;
  const double nccl = class_time(d, KernelClass::communication, false);
  EXPECT_NEAR(class_time(d, KernelClass::communication, true), nccl, 1e-9 * nccl);  // kept as measured
  EXPECT_LE(d.replayed_span_s, same.replayed_span_s * (1 + 1e-9));
  EXPECT_GE(d.replayed_span_s, same.replayed_span_s - scaled_busy / 2 - 1e-9);
  EXPECT_LT(d.replayed_span_s, same.replayed_span_s);  // some kernel lies on the critical path
}

TEST_F(ReplayTest, ComputeBoundGemmsScaleWithThePeakAndMemoryBoundKernelsWithBandwidth) {
  // Back-to-back bf16 GEMMs of 8192^3 (1.1 TFLOP, compute-bound on every GPU here) and a 1 GB elementwise kernel.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0, gemm_bytes = 2.0 * 3 * 8192.0 * 8192.0;
  std::vector<test::SyntheticKernel> kernels;
  double t = 0.0;
  for (int i = 0; i < 4; ++i) {
    kernels.push_back(
        test::kernel(0, 7, "sm90_xmma_gemm_bf16bf16_bf16f32", KernelClass::gemm, t, 1.5e-3, flops, gemm_bytes));
    t += 1.5e-3;
  }
  kernels.push_back(
      test::kernel(0, 7, "vectorized_elementwise_kernel", KernelClass::elementwise, t, 0.5e-3, -1.0, 1e9));
  kernels.push_back(test::kernel(0, 7, "unknown_gemm", KernelClass::gemm, t + 0.5e-3, 1e-3));  // no FLOPs: by class
  const fs::path store = dir_ / "gemms.h5";
  test::write_store(store, kernels, "NVIDIA H100 80GB HBM3", 1);

  // Without a binding power limit on either side (every kernel at the boost clock).
  const std::string h100_uncapped = scaled_h100("H100free", 1.0, 1.0, true).string();
  const ReplayReport twice_peak =
      replay(store, scaled_h100("H100peak2", 2.0, 1.0, true).string(), "dgx-h100", h100_uncapped);
  EXPECT_NEAR(class_time(twice_peak, KernelClass::gemm, true), (4 * 1.5e-3 + 1e-3) / 2, 1e-12);
  EXPECT_NEAR(class_time(twice_peak, KernelClass::elementwise, true), 0.5e-3, 1e-15);
  const ReplayReport twice_bw =
      replay(store, scaled_h100("H100bw2", 1.0, 2.0, true).string(), "dgx-h100", h100_uncapped);
  EXPECT_NEAR(class_time(twice_bw, KernelClass::gemm, true), 4 * 1.5e-3 + 1e-3, 1e-12);
  EXPECT_NEAR(class_time(twice_bw, KernelClass::elementwise, true), 0.25e-3, 1e-15);

  // H100 -> MI300X under their power limits (700 and 750 W): the compute-bound GEMM scales by the ratio of achievable
  // FLOP/s, peak(f) x eta_max x F / (F + F_half), each at the clock its GPU holds for that GEMM: the highest clock
  // step at which the power model's power for the GEMM's load is within the cap; the elementwise kernel by the HBM
  // bandwidth x eta_memory of the two hardware files (the clock does not move a memory-bound kernel).
  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const HardwareSpec mi300x = load_hardware_config(test::configs_dir() / "hardware" / "MI300X.yaml");
  auto held_clock = [&](const HardwareSpec& hw, const KernelWork& work) {
    const auto compute = registries_.compute.create("roofline", compute_params_for(hw, ""));
    const auto power = registries_.power.create("cv2f", power_params_for(hw));
    const SustainedClockLimits limits = sustained_clock_limits(hw, *registries_.thermal.create("rc", hw.thermal));
    const double f = sustained_clock_hz(*compute, *power, work, limits);
    // The cap binds: the clock holds it, one step up would exceed it.
    auto watts = [&](double clock_hz) {
      const KernelTiming timing = compute->timing(work, clock_hz);
      DieActivity a;
      a.busy = 1.0;
      a.tensor = std::min(timing.compute_utilization, 1.0);
      a.hbm = std::min(timing.memory_utilization, 1.0);
      return power->power_w(a, clock_hz, limits.temperature_c);
    };
    EXPECT_LT(f, limits.ceiling_hz) << hw.name;
    EXPECT_LE(watts(f), hw.tdp_w) << hw.name;
    EXPECT_GT(watts(f + limits.step_hz), hw.tdp_w) << hw.name;
    return f;
  };
  auto achievable = [&](const HardwareSpec& hw, double gemm_flops, double bytes) {
    const auto& e = hw.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)];
    const double f = held_clock(hw, KernelWork{KernelClass::gemm, Precision::bf16, gemm_flops, bytes});
    return hw.compute.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] * f / hw.compute.peak_clock_hz() *
           e.compute * gemm_flops / (gemm_flops + e.half_efficiency_flops);
  };
  auto bandwidth = [&](const HardwareSpec& hw) {
    return hw.compute.hbm_bandwidth_bytes_per_s *
           hw.compute.efficiency[static_cast<std::size_t>(KernelClass::elementwise)].memory;
  };
  const ReplayReport amd = replay(store, "MI300X");
  // The GEMM without FLOPs scales as the store's GEMMs with FLOPs do (the trace's mix of sizes).
  EXPECT_NEAR(class_time(amd, KernelClass::gemm, true),
              (4 * 1.5e-3 + 1e-3) * achievable(h100, flops, gemm_bytes) / achievable(mi300x, flops, gemm_bytes),
              1e-5 * 7e-3);
  EXPECT_NEAR(class_time(amd, KernelClass::elementwise, true), 0.5e-3 * bandwidth(h100) / bandwidth(mi300x), 1e-12);
  EXPECT_EQ(amd.cluster, "mi300x");
}

TEST_F(ReplayTest, MatchedCollectivesMeetAndAreReSimulatedOnRequest) {
  // Two ranks all-reduce 256 MB over [0, 1]; rank 1 arrives 1 ms late. Measured: rank 0's NCCL kernel lasts 11 ms
  // (10 ms of transfer after waiting 1 ms), rank 1's 10 ms.
  const double bytes = 256e6;
  std::vector<test::SyntheticKernel> kernels;
  kernels.push_back(test::kernel(0, 7, "gemm", KernelClass::gemm, 0.0, 2e-3));
  kernels.push_back(test::kernel(1, 7, "gemm", KernelClass::gemm, 0.0, 3e-3));
  kernels.push_back(test::collective(0, 20, CollectiveKind::all_reduce, bytes, "[0, 1]", 2e-3, 11e-3));
  kernels.push_back(test::collective(1, 20, CollectiveKind::all_reduce, bytes, "[0, 1]", 3e-3, 10e-3));
  const fs::path store = dir_ / "allreduce.h5";
  test::write_store(store, kernels, "NVIDIA H100 80GB HBM3", 2);

  const ReplayReport measured = replay(store);
  EXPECT_EQ(measured.collectives_matched, 2u);
  EXPECT_EQ(measured.collectives_simulated, 0u);
  EXPECT_NEAR(measured.replayed_span_s, 13e-3, 1e-12);  // the last arrival (3 ms) + the 10 ms transfer
  EXPECT_NEAR(class_time(measured, KernelClass::communication, true), 21e-3, 1e-12);

  ReplayOptions options;
  options.store = store;
  options.configs_dir = test::configs_dir();
  options.simulate_collectives = true;
  const ReplayReport simulated = run_replay(options, registries_);
  EXPECT_EQ(simulated.collectives_simulated, 2u);
  // The collective model's alpha-beta time for a 2-GPU all-reduce on one DGX H100 node.
  ClusterSpec cluster = load_cluster_config(test::configs_dir() / "clusters" / "dgx-h100.yaml");
  cluster.fabric.kind = "none";
  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const Topology topology = build_topology(cluster, h100, registries_.node_topology, registries_.fabric_topology);
  const auto nccl = registries_.collective.create("nccl", CollectiveParams{});
  const std::vector<int> members{0, 1};
  const double expected = nccl->estimate_time_s({CollectiveKind::all_reduce, bytes, members}, topology);
  EXPECT_GT(expected, 0.0);
  EXPECT_NEAR(simulated.replayed_span_s, 3e-3 + expected, 0.02 * expected);
}

TEST_F(ReplayTest, BothEnginesReplayAlike) {
  // The fast engine (the default) and the SimGrid engine (the reference) on real traces: measured durations and
  // host gaps on the measured GPU, the 8-rank DLRM whose collectives meet, and a replay on other hardware whose
  // collectives are re-simulated over the network. Span within 0.5 %, GPU time per kernel class within 1 %.
  CHOPSIM_REQUIRE_SHARED_DATA("traces/execution-trace/param_v100x8_dlrm_kineto.tar.gz");
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_rank3of8_dlrm.json.gz");
  struct Case {
    const char* name;
    fs::path store;
    std::string hardware;
    bool simulate_collectives;
  };
  const Case cases[] = {
      {"dlrm_a100 as measured", store_of("dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"}), "", false},
      {"dlrm_a100 on H100", store_of("dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"}), "H100-SXM5-80GB",
       true},
      {"param_v100x8 as measured", param_store(), "", false},
      {"nccl_a100 collectives re-simulated", store_of("nccl_a100", {"traces/kineto/hta_a100_2rank_nccl.json.gz"}), "",
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ReplayOptions options;
    options.store = c.store;
    options.hardware = c.hardware;
    options.simulate_collectives = c.simulate_collectives;
    options.configs_dir = test::configs_dir();
    options.engine = "simgrid";
    const ReplayReport reference = run_replay(options, registries_);
    options.engine = "fast";
    const ReplayReport fast = run_replay(options, registries_);
    EXPECT_NEAR(fast.replayed_span_s, reference.replayed_span_s, 0.005 * reference.replayed_span_s);
    ASSERT_EQ(fast.classes.size(), reference.classes.size());
    for (std::size_t k = 0; k < fast.classes.size(); ++k)
      EXPECT_NEAR(fast.classes[k].replayed_s, reference.classes[k].replayed_s,
                  0.01 * reference.classes[k].replayed_s + 1e-12)
          << kernel_class_name(fast.classes[k].kernel_class);
  }
}

TEST_F(ReplayTest, TheSameModelMeasuredOnTwoGpusPredictsEachOther) {
  // TraceLens traced the same Qwen1.5-0.5B run on H100 and on MI300X: replaying one GPU's trace on the other GPU
  // predicts the other's measured span of GPU work. The hardware files alone, and with both GPUs' calibration
  // profiles (fitted partly on these traces: an in-sample check of the profiles' use, not of their fit).
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/tracelens_mi300x_qwen05b.json.gz");
  const fs::path h100 = store_of("qwen_h100", {"traces/kineto/tracelens_h100_qwen05b.json.gz"});
  const fs::path mi300x = store_of("qwen_mi300x", {"traces/kineto/tracelens_mi300x_qwen05b.json.gz"});
  const double h100_span = test::store_facts(h100).span_s, mi300x_span = test::store_facts(mi300x).span_s;
  const fs::path profiles = test::profiles_dir();
  for (const bool calibrated : {false, true}) {
    SCOPED_TRACE(calibrated ? "calibrated" : "hardware files");
    ReplayOptions to_amd;
    to_amd.store = h100;
    to_amd.hardware = "MI300X";
    to_amd.configs_dir = test::configs_dir();
    ReplayOptions to_nvidia = to_amd;
    to_nvidia.store = mi300x;
    to_nvidia.hardware = "H100-SXM5-80GB";
    if (calibrated) {
      to_amd.calibration = to_nvidia.measured_calibration = profiles / "mi300x.yaml";
      to_nvidia.calibration = to_amd.measured_calibration = profiles / "h100.yaml";
    }
    const ReplayReport amd = run_replay(to_amd, registries_);
    const ReplayReport nvidia = run_replay(to_nvidia, registries_);
    EXPECT_LT(std::abs(amd.replayed_span_s - mi300x_span), 0.15 * mi300x_span) << amd.replayed_span_s;
    EXPECT_LT(std::abs(nvidia.replayed_span_s - h100_span), 0.15 * h100_span) << nvidia.replayed_span_s;
  }
}

// ---- bad inputs
// ------------------------------------------------------------------------------------------------------

TEST_F(ReplayTest, BadInputsAreInputErrorsAndWriteNothing) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/tracelens_h100_qwen05b.json.gz");
  const fs::path qwen = store_of("qwen_h100", {"traces/kineto/tracelens_h100_qwen05b.json.gz"});
  const fs::path telemetry = dir_ / "telemetry.h5";
  test::ingest_store({test::source_dir() / "tests/traces/fixtures/nvidia_smi.csv"}, telemetry);
  const fs::path out = dir_ / "out";
  struct Case {
    std::string what;
    ReplayOptions options;
    std::string expected;
  };
  auto options = [&](const fs::path& store) {
    ReplayOptions o;
    o.store = store;
    o.configs_dir = test::configs_dir();
    o.output_dir = out;
    return o;
  };
  std::vector<Case> cases;
  cases.push_back({"missing store", options(dir_ / "nope.h5"), "kernel store not found"});
  cases.push_back({"not a store", options(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml"), "H100"});
  cases.push_back({"no kernels", options(telemetry), "no GPU records"});
  Case unknown{"unknown hardware", options(qwen), "no hardware named 'H101'"};
  unknown.options.hardware = "H101";
  cases.push_back(unknown);
  Case cluster{"unknown cluster", options(qwen), "no cluster named 'dgx-h101'"};
  cluster.options.cluster = "dgx-h101";
  cases.push_back(cluster);
  Case profile{"profile of another GPU", options(qwen), "fitted on MI300X"};
  profile.options.calibration = test::source_dir() / "calibration" / "profiles" / "mi300x.yaml";
  cases.push_back(profile);
  // A store that does not name its GPU: a profile has no hardware to apply to.
  const fs::path anonymous = dir_ / "anonymous.h5";
  test::write_store(anonymous, {test::kernel(0, 7, "gemm", KernelClass::gemm, 0.0, 1e-3)}, "", 1);
  Case target_profile{"profile without a GPU", options(anonymous),
                      "--calibration': a calibration profile needs to know the GPU (not stated in the store)"};
  target_profile.options.calibration = test::source_dir() / "calibration" / "profiles" / "h100.yaml";
  cases.push_back(target_profile);
  Case measured_profile{"measured profile without a measured GPU", options(anonymous),
                        "--measured-calibration': a calibration profile needs to know the measured GPU"};
  measured_profile.options.measured_calibration = test::source_dir() / "calibration" / "profiles" / "h100.yaml";
  cases.push_back(measured_profile);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string message = input_error([&] { (void)run_replay(c.options, registries_); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(out)) << "output written after a bad input";
  }
  // The right profile is accepted and the files appear together.
  ReplayOptions good = options(qwen);
  good.calibration = test::source_dir() / "calibration" / "profiles" / "h100.yaml";
  const ReplayReport r = run_replay(good, registries_);
  EXPECT_TRUE(fs::exists(out / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "timeline.json"));
  EXPECT_EQ(r.files_written.size(), 2u);
}

TEST_F(ReplayTest, SameStoreSameBytes) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_rank3of8_dlrm.json.gz");
  const fs::path store = store_of("dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"});
  std::string bytes[2];
  for (int i = 0; i < 2; ++i) {
    ReplayOptions o;
    o.store = store;
    o.hardware = "H100-SXM5-80GB";
    o.configs_dir = test::configs_dir();
    o.output_dir = dir_ / ("out" + std::to_string(i));
    (void)run_replay(o, registries_);
    for (const char* name : {"summary.json", "timeline.json"}) {
      std::ifstream in(o.output_dir / name, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      bytes[i] += text.str();
    }
  }
  EXPECT_FALSE(bytes[0].empty());
  EXPECT_EQ(bytes[0], bytes[1]);
}

TEST_F(ReplayTest, PerfettoTimelineReplacesTheJsonOne) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_rank3of8_dlrm.json.gz");
  const fs::path store = store_of("dlrm_a100", {"traces/kineto/hta_a100_rank3of8_dlrm.json.gz"});
  ReplayOptions o;
  o.store = store;
  o.configs_dir = test::configs_dir();
  o.output_dir = dir_ / "perfetto";
  o.timeline_format = TimelineFormat::perfetto;
  const ReplayReport r = run_replay(o, registries_);
  EXPECT_FALSE(fs::exists(o.output_dir / "timeline.json"));
  ASSERT_TRUE(fs::exists(o.output_dir / "timeline.pftrace"));
  EXPECT_EQ(r.files_written.back(), o.output_dir / "timeline.pftrace");
  // A protobuf Trace: its first byte is the key of field 1 (packet), length-delimited.
  std::ifstream in(o.output_dir / "timeline.pftrace", std::ios::binary);
  EXPECT_EQ(in.get(), 0x0A);
  EXPECT_GT(fs::file_size(o.output_dir / "timeline.pftrace"), 1000u);
}

TEST(ReplayGpuNames, TraceGpuNamesMapToTheShippedFiles) {
  EXPECT_EQ(hardware_for_gpu_name("NVIDIA H100 80GB HBM3"), "H100-SXM5-80GB");
  EXPECT_EQ(hardware_for_gpu_name("NVIDIA H100 PCIe"), "");
  EXPECT_EQ(hardware_for_gpu_name("NVIDIA A100-PG509-200"), "A100-SXM4-80GB");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI300X VF"), "MI300X");
  EXPECT_EQ(hardware_for_gpu_name("NVIDIA GB200"), "GB200");  // not B200, whose name it contains
  EXPECT_EQ(hardware_for_gpu_name("NVIDIA B200"), "B200");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI250X"), "MI250X");
  EXPECT_EQ(hardware_for_gpu_name("Tesla V100-SXM2-32GB"), "");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI350X (gfx950)"), "MI350X");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI355X"), "MI355X");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI325X"), "MI325X");
  EXPECT_EQ(hardware_for_gpu_name("AMD Instinct MI210"), "");
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA B200",
                           "NVIDIA GB200", "AMD Instinct MI300X", "AMD Instinct MI250X", "AMD Instinct MI250",
                           "AMD Instinct MI325X", "AMD Instinct MI350X", "AMD Instinct MI355X"})
    EXPECT_TRUE(fs::exists(test::configs_dir() / "hardware" / (hardware_for_gpu_name(name) + ".yaml"))) << name;
}

}  // namespace
}  // namespace chopsim
