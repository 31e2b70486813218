#include <exception>
#include <iostream>

#include "chopsim/common/units.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/replay.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_replay(const std::vector<std::string>& raw) {
  const Arguments args(raw, kReplayOptions);
  if (args.positional().size() != 1)
    throw argument_error("replay takes exactly one STORE.h5 (a kernel store from chopsim ingest)",
                         "write chopsim replay store.h5 [--hardware NAME] [--cluster NAME] [--out DIR]");
  ReplayOptions options;
  options.store = args.positional()[0];
  options.hardware = args.option("--hardware").value_or("");
  options.measured_hardware = args.option("--measured-hardware").value_or("");
  options.cluster = args.option("--cluster").value_or("");
  options.configs_dir = configs_option(args).value_or("configs");
  options.calibration = args.option("--calibration").value_or("");
  options.measured_calibration = args.option("--measured-calibration").value_or("");
  options.simulate_collectives = args.has_switch("--simulate-collectives");
  if (const auto out = args.option("--out")) options.output_dir = *out;
  if (const auto out = args.option("-o")) options.output_dir = *out;
  options.timeline_format = timeline_format_option(args);
  if (const auto window = args.option("--dependency-window-us")) {
    try {
      std::size_t used = 0;
      const double us = std::stod(*window, &used);
      if (used != window->size() || !(us >= 0.0)) throw std::invalid_argument("negative");
      options.dependency_window_s = us * units::kMicrosecond;
    } catch (const std::exception&) {
      throw argument_error("--dependency-window-us expects a number >= 0, found '" + *window + "'",
                           "write e.g. --dependency-window-us 5");
    }
  }
  const auto registries = ModelRegistries::with_builtins();
  if (const auto engine = args.option("--engine")) {
    check_engine_name(registries, *engine);
    options.engine = *engine;
  }
  const ReplayReport report = run_replay(options, registries);
  print_replay_summary(std::cout, report);
  return kExitOk;
}

}  // namespace chopsim::cli
