// Power outputs of a run: the windowed power statistics against brute force, energy and temperature identities
// across summary and ops.h5, the loss breakdown summing to the iteration time, power dynamics off reproducing the
// fixed-clock engine, the power config keys and their errors, and the seed papers' findings as checks that can fail
// (Chopper: MI300X clocks below peak with a frequency overhead; CharLLM-PPT: a larger micro-batch raises the peak
// power, a hotter slot throttles first).

#include <H5Cpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "power_report.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

// ---- windowed statistics -------------------------------------------------------------------------------------

/// Brute force on a fine grid: the average over [t - w, t] of a piecewise-constant signal.
double brute_average(const std::vector<std::pair<double, double>>& points, double end, double t0, double t1) {
  double e = 0.0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double a = std::max(points[i].first, t0);
    const double b = std::min(i + 1 < points.size() ? points[i + 1].first : end, t1);
    if (b > a) e += points[i].second * (b - a);
  }
  return e / (t1 - t0);
}

/// The exact extreme of F(t) = sum_j c_j E(t - o_j) / scale over t in [start + max o, end] for a piecewise-constant
/// signal: F is piecewise linear, so its maximum lies where some t - o_j is a breakpoint (or at an end of the range).
/// Evaluates every such candidate through prefix sums: no pruning of any kind.
double exact_extreme(const std::vector<std::pair<double, double>>& points, double end,
                     const std::vector<double>& offsets, const std::vector<double>& coefficients, double scale) {
  std::vector<double> times, energy{0.0};
  for (std::size_t i = 0; i < points.size(); ++i) {
    times.push_back(points[i].first);
    const double next = i + 1 < points.size() ? points[i + 1].first : end;
    energy.push_back(energy.back() + points[i].second * (next - points[i].first));
  }
  const double start = times.front();
  const auto energy_at = [&](double t) {  // E(t) - E(start), t in [start, end]
    const auto i = static_cast<std::size_t>(std::upper_bound(times.begin(), times.end(), t) - times.begin()) - 1;
    return energy[i] + points[i].second * (t - times[i]);
  };
  const double span = *std::max_element(offsets.begin(), offsets.end());
  std::vector<double> candidates{start + span, end};
  for (const double t : times)
    for (const double o : offsets) candidates.push_back(t + o);
  double best = -std::numeric_limits<double>::infinity();
  for (const double t : candidates) {
    if (t < start + span || t > end) continue;
    double value = 0.0;
    for (std::size_t j = 0; j < offsets.size(); ++j) value += coefficients[j] * energy_at(t - offsets[j]);
    best = std::max(best, value / scale);
  }
  return best;
}

TEST(PowerStatistics, ExtremesAtEitherEndAndSignalsShorterThanTheWindow) {
  // 100 W for 10 ms, then 500 W until the end at 10.4 ms: the largest 1 ms average is the last one, 0.6 ms at 100 W
  // and 0.4 ms at 500 W (260 W); its largest rise is that average minus the 100 W before it. The 25 ms window is
  // longer than the signal: no average of it exists.
  detail::WindowedExtremes windows;
  const std::size_t average = windows.track({0.0, 1e-3}, {1.0, -1.0}, 1e-3);
  const std::size_t rise = windows.track({0.0, 1e-3, 2e-3}, {1.0, -2.0, 1.0}, 1e-3);
  const std::size_t longer = windows.track({0.0, 25e-3}, {1.0, -1.0}, 25e-3);
  windows.add(0.0, 100.0);
  windows.add(10e-3, 300.0);
  windows.add(10e-3, 500.0);  // a second change at the same instant replaces the first
  windows.finish(10.4e-3);
  EXPECT_NEAR(windows.extreme(average), 260.0, 1e-9);
  EXPECT_NEAR(windows.extreme(rise), 160.0, 1e-9);
  EXPECT_TRUE(std::isnan(windows.extreme(longer)));

  // Falling power: the first window (the range's other end) holds the largest average.
  detail::WindowedExtremes falling;
  const std::size_t first = falling.track({0.0, 1e-3}, {1.0, -1.0}, 1e-3);
  for (int i = 0; i < 10; ++i) falling.add(i * 0.5e-3, 1000.0 - 50.0 * i);
  falling.finish(5e-3);
  EXPECT_NEAR(falling.extreme(first), (1000.0 + 950.0) / 2.0, 1e-9);
}

