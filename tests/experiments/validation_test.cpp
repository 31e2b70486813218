// `chopsim validate` with and without calibration: every case whose GPU has a profile in calibration/profiles is
// predicted twice, with the profile applied exactly as the run key applies it, and the page shows both.

#include "chopsim/experiments/validation.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "chopsim/calibration/fitting.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim_test_paths.hpp"
#include "validation_internal.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

fs::path profiles_dir() { return test::source_dir() / "calibration" / "profiles"; }

/// The validation cases `keep` selects, predicted as `chopsim validate` predicts them (one result per case, in order).
std::vector<ValidationResult> predict(const std::function<bool(const ValidationCase&)>& keep) {
  const auto registries = ModelRegistries::with_builtins();
  std::vector<ValidationCase> chosen;
  for (ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir()))
    if (keep(c)) chosen.push_back(std::move(c));
  return run_validation(chosen, registries, 2);
}

/// The cases `keep` selects, predicted with `jobs` threads, as the markdown page `chopsim validate` writes.
std::string page_with_jobs(const std::function<bool(const ValidationCase&)>& keep, int jobs) {
  const auto registries = ModelRegistries::with_builtins();
  std::vector<ValidationCase> chosen;
  for (ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir()))
    if (keep(c)) chosen.push_back(std::move(c));
  std::ostringstream page;
  write_validation_markdown(page, run_validation(chosen, registries, jobs));
  return page.str();
}

/// The Megatron-LM 7B rows of DGX H100 and DGX A100.
bool is_megatron_7b(const ValidationCase& c) { return c.group == "megatron_lm" || c.group == "megatron_lm_a100"; }

TEST(Validation, ProfilesAreFoundByTheHardwareTheyWereFittedOn) {
  const auto profiles = calibration_profiles_by_hardware(profiles_dir());
  ASSERT_EQ(profiles.count("H100-SXM5-80GB"), 1u);
  ASSERT_EQ(profiles.count("MI300X"), 1u);
  EXPECT_EQ(profiles.at("H100-SXM5-80GB").filename(), "h100.yaml");
  EXPECT_EQ(profiles.at("MI300X").filename(), "mi300x.yaml");
  EXPECT_EQ(profiles.count("A100-SXM4-80GB"), 0u);
  EXPECT_TRUE(calibration_profiles_by_hardware(test::source_dir() / "no-such-folder").empty());
}

TEST(Validation, EveryCaseOnAProfiledGpuGetsTheCalibratedRun) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_dev_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  const YAML::Node h100 = YAML::LoadFile((profiles_dir() / "h100.yaml").string());
  std::set<std::string> groups_with_profile;
  for (const ValidationCase& c : cases) {
    const std::string& gpu = c.run.hardware.name;
    const bool profiled = gpu == "H100-SXM5-80GB" || gpu == "MI300X" || gpu == "H200-SXM-141GB";
    EXPECT_EQ(!c.profile.empty(), profiled) << c.id << " on " << gpu;
    if (!profiled) continue;
    groups_with_profile.insert(c.group);
    EXPECT_EQ(c.calibrated_run.calibration, c.profile);
    // The calibrated run is the run with only the profile's keys changed.
    EXPECT_EQ(c.calibrated_run.model.layers, c.run.model.layers);
    EXPECT_EQ(c.calibrated_run.hardware.compute.peak_flops_per_s, c.run.hardware.compute.peak_flops_per_s);
    if (gpu == "H100-SXM5-80GB") {
      EXPECT_EQ(c.calibrated_run.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)].compute,
                h100["kernels"]["efficiency"]["gemm"]["compute"].as<double>())
          << c.id;
      EXPECT_EQ(c.calibrated_run.hardware.intra_node_link_efficiency,
                h100["intra_node_link"]["efficiency"].as<double>());
    }
    if (!c.baseline_run.empty()) {
      EXPECT_EQ(c.calibrated_baseline.calibration, c.profile) << c.id;
    }
  }
  // The H100 groups the brief keeps: Megatron step time and memory, llm-foundry, and the seed findings.
  for (const char* group : {"megatron_lm", "llm_foundry", "seed_findings"})
    EXPECT_EQ(groups_with_profile.count(group), 1u) << group;
  EXPECT_EQ(groups_with_profile.count("perseus_a100"), 0u);
}

// `chopsim validate --jobs N` writes the same page byte for byte whatever N (issue 16): cases are predicted in
// parallel, the table is written in case order.
TEST(Validation, ThePageIsByteIdenticalWhateverTheJobCount) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  auto keep = [](const ValidationCase& c) {
    return c.group == "megatron_lm" || c.group == "megatron_lm_a100" || c.group == "h200_eager";
  };
  const std::string one = page_with_jobs(keep, 1);
  EXPECT_GT(one.size(), 1000u);
  EXPECT_EQ(page_with_jobs(keep, 2), one);
  EXPECT_EQ(page_with_jobs(keep, 3), one);
}

