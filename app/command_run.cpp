#include <algorithm>
#include <filesystem>
#include <iostream>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/report/report.hpp"
#include "cli.hpp"

namespace chopsim::cli {

namespace {

/// "0,8,16" -> GPU indices of the run; an argument error names the bad entry.
std::vector<int> parse_rank_list(const std::string& text, const RunSpec& run) {
  std::vector<int> ranks;
  std::size_t start = 0;
  const int gpus = run.cluster.gpu_count();
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int value = -1;
    const bool digits = !item.empty() && item.size() <= 9 &&
                        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) value = std::stoi(item);
    if (!digits || value >= gpus)
      throw argument_error(
          "--timeline-ranks: '" + item + "' is not a GPU of this run (0 to " + std::to_string(gpus - 1) + ")",
          "give GPU indices separated by commas, e.g. --timeline-ranks 0,8,16");
    ranks.push_back(value);
    start = comma + 1;
  }
  return ranks;
}

}  // namespace

int command_run(const std::vector<std::string>& raw) {
  const Arguments args(raw, kRunOptions);
  if (args.positional().size() != 1)
    throw argument_error("run takes exactly one CONFIG file", "write chopsim run configs/llama3-8b-fsdp.yaml");
  const std::filesystem::path given = args.positional()[0];
  const auto registries = ModelRegistries::with_builtins();
  // --configs first (checked once), then the run file's own folders (default_search_path).
  const std::filesystem::path configs = configs_option(args).value_or("");
  // A shipped run config by name (`chopsim run llama3-8b-fsdp`) from any folder.
  const std::filesystem::path config = find_run_config(given, default_search_path(given, configs));
  const ConfigSearchPath search = default_search_path(config, configs);
  std::vector<ConfigOverride> overrides;
  for (const std::string& text : args.values("--set")) overrides.push_back(parse_config_override(text, "--set"));
  RunSpec run = load_run_config(config, search, registries, overrides);
  if (const auto iterations = args.positive_int("--iterations")) run.iterations = *iterations;
  if (const auto engine = args.option("--engine")) {
    check_engine_name(registries, *engine);
    run.engine = *engine;
  }

  RunOptions options;
  if (const auto out = args.option("--out")) options.output_dir = *out;
  if (const auto out = args.option("-o")) options.output_dir = *out;
  options.simulate_when_out_of_memory = args.has_switch("--simulate-oom");
  options.force = args.has_switch("--force");
  options.observer_thread = true;  // one run: the observers digest on the second core while the engine simulates
  if (const auto list = args.option("--timeline-ranks")) options.timeline_ranks = parse_rank_list(*list, run);
  options.timeline_format = timeline_format_option(args);
  const bool html = args.has_switch("--report");
  if (html && options.output_dir.empty())
    throw argument_error("--report needs --out DIR (the report is drawn from the run's files)",
                         "write chopsim run CONFIG --out DIR --report");
  const auto report = run_simulation(run, registries, options);
  print_run_summary(std::cout, run, report);
  if (html) {
    write_run_report(options.output_dir, options.output_dir / "report.html");
    std::cout << "  wrote " << (options.output_dir / "report.html").string() << "\n";
  }
  return report.out_of_memory ? kExitOutOfMemory : kExitOk;
}

}  // namespace chopsim::cli
