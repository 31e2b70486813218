// Expert load imbalance end to end (training.moe_load_imbalance): Mixtral-8x7B on 32 H200 with ep 8, the shipped
// config made dropless. The busiest expert-parallel rank's extra rows are executed work, not model FLOPs: the run's
// executed FLOPs grow by exactly the extra expert work the workload holds, its model FLOPs do not, and the
// iteration takes longer.

#include <gtest/gtest.h>

#include <string>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

/// The executed FLOPs of rank 0's expert kernels in one iteration (their names start with "expert_").
double expert_flops(const Workload& workload) {
  double flops = 0.0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op).starts_with("expert_")) flops += op.flops;
  return flops;
}

TEST(MoeLoadImbalanceRun, TheBusiestRankSlowsTheStepByItsExtraExpertWork) {
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "mixtral-8x7b-h200-ep.yaml";
  RunSpec capped = load_run_config(config, default_search_path(config), registries);
  ASSERT_TRUE(capped.training.moe_capacity_factor.has_value());
  RunSpec balanced = capped;
  balanced.training.moe_capacity_factor.reset();  // dropless, balanced: the same rows as capacity 1.0
  RunSpec skewed = balanced;
  skewed.training.moe_load_imbalance = 1.3;

  const RunReport at_capacity = run_simulation(capped, registries);
  const RunReport even = run_simulation(balanced, registries);
  const RunReport uneven = run_simulation(skewed, registries);
  // The same rows as the balanced dropless run, but known on the host: its dispatcher does not wait for the token
  // counts (workload_moe.cpp), so the step is no longer, and the GPU's work is the same.
  EXPECT_LE(at_capacity.iteration_time_s, even.iteration_time_s);
  EXPECT_GT(at_capacity.iteration_time_s, 0.99 * even.iteration_time_s);
  const Workload even_work = build_run_workload(balanced);
  EXPECT_DOUBLE_EQ(build_run_workload(capped).executed_flops_per_iteration(), even_work.executed_flops_per_iteration());
  EXPECT_GT(uneven.iteration_time_s, even.iteration_time_s);
  EXPECT_LT(uneven.mfu, even.mfu);

  const Workload uneven_work = build_run_workload(skewed);
  EXPECT_DOUBLE_EQ(uneven_work.model_flops_per_iteration, even_work.model_flops_per_iteration);
  // Every rank runs the same program (one symmetry class), so the per-GPU executed FLOPs grow by rank 0's extra.
  const double extra_per_gpu = 0.3 * expert_flops(even_work);
  ASSERT_GT(extra_per_gpu, 0.0);
  EXPECT_NEAR(uneven_work.executed_flops_per_iteration() - even_work.executed_flops_per_iteration(),
              extra_per_gpu * even.gpus, 1e-9 * even_work.executed_flops_per_iteration());
  // The extra work takes time: at least what it would take at the GPU's peak (boost clock, the MFU's peak).
  const double peak_flops_per_s = even.model_tflops_per_gpu * 1e12 / even.mfu;
  EXPECT_GT(uneven.iteration_time_s - even.iteration_time_s, extra_per_gpu / peak_flops_per_s);
}

}  // namespace
}  // namespace chopsim
