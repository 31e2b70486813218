#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/study.hpp"
#include "chopsim/report/report.hpp"
#include "cli.hpp"
#include "progress.hpp"
#include "sweep_mpi.hpp"

namespace chopsim::cli {

int command_study(const std::vector<std::string>& raw) {
  const Arguments args(raw, kStudyOptions);
  if (args.positional().size() != 1)
    throw argument_error("study takes exactly one STUDY file", "write chopsim study configs/studies/NAME.yaml");
  const std::filesystem::path file = args.positional()[0];
  const int default_jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int jobs = args.positive_int("--jobs").value_or(args.positive_int("-j").value_or(default_jobs));
  const StudySpec spec = load_study(file);
  const auto registries = ModelRegistries::with_builtins();
  const ConfigSearchPath search = default_search_path(spec.sweep.base, configs_option(args).value_or(""));

  StudyOptions options;
  options.out_dir = args.option("--out").value_or(args.option("-o").value_or("study-" + file.stem().string()));
  options.jobs = jobs;
  Progress progress("chopsim study", "points", args.has_switch("--quiet"));
  options.on_point = [&](const std::string& candidate, const PointResult&, std::size_t done, std::size_t total) {
    progress.update(done, total, "candidate " + candidate);
  };
  // --mpi (under mpirun or srun): every candidate's sweep is spread over the ranks (each its share of the points,
  // rank 0 merges them, as chopsim sweep --mpi does), and rank 0 prices the candidates.
  std::optional<MpiSession> session;
  if (args.has_switch("--mpi")) {
    session.emplace("chopsim study");
    options.run_candidate_sweep = [&](const SweepSpec& sweep, const SweepOptions& sweep_options) {
      return run_sweep_mpi(sweep, search, registries, sweep_options, *session);
    };
  }
  if (!args.has_switch("--quiet") && (!session || session->rank() == 0))
    std::cerr << "chopsim study: " << spec.candidates.size() << " candidates x " << expand_sweep(spec.sweep).size()
              << " points with " << jobs << " jobs"
              << (session ? " on each of " + std::to_string(session->size()) + " MPI ranks" : std::string()) << " into "
              << options.out_dir.string() << "\n";
  const StudyResult result = run_study(spec, search, registries, options);
  if (!result.priced) return kExitOk;  // an MPI rank other than 0: rank 0 merges, prices and prints
  print_study_summary(std::cout, spec, result);
  if (args.has_switch("--report")) {
    write_report(options.out_dir, options.out_dir / "report.html");
    std::cout << "wrote " << (options.out_dir / "report.html").string() << "\n";
  }
  return kExitOk;
}

}  // namespace chopsim::cli