// The page's planning targets: per family of throughput rows, the median and the 90th percentile of |error| and
// the median signed error against 8 %, 20 % and +-4 %; a family's rows are its group's rows with its categories.
TEST(Validation, ThePageSaysWhichFamiliesMeetThePlanningTargets) {
  // The percentile is chopsim::quantile's: linear interpolation between closest ranks, as numpy.percentile([1, 2, 3,
  // 4], 90) = 3.7.
  EXPECT_DOUBLE_EQ(quantile({4.0, 1.0, 3.0, 2.0}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(quantile({5.0}, 0.9), 5.0);
  std::vector<ValidationResult> results;
  const auto add = [&](const std::string& group, std::vector<std::pair<std::string, std::string>> categories,
                       double error) {
    ValidationResult r;
    r.validation_case.id = group + std::to_string(results.size());
    r.validation_case.group = group;
    r.validation_case.metric = ValidationMetric::tokens_per_s_per_gpu;
    r.validation_case.measured = 1000.0;
    r.validation_case.categories = std::move(categories);
    r.uncalibrated.ok = true;
    r.uncalibrated.predicted = 1000.0 * (1.0 + error);
    r.uncalibrated.relative_error = error;
    results.push_back(r);
  };
  // llm-foundry: |errors| 1, 2, 5, 10, 30 %: median 5 %, 90th percentile 10 + 0.6 x 20 = 22 %, signed median +5 %.
  for (const double e : {0.01, -0.02, 0.05, 0.10, 0.30}) add("llm_foundry", {}, e);
  // Megatron-Bridge MoE: 1, 2, 3 % (90th percentile 2 + 0.8 x 1 = 2.8 %), within every target; a dense row and a README
  // row do not count for it.
  for (const double e : {0.03, -0.01, 0.02})
    add("megatron_records", {{"source", "Megatron-Bridge"}, {"model", "MoE"}}, e);
  add("megatron_records", {{"source", "Megatron-Bridge"}, {"model", "dense"}}, 0.5);
  add("megatron_records", {{"source", "Megatron-LM README"}, {"model", "dense"}}, -0.5);
  std::ostringstream page;
  write_validation_markdown(page, results);
  const std::string text = page.str();
  EXPECT_NE(text.find("| llm-foundry (MPT, FSDP, H100) | 5 | 5 | 5.0 % | 22.0 % | +5.0 % | not met: 90th percentile, "
                      "signed | 0 | - | - | - |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| Megatron-Bridge MoE | 3 | 3 | 2.0 % | 2.8 % | +2.0 % | met |"), std::string::npos);
  EXPECT_NE(text.find("| Megatron-Bridge dense | 1 | 1 | 50.0 % | 50.0 % | +50.0 % | not met: median, 90th "
                      "percentile, signed |"),
            std::string::npos);
  EXPECT_NE(text.find("| Megatron-LM README | 1 | 1 | 50.0 % | 50.0 % | -50.0 % |"), std::string::npos);
}

TEST(Validation, BothPredictionsAreMadeAndShown) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto results = predict(is_megatron_7b);
  ASSERT_EQ(results.size(), 8u);
  for (const ValidationResult& r : results) {
    const ValidationCase& c = r.validation_case;
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    if (!r.has_profile()) {
      EXPECT_FALSE(r.calibrated.ok);
      continue;
    }
    ASSERT_TRUE(r.calibrated.ok) << r.calibrated.failure;
    if (c.metric == ValidationMetric::peak_memory_bytes) {
      // A profile holds no memory keys: the memory estimate is the same.
      EXPECT_EQ(r.calibrated.predicted, r.uncalibrated.predicted);
    } else {
      // Other kernel efficiencies, launch overhead and link efficiency: another step time.
      EXPECT_NE(r.calibrated.predicted, r.uncalibrated.predicted);
      EXPECT_NEAR(r.calibrated.relative_error, (r.calibrated.predicted - c.measured) / c.measured, 1e-12);
    }
  }
  std::ostringstream page;
  write_validation_markdown(page, results);
  const std::string text = page.str();
  EXPECT_NE(text.find("| calibrated | error |"), std::string::npos);
  EXPECT_NE(text.find("calibration profile calibration/profiles/h100.yaml"), std::string::npos);
  EXPECT_NE(text.find("No calibration profile in calibration/profiles is fitted on A100-SXM4-80GB"), std::string::npos);
  EXPECT_NE(text.find("| megatron_lm_a100 | s | 2 | 2 |"), std::string::npos);
}

// `chopsim validate --cases megatron_lm_a100,tp4_pp1 --summaries DIR`: the cases whose id or group contains a text,
// and each simulated case's summary.json beside the table, whose step time is the one the table shows.
TEST(Validation, SomeCasesAreSelectedAndLeaveTheirRunsSummaries) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto registries = ModelRegistries::with_builtins();
  auto all = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  EXPECT_EQ(select_validation_cases(all, "").size(), all.size());
  EXPECT_TRUE(select_validation_cases(all, "no such case,neither").empty());
  const auto chosen = select_validation_cases(all, "megatron_lm_a100,tp4_pp1_memory_speed (DGX H100)");
  ASSERT_EQ(chosen.size(), 5u);  // the A100 group's 2 step times and 2 memory rows, and one H100 step time
  for (const ValidationCase& c : chosen)
    EXPECT_TRUE(c.group == "megatron_lm_a100" || c.id == "gpt3_7b_tp4_pp1_memory_speed (DGX H100)") << c.id;

  const fs::path dir = fs::temp_directory_path() / ("chopsim_validation_summaries_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto results = run_validation(chosen, registries, 2, {}, dir);
  std::set<std::string> written;
  for (const auto& entry : fs::directory_iterator(dir)) written.insert(entry.path().filename().string());
  // Step times are simulated (the H100 one with and without its profile); memory rows need no simulation.
  EXPECT_EQ(written, (std::set<std::string>{"gpt3_7b_tp1_pp4_memory_speed__DGX_A100_.json",
                                            "gpt3_7b_tp4_pp1_memory_speed__DGX_A100_.json",
                                            "gpt3_7b_tp4_pp1_memory_speed__DGX_H100_.json",
                                            "gpt3_7b_tp4_pp1_memory_speed__DGX_H100_.calibrated.json"}));
  for (const ValidationResult& r : results) {
    if (r.validation_case.metric != ValidationMetric::iteration_time_s) continue;
    const std::string base =
        r.validation_case.id.find("H100") != std::string::npos
            ? "gpt3_7b_tp4_pp1_memory_speed__DGX_H100_"
            : (r.validation_case.id.find("tp1_pp4") != std::string::npos ? "gpt3_7b_tp1_pp4_memory_speed__DGX_A100_"
                                                                         : "gpt3_7b_tp4_pp1_memory_speed__DGX_A100_");
    const YAML::Node summary = YAML::LoadFile((dir / (base + ".json")).string());
    EXPECT_DOUBLE_EQ(summary["iteration_time_s"].as<double>(), r.uncalibrated.predicted) << base;
    EXPECT_EQ(summary["run"]["name"].as<std::string>(), r.validation_case.run.name);
  }
  fs::remove_all(dir);
}

// Every golden-values file of ../shared/data/validation/megatron_lm that names its machine is predicted on that
// machine's GPU; golden_values_lts.json (no machine) and files without iteration-time are left out.
TEST(Validation, EveryMegatronGoldenFileThatNamesItsMachineIsACase) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  std::map<std::string, int> step_rows;
  for (const ValidationCase& c : cases) {
    if (!c.group.starts_with("megatron_lm")) continue;
    SCOPED_TRACE(c.id);
    EXPECT_EQ(c.source.find("golden_values_lts.json"), std::string::npos);
    const bool a100 = c.group.ends_with("_a100");
    const bool gb200 = c.group.ends_with("_gb200");
    EXPECT_EQ(c.run.hardware.name, a100 ? "A100-SXM4-80GB" : gb200 ? "GB200" : "H100-SXM5-80GB");
    EXPECT_EQ(c.run.model.layers, c.group.starts_with("megatron_lm_tiny") ? 12 : 32);
    if (c.metric == ValidationMetric::iteration_time_s) ++step_rows[c.group];
  }
  // 7B: H100, A100, GB200 for tp1_pp4 and tp4_pp1 (tp4_pp1's lts_dgx_a100 file logs nothing).
  EXPECT_EQ(step_rows["megatron_lm"], 2);
  EXPECT_EQ(step_rows["megatron_lm_a100"], 2);
  EXPECT_EQ(step_rows["megatron_lm_gb200"], 2);
  // Small model: tp1_pp1 has dev and after-resume files for H100 and GB200, five A100 files; tp2_pp2 one each for
  // H100 and GB200, five A100 files.
  EXPECT_EQ(step_rows["megatron_lm_tiny"], 3);
  EXPECT_EQ(step_rows["megatron_lm_tiny_a100"], 10);
  EXPECT_EQ(step_rows["megatron_lm_tiny_gb200"], 3);
  for (const ValidationCase& c : cases) {
    if (c.id == "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer (DGX H100)") {
      EXPECT_DOUBLE_EQ(c.measured, 0.05309);  // the median of its 99 logged steps
    }
  }
}

