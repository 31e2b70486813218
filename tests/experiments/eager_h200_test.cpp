// The eager-PyTorch framework (training.framework: pytorch-eager) against the real H200 measurement of
// ../shared/data/measured/h200_llama32_1b: the kernel inventory against the Kineto trace's kernels, the memory model
// against the allocator peaks, and the step times with and without the H200 profile. Skipped without ../shared/data.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>
#include <string>

#include "chopsim/config/config.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/transformer.hpp"
#include "chopsim_test_paths.hpp"
#include "eager_h200_trace.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

const std::string kFolder = "measured/h200_llama32_1b/";

RunSpec eager_run(int micro_batch) {
  const fs::path config =
      test::configs_dir() / "validation" / ("h200-llama3.2-1b-eager-mb" + std::to_string(micro_batch) + ".yaml");
  return load_run_config(config, default_search_path(config), ModelRegistries::with_builtins());
}

// Per class, the kernels and bytes of one training step. The trace holds two steps at micro-batch 4 (its
// record_shapes give the bytes of the memory-bound ops, traces/src/op_traffic.hpp); the workload is the generated
// program of one iteration.
TEST(EagerH200, TheKernelInventoryMatchesTheTraceClassByClass) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "kineto_mb4.json.gz");
  auto measured = test::kineto_class_totals(test::shared_data_dir() / kFolder / "kineto_mb4.json.gz", 2.0);
  const RunSpec run = eager_run(4);
  const Workload workload = build_run_workload(run);
  std::map<KernelClass, test::TraceClassTotals> modelled;
  for (const Op& op : workload.program(0).streams[0].ops) {
    if (op.kind != OpKind::compute) continue;
    auto& totals = modelled[op.kernel_class];
    totals.kernels += 1.0;
    totals.bytes += op.bytes;
  }
  // GEMMs: the trace's 340 per step are 339 matmuls and a split-K reduction; the workload's count them as 339.
  EXPECT_NEAR(modelled[KernelClass::gemm].kernels, measured[KernelClass::gemm].kernels, 2.0);
  // Elementwise (casts, norms' pieces, rotary, residuals, activations, the loss's upcast): 1,874 kernels and 375 GB
  // per step in the trace; the inventory within 3 % on both.
  EXPECT_NEAR(modelled[KernelClass::elementwise].kernels / measured[KernelClass::elementwise].kernels, 1.0, 0.03);
  EXPECT_NEAR(modelled[KernelClass::elementwise].bytes / measured[KernelClass::elementwise].bytes, 1.0, 0.03);
  // Reductions (norms' means and sums, log-softmax and its gradient): bytes within 5 %.
  EXPECT_NEAR(modelled[KernelClass::reduction].bytes / measured[KernelClass::reduction].bytes, 1.0, 0.05);
}

// The elementwise kernels by TensorIterator path (ElementwisePath): the workload marks each op with the path its
// operands' layout and dtypes take, and the trace's kernel names say which path each ran. Per step in the trace:
// vectorized 1,006 kernels and 240 GB, unrolled 279 and 52 GB, strided 535 and 83 GB (the paths' HBM shares are
// 0.89 / 0.43 / 0.43 on H200, so the split decides the class's time). The ops without a TensorIterator kernel (cats,
// the embedding's gather) have the fused path and are left out here.
TEST(EagerH200, ElementwiseKernelsTakeTheTracesPaths) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "kineto_mb4.json.gz");
  auto measured = test::kineto_elementwise_path_totals(test::shared_data_dir() / kFolder / "kineto_mb4.json.gz", 2.0);
  const Workload workload = build_run_workload(eager_run(4));
  std::map<ElementwisePath, test::TraceClassTotals> modelled;
  for (const Op& op : workload.program(0).streams[0].ops) {
    if (op.kind != OpKind::compute || op.kernel_class != KernelClass::elementwise) continue;
    auto& totals = modelled[op.elementwise_path];
    totals.kernels += 1.0;
    totals.bytes += op.bytes;
  }
  for (const ElementwisePath path : kPytorchElementwisePaths) {
    SCOPED_TRACE(std::string(elementwise_path_name(path)));
    // Modelled 977 / 275 / 533 kernels and 239.0 / 51.9 / 83.8 GB per step.
    EXPECT_NEAR(modelled[path].kernels / measured[path].kernels, 1.0, 0.05);
    EXPECT_NEAR(modelled[path].bytes / measured[path].bytes, 1.0, 0.05);
  }
}

