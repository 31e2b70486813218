#include <iostream>

#include "chopsim/report/report.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_report(const std::vector<std::string>& raw) {
  const Arguments args(raw, {"-o", "--out"}, {});
  if (args.positional().size() != 1)
    throw argument_error("report takes exactly one PATH (a run's --out folder)",
                         "write chopsim report out/ -o report.html");
  const std::filesystem::path run_dir = args.positional()[0];
  const std::filesystem::path html =
      args.option("-o").value_or(args.option("--out").value_or((run_dir / "report.html").string()));
  write_report(run_dir, html);
  std::cout << "wrote " << html.string() << "\n";
  return kExitOk;
}

}  // namespace chopsim::cli
