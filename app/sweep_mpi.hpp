// `chopsim sweep --mpi` and `chopsim study --mpi`: a sweep's points spread over the ranks of an MPI job
// (app/sweep_mpi.cpp).
#pragma once

#include <optional>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/sweep.hpp"

namespace chopsim::cli {

/// This process's part of the MPI job that started it (mpirun -n N chopsim ... --mpi): MPI_Init on construction,
/// MPI_Finalize on destruction (also when a rank throws). One per process: a study's candidates share it. Throws when
/// chopsim was built without MPI.
class MpiSession {
 public:
  explicit MpiSession(const char* command);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] const char* command() const { return command_; }

 private:
  const char* command_;
  int rank_ = 0;
  int size_ = 1;
};

/// Runs the sweep as one rank of `mpi`: each rank its shard, then rank 0 merges them into options.out_dir. Returns
/// the merged result on rank 0, nothing on the other ranks. Throws on every rank when any rank failed (nothing
/// merged).
[[nodiscard]] std::optional<SweepResult> run_sweep_mpi(const SweepSpec& spec, const ConfigSearchPath& search,
                                                       const ModelRegistries& registries, SweepOptions options,
                                                       const MpiSession& mpi);

}  // namespace chopsim::cli
