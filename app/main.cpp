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

// One entry per command; a new command adds its command_*.cpp and a line here.
constexpr std::array kCommands = {
    Command{"run", chopsim::cli::kRunUsage, chopsim::cli::command_run},
    Command{"sweep", chopsim::cli::kSweepUsage, chopsim::cli::command_sweep},
    Command{"study", chopsim::cli::kStudyUsage, chopsim::cli::command_study},
    Command{"report", chopsim::cli::kReportUsage, chopsim::cli::command_report},
    Command{"import", chopsim::cli::kImportUsage, chopsim::cli::command_import},
    Command{"validate", chopsim::cli::kValidateUsage, chopsim::cli::command_validate},
    Command{"describe", chopsim::cli::kDescribeUsage, chopsim::cli::command_describe},
    Command{"ingest", chopsim::cli::kIngestUsage, chopsim::cli::command_ingest},
    Command{"calibrate", chopsim::cli::kCalibrateUsage, chopsim::cli::command_calibrate},
    Command{"replay", chopsim::cli::kReplayUsage, chopsim::cli::command_replay},
};

void print_usage(std::ostream& out) {
  out << "usage: chopsim <command> [options]\n\ncommands:\n";
  for (const auto& command : kCommands) out << command.usage;
  out << "  help, --help\n      Show this text.\n  --version\n      Print the version.\n\n"
         "exit codes: 0 ok, 1 failure, 2 bad input, 3 out of memory\n";
}

}  // namespace

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
    std::cout << "chopsim " << chopsim::kChopsimVersion << "\n";
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
