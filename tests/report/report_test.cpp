// `chopsim report` (issue 19): one self-contained HTML page of a run. The page is checked as a browser would get it:
// no external resource, Chart.js inlined, every chart's config valid JSON with titled axes, and figures that follow
// from the run (the loss waterfall ends at the predicted iteration time; one power trace per simulated GPU; the cap
// line at the cap).

#include "chopsim/report/report.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/study.hpp"
#include "chopsim/experiments/sweep.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

/// The page's chart configs (the JSON object in <script id="chopsim-charts">), parsed into `parser`.
simdjson::dom::object chart_configs(const std::string& html, simdjson::dom::parser& parser,
                                    simdjson::padded_string& text) {
  const std::string open = R"(<script type="application/json" id="chopsim-charts">)";
  const std::size_t start = html.find(open);
  const std::size_t end = html.find("</script>", start);
  text = simdjson::padded_string(html.substr(start + open.size(), end - start - open.size()));
  simdjson::dom::object charts;
  EXPECT_EQ(parser.parse(text).get(charts), simdjson::SUCCESS);
  return charts;
}

class Report : public test::TempDirTest {
 protected:
  /// The quick-start run (8 MI300X, power dynamics on) with --out, and its report.
  RunReport run_quick_start() {
    const auto registries = ModelRegistries::with_builtins();
    const auto config = test::configs_dir() / "llama3-8b-fsdp.yaml";
    RunOptions options;
    options.output_dir = dir_ / "run";
    const RunReport report =
        run_simulation(load_run_config(config, default_search_path(config), registries), registries, options);
    write_run_report(dir_ / "run", dir_ / "report.html");
    return report;
  }
  /// A sweep of the quick-start config with `sweep_text` (set, axes, ...) run into dir_/NAME on two jobs, and its page
  /// written to dir_/NAME.html.
  SweepResult sweep_with_page(const std::string& name, const std::string& sweep_text) {
    const auto registries = ModelRegistries::with_builtins();
    const auto sweep_file =
        write(name + ".yaml", "base: " + (test::configs_dir() / "llama3-8b-fsdp.yaml").string() + "\n" + sweep_text);
    const SweepSpec spec = load_sweep(sweep_file);
    SweepOptions options;
    options.out_dir = dir_ / name;
    options.jobs = 2;
    SweepResult result = run_sweep(spec, default_search_path(spec.base), registries, options);
    write_report(dir_ / name, dir_ / (name + ".html"));
    return result;
  }
};

TEST_F(Report, ARunPageNamesTheBusiestExpertRanksLoad) {
  // Mixtral on 32 H200 made dropless, its busiest expert-parallel rank at 1.3 x the mean load: every rank waits for it.
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "mixtral-8x7b-h200-ep.yaml";
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  run.training.moe_capacity_factor.reset();
  run.training.moe_load_imbalance = 1.3;
  RunOptions options;
  options.output_dir = dir_ / "moe";
  (void)run_simulation(run, registries, options);
  write_run_report(dir_ / "moe", dir_ / "moe.html");
  const std::string html = test::read_text(dir_ / "moe.html");
  EXPECT_NE(html.find("busiest expert-parallel rank's load"), std::string::npos);
  EXPECT_NE(html.find(">1.30<"), std::string::npos);
}

