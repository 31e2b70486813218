// Steady-state folding of a run (simulation.fold; docs/design.md, "Folding") against the same run simulated in full:
// a Llama-3-70B 1F1B pipeline (64 micro-batches, 10 simulated), the same interleaved over two chunks (24 simulated)
// and Llama-3-8B FSDP with gradient accumulation (16 micro-batches, 7 simulated).
//
// The bounds: the iteration time and every integral (energy, mean power and clocks, tokens/s, MFU) within 0.5 %;
// the breakdowns' parts within 1 % of the iteration time; each GPU's peak temperature within 0.3 K (the fold moves it
// across the left-out micro-batches). Measured (2026-12-01): iteration time +0.02 %, +0.02 % and +0.04 %. Extremes (the
// highest instantaneous and 1 ms power, the lowest clock) are the simulated micro-batches' own: the clock control's
// 10 ms periods meet each micro-batch at another phase, and a longer run meets more phases; on the shipped
// configs they differ by up to 5 % (70B on H200) and are bounded here by 10 %.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

RunSpec load(const std::string& name, const ModelRegistries& registries) {
  const auto file = test::configs_dir() / name;
  return load_run_config(file, default_search_path(file), registries);
}

struct FoldCase {
  const char* name;
  const char* config;
  int global_batch;  ///< 0: the config's
  bool interleaved;  ///< two chunks per stage (Megatron's interleaved schedule)
};

/// GoogleTest names a case by this in ctest's list and its reports (by default: the struct's bytes).
void PrintTo(const FoldCase& c, std::ostream* out) { *out << c.name << " (" << c.config << ")"; }

class Fold : public ::testing::TestWithParam<FoldCase> {};

TEST_P(Fold, AgreesWithTheFullRunOnEveryIntegralAndTheIterationTime) {
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load(GetParam().config, registries);
  if (GetParam().global_batch > 0) run.training.global_batch = GetParam().global_batch;
  if (GetParam().interleaved) {
    run.parallelism.pp_schedule = PipelineSchedule::interleaved;
    run.parallelism.virtual_stages = 2;
  }
  run.fold = false;
  const RunReport full = run_simulation(run, registries);
  run.fold = true;
  const RunReport folded = run_simulation(run, registries);

  ASSERT_TRUE(full.simulated && folded.simulated);
  EXPECT_EQ(full.simulated_micro_batches, full.micro_batches);
  EXPECT_LT(folded.simulated_micro_batches, folded.micro_batches);
  EXPECT_EQ(folded.stats.folds, static_cast<std::uint32_t>(run.iterations));
  EXPECT_GT(folded.stats.folded_s, 0.0);
  // It simulates its micro-batches and the iteration's own ops (the optimizer step), not the left-out ones.
  EXPECT_LT(static_cast<double>(folded.stats.op_events),
            static_cast<double>(full.stats.op_events) * (folded.simulated_micro_batches + 1) / folded.micro_batches);
  EXPECT_EQ(folded.fold_limit, "");

  const double t = full.iteration_time_s;
  const auto close = [](const char* what, double a, double b, double relative) {
    EXPECT_NEAR(a, b, relative * std::abs(b)) << what;
  };
  close("iteration_time_s", folded.iteration_time_s, t, 0.005);
  close("tokens_per_s", folded.tokens_per_s, full.tokens_per_s, 0.005);
  close("mfu", folded.mfu, full.mfu, 0.005);
  close("hardware_tflops_per_gpu", folded.hardware_tflops_per_gpu, full.hardware_tflops_per_gpu, 0.005);
  // The left-out micro-batches' launches are counted exactly (every micro-batch issues the same).
  EXPECT_DOUBLE_EQ(folded.host.launches_per_iteration, full.host.launches_per_iteration);

  const auto part = [&](const char* what, double a, double b) { EXPECT_NEAR(a, b, 0.01 * t) << what; };
  part("compute", folded.breakdown.compute_s, full.breakdown.compute_s);
  for (std::size_t c = 0; c < kCommCategoryCount; ++c)
    part("exposed communication", folded.breakdown.exposed_comm_s[c], full.breakdown.exposed_comm_s[c]);
  part("pipeline bubble", folded.breakdown.pipeline_bubble_s, full.breakdown.pipeline_bubble_s);
  part("idle", folded.breakdown.idle_s, full.breakdown.idle_s);
  EXPECT_NEAR(folded.breakdown.total_s(), folded.iteration_time_s, 1e-9 * t) << "the parts add up to the iteration";
  part("ideal", folded.losses.ideal_s, full.losses.ideal_s);
  part("efficiency loss", folded.losses.efficiency_loss_s, full.losses.efficiency_loss_s);
  part("frequency", folded.losses.frequency_s, full.losses.frequency_s);
  part("launch", folded.losses.launch_s, full.losses.launch_s);
  part("communication contention", folded.losses.comm_contention_s, full.losses.comm_contention_s);

  const PowerReport& a = folded.power;
  const PowerReport& b = full.power;
  ASSERT_TRUE(a.available && b.available);
  close("energy_per_iteration_j", a.energy_per_iteration_j, b.energy_per_iteration_j, 0.005);
  close("energy_per_token_j", a.energy_per_token_j, b.energy_per_token_j, 0.005);
  close("mean_w", a.mean_w, b.mean_w, 0.005);
  close("clock_mean_hz", a.clock_mean_hz, b.clock_mean_hz, 0.005);
  close("clock_mean_all_hz", a.clock_mean_all_hz, b.clock_mean_all_hz, 0.005);
  close("throttled_fraction", a.throttled_fraction, b.throttled_fraction, 0.01);
  ASSERT_EQ(a.peak_temperature_c.size(), b.peak_temperature_c.size());
  for (std::size_t g = 0; g < a.peak_temperature_c.size(); ++g)
    EXPECT_NEAR(a.peak_temperature_c[g], b.peak_temperature_c[g], 0.3) << "GPU " << g;
  close("peak_w", a.peak_w, b.peak_w, 0.10);
  close("peak_1ms_w", a.peak_1ms_w, b.peak_1ms_w, 0.10);
  close("peak_100ms_w", a.peak_100ms_w, b.peak_100ms_w, 0.10);
  close("clock_min_hz", a.clock_min_hz, b.clock_min_hz, 0.10);
  // Memory comes from the run's own batch, folded or not.
  EXPECT_EQ(folded.memory.total_bytes, full.memory.total_bytes);
  // The summary says what was simulated.
  const std::string summary = summary_json(run, folded);
  EXPECT_NE(summary.find("\"simulated_micro_batches\": " + std::to_string(folded.simulated_micro_batches)),
            std::string::npos);
  EXPECT_NE(summary.find("\"folded_s\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Runs, Fold,
                         ::testing::Values(FoldCase{"Pipeline", "llama3-70b-h100-3d.yaml", 0, false},
                                           FoldCase{"InterleavedPipeline", "llama3-70b-h100-3d.yaml", 0, true},
                                           FoldCase{"Fsdp", "llama3-8b-fsdp.yaml", 256, false}),
                         [](const auto& info) { return std::string(info.param.name); });

/// GPU 0's telemetry, and where in it the fold's window opened and closed.
class FoldWatcher final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent&) override {}
  void on_telemetry(const GpuStateSample& sample) override {
    if (sample.gpu == 0) samples.push_back(sample);
  }
  [[nodiscard]] bool folds() const override { return true; }
  void on_fold_window_begin(double) override { window_begin = samples.size(); }
  void on_fold(double, double span_s) override {
    fold = samples.size();
    span = span_s;
  }
  std::vector<GpuStateSample> samples;
  std::size_t window_begin = 0, fold = 0;
  double span = 0.0;
};

