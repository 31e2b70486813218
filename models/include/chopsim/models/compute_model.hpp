#pragma once
// How long a kernel takes on one GPU. The engine owns time and asks "duration of this kernel at this clock".

#include <memory>
#include <string_view>

#include "chopsim/common/registry.hpp"
#include "chopsim/models/hardware.hpp"

namespace chopsim {

/// The work of one kernel: what the compute model needs to know about it.
struct KernelWork {
  KernelClass kernel_class = KernelClass::other;
  Precision precision = Precision::bf16;
  double flops = 0.0;  ///< floating-point operations
  double bytes = 0.0;  ///< HBM bytes read plus written
  /// A GEMM whose result has a feature dimension (a weight matrix's rows or columns) that is not a multiple of
  /// 16 bytes of elements, such as an output head over GPT-2's unpadded 50,257-token vocabulary: the libraries'
  /// aligned tensor-core kernels cannot take it (ComputeParams::unaligned_gemm_slowdown).
  bool unaligned = false;
  /// An attention backward that must be deterministic (training.deterministic): it takes
  /// ComputeParams::deterministic_attention.backward_slowdown times as long.
  bool deterministic = false;
  /// An attention kernel that applies dropout to the probabilities (the model's dropout, inside the fused kernel): it
  /// takes ComputeParams::attention_dropout_slowdown times as long.
  bool dropout = false;
  /// A copy from host memory over PCIe (the copy engine, not the SMs): bytes / host_to_device_bytes_per_s, whatever
  /// the clock or the kernel class.
  bool host_to_device = false;
  /// Independent, equal GEMMs that one grouped kernel runs (a mixture of experts' local experts, Transformer
  /// Engine's GroupedLinear): each is only as efficient as a GEMM of flops / problems, whose size is what the
  /// efficiency's half_efficiency_flops term sees. 1 for a plain kernel.
  double problems = 1.0;
  /// One of PyTorch's own elementwise kernels and its code path: its bytes move at
  /// ComputeParams::elementwise_path_memory of that path where the GPU has the figure. `fused` for every other kernel.
  ElementwisePath elementwise_path = ElementwisePath::fused;
};

/// A kernel's duration split into the parts the loss breakdown reports.
struct KernelTiming {
  double duration_s = 0.0;  ///< what the kernel takes: max(compute, memory) + launch overhead
  double ideal_s = 0.0;     ///< at peak roofline (eta = 1) and the max (boost) clock, no launch overhead
  double launch_s = 0.0;    ///< launch overhead included in duration_s
  bool memory_bound = false;
  /// FLOPs / (duration_s * peak FLOP/s at this clock): the share of the arithmetic units' peak the kernel
  /// sustains over its whole duration (the power model's activity).
  double compute_utilization = 0.0;
  double memory_utilization = 0.0;  ///< bytes / (duration_s * HBM bandwidth)
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  /// Timing of `work` with the core clock at `clock_hz` (HBM bandwidth does not scale with the core clock).
  [[nodiscard]] virtual KernelTiming timing(const KernelWork& work, double clock_hz) const = 0;
  [[nodiscard]] virtual const ComputeParams& params() const = 0;
  /// Shorthand: timing(work, clock_hz).duration_s.
  [[nodiscard]] double duration_s(const KernelWork& work, double clock_hz) const {
    return timing(work, clock_hz).duration_s;
  }
};

using ComputeModelRegistry = Registry<ComputeModel, const ComputeParams&>;
/// "roofline": duration = max(F / (peak(f) * eta_c(F)), B / (BW * eta_m)) + launch overhead,
/// with peak(f) = peak_rated * f / f_rated (ComputeParams::peak_clock_hz()).
void register_builtin_compute_models(ComputeModelRegistry& registry);

}  // namespace chopsim
