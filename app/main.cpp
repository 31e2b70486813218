// The chopsim command line. The only place that turns errors into exit codes:
//   0 success, 1 internal or engine error, 2 bad input (config, data, arguments), 3 run does not fit in memory.

#include <algorithm>
#include <array>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/temporary_files.hpp"
#include "chopsim/common/version.hpp"
#include "cli.hpp"

namespace {

using chopsim::cli::Command;
using chopsim::cli::Value;
namespace cli = chopsim::cli;

// One entry per command; a new command adds its command_*.cpp, its option table (cli.hpp) and a line here.
constexpr std::array kCommands = {
    Command{"run", cli::kRunUsage, cli::kRunOptions, Value::run_config, "", cli::command_run},
    Command{"sweep", cli::kSweepUsage, cli::kSweepOptions, Value::file, "merge", cli::command_sweep},
    Command{"study", cli::kStudyUsage, cli::kStudyOptions, Value::file, "", cli::command_study},
    Command{"report", cli::kReportUsage, cli::kReportOptions, Value::file, "", cli::command_report},
    Command{"import", cli::kImportUsage, cli::kImportOptions, Value::file, "", cli::command_import},
    Command{"validate", cli::kValidateUsage, cli::kValidateOptions, Value::none, "", cli::command_validate},
    Command{"describe", cli::kDescribeUsage, {}, Value::none, "", cli::command_describe},
    Command{"ingest", cli::kIngestUsage, cli::kIngestOptions, Value::file, "", cli::command_ingest},
    Command{"calibrate", cli::kCalibrateUsage, cli::kCalibrateOptions, Value::file, "", cli::command_calibrate},
    Command{"replay", cli::kReplayUsage, cli::kReplayOptions, Value::file, "", cli::command_replay},
    Command{"completion", cli::kCompletionUsage, {}, Value::none, "bash zsh", cli::command_completion},
};

void print_usage(std::ostream& out) {
  out << "usage: chopsim <command> [options]\n\ncommands:\n";
  for (const auto& command : kCommands) out << command.usage;
  out << "  help, --help\n      Show this text.\n  --version\n      Print the version.\n\n"
         "exit codes: 0 ok, 1 failure, 2 bad input, 3 out of memory\n";
}

}  // namespace

std::span<const Command> chopsim::cli::commands() { return kCommands; }

int main(int argc, char** argv) {
  // Ctrl-C or a kill during a run removes the outputs' temporary files, then ends the process as the signal would.
  chopsim::temporary_files::remove_on_interrupt();
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return chopsim::cli::kExitBadInput;
  }
  const std::string& name = args[0];
  if (name == "help" || name == "--help" || name == "-h") {
    print_usage(std::cout);
    return chopsim::cli::kExitOk;
  }
  if (name == "--version") {
    std::cout << "chopsim " << chopsim::kChopsimVersion << " (build " << chopsim::build_id() << ")\n";
    return chopsim::cli::kExitOk;
  }
  try {
    for (const auto& command : kCommands) {
      if (command.name != name) continue;
      // `chopsim run --help`: the command's own usage, whatever else is given.
      if (std::any_of(args.begin() + 1, args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
        const std::string_view usage = command.usage;
        std::cout << "usage: chopsim " << usage.substr(usage.find_first_not_of(' '));
        return chopsim::cli::kExitOk;
      }
      return command.run({args.begin() + 1, args.end()});
    }
    throw chopsim::cli::argument_error("unknown command '" + name + "'", "run chopsim --help for the list of commands");
  } catch (const chopsim::InputError& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return chopsim::cli::kExitBadInput;
  } catch (const chopsim::UnknownNameError& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return chopsim::cli::kExitBadInput;
  } catch (const std::exception& error) {
    std::cerr << "chopsim: error: " << error.what() << "\n";
    return chopsim::cli::kExitFailure;
  }
}
