#pragma once
// What the workload tests ask of a generated workload: a run set up in small, and its ops counted, summed and
// visited by name, kernel class and pass.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"

namespace chopsim::test {

/// Whether `name` is one of a Mamba-2 mixer's scan kernels (GEMM-class kernels that are not the model's matmuls).
inline bool is_mamba_scan(std::string_view name) {
  return name.starts_with("mamba_") && !name.starts_with("mamba_in_proj") && !name.starts_with("mamba_out_proj");
}

struct RunSetup {
  std::string label;
  TransformerSpec model = tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

/// gtest names a parameterised test's case by its label.
inline void PrintTo(const RunSetup& s, std::ostream* out) { *out << s.label; }

inline RunSetup setup(std::string label, int dp, int tp = 1, int pp = 1, int micro_batches = 2) {
  RunSetup s;
  s.label = std::move(label);
  s.parallelism.dp = dp;
  s.parallelism.tp = tp;
  s.parallelism.pp = pp;
  s.training.micro_batch = 1;
  s.training.seq_len = 256;
  s.training.global_batch = dp * micro_batches;
  s.training.dp_bucket_bytes = 256.0 * 1024;  // several buckets for the tiny model
  return s;
}

inline void for_each_op(const Workload& workload,
                        const std::function<void(int rank, const Program&, std::size_t stream, const Op&)>& visit) {
  for (int rank = 0; rank < workload.layout.world_size(); ++rank) {
    const Program& program = workload.program(rank);
    for (std::size_t s = 0; s < program.streams.size(); ++s)
      for (const Op& op : program.streams[s].ops) visit(rank, program, s, op);
  }
}

/// FLOPs of the compute ops of `kernel_class` (of `pass`); GEMMs without a Mamba-2 mixer's scan kernels unless
/// `with_scans`.
inline double summed_flops(const Workload& workload, KernelClass kernel_class, std::optional<Pass> pass = std::nullopt,
                           bool with_scans = false) {
  double total = 0.0;
  for_each_op(workload, [&](int, const Program&, std::size_t, const Op& op) {
    if (op.kind == OpKind::compute && op.kernel_class == kernel_class && (!pass || op.pass == *pass) &&
        (with_scans || !is_mamba_scan(workload.name(op))))
      total += op.flops;
  });
  return total;
}

/// Sum of `bytes` of ops called `name` in the program of `rank`.
inline double bytes_of(const Workload& workload, int rank, std::string_view name) {
  double total = 0.0;
  const Program& program = workload.program(rank);
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name) total += op.bytes;
  return total;
}

inline int count_of(const Workload& workload, int rank, std::string_view name,
                    std::optional<Pass> pass = std::nullopt) {
  int count = 0;
  const Program& program = workload.program(rank);
  for (const Stream& stream : program.streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name && (!pass || op.pass == *pass)) ++count;
  return count;
}

}  // namespace chopsim::test