// Attention by head dimension: the hardware file's cuDNN efficiency is fitted to FlashAttention-3's figures at head dim
// 128, and the same paper's head-dim-64 panels give the ratio 0.79 (kernels.attention_head_dim_64_ratio). The
// probe's SDPA calls run at head dim 64 (Llama-3.2-1B: 2048 / 32 heads): 64 cuDNN kernels over two steps, 82.5 ms.
// The roofline at the clock the GPU held while they ran (1,776 MHz, nvidia-smi) reproduces their total within 5 %
// with the ratio, and is 23 % short without it.
TEST(EagerH200, AttentionAtHeadDim64TakesTheTracesTime) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "kineto_mb4.json.gz");
  const auto kernels =
      test::kineto_kernels_with_flops(test::shared_data_dir() / kFolder / "kineto_mb4.json.gz", KernelClass::attention);
  ASSERT_EQ(kernels.size(), 64u);
  const RunSpec run = eager_run(4);
  ASSERT_EQ(run.model.qk_head_dim(), 64);
  ModelRegistries registries = ModelRegistries::with_builtins();
  const double clock_hz = 1776e6;
  const auto total = [&](double head_dim) {
    ComputeParams params = compute_params_for(run.hardware, "", head_dim);
    params.launch_overhead_s = 0.0;  // the trace's durations exclude the gap to the next kernel
    const auto model = registries.compute.create("roofline", params);
    double seconds = 0.0;
    for (const auto& k : kernels)
      seconds += model->timing({KernelClass::attention, Precision::bf16, k.flops, k.bytes}, clock_hz).duration_s;
    return seconds;
  };
  double measured = 0.0;
  for (const auto& k : kernels) measured += k.duration_s;
  EXPECT_NEAR(measured, 0.0825, 0.001);
  EXPECT_NEAR(total(64) / measured, 1.0, 0.05);
  EXPECT_LT(total(128) / measured, 0.8);  // the head-dim-128 efficiency: far too fast
}

// The loss over Llama 3's 128,256-token vocabulary: log_softmax of 16,384 rows of fp32 logits per step at micro-batch 4
// and its backward, 7.88 ms and 8.39 ms in the trace (cunn_SoftMaxForward / cunn_SoftMaxBackward, one each per step).
// Rows that long do not fit in shared memory: PyTorch's kernels read each row three times forward and the gradient
// twice backward (common/pytorch_softmax.hpp), streaming at the vectorized path's share of the HBM peak. The file's
// roofline reproduces both within 8 %; one read per operand at the reduction class's efficiency (what the workload
// counted before) is more than 30 % short on the forward.
TEST(EagerH200, TheLossSoftmaxTakesTheTracesTime) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "kineto_mb4.json.gz");
  const RunSpec run = eager_run(4);
  const Workload workload = build_run_workload(run);
  ModelRegistries registries = ModelRegistries::with_builtins();
  ComputeParams params = compute_params_for(run.hardware, "", run.model.qk_head_dim());
  params.launch_overhead_s = 0.0;  // the trace's durations exclude the gap to the next kernel
  const auto model = registries.compute.create("roofline", params);
  const auto time_of = [&](std::string_view name) {
    for (const Op& op : workload.program(0).streams[0].ops)
      if (op.kind == OpKind::compute && workload.name(op) == name) {
        KernelWork work{op.kernel_class, op.precision, op.flops, op.bytes};
        work.elementwise_path = op.elementwise_path;
        EXPECT_EQ(op.elementwise_path, ElementwisePath::vectorized) << name;
        return model->timing(work, 1776e6).duration_s;  // memory-bound: the clock does not matter
      }
    ADD_FAILURE() << "no op " << name;
    return 0.0;
  };
  const double logits = 4.0 * 4096 * 128256;
  EXPECT_NEAR(time_of("log_softmax") / 7.88e-3, 1.0, 0.08);
  EXPECT_NEAR(time_of("log_softmax_bwd") / 8.39e-3, 1.0, 0.08);
  const double one_read =
      model->timing({KernelClass::reduction, Precision::fp32, logits, 8.0 * logits}, 1e9).duration_s;
  EXPECT_LT(one_read / 7.88e-3, 0.7);
}