TEST_F(Report, ARunPageIsSelfContainedWithTitledChartsThatFollowFromTheRun) {
  const RunReport run = run_quick_start();
  const std::string html = test::read_text(dir_ / "report.html");
  // Offline: no element loads anything (the only URLs are in Chart.js' licence comment).
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("Chart.js v3.9"), std::string::npos);  // inlined, Debian's libjs-chart.js
  // The figures table names the pace the eight chips run at (the slowest of 8: +6.4 % dynamic power at the default
  // spread, power.chip_variation 0.045).
  EXPECT_NE(html.find("slowest chip's dynamic power"), std::string::npos);
  EXPECT_NE(html.find(">+6.4<"), std::string::npos);
  EXPECT_EQ(html.find("busiest expert-parallel rank"), std::string::npos);  // a dense model

  // (std::regex would recurse once per character of this 100 KB block and overflow the stack.)
  const std::string open = R"(<script type="application/json" id="chopsim-charts">)";
  const std::size_t start = html.find(open);
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = html.find("</script>", start);
  simdjson::dom::parser parser;
  const simdjson::padded_string text(html.substr(start + open.size(), end - start - open.size()));
  simdjson::dom::object charts;
  ASSERT_EQ(parser.parse(text).get(charts), simdjson::SUCCESS);
  std::vector<std::string> ids;
  for (const auto chart : charts) {
    ids.emplace_back(chart.key);
    simdjson::dom::object scales;
    ASSERT_EQ(chart.value.at_pointer("/options/scales").get(scales), simdjson::SUCCESS) << chart.key;
    for (const auto scale : scales) {
      std::string_view title;
      EXPECT_EQ(scale.value.at_pointer("/title/text").get(title), simdjson::SUCCESS) << chart.key << " " << scale.key;
      EXPECT_FALSE(title.empty()) << chart.key << " " << scale.key;
    }
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"breakdown", "waterfall", "memory", "power", "clock", "temperature",
                                           "throttled"}));

  // The waterfall adds every loss to the ideal time: its last bar is the predicted iteration time.
  simdjson::dom::array bars;
  ASSERT_EQ(charts.at_pointer("/waterfall/data/datasets/0/data").get(bars), simdjson::SUCCESS);
  double predicted = 0.0;
  for (const auto bar : bars) predicted = bar.at(1).get_double().value();
  EXPECT_NEAR(predicted, run.iteration_time_s, 0.01 * run.iteration_time_s);

  // One power trace per simulated GPU (8: front and rear slots differ), plus the cap and the three windowed peaks.
  simdjson::dom::array power;
  ASSERT_EQ(charts.at_pointer("/power/data/datasets").get(power), simdjson::SUCCESS);
  ASSERT_EQ(power.size(), 8u + 4);
  double cap = 0.0;
  for (const auto dataset : power)
    if (std::string_view(dataset["label"].get_string().value()) == "cap")
      cap = dataset.at_pointer("/data/0/y").get_double().value();
  EXPECT_EQ(cap, run.power.cap_w);

  // The headline table: the iteration time to the millisecond.
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", run.iteration_time_s);
  EXPECT_NE(html.find(std::string("<td class=\"n\">") + seconds + "</td>"), std::string::npos);
  // And the host's launches, the floor under it, to the millisecond.
  ASSERT_GT(run.host.launch_time_s, 0.0);
  std::snprintf(seconds, sizeof seconds, "%.3f", run.host.launch_time_s);
  const auto host_row = html.find("host's kernel launches");
  ASSERT_NE(host_row, std::string::npos);
  EXPECT_EQ(html.find(std::string("<td class=\"n\">") + seconds + "</td>", host_row),
            html.find("<td class=\"n\">", host_row));
}

TEST_F(Report, TheMemoryChartHasABarPerPipelineStage) {
  // Llama-3-8B with pp 2 on MI250: summary.json lists both stages; the largest is the peak the headline reports, and
  // the chart stacks each stage's parts to its total (less nothing: the parts are the whole).
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-mi250-3d.yaml";
  RunOptions options;
  options.output_dir = dir_ / "run";
  const RunReport run =
      run_simulation(load_run_config(config, default_search_path(config), registries), registries, options);
  ASSERT_EQ(run.memory_by_stage.size(), 2u);
  EXPECT_DOUBLE_EQ(std::max(run.memory_by_stage[0].total_bytes, run.memory_by_stage[1].total_bytes),
                   run.memory.total_bytes);
  // Stage 0 holds more micro-batches in flight under 1F1B (pp - stage), stage 1 the output head.
  EXPECT_GT(run.memory_by_stage[0].activations_bytes, run.memory_by_stage[1].activations_bytes);
  write_run_report(dir_ / "run", dir_ / "report.html");
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const simdjson::dom::object charts = chart_configs(test::read_text(dir_ / "report.html"), parser, text);
  simdjson::dom::array labels, datasets;
  ASSERT_EQ(charts.at_pointer("/memory/data/labels").get(labels), simdjson::SUCCESS);
  ASSERT_EQ(labels.size(), 3u);  // stage 0, stage 1, capacity
  ASSERT_EQ(charts.at_pointer("/memory/data/datasets").get(datasets), simdjson::SUCCESS);
  for (std::size_t stage = 0; stage < 2; ++stage) {
    double stacked = 0.0;
    for (const auto dataset : datasets) {
      const simdjson::dom::element value = dataset.at_pointer("/data").at(stage).value();
      if (!value.is_null()) stacked += value.get_double().value();
    }
    EXPECT_NEAR(stacked * (1024.0 * 1024.0 * 1024.0), run.memory_by_stage[stage].total_bytes,
                1e-6 * run.memory_by_stage[stage].total_bytes);
  }
}

/// The chart configs of a report page, parsed.

