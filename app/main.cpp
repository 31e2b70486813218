// The chopsim command line. The only place that turns errors into exit codes:
//   0 success, 1 internal or engine error, 2 bad input (config, arguments), 3 run does not fit in memory.

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/experiments/config.hpp"
#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitOutOfMemory = 3;

constexpr std::string_view kUsage = R"(usage: chopsim <command> [options]

commands:
  run CONFIG [--out DIR] [--iterations N] [--configs DIR] [--simulate-oom]
      Predict one training iteration of the run described by CONFIG (YAML, see docs/configs.md).
      --out DIR        also write DIR/summary.json, DIR/timeline.json (Perfetto) and DIR/ops.h5
      --iterations N   simulate N iterations back to back (overrides the config)
      --configs DIR    look up hardware/, models/ and clusters/ by name under DIR
      --simulate-oom   simulate even when the run does not fit in GPU memory
  validate [--data DIR] [--configs DIR] [--out FILE] [--jobs N]
      Predict every measured case in DIR/validation (default ../shared/data) and write the
      predicted-vs-measured table to FILE (default docs/validation.md).
  describe
      List the registered models, topologies and engines.
  help, --help       Show this text.
  --version          Print the version.

exit codes: 0 ok, 1 failure, 2 bad input, 3 out of memory
)";

struct Arguments {
  std::vector<std::string> positional;
  std::optional<std::string> out_dir;
  std::optional<int> iterations;
  std::optional<std::string> configs_dir;
  std::optional<std::string> data_dir;
  std::optional<int> jobs;
  bool simulate_oom = false;
};

chopsim::InputError argument_error(const std::string& problem, const std::string& fix) {
  return chopsim::InputError(chopsim::SourceLocation{"command line", 0, 0}, "", problem, fix);
}

int positive_integer(const std::string& flag, const std::string& value) {
  try {
    std::size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw argument_error(flag + " expects a positive integer, found '" + value + "'", "write e.g. " + flag + " 2");
}

Arguments parse_arguments(const std::vector<std::string>& args) {
  Arguments parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto next_value = [&](std::string_view flag) -> std::string {
      if (i + 1 >= args.size()) throw argument_error(std::string(flag) + " needs a value", "write " + std::string(flag) + " VALUE");
      return args[++i];
    };
    if (arg == "--out" || arg == "-o") {
      parsed.out_dir = next_value(arg);
    } else if (arg == "--iterations") {
      parsed.iterations = positive_integer(arg, next_value(arg));
    } else if (arg == "--jobs" || arg == "-j") {
      parsed.jobs = positive_integer(arg, next_value(arg));
    } else if (arg == "--data") {
      parsed.data_dir = next_value(arg);
    } else if (arg == "--configs") {
      parsed.configs_dir = next_value(arg);
    } else if (arg == "--simulate-oom") {
      parsed.simulate_oom = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw argument_error("unknown option '" + arg + "'", "see chopsim --help");
    } else {
      parsed.positional.push_back(arg);
    }
  }
  return parsed;
}

int command_run(const Arguments& args) {
  if (args.positional.size() != 1)
    throw argument_error("run takes exactly one CONFIG file", "write chopsim run configs/llama3-8b-fsdp.yaml");
  const std::filesystem::path config = args.positional[0];
  const auto registries = chopsim::ModelRegistries::with_builtins();
  chopsim::ConfigSearchPath search = chopsim::default_search_path(config);
  if (args.configs_dir) search.roots.insert(search.roots.begin(), *args.configs_dir);
  chopsim::RunSpec run = chopsim::load_run_config(config, search, registries);
  if (args.iterations) run.iterations = *args.iterations;

  chopsim::RunOptions options;
  if (args.out_dir) options.output_dir = *args.out_dir;
  options.simulate_when_out_of_memory = args.simulate_oom;
  const auto report = chopsim::run_simulation(run, registries, options);
  chopsim::print_run_summary(std::cout, run, report);
  return report.out_of_memory ? kExitOutOfMemory : kExitOk;
}

int command_validate(const Arguments& args) {
  if (!args.positional.empty()) throw argument_error("validate takes no positional arguments", "see chopsim --help");
  const std::filesystem::path data_dir = args.data_dir.value_or("../shared/data");
  const std::filesystem::path configs_dir = args.configs_dir.value_or("configs");
  const std::filesystem::path out = args.out_dir.value_or("docs/validation.md");
  if (!std::filesystem::is_directory(data_dir / "validation"))
    throw argument_error("no measured data at " + (data_dir / "validation").string(),
                         "pass --data with the path of the shared data folder (../shared/data from the project root)");
  const auto registries = chopsim::ModelRegistries::with_builtins();
  const auto cases = chopsim::load_validation_cases(data_dir, configs_dir, registries);
  const int jobs = args.jobs.value_or(static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
  std::cerr << "chopsim validate: predicting " << cases.size() << " cases with " << jobs << " jobs\n";
  const auto results = chopsim::run_validation(cases, registries, jobs);
  std::ostringstream page;
  chopsim::write_validation_markdown(page, results);
  chopsim::write_file_atomically(out, page.str());
  int failed = 0;
  for (const auto& result : results) failed += result.ok ? 0 : 1;
  std::cout << "wrote " << out.string() << " (" << results.size() << " cases, " << failed << " not predicted)\n";
  return kExitOk;
}

int command_describe() {
  const auto registries = chopsim::ModelRegistries::with_builtins();
  auto list = [](const auto& registry) {
    std::cout << registry.kind() << "s:\n";
    for (const auto& [name, entry] : registry.entries()) std::cout << "  " << name << "  " << entry.description << "\n";
  };
  list(registries.compute);
  list(registries.collective);
  list(registries.node_topology);
  list(registries.fabric_topology);
  list(registries.engine);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitBadInput;
  }
  const std::string& command = args[0];
  try {
    if (command == "help" || command == "--help" || command == "-h") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (command == "--version") {
      std::cout << "chopsim 0.1.0\n";
      return kExitOk;
    }
    const Arguments parsed = parse_arguments({args.begin() + 1, args.end()});
    if (command == "run") return command_run(parsed);
    if (command == "validate") return command_validate(parsed);
    if (command == "describe") return command_describe();
    throw argument_error("unknown command '" + command + "'", "use one of: run, validate, describe, help");
  } catch (const chopsim::InputError& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const chopsim::UnknownNameError& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return kExitFailure;
  }
}