// Eager PyTorch runs the same matmuls as any other framework: 6 N FLOPs per token (N = the matmul parameters, the
// tied head counted once), plus attention.
TEST(EagerH200, GemmFlopsAreSixNPerToken) {
  const RunSpec run = eager_run(2);
  const Workload workload = build_run_workload(run);
  double gemm_flops = 0.0;
  for (const Op& op : workload.program(0).streams[0].ops)
    if (op.kind == OpKind::compute && op.kernel_class == KernelClass::gemm) gemm_flops += op.flops;
  const double tokens = 2.0 * 4096.0;
  EXPECT_NEAR(gemm_flops / (6.0 * count_parameters(run.model).active_matmul * tokens), 1.0, 1e-9);
}

// torch.cuda.max_memory_allocated at micro-batch 1, 2, 4, 8 (steps.json): the eager memory model within 1 %.
TEST(EagerH200, PeakAllocatedMemoryMatchesTheMeasuredPeaks) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "steps.json");
  const YAML::Node steps = YAML::LoadFile((test::shared_data_dir() / kFolder / "steps.json").string());
  for (const int micro_batch : {1, 2, 4, 8}) {
    SCOPED_TRACE(micro_batch);
    const RunSpec run = eager_run(micro_batch);
    const MemoryBreakdown m = estimate_peak_memory(run.model, run.parallelism, run.training, run.hardware);
    const double measured =
        steps["runs"]["mb" + std::to_string(micro_batch)]["peak_mem_gib"].as<double>() * 1073741824.0;
    EXPECT_NEAR(m.allocated_bytes() / measured, 1.0, 0.01);
    // To a few MiB at every micro-batch: the two cuBLAS workspaces of 32 MiB (PyTorch's default on H200, one for
    // the forward's thread and one for autograd's) close what was a constant 64-66 MiB shortfall.
    EXPECT_NEAR(m.allocated_bytes(), measured, 8.0 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(m.workspace_bytes, 2.0 * 32.0 * 1024 * 1024);
    EXPECT_TRUE(m.fits());
  }
  // Twice micro-batch 8 does not fit the 140 GiB: the prediction says so.
  RunSpec big = eager_run(8);
  big.training.micro_batch = 16;
  big.training.global_batch = 16;
  EXPECT_FALSE(estimate_peak_memory(big.model, big.parallelism, big.training, big.hardware).fits());
}

// The probe's four micro-batches, and the 60 s at micro-batch 4 after them, against what was measured (steps.json,
// nvml.csv), with the hardware file alone and with calibration/profiles/h200.yaml, whose power model was fitted to the
// four phases (calibration/runs/h200-llama3.2-1b-eager.yaml; the sustained phase is held out). Bounds per metric,
// (uncalibrated, calibrated): issue 20's targets (step time 15 % / 5 %, mean power 5 %, mean SM clock 3 % calibrated,
// largest power reading 10 % calibrated).
TEST(EagerH200, StepTimePowerClockAndPeaksWithAndWithoutTheProfile) {
  CHOPSIM_REQUIRE_SHARED_DATA(kFolder + "steps.json");
  const auto registries = ModelRegistries::with_builtins();
  struct Bound {
    ValidationMetric metric;
    double uncalibrated, calibrated;
  };
  const Bound bounds[] = {{ValidationMetric::iteration_time_s, 0.15, 0.05},
                          {ValidationMetric::average_power_w, 0.05, 0.05},
                          {ValidationMetric::mean_clock_hz, 0.06, 0.03},
                          {ValidationMetric::peak_power_w, 0.15, 0.10}};
  std::vector<ValidationCase> chosen;
  for (ValidationCase& c : load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries,
                                                 test::source_dir() / "calibration" / "profiles"))
    if (c.group == "h200_eager" && c.metric != ValidationMetric::peak_memory_bytes) chosen.push_back(std::move(c));
  ASSERT_EQ(chosen.size(), 20u);
  int checked = 0;
  for (const ValidationResult& r : run_validation(chosen, registries, 2)) {
    SCOPED_TRACE(r.validation_case.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    ASSERT_TRUE(r.calibrated.ok) << r.calibrated.failure;
    for (const Bound& b : bounds) {
      if (b.metric != r.validation_case.metric) continue;
      EXPECT_LT(std::abs(r.uncalibrated.relative_error), b.uncalibrated);
      EXPECT_LT(std::abs(r.calibrated.relative_error), b.calibrated);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);
}

TEST(EagerH200, ModelParallelismIsRejectedWithTheFix) {
  RunSpec run = eager_run(1);
  run.parallelism.tp = 2;
  run.cluster.gpus_per_node = 2;
  try {
    validate_run(run, SourceLocation{"test"});
    FAIL() << "tp 2 accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("training.framework"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("megatron-te"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace chopsim