// A sweep's folder gets the sweep page: the best points, throughput per point, the Pareto front (a subset of the
// points, none of them beaten on both throughput and energy per token), power peaks and memory per point.
TEST_F(Report, ASweepFolderGetsTheSweepPage) {
  const SweepResult result = sweep_with_page("sweep",
                                             "set: {training.global_batch: 64}\naxes:\n  training.micro_batch: [1, 2, "
                                             "8]\n  training.recompute: [none, full]\n");
  const std::string html = test::read_text(dir_ / "sweep.html");
  EXPECT_NE(html.find("6 points: 5 simulated, 1 out of memory"), std::string::npos);  // micro-batch 8 without recompute
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const simdjson::dom::object charts = chart_configs(html, parser, text);
  simdjson::dom::array points, front;
  ASSERT_EQ(charts.at_pointer("/pareto/data/datasets/0/data").get(points), simdjson::SUCCESS);
  ASSERT_EQ(charts.at_pointer("/pareto/data/datasets/1/data").get(front), simdjson::SUCCESS);
  EXPECT_EQ(points.size(), 5u);
  EXPECT_GE(front.size(), 1u);
  EXPECT_LE(front.size(), points.size());
  for (const auto f : front)
    for (const auto p : points) {
      const double fx = f["x"].get_double().value(), fy = f["y"].get_double().value();
      const double px = p["x"].get_double().value(), py = p["y"].get_double().value();
      EXPECT_FALSE(px >= fx && py <= fy && (px > fx || py < fy)) << "a front point is dominated";
    }
  simdjson::dom::array memory;
  ASSERT_EQ(charts.at_pointer("/memory/data/labels").get(memory), simdjson::SUCCESS);
  EXPECT_EQ(memory.size(), 6u);  // the out-of-memory point too
  // The table of all points has one row per results.csv row, with the out-of-memory point's reason.
  const std::size_t all = html.find("<table class=\"sortable\">");
  ASSERT_NE(all, std::string::npos);
  const std::string rows = html.substr(all, html.find("</table>", all) - all);
  std::size_t count = 0;
  for (std::size_t at = rows.find("<tr><td>"); at != std::string::npos; at = rows.find("<tr><td>", at + 1)) ++count;
  EXPECT_EQ(count, result.points.size());
  EXPECT_NE(rows.find("<td>oom</td>"), std::string::npos);
  // The objective against each axis: per micro-batch, the best tokens/s of its simulated points.
  simdjson::dom::array labels, best;
  ASSERT_EQ(charts.at_pointer("/axis_0/data/labels").get(labels), simdjson::SUCCESS);
  ASSERT_EQ(charts.at_pointer("/axis_0/data/datasets/0/data").get(best), simdjson::SUCCESS);
  ASSERT_EQ(labels.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string micro_batch(labels.at(i).get_string().value());
    double top = 0.0;
    for (const PointResult& p : result.points)
      for (const auto& [key, value] : p.point.values)
        if (key == "training.micro_batch" && value == micro_batch && p.status == PointStatus::ok)
          top = std::max(top, p.figures.tokens_per_s);
    EXPECT_DOUBLE_EQ(best.at(i).get_double().value(), top) << micro_batch;
  }
}

TEST_F(Report, ASweepOverTpAndPpGetsHeatMaps) {
  const SweepResult result = sweep_with_page("grid",
                                             "set: {parallelism.fsdp: no_shard, training.global_batch: 16}\n"
                                             "axes:\n  parallelism.tp: [1, 2]\n  parallelism.pp: [1, 2]\ndp: auto\n");
  const std::string html = test::read_text(dir_ / "grid.html");
  const std::size_t heat = html.find("Best tokens/s by tp and pp");
  ASSERT_NE(heat, std::string::npos);
  EXPECT_NE(html.find("Lowest peak memory per GPU (GiB) by tp and pp"), std::string::npos);
  // Each simulated point's tokens/s is in its cell (rounded as the table writes it).
  int simulated = 0;
  for (const PointResult& p : result.points) {
    if (p.status != PointStatus::ok) continue;
    ++simulated;
    char text[32];
    std::snprintf(text, sizeof text, ">%.0f</td>", p.figures.tokens_per_s);
    EXPECT_NE(html.find(text, heat), std::string::npos) << text;
  }
  EXPECT_EQ(simulated, 3);
  // tp 1 x pp 1 does not fit (the whole 8B model with Adam states on each GPU): its cell says so.
  EXPECT_NE(html.find(">OOM</td>", heat), std::string::npos);
}