TEST(FoldTemperatures, TheGpusWarmHalfwayBeforeTheWindowAndTheRestAtTheFold) {
  // The window runs at the temperatures halfway through the left-out micro-batches (engine.hpp, FoldPlan's lead-in):
  // GPU 0 is warmer after the window opens than before, and again after the fold.
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-70b-h100-3d.yaml", registries);
  run.fold = true;
  FoldWatcher watcher;
  RunOptions options;
  options.observer = &watcher;
  const RunReport report = run_simulation(run, registries, options);
  ASSERT_EQ(report.stats.folds, 1U);
  ASSERT_GT(watcher.window_begin, 0U);
  ASSERT_LT(watcher.fold + 1, watcher.samples.size());
  const auto& t = watcher.samples;
  const double before_window = t[watcher.window_begin - 1].temperature_c;
  const double in_window = t[watcher.window_begin].temperature_c;
  const double before_fold = t[watcher.fold - 1].temperature_c;
  const double after_fold = t[watcher.fold].temperature_c;
  EXPECT_GT(in_window - before_window, 0.3) << "no warming before the window";
  EXPECT_GT(after_fold - before_fold, 0.3) << "no warming at the fold";
  // The RC model approaches its steady state exponentially: the first half of the span warms more than the second.
  EXPECT_GT(in_window - before_window, after_fold - before_fold);
}

