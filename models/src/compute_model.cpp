#include "chopsim/models/compute_model.hpp"

#include <algorithm>
#include <string>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

/// The roofline model (Williams, Waterman, Patterson, CACM 2009) with per-class efficiencies:
/// a kernel is limited either by arithmetic (FLOPs / achievable FLOP/s) or by HBM traffic
/// (bytes / achievable bandwidth), whichever takes longer, plus a fixed launch overhead.
/// Only the arithmetic limit scales with the core clock; HBM runs on its own clock.
class RooflineModel final : public ComputeModel {
 public:
  explicit RooflineModel(const ComputeParams& params) : params_(params) {
    if (params_.boost_clock_hz <= 0.0) throw ModelError("roofline: boost_clock_hz must be positive");
    if (params_.hbm_bandwidth_bytes_per_s <= 0.0) throw ModelError("roofline: hbm_bandwidth must be positive");
    if (params_.unaligned_gemm_slowdown < 1.0) throw ModelError("roofline: unaligned_gemm_slowdown must be >= 1");
    if (params_.deterministic_attention.backward_slowdown < 1.0)
      throw ModelError("roofline: deterministic attention backward_slowdown must be >= 1");
    if (params_.attention_dropout_slowdown < 1.0) throw ModelError("roofline: attention_dropout_slowdown must be >= 1");
    if (!(params_.fp8_gemm_efficiency_ratio > 0.0 && params_.fp8_gemm_efficiency_ratio <= 1.0))
      throw ModelError("roofline: fp8_gemm_efficiency_ratio must be in (0, 1]");
    for (const double eta : params_.elementwise_path_memory)
      if (!(eta >= 0.0 && eta <= 1.0))
        throw ModelError("roofline: elementwise path memory efficiencies must be in [0, 1]");
  }

  KernelTiming timing(const KernelWork& work, double clock_hz) const override {
    if (work.host_to_device) return host_copy(work);
    const auto& efficiency = params_.efficiency[static_cast<std::size_t>(work.kernel_class)];
    const double peak_rated = peak_for(work.precision);  // at the rated clock (peak_clock_hz)
    const double rated = params_.peak_clock_hz();
    const double clock_ratio = clock_hz > 0.0 ? clock_hz / rated : 1.0;

    double compute_eta = efficiency.compute;
    if (efficiency.half_efficiency_flops > 0.0 && work.flops > 0.0) {
      const double problem_flops = work.flops / std::max(work.problems, 1.0);
      compute_eta *= problem_flops / (problem_flops + efficiency.half_efficiency_flops);
    }
    // The fallback kernel of an unaligned GEMM: slower arithmetic, the same bytes (it stays a GEMM to the roofline's
    // memory limit, and its ideal time is the aligned one, so the breakdown counts the difference as efficiency loss).
    if (work.unaligned) compute_eta /= params_.unaligned_gemm_slowdown;
    // An fp8 GEMM on fp8 units: a smaller share of that (twice as high) peak than the bf16 efficiency curve gives.
    // Its ideal time stays at the fp8 peak, so the breakdown counts the difference as efficiency loss.
    if (work.kernel_class == KernelClass::gemm && work.precision == Precision::fp8 && has_fp8_units())
      compute_eta *= params_.fp8_gemm_efficiency_ratio;
    // A deterministic attention backward: the whole kernel (arithmetic and traffic) takes the measured factor longer;
    // its ideal time stays the default kernel's, so the breakdown counts the difference as efficiency loss.
    double memory_eta = efficiency.memory;
    // PyTorch's TensorIterator kernels reach HBM by their code path, not by the class (ElementwisePath).
    if (const double path_eta = params_.elementwise_path_memory[static_cast<std::size_t>(work.elementwise_path)];
        work.elementwise_path != ElementwisePath::fused && path_eta > 0.0)
      memory_eta = path_eta;
    if (work.deterministic && work.kernel_class == KernelClass::attention) {
      compute_eta /= params_.deterministic_attention.backward_slowdown;
      memory_eta /= params_.deterministic_attention.backward_slowdown;
    }
    // Dropout drawn inside a fused attention kernel, likewise: the measured factor, counted as efficiency loss.
    if (work.dropout && work.kernel_class == KernelClass::attention) {
      compute_eta /= params_.attention_dropout_slowdown;
      memory_eta /= params_.attention_dropout_slowdown;
    }

    const double compute_s =
        work.flops > 0.0 ? work.flops / (peak_rated * clock_ratio * std::max(compute_eta, 1e-9)) : 0.0;
    const double memory_s =
        work.bytes > 0.0 ? work.bytes / (params_.hbm_bandwidth_bytes_per_s * std::max(memory_eta, 1e-9)) : 0.0;

    const double ideal_compute_s = work.flops > 0.0 ? work.flops / (peak_rated * params_.boost_clock_hz / rated) : 0.0;
    const double ideal_memory_s = work.bytes > 0.0 ? work.bytes / params_.hbm_bandwidth_bytes_per_s : 0.0;

    KernelTiming timing;
    timing.memory_bound = memory_s > compute_s;
    timing.launch_s = params_.launch_overhead_s;
    timing.duration_s = std::max(compute_s, memory_s) + params_.launch_overhead_s;
    timing.ideal_s = std::max(ideal_compute_s, ideal_memory_s);
    if (timing.duration_s > 0.0) {
      timing.compute_utilization = work.flops / (timing.duration_s * peak_rated * clock_ratio);
      timing.memory_utilization = work.bytes / (timing.duration_s * params_.hbm_bandwidth_bytes_per_s);
    }
    return timing;
  }

