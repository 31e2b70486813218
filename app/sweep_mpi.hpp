// `chopsim sweep --mpi`: a sweep's points spread over the ranks of an MPI job (app/sweep_mpi.cpp).
#pragma once

#include <optional>

#include "chopsim/experiments/config.hpp"
#include "chopsim/experiments/registries.hpp"
#include "chopsim/experiments/sweep.hpp"

namespace chopsim::cli {

/// Runs the sweep as one rank of the MPI job that started this process (mpirun -n N chopsim sweep ... --mpi): each
/// rank its shard, then rank 0 merges them into options.out_dir. Returns the merged result on rank 0, nothing on the
/// other ranks. Throws on every rank when any rank failed (nothing merged), or when chopsim was built without MPI.
[[nodiscard]] std::optional<SweepResult> run_sweep_mpi(const SweepSpec& spec, const ConfigSearchPath& search,
                                                       const ModelRegistries& registries, SweepOptions options);

}  // namespace chopsim::cli