TEST(FoldLimits, RunsThatCannotFoldSimulateEveryMicroBatchAndSayWhy) {
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-8b-mi250-3d.yaml", registries);
  run.training.global_batch = 256;  // 32 micro-batches per pipeline
  run.fold = true;
  // Its data-parallel replicas sit in front and rear slots: they drift apart over the iteration (fold.hpp).
  const RunReport drifting = run_simulation(run, registries);
  EXPECT_EQ(drifting.simulated_micro_batches, 32);
  EXPECT_EQ(drifting.stats.folds, 0U);
  EXPECT_NE(drifting.fold_limit.find("inlet temperatures"), std::string::npos) << drifting.fold_limit;
  EXPECT_NE(summary_json(run, drifting).find("\"fold_limit\""), std::string::npos);

  // The interleaved schedule's period is a group of pp micro-batches: 28 per pipeline are too few for pp 4 (it
  // simulates 24 and leaves out 8 or more).
  run.parallelism.pp = 4;
  run.parallelism.tp = 1;
  run.parallelism.pp_schedule = PipelineSchedule::interleaved;
  run.parallelism.virtual_stages = 2;
  run.training.global_batch = 224;
  const RunReport interleaved = run_simulation(run, registries);
  EXPECT_EQ(interleaved.micro_batches, 28);
  EXPECT_EQ(interleaved.stats.folds, 0U);
  EXPECT_NE(interleaved.fold_limit.find("needs 32 micro-batches"), std::string::npos) << interleaved.fold_limit;

  // Too few micro-batches to leave any out (the quick start: one per GPU).
  RunSpec quick = load("llama3-8b-fsdp.yaml", registries);
  quick.fold = true;
  const RunReport few = run_simulation(quick, registries);
  EXPECT_EQ(few.stats.folds, 0U);
  EXPECT_NE(few.fold_limit.find("micro-batches per pipeline"), std::string::npos) << few.fold_limit;

  // Off (the default): nothing to say.
  quick.fold = false;
  EXPECT_EQ(run_simulation(quick, registries).fold_limit, "");
  EXPECT_EQ(run_simulation(quick, registries).foldable_simulated_micro_batches, 0);
}

TEST(FoldLimits, ARunThatCouldFoldSaysHowManyMicroBatchesItWouldSimulate) {
  // Off by default, so that every figure stays within the engines' 1 %; the text report says what turning it on
  // would simulate, which is what the folded run then does.
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-8b-fsdp.yaml", registries);
  run.training.global_batch = 256;  // 16 micro-batches of 2 per pipeline
  run.fold = false;
  const RunReport full = run_simulation(run, registries);
  EXPECT_EQ(full.simulated_micro_batches, 16);
  EXPECT_EQ(full.foldable_simulated_micro_batches, 7);  // pp + 6 (fold.hpp)
  std::ostringstream text;
  print_run_summary(text, run, full);
  EXPECT_NE(text.str().find("--set simulation.fold=true would simulate 7 of 16 micro-batches"), std::string::npos)
      << text.str();

  run.fold = true;
  const RunReport folded = run_simulation(run, registries);
  EXPECT_EQ(folded.simulated_micro_batches, full.foldable_simulated_micro_batches);
  EXPECT_EQ(folded.foldable_simulated_micro_batches, 0);
}

TEST(FoldLimits, ARunThatWritesPerOpFilesSimulatesEveryMicroBatch) {
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-8b-fsdp.yaml", registries);
  run.training.global_batch = 256;
  run.fold = true;
  const auto out = std::filesystem::temp_directory_path() / ("chopsim-fold-test-" + std::to_string(::getpid()));
  RunOptions options;
  options.output_dir = out;
  const RunReport report = run_simulation(run, registries, options);
  std::filesystem::remove_all(out);
  EXPECT_EQ(report.simulated_micro_batches, report.micro_batches);
  EXPECT_NE(report.fold_limit.find("--out"), std::string::npos) << report.fold_limit;
}

}  // namespace
}  // namespace chopsim

namespace chopsim {
namespace {

TEST(ObserverThreadRuns, GiveTheSameSummaryBitForBit) {
  // `chopsim run` and chopsim.run put the observers on a second thread (RunOptions::observer_thread); the figures
  // must not depend on it. A folded FSDP run with power dynamics: rank classes, telemetry and both fold calls pass.
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-8b-fsdp.yaml", registries);
  run.training.global_batch = 256;
  run.fold = true;
  const RunReport direct = run_simulation(run, registries);
  RunOptions options;
  options.observer_thread = true;
  const RunReport threaded = run_simulation(run, registries, options);
  ASSERT_GT(threaded.stats.folds, 0U);
  ASSERT_GT(threaded.stats.telemetry_samples, 0U);
  EXPECT_EQ(summary_json(run, threaded), summary_json(run, direct));
}

/// Notes the thread each op event arrives on.
class ThreadOfEvents final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent& /*event*/) override { threads.insert(std::this_thread::get_id()); }
  std::set<std::thread::id> threads;
};

TEST(ObserverThreadRuns, NotBesideAnEngineThatForksItsSimulation) {
  // The SimGrid engine forks a child that runs SimGrid: a second thread alive at fork() could leave the child a lock
  // it held, and the child would wait for ever (Engine::simulates_in_child_process). So the observers stay on the
  // caller's thread with that engine, and move to a second one with the fast engine.
  const ModelRegistries registries = ModelRegistries::with_builtins();
  RunSpec run = load("llama3-8b-fsdp.yaml", registries);
  RunOptions options;
  options.observer_thread = true;
  for (const char* engine : {"simgrid", "fast"}) {
    SCOPED_TRACE(engine);
    run.engine = engine;
    ThreadOfEvents seen;
    options.observer = &seen;
    static_cast<void>(run_simulation(run, registries, options));
    ASSERT_EQ(seen.threads.size(), 1U);
    EXPECT_EQ(*seen.threads.begin() == std::this_thread::get_id(), std::string(engine) == "simgrid");
  }
}

}  // namespace
}  // namespace chopsim
