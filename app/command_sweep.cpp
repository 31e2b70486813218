#include <algorithm>
#include <iostream>
#include <thread>
#include <tuple>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/sweep.hpp"
#include "chopsim/report/report.hpp"
#include "cli.hpp"
#include "progress.hpp"
#include "sweep_mpi.hpp"

namespace chopsim::cli {

namespace {

/// "I/N" of --shard.
std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  int index = -1, count = 0;
  try {
    if (slash != std::string::npos) {
      std::size_t used = 0;
      index = std::stoi(text.substr(0, slash), &used);
      if (used != slash) index = -1;
      count = std::stoi(text.substr(slash + 1), &used);
      if (used != text.size() - slash - 1) count = 0;
    }
  } catch (const std::exception&) {
    index = -1;
  }
  if (index < 0 || count < 1 || index >= count)
    throw argument_error("--shard '" + text + "' is not I/N with 0 <= I < N",
                         "write e.g. --shard 0/4 (Slurm: --shard ${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT})");
  return {index, count};
}

/// --objective NAME over the sweep file's objective, checked against what the sweep gives before anything runs.
void apply_objective(const Arguments& args, SweepSpec& spec) {
  if (const auto name = args.option("--objective")) choose_objective(spec, *name, {"command line (--objective)"});
  check_objective_inputs(spec);
}

/// `chopsim sweep merge SWEEP --out DIR [--configs DIR] SHARD_DIR...`
int merge(const std::vector<std::string>& raw) {
  const Arguments args(raw, kSweepMergeOptions);
  if (args.positional().size() < 2)
    throw argument_error("sweep merge takes the SWEEP file and the shards' --out folders",
                         "write chopsim sweep merge SWEEP.yaml --out DIR shard-0 shard-1 ...");
  SweepSpec spec = load_sweep(args.positional()[0]);
  apply_objective(args, spec);
  const auto out = args.option("--out").value_or(args.option("-o").value_or(""));
  if (out.empty()) throw argument_error("sweep merge needs --out DIR", "name the folder of the merged results");
  const std::vector<std::filesystem::path> shards(args.positional().begin() + 1, args.positional().end());
  // The shards' --configs: a point's key hashes the files its config read, so the merge must read the same ones.
  const SweepResult result =
      merge_sweep(spec, shards, out, default_search_path(spec.base, configs_option(args).value_or("")),
                  ModelRegistries::with_builtins());
  print_sweep_summary(std::cout, spec, result);
  return kExitOk;
}

}  // namespace

int command_sweep(const std::vector<std::string>& raw) {
  if (!raw.empty() && raw.front() == "merge") return merge({raw.begin() + 1, raw.end()});
  const Arguments args(raw, kSweepOptions);
  if (args.positional().size() != 1)
    throw argument_error("sweep takes exactly one SWEEP file", "write chopsim sweep configs/sweeps/NAME.yaml");
  const std::filesystem::path file = args.positional()[0];
  const int default_jobs = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const int jobs = args.positive_int("--jobs").value_or(args.positive_int("-j").value_or(default_jobs));
  SweepSpec spec = load_sweep(file);
  apply_objective(args, spec);
  const auto registries = ModelRegistries::with_builtins();
  const ConfigSearchPath search = default_search_path(spec.base, configs_option(args).value_or(""));

  SweepOptions options;
  options.out_dir = args.option("--out").value_or(args.option("-o").value_or("sweep-" + file.stem().string()));
  options.jobs = jobs;
  if (const auto shard = args.option("--shard"))
    std::tie(options.shard_index, options.shard_count) = parse_shard(*shard);
  const bool mpi = args.has_switch("--mpi");
  if (mpi && args.option("--shard"))
    throw argument_error("--mpi and --shard both split the points", "use one: --mpi under mpirun, or --shard I/N");
  // A bar (terminal) or periodic lines; a failed point is named with its reason either way.
  Progress progress("chopsim sweep", "points", args.has_switch("--quiet"));
  options.on_point = [&](const PointResult& r, std::size_t done, std::size_t total) {
    std::string note;
    if (r.status == PointStatus::failed) {
      std::string values;
      for (const auto& [key, value] : r.point.values) values += (values.empty() ? "" : " ") + key + "=" + value;
      note = "point " + std::to_string(r.point.index) + " " + values + " failed" +
             (r.reason.empty() ? "" : " (" + r.reason + ")");
      if (!args.has_switch("--quiet")) std::cerr << "\nchopsim sweep: " << note << "\n";
    }
    progress.update(done, total, note);
  };
  if (mpi) {
    const MpiSession session("chopsim sweep");
    const std::optional<SweepResult> merged = run_sweep_mpi(spec, search, registries, options, session);
    if (!merged) return kExitOk;  // the other ranks: rank 0 prints and writes the report
    std::cout << "merged the MPI ranks' shards into " << options.out_dir.string() << "\n";
    print_sweep_summary(std::cout, spec, *merged);
  } else {
    if (!args.has_switch("--quiet"))
      std::cerr << "chopsim sweep: " << expand_sweep(spec).size() << " points of " << spec.base.string() << " with "
                << jobs << " jobs into " << options.out_dir.string() << "\n";
    const SweepResult result = run_sweep(spec, search, registries, options);
    print_sweep_summary(std::cout, spec, result);
  }
  if (args.has_switch("--report")) {
    write_report(options.out_dir, options.out_dir / "report.html");
    std::cout << "wrote " << (options.out_dir / "report.html").string() << "\n";
  }
  return kExitOk;
}

}  // namespace chopsim::cli