  const ComputeParams& params() const override { return params_; }

 private:
  /// A host-to-device copy runs on a copy engine at the PCIe link's rate: no roofline, no clock; its ideal time is
  /// its time (nothing a faster kernel could save), plus the launch overhead like any op on the stream.
  KernelTiming host_copy(const KernelWork& work) const {
    if (!(params_.host_to_device_bytes_per_s > 0.0))
      throw ModelError("roofline: a host-to-device copy needs host_to_device_bytes_per_s (the hardware's pcie_gb_s)");
    KernelTiming timing;
    timing.memory_bound = true;
    timing.launch_s = params_.launch_overhead_s;
    timing.ideal_s = work.bytes / params_.host_to_device_bytes_per_s;
    timing.duration_s = timing.ideal_s + params_.launch_overhead_s;
    if (timing.duration_s > 0.0)
      timing.memory_utilization = work.bytes / (timing.duration_s * params_.hbm_bandwidth_bytes_per_s);
    return timing;
  }

  bool has_fp8_units() const { return params_.peak_flops_per_s[static_cast<std::size_t>(Precision::fp8)] > 0.0; }

  double peak_for(Precision precision) const {
    double peak = params_.peak_flops_per_s[static_cast<std::size_t>(precision)];
    // A GPU without fp8 (or tf32) units runs such kernels at the next wider precision it has.
    if (peak <= 0.0 && precision == Precision::fp8)
      peak = params_.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)];
    if (peak <= 0.0 && precision == Precision::tf32)
      peak = params_.peak_flops_per_s[static_cast<std::size_t>(Precision::fp32)];
    if (peak <= 0.0) throw ModelError("roofline: no peak FLOP/s for precision " + std::string(to_string(precision)));
    return peak;
  }

  ComputeParams params_;
};

}  // namespace

void register_builtin_compute_models(ComputeModelRegistry& registry) {
  registry.add("roofline", "max(FLOPs / (peak(f) * eta_compute), bytes / (HBM BW * eta_memory)) + launch overhead",
               [](const ComputeParams& params) { return std::make_unique<RooflineModel>(params); });
}

}  // namespace chopsim
