#pragma once
// Peak memory per GPU: weights, gradients, optimizer states by sharding stage, activations by
// recomputation policy and in-flight micro-batches, plus a stated allowance.

#include <string>
#include <vector>

#include "chopsim/models/hardware.hpp"
#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"

namespace chopsim {

/// Bytes on one GPU at its peak.
struct MemoryBreakdown {
  int pp_stage = 0;            ///< the stage this breakdown is for
  double weights_bytes = 0.0;  ///< resident (sharded) weights, compute precision
  /// Compute-precision weight copies in flight: FSDP's unsharded units (current + prefetched); eager PyTorch's
  /// autocast casts of the fp32 weights, kept from the forward until their backward.
  double gathered_weights_bytes = 0.0;
  double gradients_bytes = 0.0;
  double optimizer_bytes = 0.0;    ///< fp32 master weights + Adam moments
  double activations_bytes = 0.0;  ///< stored for backward, all in-flight micro-batches
  double transient_bytes = 0.0;    ///< largest temporary buffer (logits, attention workspace)
  /// GEMM library workspaces from the framework's allocator: PyTorch's cuBLAS workspaces, Transformer Engine's.
  double workspace_bytes = 0.0;
  double reserved_bytes = 0.0;       ///< runtime context and communicator buffers (hardware file)
  double fragmentation_bytes = 0.0;  ///< allocator allowance (hardware file fraction of the rest)
  double total_bytes = 0.0;
  double capacity_bytes = 0.0;

  [[nodiscard]] bool fits() const { return total_bytes <= capacity_bytes; }
  /// What the framework's allocator hands out at the peak (torch.cuda.max_memory_allocated): the total without the
  /// runtime's reserve and the allocator's fragmentation allowance.
  [[nodiscard]] double allocated_bytes() const { return total_bytes - reserved_bytes - fragmentation_bytes; }
};

/// Peak memory of a GPU in pipeline stage `pp_stage`.
[[nodiscard]] MemoryBreakdown estimate_stage_memory(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                                    const TrainingSpec& training, const HardwareSpec& hardware,
                                                    int pp_stage);

/// Every pipeline stage's peak, stage 0 first.
[[nodiscard]] std::vector<MemoryBreakdown> estimate_memory_by_stage(const TransformerSpec& model,
                                                                    const ParallelismSpec& parallelism,
                                                                    const TrainingSpec& training,
                                                                    const HardwareSpec& hardware);

/// The stage of `stages` (non-empty) with the largest peak; the earlier one on a tie.
[[nodiscard]] MemoryBreakdown peak_stage_memory(const std::vector<MemoryBreakdown>& stages);

/// The stage with the largest peak (the one that runs out of memory first).
[[nodiscard]] MemoryBreakdown estimate_peak_memory(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                                   const TrainingSpec& training, const HardwareSpec& hardware);

}  // namespace chopsim