// The Zeus GPT-3 XL run's per-stage profile: the median forward and backward time per micro-batch of each of the 4
// ranks (1.prof.json, iterations 1-3), read from the real file; stage 2 holds 7 of the 24 blocks and is the slowest.
TEST(Validation, MerakStageRowsReadTheMeasuredPerStageTimes) {
  CHOPSIM_REQUIRE_SHARED_DATA("power/perseus_sosp24/perseus/A100");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  std::map<std::string, double> measured;
  for (const ValidationCase& c : cases)
    if (c.metric == ValidationMetric::stage_time_s && c.group == "zeus_a100_power_limit") {
      measured[c.probe] = c.measured;
      EXPECT_EQ(c.run.parallelism.stage_layers, (std::vector<int>{6, 6, 7, 5}));
      EXPECT_EQ(c.run.training.attention, kEagerAttention);
    }
  ASSERT_EQ(measured.size(), 8u);
  EXPECT_NEAR(measured["rank2_forward_time"], 0.1222, 0.0005);  // 7 blocks
  EXPECT_NEAR(measured["rank1_forward_time"], 0.1046, 0.0005);  // 6 blocks: 17.4 ms each
  EXPECT_NEAR(measured["rank2_backward_time"], 0.3312, 0.0005);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_GT(measured["rank" + std::to_string(rank) + "_backward_time"],
              2.5 * measured["rank" + std::to_string(rank) + "_forward_time"]);  // recomputation: ~3x, not 2x
}