// A study's folder gets the study page: the candidates ranked by tokens per dollar, and one bar per feasible
// candidate in each chart, with the values of results.csv.
TEST_F(Report, AStudyFolderGetsTheStudyPage) {
  const auto registries = ModelRegistries::with_builtins();
  (void)write("search.yaml", "base: " + (test::configs_dir() / "llama3-8b-fsdp.yaml").string() +
                                 "\naxes:\n  training.micro_batch: [1, 2]\n");
  const auto study_file = write("study.yaml",
                                "sweep: search.yaml\ngoal: {tokens: 1.0e9}\ncandidates:\n"
                                "  - {name: cheap, set: {hardware: MI300X}, cost: {gpu_hour_usd: 1.0}}\n"
                                "  - {name: dear, set: {hardware: MI300X}, cost: {gpu_hour_usd: 3.0}}\n"
                                "  - {name: too small, set: {hardware: MI300X, model.layers: 1000}}\n");
  const StudySpec spec = load_study(study_file);
  StudyOptions options;
  options.out_dir = dir_ / "study";
  options.jobs = 2;
  const StudyResult result = run_study(spec, default_search_path(spec.sweep.base), registries, options);
  ASSERT_TRUE(result.candidates[0].feasible);
  ASSERT_FALSE(result.candidates[2].feasible);
  write_report(dir_ / "study", dir_ / "study.html");
  const std::string html = test::read_text(dir_ / "study.html");
  EXPECT_NE(html.find("3 candidate systems, 2 feasible"), std::string::npos);
  EXPECT_NE(html.find("infeasible"), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const simdjson::dom::object charts = chart_configs(html, parser, text);
  simdjson::dom::array labels, values;
  ASSERT_EQ(charts.at_pointer("/per_dollar/data/labels").get(labels), simdjson::SUCCESS);
  ASSERT_EQ(charts.at_pointer("/per_dollar/data/datasets/0/data").get(values), simdjson::SUCCESS);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(std::string(labels.at(0).get_string().value()), "cheap");  // ranked: 3x the tokens per dollar
  EXPECT_NEAR(values.at(0).get_double().value(), result.candidates[0].tokens_per_dollar,
              1e-9 * result.candidates[0].tokens_per_dollar);
  EXPECT_NEAR(values.at(0).get_double().value() / values.at(1).get_double().value(), 3.0, 1e-9);
  for (const char* chart : {"per_dollar", "time", "cost", "facility_power", "energy"}) {
    std::string_view title;
    EXPECT_EQ(charts.at_pointer(std::string("/") + chart + "/options/scales/x/title/text").get(title),
              simdjson::SUCCESS)
        << chart;
    EXPECT_FALSE(title.empty()) << chart;
  }
}

TEST_F(Report, AFolderWithoutARunIsAnInputErrorAndNothingIsWritten) {
  const std::string message = test::input_error([&] { write_report(dir_, dir_ / "report.html"); });
  EXPECT_NE(message.find("no summary.json (a run), results.csv (a sweep or a study) or validation.csv"),
            std::string::npos)
      << message;
  write("bad/summary.json", "{\"not\": \"chopsim\"}");
  EXPECT_NE(test::input_error([&] { write_run_report(dir_ / "bad", dir_ / "report.html"); }).find("not a chopsim"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "report.html"));
}

TEST_F(Report, ValidationCsvGetsTheValidationPage) {
  // Three measured cases as chopsim validate writes them: two predicted (tokens/s +10 %, memory -5 %), one that
  // chopsim cannot describe.
  std::vector<ValidationResult> results(3);
  const auto set = [&](std::size_t i, const char* id, const char* group, ValidationMetric metric, double measured,
                       double predicted) {
    ValidationCase& c = results[i].validation_case;
    c.id = id;
    c.group = group;
    c.metric = metric;
    c.measured = measured;
    c.source = "a table, with a comma";
    results[i].uncalibrated.ok = predicted > 0.0;
    results[i].uncalibrated.predicted = predicted;
    results[i].uncalibrated.relative_error = (predicted - measured) / measured;
  };
  set(0, "fast", "records", ValidationMetric::tokens_per_s_per_gpu, 1000.0, 1100.0);
  set(1, "memory", "records", ValidationMetric::peak_memory_bytes, 40.0 * 1073741824.0, 38.0 * 1073741824.0);
  set(2, "moe", "records", ValidationMetric::tokens_per_s_per_gpu, 500.0, 0.0);
  results[2].validation_case.not_modelled = "not modelled: multi-latent attention";
  {
    std::ofstream out(dir_ / "validation.csv");
    write_validation_csv(out, results);
  }
  const std::string csv = test::read_text(dir_ / "validation.csv");
  EXPECT_NE(csv.find("fast,records,tokens/s/GPU,1000,1100,0.1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("memory,records,GiB,40,38,-0.05,"), std::string::npos) << csv;  // shown in GiB
  EXPECT_NE(csv.find("not_modelled,not modelled: multi-latent attention,\"a table, with a comma\""), std::string::npos);

  write_report(dir_ / "validation.csv", dir_ / "validation.html");
  const std::string html = test::read_text(dir_ / "validation.html");
  EXPECT_NE(html.find("1 x not modelled: multi-latent attention"), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const simdjson::dom::object charts = chart_configs(html, parser, text);
  // One scatter per unit: the predicted case at (measured, predicted), then y = x and the +-10 % lines.
  double x = 0.0, y = 0.0, line_end = 0.0, band_end = 0.0;
  ASSERT_EQ(charts.at_pointer("/scatter_0/data/datasets/0/data/0/x").get(x), simdjson::SUCCESS);
  ASSERT_EQ(charts.at_pointer("/scatter_0/data/datasets/0/data/0/y").get(y), simdjson::SUCCESS);
  EXPECT_EQ(x, 1000.0);
  EXPECT_EQ(y, 1100.0);
  ASSERT_EQ(charts.at_pointer("/scatter_0/data/datasets/1/data/1/y").get(line_end), simdjson::SUCCESS);
  ASSERT_EQ(charts.at_pointer("/scatter_0/data/datasets/2/data/1/y").get(band_end), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(line_end, 1100.0);  // y = x up to the largest value
  EXPECT_DOUBLE_EQ(band_end, 1210.0);  // +10 %
  ASSERT_EQ(charts.at_pointer("/scatter_1/data/datasets/0/data/0/y").get(y), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(y, 38.0);
  // The error by group: median |error| of the group's predicted tokens/s cases, in percent.
  double median = 0.0;
  ASSERT_EQ(charts.at_pointer("/error_by_group/data/datasets/0/data/1").get(median), simdjson::SUCCESS);
  EXPECT_NEAR(median, 10.0, 1e-9);
  // Another CSV is refused, and nothing is written.
  write("other.csv", "candidate,hardware\n");
  EXPECT_NE(
      test::input_error([&] { write_report(dir_ / "other.csv", dir_ / "other.html"); }).find("not a validation.csv"),
      std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "other.html"));
}

TEST_F(Report, BeyondSixteenGpusTheHottestAndSlowestAreDrawn) {
  // Llama-3-8B TP2 PP2 DP8 on 32 MI250 GCDs, every GCD simulated: rear slots breathe warmer air, so the hottest GCDs
  // are rear ones, and the page draws 16 of the 32: the hottest included.
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-mi250-3d.yaml";
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  run.engine_options.use_symmetry = false;
  RunOptions options;
  options.output_dir = dir_ / "run";
  const RunReport report = run_simulation(run, registries, options);
  ASSERT_EQ(report.gpus, 32);
  write_run_report(dir_ / "run", dir_ / "report.html");
  const std::string html = test::read_text(dir_ / "report.html");
  EXPECT_NE(html.find("16 of the 32 GPUs simulated are drawn"), std::string::npos);
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  const simdjson::dom::object charts = chart_configs(html, parser, text);
  simdjson::dom::array datasets;
  ASSERT_EQ(charts.at_pointer("/temperature/data/datasets").get(datasets), simdjson::SUCCESS);
  EXPECT_EQ(datasets.size(), 16u);
  // The hottest trace drawn reaches the run's peak temperature (summary.json's).
  double hottest = -1e9;
  for (const auto dataset : datasets) {
    simdjson::dom::array points;
    ASSERT_EQ(dataset.at_key("data").get(points), simdjson::SUCCESS);
    for (const auto point : points) {
      double value = 0.0;
      ASSERT_EQ(point.at_key("y").get(value), simdjson::SUCCESS);
      hottest = std::max(hottest, value);
    }
  }
  const auto& peaks = report.power.peak_temperature_c;
  ASSERT_FALSE(peaks.empty());
  // ops.h5's telemetry holds one temperature per interval, so its highest is within a fraction of a kelvin.
  EXPECT_NEAR(hottest, *std::max_element(peaks.begin(), peaks.end()), 0.5);
}

}  // namespace
}  // namespace chopsim
