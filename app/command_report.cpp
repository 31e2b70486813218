#include <filesystem>
#include <iostream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/report/report.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_report(const std::vector<std::string>& raw) {
  const Arguments args(raw, kReportOptions);
  if (args.positional().size() != 1)
    throw argument_error("report takes exactly one PATH (a run's, sweep's or study's --out folder, or validation.csv)",
                         "write chopsim report out/ -o report.html");
  const std::filesystem::path path = args.positional()[0];
  // A folder gets PATH/report.html; a file (validation.csv) the page beside it (validation.html).
  std::error_code error;
  const std::filesystem::path fallback = std::filesystem::is_regular_file(path, error)
                                             ? std::filesystem::path(path).replace_extension(".html")
                                             : path / "report.html";
  const std::filesystem::path html = args.option("-o").value_or(args.option("--out").value_or(fallback.string()));
  check_output_file(html, args.option("-o") ? "-o" : "--out", {path});
  write_report(path, html);
  std::cout << "wrote " << html.string() << "\n";
  return kExitOk;
}

}  // namespace chopsim::cli