TEST(PowerStatistics, LongTrainingLikeSignalMatchesExactExtremes) {
  // Tens of thousands of breakpoints, as a training run's GPU produces: bursts of GEMM power (some far above the
  // average), memory-bound stretches, idle gaps, and a slow ramp, so that the long averages sit close to their
  // maximum for long stretches, with many local maxima close to the largest, and the batches of points between
  // sweeps matter.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> step(2e-6, 4e-4), unit(0.0, 1.0);
  std::vector<std::pair<double, double>> points;
  double t = 0.0;
  while (t < 1.5) {
    const double u = unit(rng);
    const double level = u < 0.05  ? 1300.0 + 500.0 * unit(rng)
                         : u < 0.6 ? 600.0 + 150.0 * unit(rng)
                         : u < 0.9 ? 300.0 + 100.0 * unit(rng)
                                   : 80.0;
    points.emplace_back(t, level * (1.0 + 0.05 * t));
    t += step(rng);
  }
  ASSERT_GT(points.size(), 5000u);
  const double end = t;
  struct Tracked {
    std::vector<double> offsets, coefficients;
    double scale;
  };
  const std::vector<Tracked> tracked{{{0.0, 1e-3}, {1.0, -1.0}, 1e-3},
                                     {{0.0, 25e-3}, {1.0, -1.0}, 25e-3},
                                     {{0.0, 100e-3}, {1.0, -1.0}, 100e-3},
                                     {{0.0, 1e-3, 2e-3}, {1.0, -2.0, 1.0}, 1e-3}};
  detail::WindowedExtremes windows;
  for (const Tracked& f : tracked) windows.track(f.offsets, f.coefficients, f.scale);
  for (const auto& [time, power] : points) windows.add(time, power);
  windows.finish(end);
  for (std::size_t i = 0; i < tracked.size(); ++i) {
    const double exact = exact_extreme(points, end, tracked[i].offsets, tracked[i].coefficients, tracked[i].scale);
    EXPECT_NEAR(windows.extreme(i), exact, 1e-9 * std::abs(exact)) << "functional " << i;
  }
}

TEST(PowerStatistics, WindowedPeakAndRiseMatchBruteForce) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> step(1e-5, 2e-3), level(100.0, 900.0);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<std::pair<double, double>> points;
    double t = 0.0;
    while (t < 0.05) {
      points.emplace_back(t, level(rng));
      t += step(rng);
    }
    const double end = t;
    const double w = 1e-3;
    // Both functionals on one buffer, with a longer window tracked too so that the buffer outlives the short ones.
    detail::WindowedExtremes windows;
    const std::size_t average = windows.track({0.0, w}, {1.0, -1.0}, w);
    const std::size_t rise = windows.track({0.0, w, 2.0 * w}, {1.0, -2.0, 1.0}, w);
    const std::size_t long_average = windows.track({0.0, 10 * w}, {1.0, -1.0}, 10 * w);
    for (const auto& [time, power] : points) windows.add(time, power);
    windows.finish(end);
    const double got_average = windows.extreme(average);
    const double got_rise = windows.extreme(rise);
    double best_long = 0.0;
    for (double x = 10 * w; x <= end; x += 1e-6)
      best_long = std::max(best_long, brute_average(points, end, x - 10 * w, x));
    EXPECT_GE(windows.extreme(long_average), best_long - 1e-9);
    EXPECT_LE(windows.extreme(long_average), best_long + 900.0 * 1e-6 / (10 * w) * 2);
    double best_average = 0.0, best_rise = -1e300;
    for (double x = w; x <= end; x += 1e-6) best_average = std::max(best_average, brute_average(points, end, x - w, x));
    for (double x = 2 * w; x <= end; x += 1e-6)
      best_rise =
          std::max(best_rise, brute_average(points, end, x - w, x) - brute_average(points, end, x - 2 * w, x - w));
    // The exact extremes are at breakpoints; the 1 µs grid can only miss them by < 1 µs of the steepest slope.
    EXPECT_GE(got_average, best_average - 1e-9);
    EXPECT_LE(got_average, best_average + 900.0 * 1e-6 / w * 2);
    EXPECT_GE(got_rise, best_rise - 1e-9);
    EXPECT_LE(got_rise, best_rise + 2 * 900.0 * 1e-6 / w * 2);
  }
}

