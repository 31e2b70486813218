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
#include <stdexcept>

#include "chopsim/calibration/fitting.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

/// The validation cases `keep` selects, predicted as `chopsim validate` predicts them (one result per case, in order).
std::vector<ValidationResult> predict(const std::function<bool(const ValidationCase&)>& keep) {
  const auto registries = ModelRegistries::with_builtins();
  std::vector<ValidationCase> chosen;
  for (ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir()))
    if (keep(c)) chosen.push_back(std::move(c));
  return run_validation(chosen, registries, 2);
}

/// The cases `keep` selects, predicted with `jobs` threads, as the markdown page `chopsim validate` writes.
std::string page_with_jobs(const std::function<bool(const ValidationCase&)>& keep, int jobs) {
  const auto registries = ModelRegistries::with_builtins();
  std::vector<ValidationCase> chosen;
  for (ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir()))
    if (keep(c)) chosen.push_back(std::move(c));
  std::ostringstream page;
  write_validation_markdown(page, run_validation(chosen, registries, jobs));
  return page.str();
}

/// The Megatron-LM 7B rows of DGX H100 and DGX A100.
bool is_megatron_7b(const ValidationCase& c) { return c.group == "megatron_lm" || c.group == "megatron_lm_a100"; }

TEST(Validation, ProfilesAreFoundByTheHardwareTheyWereFittedOn) {
  const auto profiles = calibration_profiles_by_hardware(test::profiles_dir());
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
  const auto cases =
      load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
  const YAML::Node h100 = YAML::LoadFile((test::profiles_dir() / "h100.yaml").string());
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

// llm-foundry's benchmark YAMLs checkpoint blocks with PyTorch 2.1's non-reentrant checkpoint
// (activation_checkpointing_reentrant: false), which stops each recomputed forward early: every row that recomputes
// says so, and no other.
TEST(Validation, LlmFoundrysCheckpointedRowsStopTheirRecomputationEarly) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_dev_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  int recomputing = 0, plain = 0;
  for (const ValidationCase& c :
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir())) {
    if (c.group != "llm_foundry") continue;
    const bool full = c.run.training.recompute == RecomputePolicy::full;
    (full ? recomputing : plain) += 1;
    EXPECT_EQ(c.run.training.recompute_early_stop, full) << c.id;
  }
  EXPECT_GE(recomputing, 15);  // the 13B large-scale rows and the long-sequence rows on 8 GPUs
  EXPECT_GE(plain, 40);
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
  auto all = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
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
  const auto cases =
      load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
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
  const auto cases =
      load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
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

// Issue 15's memory target: every Megatron-LM golden peak (mem-max-allocated-bytes of the last rank) within 5 %, on
// every machine and branch. Before the GEMM libraries' workspaces were counted the tiny GPT's rows were 4.5-9.2 %
// low, and the dracooci clusters' rows 31-45 % low (their unfused attention, validation_cases.cpp).
TEST(Validation, EveryMegatronGoldenPeakIsWithinFivePercent) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto results = predict([](const ValidationCase& c) {
    return c.group.starts_with("megatron_lm") && c.metric == ValidationMetric::peak_memory_bytes;
  });
  ASSERT_EQ(results.size(), 22u);  // 6 rows of the 7B runs, 16 of the tiny GPT
  int unfused = 0;
  for (const ValidationResult& r : results) {
    SCOPED_TRACE(r.validation_case.id);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    EXPECT_LE(std::abs(r.uncalibrated.relative_error), 0.05);
    if (r.validation_case.id.find("dracooci") != std::string::npos) {
      ++unfused;
      EXPECT_EQ(r.validation_case.run.training.attention, "eager");
      // The unfused path's scores: above every flash-attn peak of the tiny GPT but tp 1 pp 1's (at most 1.43e9).
      EXPECT_GT(r.validation_case.measured, 1.69e9);
    }
  }
  EXPECT_EQ(unfused, 4);
}