// The per-rank probes of those rows: each rank's own kernels, the backward with its recomputed forward (so ~3x the
// forward, not ~2x), and the stage of 7 layers 7/6 of a 6-layer stage.
TEST(Validation, MerakStageRowsArePredictedPerRankWithTheRecomputedForward) {
  CHOPSIM_REQUIRE_SHARED_DATA("power/perseus_sosp24/perseus/A100");
  const auto results = predict([](const ValidationCase& c) {
    return c.metric == ValidationMetric::stage_time_s && c.group == "zeus_a100_power_limit";
  });
  ASSERT_EQ(results.size(), 8u);
  std::map<std::string, double> predicted;
  for (const ValidationResult& r : results) {
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    predicted[r.validation_case.probe] = r.uncalibrated.predicted;
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::string name = "rank" + std::to_string(rank);
    const double ratio = predicted[name + "_backward_time"] / predicted[name + "_forward_time"];
    EXPECT_GT(ratio, 2.5) << rank;
    EXPECT_LT(ratio, 3.5) << rank;
  }
  EXPECT_NEAR(predicted["rank2_forward_time"] / predicted["rank1_forward_time"], 7.0 / 6.0, 0.03);
}

// Perseus (SOSP'24) measured each GPT-3 175B pipeline stage's forward and backward time and energy on A100 at every
// locked SM clock; issue 3's targets are 5 % on time and 10 % on energy. Three clocks (the max, the middle, the
// lowest) of both the middle stage and the last stage, whose unpadded GPT-2 vocabulary makes the LM head's forward
// an unaligned GEMM: without the unaligned-GEMM penalty the last stage's forward is 6.5-8 % fast.
TEST(Validation, PerseusStageTimesAndEnergiesMeetTheTargets) {
  CHOPSIM_REQUIRE_SHARED_DATA("power/perseus_sosp24/emulation/stage_profile/gpt3-175b+a100_sxm_bf16.csv");
  const auto results = predict([](const ValidationCase& c) {
    return c.group == "perseus_a100" && (c.label == 1410 || c.label == 1050 || c.label == 855);
  });
  ASSERT_EQ(results.size(), 3u * 2 * 2 * 2);  // clocks x stages x passes x (time, energy)
  for (const ValidationResult& r : results) {
    const ValidationCase& c = r.validation_case;
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    const double target = c.metric == ValidationMetric::stage_time_s ? 0.05 : 0.10;
    EXPECT_LE(std::abs(r.uncalibrated.relative_error), target)
        << "predicted " << r.uncalibrated.predicted << ", measured " << c.measured;
  }
}

// The Megatron-LM 7B runs where docs/validation.md reports them, so that a change which moves them is seen: peak
// memory within 6 % (the largest error, -5.4 %, is DGX A100 tp4_pp1's); step time within issue 2's 15 % target on
// DGX A100 and DGX H100 (largest: H100 tp4_pp1, -13.7 %), and on H100 still too fast.
TEST(Validation, MegatronRunsStayWithinTheirReportedErrors) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto results = predict(is_megatron_7b);
  ASSERT_EQ(results.size(), 8u);
  for (const ValidationResult& r : results) {
    const ValidationCase& c = r.validation_case;
    SCOPED_TRACE(c.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    const double error = r.uncalibrated.relative_error;
    if (c.metric == ValidationMetric::peak_memory_bytes) {
      EXPECT_LE(std::abs(error), 0.06);
    } else if (c.group == "megatron_lm_a100") {
      EXPECT_LE(std::abs(error), 0.15);
    } else {
      // DGX H100: what is missing takes about the same seconds as on A100, on a step 2.5x shorter.
      EXPECT_LT(error, 0.0);
      EXPECT_GE(error, -0.15);
    }
  }
}

