#include <filesystem>
#include <iostream>

#include "chopsim/experiments/config.hpp"
#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_run(const std::vector<std::string>& raw) {
  const Arguments args(raw, {"--out", "-o", "--iterations", "--configs", "--engine"}, {"--simulate-oom"});
  if (args.positional().size() != 1)
    throw argument_error("run takes exactly one CONFIG file", "write chopsim run configs/llama3-8b-fsdp.yaml");
  const std::filesystem::path config = args.positional()[0];
  const auto registries = ModelRegistries::with_builtins();
  ConfigSearchPath search = default_search_path(config);
  if (const auto dir = args.option("--configs")) search.roots.insert(search.roots.begin(), *dir);
  RunSpec run = load_run_config(config, search, registries);
  if (const auto iterations = args.positive_int("--iterations")) run.iterations = *iterations;
  if (const auto engine = args.option("--engine")) {
    check_engine_name(registries, *engine);
    run.engine = *engine;
  }

  RunOptions options;
  if (const auto out = args.option("--out")) options.output_dir = *out;
  if (const auto out = args.option("-o")) options.output_dir = *out;
  options.simulate_when_out_of_memory = args.has_switch("--simulate-oom");
  const auto report = run_simulation(run, registries, options);
  print_run_summary(std::cout, run, report);
  return report.out_of_memory ? kExitOutOfMemory : kExitOk;
}

}  // namespace chopsim::cli
