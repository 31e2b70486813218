// What-if sweeps (issue 17): expansion (grid, zip, set, dp: auto), constraints, invalid points with their reasons,
// out-of-memory pruning, the resumable store and results.csv, and `--set` overrides of run configs.

#include "chopsim/experiments/sweep.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

class Sweep : public test::TempDirTest {
 protected:
  /// A sweep file over the quick-start config (Llama-3-8B FSDP, 8 MI300X), `body` after its base line.
  std::filesystem::path sweep(const std::string& body) const {
    return write("sweep.yaml", "base: " + (test::configs_dir() / "llama3-8b-fsdp.yaml").string() + "\n" + body);
  }
  SweepResult run(const SweepSpec& spec, int jobs, const std::string& out = "out") const {
    SweepOptions options;
    options.out_dir = dir_ / out;
    options.jobs = jobs;
    return run_sweep(spec, default_search_path(spec.base), registries_, options);
  }
  const ModelRegistries registries_ = ModelRegistries::with_builtins();
};

TEST_F(Sweep, GridAndZipExpandWithTheLastAxisFastest) {
  const SweepSpec spec =
      load_sweep(sweep("set: {training.global_batch: 64}\n"
                       "axes:\n  training.micro_batch: [1, 2, 4]\n  training.recompute: [none, full]\n"
                       "zip:\n  - {training.precision: [bf16, fp8], training.seq_len: [8192, 4096]}\n"));
  const std::vector<SweepPoint> points = expand_sweep(spec);
  ASSERT_EQ(points.size(), 3u * 2 * 2);  // the zip group is one axis of two steps
  const SweepPoint& p = points[5];       // micro_batch 2 (5 / 4 = 1), recompute none ((5 / 2) % 2 = 0), zip step 1
  EXPECT_EQ(p.values, (std::vector<std::pair<std::string, std::string>>{{"training.micro_batch", "2"},
                                                                        {"training.recompute", "none"},
                                                                        {"training.precision", "fp8"},
                                                                        {"training.seq_len", "4096"}}));
  ASSERT_EQ(p.overrides.size(), 5u);  // set, then the axes
  EXPECT_EQ(p.overrides.front().key, "training.global_batch");
  EXPECT_EQ(p.overrides.front().value, "64");
}

TEST_F(Sweep, ConstraintsFollowArithmeticAndNameAxesByTheirLastPart) {
  const SweepSpec spec =
      load_sweep(sweep("axes:\n  parallelism.tp: [1, 2, 4, 8]\n  training.micro_batch: [1, 2]\n"
                       "constraints: [\"tp * micro_batch <= 4 && !(tp == 2 || parallelism.tp % 8 == 0)\"]\n"));
  std::vector<std::string> kept;
  for (const SweepPoint& p : expand_sweep(spec))
    if (meets_constraint(spec.constraints.front(), p)) kept.push_back(p.values[0].second + "x" + p.values[1].second);
  EXPECT_EQ(kept, (std::vector<std::string>{"1x1", "1x2", "4x1"}));
}