// `chopsim validate --engine simgrid` and the default (fast) engine give the same table: the first case of every
// group (Perseus, Zeus/Merak, Megatron-LM on each machine, llm-foundry, ...), uncalibrated and calibrated, predicted
// with both engines; times within 0.5 %, other figures within 1 % (the engine agreement bounds). (The whole table:
// 437 cases, 5.6 s on the fast engine, 103 s on SimGrid; two 512-GPU llm-foundry rows differed by 0.02 %.)
TEST(Validation, EitherEnginePredictsTheSameTable) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation");
  const auto registries = ModelRegistries::with_builtins();
  std::vector<ValidationCase> chosen;
  std::set<std::string> groups;
  for (ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir())) {
    // The first case of each group that the engines run on at most 64 GPUs (SimGrid takes minutes beyond).
    if (!c.not_modelled.empty() || c.run.parallelism.world_size() > 64) continue;
    if (groups.insert(c.group).second) chosen.push_back(std::move(c));
  }
  ASSERT_GE(chosen.size(), 5u);
  std::vector<ValidationCase> on_simgrid = chosen;
  for (ValidationCase& c : on_simgrid)
    for (RunSpec* run : {&c.run, &c.baseline, &c.calibrated_run, &c.calibrated_baseline}) run->engine = "simgrid";
  const auto fast = run_validation(chosen, registries, 2);
  const auto reference = run_validation(on_simgrid, registries, 2);
  ASSERT_EQ(fast.size(), reference.size());
  for (std::size_t i = 0; i < fast.size(); ++i) {
    const ValidationCase& c = fast[i].validation_case;
    SCOPED_TRACE(c.id);
    const bool time = c.metric != ValidationMetric::peak_memory_bytes;
    const double tolerance = time ? 0.005 : 0.01;
    ASSERT_EQ(fast[i].uncalibrated.ok, reference[i].uncalibrated.ok);
    EXPECT_NEAR(fast[i].uncalibrated.predicted, reference[i].uncalibrated.predicted,
                tolerance * std::abs(reference[i].uncalibrated.predicted));
    if (fast[i].has_profile()) {
      ASSERT_EQ(fast[i].calibrated.ok, reference[i].calibrated.ok);
      EXPECT_NEAR(fast[i].calibrated.predicted, reference[i].calibrated.predicted,
                  tolerance * std::abs(reference[i].calibrated.predicted));
    }
  }
}

}  // namespace
}  // namespace chopsim

namespace chopsim {
namespace {

// NVIDIA's Megatron-Core tables (../shared/data/validation/published_megatron_records.yaml): every record is a case,
// mapped by one rule; the ones chopsim cannot predict carry the reason.
// The Megatron-LM README's A100 rows (Narayanan et al., SC'21 Table 1) print hidden size, layers and GPU count only;
// the paper's artifact (examples/sc21/run_table_1.sh, CONFIG.sh) gives the rest, and every row is predicted so.
TEST(Validation, TheReadmesA100RowsRunAsTheSc21ArtifactLaunchesThem) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  std::map<std::string, const ValidationCase*> rows;
  for (const ValidationCase& c : cases)
    if (c.id.starts_with("megatronlm-readme-a100-gpt")) rows[c.id] = &c;
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& [id, c] : rows) {
    ASSERT_TRUE(c->not_modelled.empty()) << id << ": " << c->not_modelled;
    const RunSpec& run = c->run;
    // Every GPU in the layout, with the README's global batch; 2021's Megatron-LM: fp16, every layer recomputed,
    // no distributed optimizer or sequence parallelism, attention over materialised scores with the fused softmax.
    EXPECT_EQ(run.parallelism.world_size(), run.cluster.gpu_count()) << id;
    EXPECT_EQ(run.training.precision, Precision::fp16) << id;
    EXPECT_NE(
        std::find(c->categories.begin(), c->categories.end(), std::pair<std::string, std::string>{"precision", "fp16"}),
        c->categories.end())
        << id;
    EXPECT_EQ(run.training.recompute, RecomputePolicy::full) << id;
    EXPECT_EQ(run.training.recompute_layers, 0) << id;
    EXPECT_EQ(run.parallelism.zero_stage, 0) << id;
    EXPECT_FALSE(run.parallelism.sequence_parallel) << id;
    EXPECT_EQ(run.training.attention, kEagerAttention) << id;
    EXPECT_TRUE(run.training.masked_softmax_fusion) << id;
    EXPECT_TRUE(c->flops_count_recompute) << id;
    EXPECT_EQ(run.training.seq_len, 2048) << id;
    EXPECT_EQ(run.model.hidden % run.model.heads, 0) << id;
  }
  // GPT 76B: 60 layers, 80 heads, tp 8 x pp 4 on 128 DGX A100, five layers per virtual stage (vp 3), micro-batch 2,
  // local DDP (its gradients reduced after the backward).
  const RunSpec& gpt76 = rows.at("megatronlm-readme-a100-gpt76b-g1024")->run;
  EXPECT_EQ(gpt76.model.heads, 80);
  EXPECT_EQ(gpt76.parallelism.tp, 8);
  EXPECT_EQ(gpt76.parallelism.pp, 4);
  EXPECT_EQ(gpt76.parallelism.dp, 32);
  EXPECT_EQ(gpt76.parallelism.virtual_stages, 3);
  EXPECT_EQ(gpt76.training.micro_batch, 2);
  EXPECT_EQ(gpt76.training.global_batch, 1792);
  EXPECT_FALSE(gpt76.training.overlap.dp);
  // GPT 1.7B: data parallel only (torch DDP, overlapped), micro-batch 16.
  const RunSpec& gpt1 = rows.at("megatronlm-readme-a100-gpt1.7b-g32")->run;
  EXPECT_EQ(gpt1.parallelism.tp * gpt1.parallelism.pp, 1);
  EXPECT_EQ(gpt1.training.micro_batch, 16);
  EXPECT_TRUE(gpt1.training.overlap.dp);
}