// Why the dracooci clusters' rows run TE's unfused attention (validation_cases.cpp): their lts peaks exceed the same
// branch's on DGX A100 by what the unfused path keeps for its backward beyond flash-attn's (softmax output, dropout
// mask and output: 5 bytes per score, every layer in flight), for both tests: the memory model's difference between
// the two attention paths matches the measured one within 5 %.
TEST(Validation, TheDracoociPeaksAreTheUnfusedAttentionsScores) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases =
      load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
  const auto find = [&](const std::string& id) -> const ValidationCase& {
    for (const ValidationCase& c : cases)
      if (c.id == id) return c;
    throw std::runtime_error("no case " + id);
  };
  for (const std::string test : {"gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer",
                                 "gpt3_mcore_te_tp2_pp2_resume_torch_dist_no_create_attention_mask_in_dataloader"}) {
    SCOPED_TRACE(test);
    const ValidationCase& unfused = find(test + " peak allocated (DGX A100 dracooci, lts)");
    const ValidationCase& flash = find(test + " peak allocated (DGX A100, lts)");
    EXPECT_EQ(flash.run.training.attention, "flash2");
    const auto allocated = [](const RunSpec& run) {
      return estimate_memory_by_stage(run.model, run.parallelism, run.training, run.hardware).back().allocated_bytes();
    };
    const double predicted = allocated(unfused.run) - allocated(flash.run);
    const double measured = unfused.measured - flash.measured;
    EXPECT_GT(measured, 0.4e9);
    EXPECT_NEAR(predicted, measured, 0.05 * measured);
  }
}

// GB200's Megatron functional tests run flash-attn 2 with its deterministic backward (TE gives deterministic training
// with dropout no cuDNN attention on compute capability 10): the 7B steps, 34-38 % too fast with cuDNN's attention,
// are within 15 % and still too fast (what remains is the B200 files' general optimism, docs/calibration.md).
TEST(Validation, GB200sDeterministicAttentionIsFlashAttention2) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto results = predict([](const ValidationCase& c) {
    return c.group == "megatron_lm_gb200" && c.metric == ValidationMetric::iteration_time_s;
  });
  ASSERT_EQ(results.size(), 2u);
  for (const ValidationResult& r : results) {
    SCOPED_TRACE(r.validation_case.id);
    EXPECT_EQ(r.validation_case.run.training.attention, "flash2");
    EXPECT_TRUE(r.validation_case.run.training.deterministic);
    EXPECT_TRUE(r.validation_case.run.model.dropout);
    ASSERT_TRUE(r.uncalibrated.ok) << r.uncalibrated.failure;
    EXPECT_LT(r.uncalibrated.relative_error, 0.0);
    EXPECT_GT(r.uncalibrated.relative_error, -0.15);
  }
}

// PyTorch's allocator hands out Transformer Engine's cuBLAS workspace: 32 MiB + 1 KiB from compute capability 9 on,
// 4 MiB before (transformer_engine/pytorch/module/base.py), so the same job holds 28 MiB + 1 KiB more after a step on
// DGX H100 (and GB200) than on DGX A100. The golden values show exactly that (mem-allocated-bytes, the resident memory
// after the step) for the tiny GPT's two tests and the 7B tp4_pp1 test; the hardware files' workspaces give the
// same difference. (7B tp1_pp4 holds 284 MiB more on H100: this 28 MiB and 256 MiB not explained.)
TEST(Validation, TransformerEnginesWorkspaceIsTheResidentDifferenceBetweenHopperAndAmpere) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  const auto resident = [](const std::string& test, const std::string& machine) {
    const YAML::Node golden = YAML::LoadFile(
        (test::shared_data_dir() / "validation" / "megatron_lm" / test / ("golden_values_dev_" + machine + ".json"))
            .string());
    double value = 0.0;
    for (const auto& step : golden["mem-allocated-bytes"]["values"])
      if (step.second.as<std::string>() != "nan") value = step.second.as<double>();
    return value;
  };
  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const HardwareSpec a100 = load_hardware_config(test::configs_dir() / "hardware" / "A100-SXM4-80GB.yaml");
  const HardwareSpec gb200 = load_hardware_config(test::configs_dir() / "hardware" / "GB200.yaml");
  const double predicted = h100.transformer_engine_workspace_bytes - a100.transformer_engine_workspace_bytes;
  EXPECT_DOUBLE_EQ(predicted, 28.0 * 1024 * 1024 + 1024);
  EXPECT_DOUBLE_EQ(gb200.transformer_engine_workspace_bytes, h100.transformer_engine_workspace_bytes);
  for (const char* test : {"gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer",
                           "gpt3_mcore_te_tp2_pp2_resume_torch_dist_no_create_attention_mask_in_dataloader",
                           "gpt3_7b_tp4_pp1_memory_speed"}) {
    SCOPED_TRACE(test);
    EXPECT_NEAR(resident(test, "dgx_h100") - resident(test, "dgx_a100"), predicted, 0.1 * 1024 * 1024);
    // GB200 (compute capability 10.0) holds what H100 holds: to 0.05 MiB, 2.4 MiB less in tp2_pp2.
    EXPECT_NEAR(resident(test, "dgx_gb200"), resident(test, "dgx_h100"), 3.0 * 1024 * 1024);
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
       load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir())) {
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
