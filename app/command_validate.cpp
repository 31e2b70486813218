#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/validation.hpp"
#include "cli.hpp"
#include "progress.hpp"

namespace chopsim::cli {

int command_validate(const std::vector<std::string>& raw) {
  const Arguments args(raw, kValidateOptions);
  if (!args.positional().empty()) throw argument_error("validate takes no positional arguments", "see chopsim --help");
  const std::filesystem::path data_dir = args.option("--data").value_or("../shared/data");
  const std::filesystem::path configs_dir = configs_option(args).value_or("configs");
  if (args.option("--cases") && !args.option("--out") && !args.option("-o"))
    throw argument_error(
        "--cases writes a table of some cases only, and the default --out is the full table "
        "docs/validation.md",
        "add --out FILE, e.g. --out /tmp/validation.md");
  const std::filesystem::path out = args.option("--out").value_or(args.option("-o").value_or("docs/validation.md"));
  check_output_file(out, args.option("--out") ? "--out" : "-o");
  // The data beside the page (docs/validation.csv): what `chopsim report` draws.
  std::filesystem::path csv = out;
  csv.replace_extension(".csv");
  if (csv == out) csv += ".csv";
  check_output_file(csv, args.option("--out") ? "--out" : "-o");
  // Every argument is checked before any data is read.
  const int default_jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int jobs = args.positive_int("--jobs").value_or(args.positive_int("-j").value_or(default_jobs));
  const std::filesystem::path summaries_dir = args.option("--summaries").value_or("");
  if (!summaries_dir.empty() && std::filesystem::exists(summaries_dir) && !std::filesystem::is_directory(summaries_dir))
    throw argument_error("--summaries " + summaries_dir.string() + " is a file",
                         "pass a folder (it is created when missing)");
  if (!std::filesystem::is_directory(data_dir / "validation"))
    throw argument_error("no measured data at " + (data_dir / "validation").string(),
                         "pass --data with the path of the shared data folder (../shared/data from the project root)");
  const auto registries = ModelRegistries::with_builtins();
  const std::filesystem::path profiles_dir =
      args.option("--profiles").value_or((configs_dir.parent_path() / "calibration" / "profiles").string());
  auto cases = select_validation_cases(load_validation_cases(data_dir, configs_dir, registries, profiles_dir),
                                       args.option("--cases").value_or(""));
  if (cases.empty() && args.option("--cases"))
    throw argument_error("--cases " + args.option("--cases").value_or("") + " matches no validation case",
                         "give part of a case id or group as docs/validation.md lists them (e.g. dgx-b200, "
                         "llm_foundry)");
  if (!summaries_dir.empty()) std::filesystem::create_directories(summaries_dir);
  if (const auto engine = args.option("--engine")) {
    check_engine_name(registries, *engine);
    for (auto& c : cases)
      for (RunSpec* run : {&c.run, &c.baseline, &c.calibrated_run, &c.calibrated_baseline}) run->engine = *engine;
  }
  if (!args.has_switch("--quiet"))
    std::cerr << "chopsim validate: predicting " << cases.size() << " cases with " << jobs << " jobs\n";
  Progress progress("chopsim validate", "simulations", args.has_switch("--quiet"));
  const auto results = run_validation(
      cases, registries, jobs, [&](std::size_t done, std::size_t total) { progress.update(done, total); },
      summaries_dir);
  std::ostringstream page;
  write_validation_markdown(page, results);
  std::ostringstream table;
  write_validation_csv(table, results);
  write_file_atomically(out, page.str());
  write_file_atomically(csv, table.str());
  int failed = 0, calibrated = 0, calibrated_failed = 0;
  for (const auto& result : results) {
    failed += result.uncalibrated.ok ? 0 : 1;
    if (!result.has_profile()) continue;
    ++calibrated;
    calibrated_failed += result.calibrated.ok ? 0 : 1;
  }
  std::cout << "wrote " << out.string() << " and " << csv.string() << " (" << results.size() << " cases, " << failed
            << " not predicted; " << calibrated << " also with a calibration profile, " << calibrated_failed
            << " not predicted)\n";
  return kExitOk;
}

}  // namespace chopsim::cli
