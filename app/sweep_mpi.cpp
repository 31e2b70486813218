// `chopsim sweep SWEEP --mpi` under mpirun (issue 17: a sweep beyond one machine with an existing distributed
// engine). Every MPI rank runs the points whose index % size == rank (the shards a job array would run, each with
// its own --jobs threads) into SWEEP's --out folder + ".mpi-shards/rank-R"; when every rank has finished, rank 0
// merges the shards into the --out folder (merge_sweep: the same store and results.csv as one process would write)
// and removes them. A rank that fails says why on stderr and every rank exits with an error: no merged output.
// Interrupted runs resume: the shards' stores stay until a merge succeeds.

#include "sweep_mpi.hpp"

#include <filesystem>
#include <iostream>
#include <string>

#include "cli.hpp"

#ifdef CHOPSIM_WITH_MPI
#include <mpi.h>
#endif

namespace chopsim::cli {

#ifdef CHOPSIM_WITH_MPI

MpiSession::MpiSession(const char* command) : command_(command) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
    throw argument_error("MPI_Init failed", std::string("start ") + command + " --mpi under mpirun (or srun)");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

std::optional<SweepResult> run_sweep_mpi(const SweepSpec& spec, const ConfigSearchPath& search,
                                         const ModelRegistries& registries, SweepOptions options,
                                         const MpiSession& mpi) {
  const std::filesystem::path out_dir = options.out_dir;
  const std::filesystem::path shards_root = out_dir.string() + ".mpi-shards";
  const auto shard_dir = [&](int rank) { return shards_root / ("rank-" + std::to_string(rank)); };
  options.shard_index = mpi.rank();
  options.shard_count = mpi.size();
  options.out_dir = shard_dir(mpi.rank());
  if (mpi.rank() != 0) options.on_point = nullptr;  // rank 0 shows its own progress; the others stay quiet

  int ok = 1;
  try {
    std::filesystem::create_directories(shards_root);
    (void)run_sweep(spec, search, registries, options);
  } catch (const std::exception& error) {
    ok = 0;
    std::cerr << mpi.command() << " --mpi: rank " << mpi.rank() << " of " << mpi.size() << ": " << error.what() << "\n";
  }
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok)
    throw argument_error(
        "a rank of the MPI sweep failed (its message is above); nothing was merged",
        "fix the cause and run the same command again: the finished points are kept in " + shards_root.string());

  int merged = 1;
  std::optional<SweepResult> result;
  std::string why;
  if (mpi.rank() == 0) {
    try {
      std::vector<std::filesystem::path> shards;
      for (int rank = 0; rank < mpi.size(); ++rank) shards.push_back(shard_dir(rank));
      result = merge_sweep(spec, shards, out_dir, search, registries);
      std::filesystem::remove_all(shards_root);
    } catch (const std::exception& error) {
      merged = 0;
      why = error.what();
    }
  }
  MPI_Bcast(&merged, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!merged)
    throw argument_error("merging the ranks' shards failed" + (why.empty() ? std::string() : ": " + why),
                         "the shards are kept in " + shards_root.string() + "; run chopsim sweep merge on them");
  return result;
}

#else

MpiSession::MpiSession(const char* command) : command_(command) {
  throw argument_error(std::string("this chopsim was built without MPI (") + command + " --mpi)",
                       "install libopenmpi-dev and rebuild (CMake finds MPI), or run a sweep's shards as a job array "
                       "with --shard I/N and join them with chopsim sweep merge");
}

MpiSession::~MpiSession() = default;

std::optional<SweepResult> run_sweep_mpi(const SweepSpec&, const ConfigSearchPath&, const ModelRegistries&,
                                         SweepOptions, const MpiSession&) {
  return std::nullopt;  // unreachable: no MpiSession can be made without MPI
}

#endif

}  // namespace chopsim::cli