// ---- runs ----------------------------------------------------------------------------------------------------

fs::path fresh_directory(const std::string& name) {
  auto dir = test::process_temp_dir() / ("power_" + name);
  fs::remove_all(dir);
  return dir;
}

RunSpec load(const fs::path& config, const ModelRegistries& registries) {
  return load_run_config(config, default_search_path(config), registries);
}

RunSpec fsdp_8b(const ModelRegistries& registries) {
  return load(test::configs_dir() / "llama3-8b-fsdp.yaml", registries);
}

TEST(PowerOutputs, EnergyPowerAndTelemetryTableAgree) {
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = fsdp_8b(registries);
  run.power.telemetry_interval_s = 5e-3;
  const auto dir = fresh_directory("table");
  const RunReport report = run_simulation(run, registries, RunOptions{dir, false, nullptr, {}});
  const PowerReport& p = report.power;
  ASSERT_TRUE(p.available);
  const double makespan = report.stats.makespan_s;
  // Mean power x time x GPUs = energy; per token.
  EXPECT_NEAR(p.mean_w * makespan * report.gpus, p.energy_per_iteration_j * run.iterations,
              1e-9 * p.energy_per_iteration_j);
  EXPECT_NEAR(p.energy_per_token_j * run.training.tokens_per_iteration(), p.energy_per_iteration_j,
              1e-9 * p.energy_per_iteration_j);
  // Orders: instantaneous peak >= 1 ms peak >= 100 ms peak >= mean; idle power <= mean.
  EXPECT_GE(p.peak_w, p.peak_1ms_w - 1e-9);
  EXPECT_GE(p.peak_1ms_w, p.peak_100ms_w - 1e-9);
  EXPECT_GE(p.peak_100ms_w, p.mean_w - 1e-9);
  EXPECT_GT(p.mean_w, run.hardware.idle_power_w);
  EXPECT_LE(p.clock_min_hz, p.clock_mean_hz);
  EXPECT_LE(p.clock_mean_hz, run.hardware.compute.boost_clock_hz);
  ASSERT_EQ(p.peak_temperature_c.size(), static_cast<std::size_t>(report.gpus));

  // ops.h5 /telemetry: rows cover every GPU's run; their energy is the summary's energy.
  H5::H5File file((dir / "ops.h5").string(), H5F_ACC_RDONLY);
  const H5::DataSet table = file.openDataSet("telemetry");
  hsize_t rows = 0;
  table.getSpace().getSimpleExtentDims(&rows);
  struct Row {
    std::uint32_t gpu;
    double time_s, duration_s, power_w, clock_mhz, temperature_c, throttled_fraction;
  };
  H5::CompType type(sizeof(Row));
  type.insertMember("gpu", HOFFSET(Row, gpu), H5::PredType::NATIVE_UINT32);
  type.insertMember("time_s", HOFFSET(Row, time_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("duration_s", HOFFSET(Row, duration_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("power_w", HOFFSET(Row, power_w), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("clock_mhz", HOFFSET(Row, clock_mhz), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("temperature_c", HOFFSET(Row, temperature_c), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("throttled_fraction", HOFFSET(Row, throttled_fraction), H5::PredType::NATIVE_DOUBLE);
  std::vector<Row> data(rows);
  table.read(data.data(), type);
  const auto per_gpu = static_cast<std::size_t>(std::ceil(makespan / 5e-3 - 1e-9));
  EXPECT_EQ(rows, per_gpu * static_cast<std::size_t>(report.gpus));
  double energy = 0.0, covered = 0.0;
  for (const Row& r : data) {
    energy += r.power_w * r.duration_s;
    covered += r.duration_s;
    EXPECT_GE(r.throttled_fraction, 0.0);
    EXPECT_LE(r.throttled_fraction, 1.0 + 1e-12);
    EXPECT_LE(r.temperature_c, p.peak_temperature_c[r.gpu] + 1e-9);
  }
  EXPECT_NEAR(covered, makespan * report.gpus, 1e-9 * makespan * report.gpus);
  EXPECT_NEAR(energy, p.energy_per_iteration_j * run.iterations, 1e-9 * energy);
}

TEST(PowerOutputs, LossBreakdownSumsToTheIterationTime) {
  const auto registries = ModelRegistries::with_builtins();
  for (const char* config : {"llama3-8b-fsdp.yaml", "validation/megatron-gpt3-7b-tp1-pp4.yaml"}) {
    SCOPED_TRACE(config);
    const RunSpec run = load(test::configs_dir() / config, registries);
    const RunReport report = run_simulation(run, registries);
    const LossBreakdown& l = report.losses;
    EXPECT_NEAR(l.total_s(), report.iteration_time_s, 1e-9 * report.iteration_time_s);
    for (double part : {l.ideal_s, l.efficiency_loss_s, l.frequency_s, l.launch_s, l.comm_contention_s,
                        l.exposed_comm_s, l.pipeline_bubble_s, l.idle_s})
      EXPECT_GE(part, -1e-12);
    EXPECT_GT(l.ideal_s, 0.0);
  }
}

TEST(PowerOutputs, DynamicsOffAndFixedClockReproduceTheEngineBeforePowerDynamics) {
  const auto registries = ModelRegistries::with_builtins();
  RunSpec off = fsdp_8b(registries);
  off.power.dynamics = false;
  RunSpec fixed = off;
  fixed.power.dynamics = true;
  fixed.power.governor = "fixed";
  const RunReport a = run_simulation(off, registries);
  const RunReport b = run_simulation(fixed, registries);
  EXPECT_FALSE(a.power.available);
  EXPECT_TRUE(b.power.available);
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);  // bit-identical
  EXPECT_EQ(a.stats.op_events, b.stats.op_events);
  // At the rated clock (= max clock on MI300X) there is no frequency overhead.
  EXPECT_NEAR(b.losses.frequency_s, 0.0, 1e-12);
  // A time-weighted mean of a constant: equal up to the rounding of its sums.
  EXPECT_NEAR(b.power.clock_mean_hz, off.hardware.compute.boost_clock_hz, 1e-12 * off.hardware.compute.boost_clock_hz);
}

TEST(PowerOutputs, ASynchronousJobRunsAtItsSlowestChipsPace) {
  // Eight power-capped MI300X wait for the slowest of eight chips whose dynamic power spreads by 4.5 %: the cap then
  // holds a lower clock, the iteration takes longer by about the clock's ratio, and the GPUs still draw the cap.
  const auto registries = ModelRegistries::with_builtins();
  RunSpec identical = fsdp_8b(registries);
  identical.power.chip_variation = 0.0;
  RunSpec varied = identical;
  varied.power.chip_variation = 0.045;
  const RunReport a = run_simulation(identical, registries);
  const RunReport b = run_simulation(varied, registries);
  EXPECT_LT(b.power.clock_mean_hz, a.power.clock_mean_hz);
  EXPECT_GT(b.iteration_time_s, a.iteration_time_s * 1.01);
  // Dynamic power ~ f^3 near the top of the V-f curve: 1 + 0.045 x 1.42 (the slowest of 8) more power for the same
  // clock costs about 2 % of clock; the memory-bound and communication share of the step slows less.
  EXPECT_LT(b.iteration_time_s, a.iteration_time_s * (1.0 + 0.045 * 1.5));
  EXPECT_NEAR(b.power.mean_w, a.power.mean_w, 0.02 * a.power.mean_w);

  // One GPU is its own slowest chip: nothing changes, bit for bit.
  RunSpec single = identical;
  single.cluster.gpus_per_node = 1;
  single.cluster.nics_per_node = 1;
  single.parallelism = ParallelismSpec{};
  single.training.global_batch = single.training.micro_batch;
  validate_run(single, SourceLocation{"test"});
  RunSpec single_varied = single;
  single_varied.power.chip_variation = 0.045;
  EXPECT_EQ(run_simulation(single, registries).iteration_time_s,
            run_simulation(single_varied, registries).iteration_time_s);
}

// ---- the seeds' findings -------------------------------------------------------------------------------------

TEST(SeedFindings, ChopperMi300xClocksStayBelowPeakAndCostTime) {
  const auto registries = ModelRegistries::with_builtins();
  const RunSpec run = fsdp_8b(registries);
  const RunReport report = run_simulation(run, registries);
  EXPECT_LT(report.power.clock_mean_hz, run.hardware.compute.boost_clock_hz);
  EXPECT_GT(report.power.power_capped_fraction, 0.5) << "the 750 W cap binds most of the time";
  EXPECT_GT(report.losses.frequency_s, 0.01 * report.iteration_time_s) << "frequency overhead is reported";
}

TEST(SeedFindings, LargerMicroBatchRaisesPeakPower) {
  // CharLLM-PPT: larger micro-batches make execution burstier, with higher peak power and more throttling.
  // Llama-3-8B with TP 8 on one DGX H100. "Peak power" as telemetry sees it: the highest 1 ms and 100 ms averages
  // (the instantaneous peak is the single densest kernel at boost, which the micro-batch hardly changes).
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = fsdp_8b(registries);
  run.hardware = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  run.cluster = load_cluster_config(test::configs_dir() / "clusters" / "dgx-h100.yaml");
  run.cluster.fabric.kind = "none";
  run.parallelism = ParallelismSpec{};
  run.parallelism.tp = 8;
  run.parallelism.sequence_parallel = true;
  run.training.seq_len = 2048;
  run.training.recompute = RecomputePolicy::full;
  // One chip's power: the finding is about the load. (Under power.chip_variation the capped periods report the
  // slowest chip's power, whose GEMMs draw more at the same clock, and mb 1's 1 ms peak rises 5 % as well.)
  run.power.chip_variation = 0.0;
  std::vector<PowerReport> reports;
  for (const int micro_batch : {1, 4}) {
    run.training.micro_batch = micro_batch;
    run.training.global_batch = 8;
    validate_run(run, SourceLocation{"test"});
    reports.push_back(run_simulation(run, registries).power);
  }
  EXPECT_GT(reports[1].peak_1ms_w, reports[0].peak_1ms_w * 1.05);
  EXPECT_GT(reports[1].peak_100ms_w, reports[0].peak_100ms_w);
  // The steepest rise (W/ms) is not compared: at micro-batch 1 the host's launches (training.host_launch_us) leave
  // the GPU idle between small kernels, so it swings between idle and busy as steeply (481 against 470 W/ms).
  EXPECT_GT(reports[1].power_capped_fraction, reports[0].power_capped_fraction);
}

TEST(SeedFindings, HotterSlotThrottlesFirst) {
  // CharLLM-PPT: rear slots run hotter. One slot of an MI300X node gets 18 K hotter inlet air: starting below its
  // slowdown temperature (warm start at 90 % of the cap), it must reach it first; the others later or never.
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = fsdp_8b(registries);
  CoolingSpec cooling;
  cooling.ambient_c = 30.0;
  cooling.profile = CoolingSpec::Profile::per_slot;
  cooling.slot_offsets_k = {0, 0, 0, 0, 0, 18, 0, 0};
  run.power.cooling = cooling;
  run.iterations = 3;
  const RunReport report = run_simulation(run, registries);
  EXPECT_GT(report.power.first_thermal_throttle_s[5], 0.1) << "it warms into the limit, not starts there";
  EXPECT_LE(report.power.peak_temperature_c[5], run.hardware.thermal.slowdown_c + 1e-6);
  const auto& first = report.power.first_thermal_throttle_s;
  ASSERT_EQ(first.size(), 8U);
  ASSERT_GE(first[5], 0.0) << "the hot slot must throttle";
  for (std::size_t g = 0; g < first.size(); ++g) {
    if (g == 5) continue;
    EXPECT_TRUE(first[g] < 0.0 || first[g] > first[5]) << "GPU " << g;
    EXPECT_LT(report.power.peak_temperature_c[g], report.power.peak_temperature_c[5]);
  }
  EXPECT_GT(report.power.thermal_throttled_fraction_per_gpu[5], 0.0);
}

// ---- config ----------------------------------------------------------------------------------------------------

class PowerConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_directory(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  fs::path write(const std::string& text) const {
    const fs::path file = dir_ / "run.yaml";
    std::ofstream(file) << "model: llama3-8b\nhardware: MI300X\ncluster: {name: mi300x, nodes: 1, fabric: {kind: "
                           "none}}\nparallelism: {dp: 8}\ntraining: {global_batch: 8}\n"
                        << text;
    return file;
  }
  std::string error(const std::string& text) const {
    try {
      (void)load_run_config(write(text), ConfigSearchPath{{test::configs_dir()}}, registries_);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no InputError for:\n" << text;
    return {};
  }
  ModelRegistries registries_ = ModelRegistries::with_builtins();
  fs::path dir_;
};

TEST_F(PowerConfig, KnobsDecodeToSi) {
  const RunSpec run =
      load_run_config(write("power: {cap_w: 500, lock_clock_mhz: 1500, governor: firmware, "
                            "telemetry_interval_ms: 2, chip_variation: 0.02}\nthermal: {ambient_c: 30, profile: "
                            "per_slot, slot_offsets_k: [0, 0, 0, 0, 5, 5, 10, 10], "
                            "start_power_fraction: 0.5}\n"),
                      ConfigSearchPath{{test::configs_dir()}}, registries_);
  EXPECT_DOUBLE_EQ(run.power.cap_w, 500.0);
  EXPECT_DOUBLE_EQ(run.power.lock_clock_hz, 1.5e9);
  EXPECT_DOUBLE_EQ(run.power.telemetry_interval_s, 2e-3);
  EXPECT_DOUBLE_EQ(run.power.chip_variation, 0.02);
  ASSERT_TRUE(run.power.cooling.has_value());
  EXPECT_DOUBLE_EQ(run.power.cooling->ambient_c, 30.0);
  EXPECT_EQ(run.power.cooling->slot_offsets_k.size(), 8U);
  EXPECT_DOUBLE_EQ(run.power.start_power_fraction, 0.5);
  EXPECT_GT(run.hardware.power.dynamic_w, 0.0);
  EXPECT_GT(run.hardware.thermal.resistance_k_per_w, 0.0);
}

TEST_F(PowerConfig, ErrorsNameTheKeyAndTheFix) {
  std::string e = error("power: {cap: 500}\n");
  EXPECT_NE(e.find("key 'power.cap'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'cap_w'"), std::string::npos) << e;
  e = error("power: {lock_clock_mhz: 2500}\n");
  EXPECT_NE(e.find("run.yaml:6:"), std::string::npos) << e;
  EXPECT_NE(e.find("power.lock_clock_mhz"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the clock range"), std::string::npos) << e;
  e = error("power: {cap_w: 100}\n");
  EXPECT_NE(e.find("not above the idle power"), std::string::npos) << e;
  e = error("power: {chip_variation: 0.6}\n");
  EXPECT_NE(e.find("power.chip_variation"), std::string::npos) << e;
  EXPECT_NE(e.find("[0, 0.5)"), std::string::npos) << e;
  e = error("power: {governor: ondemand}\n");
  EXPECT_NE(e.find("unknown governor 'ondemand'"), std::string::npos) << e;
  e = error("thermal: {profile: per_slot, slot_offsets_k: [1, 2]}\n");
  EXPECT_NE(e.find("thermal.slot_offsets_k"), std::string::npos) << e;
  e = error("thermal: {slot_offsets_k: hot}\n");
  EXPECT_NE(e.find("expected a list"), std::string::npos) << e;
}

}  // namespace
}  // namespace chopsim