TEST_F(Sweep, BadSweepFilesNameTheLineAndWriteNothing) {
  auto message = [&](const std::string& body) { return test::input_error([&] { (void)load_sweep(sweep(body)); }); };
  EXPECT_NE(message("axes: {training.micro_batch: []}\n").find("sweep.yaml:2"), std::string::npos);
  EXPECT_NE(message("axes: {training.micro_batch: [1]}\naxis: {}\n").find("unknown key 'axis'"), std::string::npos);
  EXPECT_NE(message("axes: {training.micro_batch: [1]}\nconstraints: [\"tpp < 2\"]\n").find("'tpp' is no axis"),
            std::string::npos);
  EXPECT_NE(message("axes: {training.micro_batch: [1]}\nconstraints: [\"micro_batch < (2\"]\n").find("'('"),
            std::string::npos);
  EXPECT_NE(message("zip:\n  - {parallelism.tp: [1, 2], parallelism.pp: [1]}\n").find("as long as each other"),
            std::string::npos);
  EXPECT_NE(message("set: {training.seq_len: 4096}\n").find("no axis"), std::string::npos);
  EXPECT_NE(test::input_error([&] {
              (void)load_sweep(write("b.yaml", "base: nowhere.yaml\naxes: {a.b: [1]}\n"));
            }).find("no run config"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
}

TEST_F(Sweep, InvalidPointsSayWhyAndOutOfMemoryPointsAreNotSimulated) {
  // Llama-3-8B has 32 heads: tp 3 does not divide them. dp: auto leaves 8 / tp GPUs to data parallelism. Micro-batch 8
  // without recomputation needs more than the MI300X's 192 GB (the memory model, not a simulation, says so).
  const SweepSpec spec =
      load_sweep(sweep("set: {training.global_batch: 64, training.recompute: none}\ndp: auto\n"
                       "axes:\n  parallelism.tp: [1, 3]\n  training.micro_batch: [1, 8]\n"));
  const SweepResult result = run(spec, 2);
  ASSERT_EQ(result.points.size(), 4u);
  EXPECT_EQ(result.points[0].status, PointStatus::ok);
  EXPECT_GT(result.points[0].figures.tokens_per_s, 0.0);
  // The host's launches: a floor under the iteration (eager PyTorch's 43 us per launch by default).
  EXPECT_GT(result.points[0].figures.host_launch_time_s, 0.0);
  EXPECT_LE(result.points[0].figures.host_launch_time_s, result.points[0].figures.iteration_time_s);
  EXPECT_EQ(result.points[1].status, PointStatus::oom);
  EXPECT_NE(result.points[1].reason.find("GiB per GPU of 192.0 GiB"), std::string::npos) << result.points[1].reason;
  EXPECT_GT(result.points[1].figures.peak_bytes_per_gpu, result.points[1].figures.capacity_bytes_per_gpu);
  EXPECT_EQ(result.points[1].figures.iteration_time_s, 0.0);  // not simulated
  for (const int i : {2, 3}) {
    EXPECT_EQ(result.points[static_cast<std::size_t>(i)].status, PointStatus::invalid);
    // dp: auto fails first (8 GPUs are no multiple of tp 3), naming the key.
    EXPECT_NE(result.points[static_cast<std::size_t>(i)].reason.find("parallelism.dp"), std::string::npos)
        << result.points[static_cast<std::size_t>(i)].reason;
  }
  const std::string csv = test::read_text(result.results_csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')).find("point,key,parallelism.tp,training.micro_batch,status,reason,"), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_TRUE(csv.substr(0, csv.find('\n')).ends_with(",gpus,nodes,host_launch_time_s")) << csv.substr(0, 400);
}

TEST_F(Sweep, ARerunResumesFromTheStoreAndAnyJobCountGivesTheSameCsv) {
  const SweepSpec spec =
      load_sweep(sweep("axes:\n  training.micro_batch: [1, 2]\n  training.recompute: [none, full]\n"));
  const SweepResult first = run(spec, 1);
  for (const PointResult& r : first.points) EXPECT_FALSE(r.resumed);
  const std::string csv = test::read_text(first.results_csv);
  const SweepResult again = run(spec, 2);
  for (const PointResult& r : again.points) EXPECT_TRUE(r.resumed) << r.point.index;
  EXPECT_EQ(test::read_text(again.results_csv), csv);
  const SweepResult parallel = run(spec, 2, "other");
  for (const PointResult& r : parallel.points) EXPECT_FALSE(r.resumed);
  EXPECT_EQ(test::read_text(parallel.results_csv), csv);  // byte for byte, whatever the thread count
}

TEST_F(Sweep, EditingAFileTheBaseConfigReadsComputesItsPointsAgain) {
  // The quick-start run with its hardware file beside it: a rerun finds every point in the store; after the hardware
  // file's power cap changes, the rerun computes them again (before, the key hashed the base config's text only, and
  // the rerun returned the old cap's figures).
  const std::string hardware = test::read_text(test::configs_dir() / "hardware" / "MI300X.yaml");
  ASSERT_NE(hardware.find("  tdp: 750 "), std::string::npos);
  write("MI300X.yaml", hardware);
  std::string base = test::read_text(test::configs_dir() / "llama3-8b-fsdp.yaml");
  const std::string by_name = "hardware: MI300X\n";
  ASSERT_NE(base.find(by_name), std::string::npos);
  base.replace(base.find(by_name), by_name.size(), "hardware: {path: MI300X.yaml}\n");
  const auto base_file = write("base.yaml", base);
  const SweepSpec spec =
      load_sweep(write("edit.yaml", "base: " + base_file.string() + "\naxes:\n  training.micro_batch: [1, 2]\n"));
  const SweepResult first = run(spec, 2);
  const SweepResult same = run(spec, 2);
  for (const PointResult& r : same.points) EXPECT_TRUE(r.resumed) << r.point.index;
  std::string lower = hardware;
  lower.replace(lower.find("  tdp: 750 "), 11, "  tdp: 600 ");
  write("MI300X.yaml", lower);
  const SweepResult edited = run(spec, 2);
  ASSERT_EQ(edited.points.size(), first.points.size());
  for (std::size_t i = 0; i < edited.points.size(); ++i) {
    EXPECT_FALSE(edited.points[i].resumed) << i;
    EXPECT_NE(edited.points[i].key, first.points[i].key);
    // A lower cap: less power, a slower step.
    EXPECT_LT(edited.points[i].figures.mean_power_w, first.points[i].figures.mean_power_w);
    EXPECT_GT(edited.points[i].figures.iteration_time_s, first.points[i].figures.iteration_time_s);
  }
}

TEST_F(Sweep, TheSummaryMarksHostBoundPoints) {
  // The quick start at eager PyTorch's 43 us per launch is GPU-bound (its launches take 3 % of the step); at 5 ms per
  // launch its 944 launches take 4.7 s, longer than the GPU's 1.6 s of work: host-bound.
  const SweepSpec spec = load_sweep(sweep("axes:\n  training.host_launch_us: [43, 5000]\n"));
  const SweepResult result = run(spec, 2);
  ASSERT_EQ(result.points.size(), 2u);
  const PointFigures& fast = result.points[0].figures;
  const PointFigures& slow = result.points[1].figures;
  EXPECT_LT(fast.host_launch_time_s, 0.1 * fast.iteration_time_s);
  EXPECT_GE(slow.iteration_time_s, slow.host_launch_time_s);
  EXPECT_GE(slow.host_launch_time_s, 0.9 * slow.iteration_time_s);
  std::ostringstream text;
  print_sweep_summary(text, spec, result, 5);
  EXPECT_NE(text.str().find("1 of 2 points are host-bound"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("training.host_launch_us=5000: "), std::string::npos) << text.str();
  const std::string slow_line = text.str().substr(text.str().find("training.host_launch_us=5000: "));
  EXPECT_NE(slow_line.substr(0, slow_line.find('\n')).find(", host-bound"), std::string::npos) << text.str();
  const std::string fast_line = text.str().substr(text.str().find("training.host_launch_us=43: "));
  EXPECT_EQ(fast_line.substr(0, fast_line.find('\n')).find("host-bound"), std::string::npos) << text.str();
}

TEST_F(Sweep, CostAndTimeObjectivesFollowTheArithmeticByHand) {
  // Points with more GPUs (cluster.nodes 1 or 2 of the quick start's MI300X nodes) run faster but cost more per
  // hour. Rented: cost per token = price x GPUs / 3600 / tokens/s. Owned: capex x GPUs / (years x 365.25 x 86400)
  // + (mean power x GPUs + node overhead x nodes) x PUE / 3.6e6 x USD/kWh, per second, over tokens/s.
  SweepSpec spec =
      load_sweep(sweep("zip: [{cluster.nodes: [1, 2], cluster.fabric.kind: [none, rail_optimized]}]\ndp: auto\n"
                       "set: {training.global_batch: 32}\nobjective: cost_per_token\ncost: {gpu_hour_usd: 3.0}\n"
                       "goal_tokens: 1e12\n"));
  const SweepResult result = run(spec, 2);
  ASSERT_EQ(result.points.size(), 2u);
  for (const PointResult& r : result.points) {
    ASSERT_EQ(r.status, PointStatus::ok) << r.reason;
    const PointFigures& f = r.figures;
    EXPECT_EQ(f.gpus, 8.0 * f.nodes);
    EXPECT_NEAR(objective_value(spec, f), 3.0 * f.gpus / 3600.0 / f.tokens_per_s, 1e-12 * 3.0 / f.tokens_per_s);
  }
  const PointFigures& one = result.points[0].figures;
  spec.cost = GpuCost{};
  spec.cost->capex_usd_per_gpu = 20000.0;
  spec.cost->amortisation_years = 4.0;
  spec.cost->node_overhead_w = 1500.0;
  spec.facility.pue = 1.3;
  spec.facility.electricity_usd_per_kwh = 0.12;
  const double per_s = 20000.0 * one.gpus / (4.0 * 365.25 * 86400.0) +
                       (one.mean_power_w * one.gpus + 1500.0 * one.nodes) * 1.3 / 3.6e6 * 0.12;
  EXPECT_NEAR(objective_value(spec, one), per_s / one.tokens_per_s, 1e-9 * per_s / one.tokens_per_s);
  choose_objective(spec, "time_to_train", {"test"});
  EXPECT_NEAR(objective_value(spec, one), 1e12 / one.tokens_per_s, 1e-6);
  EXPECT_TRUE(lower_is_better(spec.objective));
  // The ranking follows the objective: the faster point is best by time, the cheaper per token by cost.
  const PointResult& a = result.points[0];
  const PointResult& b = result.points[1];
  EXPECT_EQ(better_point(spec, a, b), a.figures.tokens_per_s > b.figures.tokens_per_s);
  choose_objective(spec, "cost_per_token", {"test"});
  EXPECT_EQ(better_point(spec, a, b), objective_value(spec, a.figures) < objective_value(spec, b.figures));
  // results.csv carries each point's GPU and node counts.
  const std::string csv = test::read_text(result.results_csv);
  EXPECT_NE(csv.substr(0, csv.find('\n')).find(",gpus,nodes"), std::string::npos);
}

TEST_F(Sweep, CostObjectivesWithoutTheirInputsAreRefusedBeforeAnythingRuns) {
  SweepSpec spec = load_sweep(sweep("axes: {training.micro_batch: [1, 2]}\nobjective: cost_per_token\n"));
  const std::string message = test::input_error([&] { (void)run(spec, 1); });
  EXPECT_NE(message.find("gpu_hour_usd"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out" / "sweep.sqlite"));
  choose_objective(spec, "time_to_train", {"command line (--objective)"});
  EXPECT_NE(test::input_error([&] { check_objective_inputs(spec); }).find("goal_tokens"), std::string::npos);
  EXPECT_NE(test::input_error([&] { choose_objective(spec, "dollars", {"x"}); }).find("cost_per_token"),
            std::string::npos);
  // A cost mapping without a price, and an unknown cost key, name the line.
  EXPECT_NE(test::input_error([&] {
              (void)load_sweep(sweep("axes: {training.micro_batch: [1]}\ncost: {pue: 1}\n"));
            }).find("pue"),
            std::string::npos);
  EXPECT_NE(test::input_error([&] {
              (void)load_sweep(sweep("axes: {training.micro_batch: [1]}\ncost: {source: x}\n"));
            }).find("neither gpu_hour_usd nor capex_usd_per_gpu"),
            std::string::npos);
}

TEST_F(Sweep, AStoreFromBeforeTheGpuColumnsIsExtendedAndItsPointsRunAgain) {
  // A store written before the gpus/nodes columns existed (same points, same keys): the rerun adds the columns
  // instead of failing, runs its ok points again (their GPU counts are unknown) and writes the same CSV as a
  // fresh store.
  const SweepSpec spec = load_sweep(sweep("axes:\n  training.micro_batch: [1, 2]\n"));
  const SweepResult fresh = run(spec, 1, "fresh");
  const std::filesystem::path old_dir = dir_ / "old";
  std::filesystem::create_directories(old_dir);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((old_dir / "sweep.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE points (key TEXT PRIMARY KEY, status TEXT NOT NULL, reason TEXT NOT NULL, "
                         "iteration_time_s REAL, tokens_per_s REAL, mfu REAL, model_tflops_per_gpu REAL, "
                         "peak_bytes_per_gpu REAL, capacity_bytes_per_gpu REAL, compute_s REAL, exposed_comm_s REAL, "
                         "pipeline_bubble_s REAL, idle_s REAL, mean_power_w REAL, peak_power_1ms_w REAL, "
                         "peak_power_100ms_w REAL, energy_per_token_j REAL, clock_mean_mhz REAL, "
                         "throttled_fraction REAL)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const std::string insert = "INSERT INTO points VALUES ('" + fresh.points[0].key +
                             "', 'ok', '', 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)";
  ASSERT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const SweepResult rerun = run(spec, 1, "old");
  for (const PointResult& r : rerun.points) EXPECT_FALSE(r.resumed) << r.point.index;
  EXPECT_EQ(test::read_text(rerun.results_csv), test::read_text(fresh.results_csv));
}

// Every shipped sweep loads, and every point of it is a valid run config (its memory and simulation are left to
// `chopsim sweep`): the examples stay runnable as configs change.
TEST_F(Sweep, ShippedSweepsLoadAndTheirPointsAreValidConfigs) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::configs_dir() / "sweeps")) {
    SCOPED_TRACE(entry.path().string());
    const SweepSpec spec = load_sweep(entry.path());
    const std::vector<SweepPoint> points = expand_sweep(spec);
    EXPECT_GE(points.size(), 4u);
    for (const SweepPoint& p : points) {
      bool kept = true;
      for (const SweepConstraint& c : spec.constraints) kept = kept && meets_constraint(c, p);
      if (kept) {
        EXPECT_NO_THROW((void)load_run_config(spec.base, default_search_path(spec.base), registries_, p.overrides));
      }
    }
    ++files;
  }
  EXPECT_GE(files, 2);
}

// A job array: three shards (point % 3), each its own store, merged, give the single run's results.csv byte for byte;
// a merge that lacks a shard names the missing points.
TEST_F(Sweep, ShardsMergedEqualTheSingleRun) {
  const SweepSpec spec =
      load_sweep(sweep("axes:\n  training.micro_batch: [1, 2]\n  training.recompute: [none, selective, full]\n"));
  const std::string single = test::read_text(run(spec, 2, "single").results_csv);
  std::vector<std::filesystem::path> shards;
  for (int i = 0; i < 3; ++i) {
    SweepOptions options;
    options.out_dir = dir_ / ("shard" + std::to_string(i));
    options.shard_index = i;
    options.shard_count = 3;
    const SweepResult shard = run_sweep(spec, default_search_path(spec.base), registries_, options);
    EXPECT_EQ(shard.points.size(), 2u);
    for (const PointResult& r : shard.points) EXPECT_EQ(r.point.index % 3, i);
    shards.push_back(options.out_dir);
  }
  const SweepResult merged = merge_sweep(spec, shards, dir_ / "merged", default_search_path(spec.base), registries_);
  EXPECT_EQ(test::read_text(merged.results_csv), single);
  EXPECT_NE(
      test::input_error([&] {
        (void)merge_sweep(spec, {shards[0], shards[2]}, dir_ / "partial", default_search_path(spec.base), registries_);
      }).find("2 points are in no shard store (1, 4)"),
      std::string::npos);
}

// `chopsim run --set KEY=VALUE`: the same decoding and checks as the file's own keys.
TEST_F(Sweep, SetOverridesAreValidatedLikeTheFile) {
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-fsdp.yaml";
  const auto search = default_search_path(config);
  const RunSpec run = load_run_config(config, search, registries,
                                      {parse_config_override("training.micro_batch=1", "--set"),
                                       parse_config_override("thermal.profile=uniform", "--set")});
  EXPECT_EQ(run.training.micro_batch, 1);
  EXPECT_NE(test::input_error([&] {
              (void)load_run_config(config, search, registries,
                                    {parse_config_override("training.micro_bach=1", "--set")});
            }).find("did you mean 'micro_batch'"),
            std::string::npos);
  EXPECT_NE(test::input_error([&] {
              (void)load_run_config(config, search, registries, {parse_config_override("model.layers=40", "--set")});
            }).find("'model' in"),
            std::string::npos);
  EXPECT_NE(test::input_error([&] { (void)parse_config_override("training.micro_batch", "--set"); }).find("KEY=VALUE"),
            std::string::npos);
  const RunSpec tp2 = load_run_config(
      config, search, registries,
      {parse_config_override("parallelism.tp=2", "--set"), parse_config_override("parallelism.dp=auto", "--set")});
  EXPECT_EQ(tp2.parallelism.dp, 4);  // dp: auto = 8 GPUs / tp 2
  // Also in a config without FSDP: Llama-3-70B, TP8 on 64 H100, pp 8 leaves dp 1.
  const auto megatron = test::configs_dir() / "llama3-70b-h100-3d.yaml";
  const RunSpec pp8 = load_run_config(
      megatron, default_search_path(megatron), registries,
      {parse_config_override("parallelism.pp=8", "--set"), parse_config_override("parallelism.dp=auto", "--set")});
  EXPECT_EQ(pp8.parallelism.dp, 1);
}

}  // namespace
}  // namespace chopsim