// Narayanan et al.'s FLOP count (SC'21, eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh) per iteration) is chopsim's model
// FLOPs (6 N + 12 s l h per token, Megatron's MFU convention) plus one more forward of the transformer layers
// (24 l h^2 + 4 s l h per token): the recomputation the paper counts. For a GPT without biases, untied head.
TEST(Validation, NarayanansFlopCountIsTheModelFlopsPlusTheRecomputedForward) {
  TransformerSpec gpt;
  gpt.layers = 48;
  gpt.hidden = 8192;
  gpt.heads = 64;
  gpt.kv_heads = 64;
  gpt.ffn_hidden = 4 * 8192;
  gpt.vocab = 51200;
  gpt.mlp = MlpKind::gelu;
  gpt.norm = NormKind::layernorm;
  gpt.position_embedding = PositionEmbedding::learned;
  const double l = 48, h = 8192, s = 2048;
  const double narayanan = validation_detail::narayanan_flops_per_token(gpt, 2048);
  EXPECT_NEAR(narayanan, model_training_flops_per_token(gpt, 2048) + 24 * l * h * h + 4 * s * l * h, 1e-9 * narayanan);
  // The paper's eq. 4 approximates it as 8 P per token (P = 12 l h^2): within 2 % for the 1T model's sizes, where
  // s / 6h and V / 16 l h are small.
  gpt.layers = 128;
  gpt.hidden = 25600;
  gpt.heads = gpt.kv_heads = 160;
  gpt.ffn_hidden = 4 * 25600;
  EXPECT_NEAR(validation_detail::narayanan_flops_per_token(gpt, 2048) / (8.0 * 12.0 * 128 * 25600.0 * 25600.0), 1.0,
              0.02);
}

