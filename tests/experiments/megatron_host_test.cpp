// The host time per kernel launch of Megatron-Core with Transformer Engine, per machine, from the Megatron-LM
// functional tests whose steps are host-bound (the 12-layer, hidden-512 GPT of megatron_lm_tiny: a few milliseconds
// of GPU work in a 50-240 ms step). A predicted step there is linear in training.host_launch_us (the host issues
// every launch of the step in turn), so each measured step gives the launch time that reproduces it; the median over
// a machine's rows is what configs/validation/megatron-*.yaml, the DGX cluster files (megatron_host_launch_us: what
// `chopsim import` gives Megatron jobs) and the Megatron-Core records of `chopsim validate` use for that machine.

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim_test_paths.hpp"
#include "validation_internal.hpp"

namespace chopsim {
namespace {

std::vector<ValidationCase> megatron_cases() {
  return load_validation_cases(test::shared_data_dir(), test::configs_dir(), ModelRegistries::with_builtins(),
                               test::profiles_dir());
}

/// The step time of each case predicted with every GPU's host at `host_launch_s` (uncalibrated).
std::vector<double> steps_with_host(std::vector<ValidationCase> cases, double host_launch_s) {
  for (ValidationCase& c : cases) c.run.training.host_launch_s = host_launch_s;
  std::vector<double> steps;
  for (const ValidationResult& r : run_validation(cases, ModelRegistries::with_builtins(), 2)) {
    EXPECT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    steps.push_back(r.uncalibrated.predicted);
  }
  return steps;
}

// The launch time each machine's host-bound rows imply, and the one its Megatron configs set.
TEST(MegatronHost, TheHostBoundFunctionalTestsGiveEachMachinesLaunchTime) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  std::map<std::string, std::vector<ValidationCase>> tiny_by_group;
  std::map<std::string, double> configured_by_group;
  std::vector<ValidationCase> cases = megatron_cases();
  for (ValidationCase& c : cases) {
    if (!c.group.starts_with("megatron_lm") || c.metric != ValidationMetric::iteration_time_s) continue;
    const std::string machine = c.group.ends_with("_a100") ? "a100" : c.group.ends_with("_gb200") ? "gb200" : "h100";
    // Every Megatron config of a machine (7B and tiny) sets the same host time.
    const auto it = configured_by_group.emplace(machine, c.run.training.host_launch_s).first;
    EXPECT_DOUBLE_EQ(c.run.training.host_launch_s, it->second) << c.id;
    // The DGX clusters carry their host's value for imported Megatron jobs (GB200's configs borrow dgx-b200's node).
    if (machine != "gb200") {
      EXPECT_DOUBLE_EQ(c.run.cluster.megatron_host_launch_s, it->second) << c.id;
    }
    if (c.group.starts_with("megatron_lm_tiny")) tiny_by_group[machine].push_back(std::move(c));
  }
  ASSERT_EQ(tiny_by_group.size(), 3u);
  // NVIDIA's Megatron-Core tables run on DGX H100, DGX B200 (no host-bound run of its own: DGX H100's value) and
  // DGX A100 hosts.
  int records = 0;
  for (const ValidationCase& c : cases) {
    if (c.group != "megatron_records" || !c.not_modelled.empty()) continue;
    ++records;
    const std::string gpu = c.run.hardware.name;
    EXPECT_DOUBLE_EQ(c.run.training.host_launch_s, configured_by_group[gpu.starts_with("A100") ? "a100" : "h100"])
        << c.id;
  }
  EXPECT_GT(records, 50);
  constexpr double low = 40e-6, high = 160e-6;
  for (const auto& [machine, cases] : tiny_by_group) {
    SCOPED_TRACE(machine);
    const std::vector<double> at_low = steps_with_host(cases, low);
    const std::vector<double> at_high = steps_with_host(cases, high);
    std::vector<double> implied;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const double slope = (at_high[i] - at_low[i]) / (high - low);
      // Host-bound: the predicted step grows by at least 500 launches' worth per µs of launch time.
      EXPECT_GT(slope, 500.0) << cases[i].id;
      implied.push_back(low + (cases[i].measured - at_low[i]) / slope);
    }
    const double fitted = validation_detail::median(implied);
    std::printf("%s: implied host launch time %.1f us (configured %.1f us) over %zu rows\n", machine.c_str(),
                fitted * 1e6, configured_by_group[machine] * 1e6, implied.size());
    EXPECT_NEAR(configured_by_group[machine], fitted, 0.05 * fitted);
  }
}

}  // namespace
}  // namespace chopsim