TEST(Validation, EveryMegatronRecordIsACaseOrSaysWhyNot) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  std::map<std::string, const ValidationCase*> by_id;
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, profiles_dir());
  int modelled = 0;
  for (const ValidationCase& c : cases) {
    if (c.group != "megatron_records") continue;
    by_id[c.id] = &c;
    EXPECT_EQ(c.categories.size(), 6u) << c.id;
    if (c.not_modelled.empty()) ++modelled;
  }
  const YAML::Node records =
      YAML::LoadFile((test::shared_data_dir() / "validation" / "published_megatron_records.yaml").string());
  ASSERT_EQ(by_id.size(), records.size());
  // Where the expert all-to-all runs: ep 8 inside a DGX node; ep 32 across nodes; Qwen3-235B's ep 32 folded over tp 2
  // (etp 1) spans 32 GPUs; dense rows have none.
  const auto expert_parallelism = [&](const std::string& id) {
    for (const auto& [dimension, value] : by_id.at(id)->categories)
      if (dimension == "expert parallelism") return value;
    return std::string("missing");
  };
  EXPECT_EQ(expert_parallelism("mbridge-26.04-dgx-b200-deepseekv3-mxfp8-g256-pre-training"), "ep inside a node");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-b200-deepseekv3-mxfp8-g256-pre-training"), "ep across nodes");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-h100-qwen3_235b_a22b-fp8-g256-pre-training"), "ep across nodes");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-h100-llama3_70b-fp8-g64-pre-training"), "dense");
  EXPECT_GE(modelled, 20);

  // Llama 3 8B on one DGX H100 with FSDP over its 8 GPUs, FP8 with current scaling.
  const ValidationCase& llama = *by_id.at("mbridge-25.11-dgx-h100-llama3_8b-fp8-cs-g8-pre-training");
  ASSERT_TRUE(llama.not_modelled.empty()) << llama.not_modelled;
  EXPECT_EQ(llama.run.model.layers, 32);
  EXPECT_EQ(llama.run.hardware.name, "H100-SXM5-80GB");
  EXPECT_EQ(llama.run.parallelism.zero_stage, 3);
  EXPECT_EQ(llama.run.parallelism.dp, 8);
  EXPECT_EQ(llama.run.training.precision, Precision::fp8);
  EXPECT_EQ(llama.run.cluster.fabric.kind, "none");
  EXPECT_EQ(llama.metric, ValidationMetric::tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(llama.measured, 14451.0);

  // Qwen3-30B-A3B with its 128-wide heads, expert parallel over two nodes.
  const ValidationCase& qwen = *by_id.at("mbridge-26.06-dgx-h100-qwen3_30b_a3b-fp8-g16-pre-training");
  ASSERT_TRUE(qwen.not_modelled.empty()) << qwen.not_modelled;
  EXPECT_EQ(qwen.run.model.head_dim(), 128);
  EXPECT_EQ(qwen.run.parallelism.ep, 16);
  EXPECT_EQ(qwen.run.cluster.nodes, 2);

  // The README's GPT rows: the sizes printed in the model's name, model TFLOP/s per GPU.
  const ValidationCase& gpt = *by_id.at("megatronlm-readme-h100-gpt16b-g192");
  ASSERT_TRUE(gpt.not_modelled.empty()) << gpt.not_modelled;
  EXPECT_EQ(gpt.run.model.heads, 48);
  EXPECT_EQ(gpt.run.model.hidden, 6144);
  EXPECT_EQ(gpt.run.model.layers, 32);
  EXPECT_EQ(gpt.run.parallelism.tp, 4);
  EXPECT_EQ(gpt.metric, ValidationMetric::model_tflops_per_gpu);
  EXPECT_DOUBLE_EQ(gpt.measured, 489.1e12);

  // 126 layers over pp 8 x vp 8: the embedding and the loss counted as layers, as Megatron-Bridge's recipe does.
  const ValidationCase& big = *by_id.at("mbridge-26.06-dgx-h100-llama3.1_405b-fp8-g1024-pre-training");
  ASSERT_TRUE(big.not_modelled.empty()) << big.not_modelled;
  EXPECT_TRUE(big.run.parallelism.account_for_embedding_in_split && big.run.parallelism.account_for_loss_in_split);
  // ep 32 on tp 2 x dp 16: Megatron-Core's MoE parallel folding, experts without tensor parallelism (etp 1).
  const ValidationCase& folded = *by_id.at("mbridge-26.04-dgx-h100-qwen3_235b_a22b-fp8-g256-pre-training");
  ASSERT_TRUE(folded.not_modelled.empty()) << folded.not_modelled;
  EXPECT_EQ(folded.run.parallelism.ep, 32);
  EXPECT_EQ(folded.run.parallelism.tp, 2);
  EXPECT_EQ(folded.run.parallelism.expert_tp(), 1);
  // DeepSeek-V3 with its multi-token prediction module over Megatron-Bridge's layout: pp 16 as 15 x 4 + 1 layers,
  // pp 8 x vp 2 the same per virtual stage; records without a precision say so.
  const ValidationCase& deepseek = *by_id.at("mbridge-26.04-dgx-b200-deepseekv3-mxfp8-g256-pre-training");
  ASSERT_TRUE(deepseek.not_modelled.empty()) << deepseek.not_modelled;
  EXPECT_EQ(deepseek.run.model.mtp_layers, 1);
  EXPECT_TRUE(deepseek.run.model.is_mla());
  ASSERT_EQ(deepseek.run.parallelism.stage_layers.size(), 16u);
  EXPECT_EQ(deepseek.run.parallelism.stage_layers.back(), 1);
  EXPECT_EQ(deepseek.run.parallelism.layers_of_stage(61, 0), 4);
  const ValidationCase& interleaved = *by_id.at("mbridge-26.04.01-dgx-b200-deepseekv3-mxfp8-g256-pre-training");
  ASSERT_TRUE(interleaved.not_modelled.empty()) << interleaved.not_modelled;
  EXPECT_EQ(interleaved.run.parallelism.virtual_stages, 2);
  EXPECT_EQ(interleaved.run.parallelism.layers_of_stage(61, 7), 4 + 1);
  // DeepSeek-V3 on B200 recomputes its recipe's module, multi-latent attention's up projections, and fits with it
  // (without it, 215 GiB of B200's 179).
  EXPECT_EQ(interleaved.run.training.recompute, RecomputePolicy::selective);
  EXPECT_TRUE(interleaved.run.training.recompute_modules.mla_up_proj);
  EXPECT_TRUE(estimate_peak_memory(interleaved.run.model, interleaved.run.parallelism, interleaved.run.training,
                                   interleaved.run.hardware)
                  .fits());
  // A run that does not fit without recomputation (Qwen3-30B-A3B pp 2 x vp 24 on 16 H100, 25.11) recomputes the
  // first k layers of each chunk, the least k that fits; every such case fits with k and not with k - 1.
  EXPECT_EQ(by_id.at("mbridge-25.11-dgx-h100-qwen3_30b_a3b-fp8-cs-g16-pre-training")->run.training.recompute,
            RecomputePolicy::full);
  int recomputing = 0;
  for (const auto& [id, c] : by_id) {
    // (recompute_layers 0: every layer, as a run says it recomputed, not the least that fits)
    if (!c->not_modelled.empty() || c->run.training.recompute != RecomputePolicy::full ||
        c->run.training.recompute_layers == 0)
      continue;
    ++recomputing;
    const RunSpec& run = c->run;
    EXPECT_TRUE(estimate_peak_memory(run.model, run.parallelism, run.training, run.hardware).fits()) << id;
    TrainingSpec less = run.training;
    less.recompute_layers -= 1;
    if (less.recompute_layers == 0) less.recompute = RecomputePolicy::none;
    EXPECT_FALSE(estimate_peak_memory(run.model, run.parallelism, less, run.hardware).fits()) << id;
  }
  EXPECT_GE(recomputing, 1);
  // 25.09's tables print no precision: a row takes the next release's for the same run (25.11: FP8 with current
  // scaling for Llama 3 8B on 8 H100), and says so; DeepSeek-V3 on 1,024 H100 is in no later table.
  const ValidationCase& unprinted = *by_id.at("mbridge-25.09-dgx-h100-llama3_8b-not-g8-pre-training");
  ASSERT_TRUE(unprinted.not_modelled.empty()) << unprinted.not_modelled;
  EXPECT_EQ(unprinted.run.training.precision, Precision::fp8);
  EXPECT_NE(unprinted.notes.find("25.11"), std::string::npos) << unprinted.notes;
  EXPECT_NE(std::find(unprinted.categories.begin(), unprinted.categories.end(),
                      std::pair<std::string, std::string>{"precision", "fp8"}),
            unprinted.categories.end());
  const ValidationCase& qwen_unprinted = *by_id.at("mbridge-25.09-dgx-b200-qwen3_30b_a3b-not-g8-pre-training");
  EXPECT_TRUE(qwen_unprinted.not_modelled.empty()) << qwen_unprinted.not_modelled;
  EXPECT_NE(by_id.at("mbridge-25.09-dgx-h100-deepseekv3-not-g1024-pre-training")->not_modelled.find("precision"),
            std::string::npos);
  // GPT-OSS 120B: its model file (a 128-token window on every other layer, 64-wide heads).
  const ValidationCase& oss = *by_id.at("mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-g64-pre-training");
  ASSERT_TRUE(oss.not_modelled.empty()) << oss.not_modelled;
  EXPECT_EQ(oss.run.model.sliding_window, 128);
  EXPECT_EQ(oss.run.model.experts, 128);
  EXPECT_TRUE(oss.run.model.linear_bias);  // its experts' biases (Megatron-Bridge's GPT-OSS bridge, add_bias_linear)
  // The performance configs' selective recomputation, the same in every release: GPT-OSS [layernorm, moe_act];
  // Nemotron 3 Nano on H100 in FP8 [moe, layernorm, core_attn, moe_act]; on B200 nothing.
  EXPECT_EQ(oss.run.training.recompute, RecomputePolicy::selective);
  EXPECT_EQ(recompute_module_names(oss.run.training.recompute_modules),
            (std::vector<std::string>{"layernorm", "moe_act"}));
  const ValidationCase& nano_h100 = *by_id.at("mbridge-26.04-dgx-h100-nemotron_3_nano-fp8-g16-pre-training");
  EXPECT_EQ(nano_h100.run.training.recompute, RecomputePolicy::selective);
  EXPECT_EQ(recompute_module_names(nano_h100.run.training.recompute_modules),
            (std::vector<std::string>{"core_attn", "layernorm", "moe", "moe_act"}));
  EXPECT_EQ(by_id.at("mbridge-26.04.01-dgx-b200-nemotron_3_nano-mxfp8-g8-pre-training")->run.training.recompute,
            RecomputePolicy::none);
  // The LoRA row runs Megatron-Bridge's H100 LoRA performance config: rank 32 on the fused QKV only.
  const ValidationCase& lora = *by_id.at("mbridge-26.06-dgx-h100-llama3_70b-fp8-g8-lora");
  ASSERT_TRUE(lora.not_modelled.empty()) << lora.not_modelled;
  EXPECT_EQ(lora.run.training.lora.rank, 32);
  EXPECT_TRUE(lora.run.training.lora.qkv);
  EXPECT_FALSE(lora.run.training.lora.proj || lora.run.training.lora.fc1 || lora.run.training.lora.fc2);
  // Nemotron 3 Nano: the hybrid model file (Mamba-2, attention and MoE layers); Nemotron 3 Super's widths and layer
  // order are in no source here, and its LatentMoE is not modelled: its rows say both.
  int nano = 0;
  for (const auto& [id, c] : by_id) {
    if (id.find("nemotron_3_nano") != std::string::npos) {
      ++nano;
      EXPECT_TRUE(c->not_modelled.empty()) << id << ": " << c->not_modelled;
      EXPECT_EQ(c->run.model.hybrid_pattern.size(), 52U) << id;
    }
    if (id.find("nemotron_3_super") != std::string::npos) {
      EXPECT_NE(c->not_modelled.find("Hugging Face config"), std::string::npos) << id;
      EXPECT_NE(c->not_modelled.find("LatentMoE"), std::string::npos) << id;
    }
  }
  EXPECT_EQ(nano, 5);
}

}  // namespace
}  // namespace chopsim
