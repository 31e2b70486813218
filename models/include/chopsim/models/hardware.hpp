#pragma once
// What a GPU can do: peak rates, clocks, memory, power envelope and links (configs/hardware/*.yaml),
// and the kernel classes and precisions the compute model distinguishes.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "chopsim/common/attention_head_dim.hpp"
#include "chopsim/common/kernel_class.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/power.hpp"
#include "chopsim/models/thermal.hpp"

namespace chopsim {

/// Arithmetic precision of a kernel. fp32 is the vector (non-tensor-core) rate; tf32, bf16, fp16 and fp8 are
/// dense tensor/matrix-core rates.
enum class Precision : std::uint8_t { fp32, tf32, bf16, fp16, fp8 };
inline constexpr std::size_t kPrecisionCount = 5;

[[nodiscard]] std::string_view to_string(Precision precision);
[[nodiscard]] std::optional<Precision> precision_from_string(std::string_view name);
/// Storage size of one element: 4 for fp32/tf32, 2 for bf16/fp16, 1 for fp8.
[[nodiscard]] double bytes_per_element(Precision precision);

// KernelClass and kKernelClassCount live in chopsim/common/kernel_class.hpp (shared with traces/).

[[nodiscard]] std::string_view to_string(KernelClass kernel_class);
[[nodiscard]] std::optional<KernelClass> kernel_class_from_string(std::string_view name);

/// The fraction of a roofline limit a kernel class reaches (0 < eta <= 1).
struct KernelEfficiency {
  double compute = 1.0;  ///< of the peak FLOP/s at the current clock, when compute-bound
  double memory = 1.0;   ///< of the peak HBM bandwidth, when memory-bound
  /// Shape dependence of `compute`: a kernel of F FLOPs reaches compute * F / (F + half_efficiency_flops).
  /// 0 means no shape dependence. Small GEMMs cannot fill the GPU; this saturating curve is what the
  /// calibration issue fits per class.
  double half_efficiency_flops = 0.0;
};

/// What deterministic execution costs an attention kernel's backward. Flash-style backward kernels accumulate dQ
/// over key blocks with atomic adds; deterministic modes (PyTorch use_deterministic_algorithms, Transformer Engine
/// NVTE_ALLOW_NONDETERMINISTIC_ALGO=0, Megatron --deterministic-mode) order that accumulation instead or, in cuDNN
/// on Hopper, stage the score gradients in a workspace and compute dQ in a second pass.
struct DeterministicAttention {
  /// The deterministic backward takes this many times as long (>= 1; 1 = no measured penalty).
  double backward_slowdown = 1.0;
  /// Workspace it allocates per (query, key) score of a call's heads (bytes; 0 = none beyond the usual).
  double workspace_bytes_per_score = 0.0;
};

/// Parameters of a compute model (per GPU). Units: FLOP/s, bytes/s, hertz, seconds.
struct ComputeParams {
  /// Dense peak rate per precision at `peak_clock_hz()`; 0 = the GPU has no such unit.
  std::array<double, kPrecisionCount> peak_flops_per_s{};
  double hbm_bandwidth_bytes_per_s = 0.0;
  double boost_clock_hz = 0.0;  ///< max core clock
  /// Clock at which the peak rates hold (datasheet FLOP/s are quoted at it); 0 = boost_clock_hz. H100/H200 quote
  /// their tensor peaks at 1830 MHz with a 1980 MHz max clock.
  double rated_clock_hz = 0.0;
  /// The clock the peak rates hold at: rated_clock_hz, or boost_clock_hz when not given.
  [[nodiscard]] double peak_clock_hz() const { return rated_clock_hz > 0.0 ? rated_clock_hz : boost_clock_hz; }
  std::array<KernelEfficiency, kKernelClassCount> efficiency{};
  /// Share of the HBM bandwidth PyTorch's own elementwise kernels reach, by TensorIterator path (indexed by
  /// ElementwisePath; KernelWork::elementwise_path): it replaces the class's memory efficiency for a kernel the
  /// workload marks with that path. 0 = not measured on this GPU: the class's memory efficiency. `fused` is unused.
  std::array<double, kElementwisePathCount> elementwise_path_memory{};
  double launch_overhead_s = 0.0;  ///< added to every kernel (launch, tail, inter-kernel gap)
  /// Fraction by which compute kernels slow down while a communication kernel shares the GPU
  /// (NCCL/RCCL kernels take SMs/CUs and HBM bandwidth). 0.1 = compute runs at 90 % speed.
  double comm_compute_slowdown = 0.0;
  /// A GEMM flagged KernelWork::unaligned runs at 1 / this of its compute efficiency (>= 1; 1 = no penalty).
  double unaligned_gemm_slowdown = 1.0;
  /// An fp8 GEMM reaches this fraction of the share of its peak a bf16 GEMM reaches (in (0, 1]; 1 = the same share):
  /// the best measured fp8 matmul is a smaller share of the fp8 peak than the best bf16 one of the bf16 peak
  /// (H100: 70.9 % against 80.3 %). The GEMM efficiency (efficiency[gemm]) stays the bf16 one, as fitted and
  /// calibrated; only fp8 GEMMs on a GPU with fp8 units are scaled.
  double fp8_gemm_efficiency_ratio = 1.0;
  /// The run's attention kernel (the attention class, or the implementation training.attention names) when its
  /// backward must be deterministic (training.deterministic, KernelWork::deterministic).
  DeterministicAttention deterministic_attention;
  /// The run's attention kernel, forward and backward, takes this many times as long when it applies dropout to the
  /// probabilities (KernelWork::dropout; >= 1, 1 = no measured cost): the random numbers are drawn inside the kernel.
  double attention_dropout_slowdown = 1.0;
  /// Host-to-device copy bandwidth (bytes/s, one direction): the GPU's host link as compute_params_for() resolves it
  /// (HardwareSpec::host_link_bandwidth, else the PCIe link). 0 = not known: a host-to-device copy is an error.
  double host_to_device_bytes_per_s = 0.0;
};

/// A named attention kernel of a GPU (`kernels.attention_implementations.NAME`).
struct AttentionImplementation {
  KernelEfficiency efficiency;
  DeterministicAttention deterministic;
  double dropout_slowdown = 1.0;  ///< ComputeParams::attention_dropout_slowdown when this kernel runs
  /// HardwareSpec::attention_head_dim_64_ratio when this kernel runs.
  double head_dim_64_ratio = 1.0;
};

/// One GPU model (a GCD for MI250/MI250X, which show each die as a GPU).
struct HardwareSpec {
  std::string name;    ///< e.g. "H100-SXM5-80GB"
  std::string vendor;  ///< "nvidia" or "amd"
  ComputeParams compute;
  double min_clock_hz = 0.0;  ///< lowest core clock the governor may use
  double hbm_capacity_bytes = 0.0;
  double tdp_w = 0.0;         ///< board power limit (W)
  double idle_power_w = 0.0;  ///< power with no kernel running (W)
  /// One intra-node link (NVLink, xGMI), one direction. Links per GPU says how many; an NVSwitch node
  /// gives each GPU links_per_gpu * link_bandwidth to the switch, a full mesh one link per peer.
  double intra_node_link_bandwidth_bytes_per_s = 0.0;
  /// Fraction of the nominal link bandwidth collective libraries (NCCL/RCCL) move data at; the topology's links get
  /// bandwidth * efficiency (like the kernels' efficiencies against their peaks).
  double intra_node_link_efficiency = 1.0;
  int intra_node_links_per_gpu = 0;
  double intra_node_link_latency_s = 0.0;
  /// PCIe link between GPU and its NIC (one direction).
  double pcie_bandwidth_bytes_per_s = 0.0;
  /// The link copies from host memory run over (one direction), where it is not the PCIe link (NVLink-C2C to a
  /// Grace CPU); 0 = the PCIe link.
  double host_link_bandwidth_bytes_per_s = 0.0;
  double nic_bandwidth_bytes_per_s = 0.0;  ///< one NIC, one direction
  double nic_efficiency = 1.0;             ///< fraction of nic_bandwidth collectives achieve between nodes
  double nic_latency_s = 0.0;              ///< NIC + first-hop latency
  int dies_per_package = 1;                ///< 2 on MI250/MI250X: pairs of GPUs share a package
  /// Die-to-die bandwidth inside a package (one direction); 0 when dies_per_package == 1.
  double in_package_link_bandwidth_bytes_per_s = 0.0;
  /// Memory a framework cannot use: CUDA/HIP context, communicator buffers, allocator reserve (bytes).
  double memory_reserved_bytes = 0.0;
  /// Allocator fragmentation as a fraction of the allocated total (the brief: a stated allowance).
  double memory_fragmentation_fraction = 0.0;
  /// GEMM library workspaces that PyTorch's caching allocator hands out, so torch.cuda.max_memory_allocated counts
  /// them (bytes; 0 = not known for this GPU). PyTorch's cuBLAS workspace, one per (cuBLAS handle, stream), when
  /// CUBLAS_WORKSPACE_CONFIG is not set (a run's training.cublas_workspace_bytes overrides it); and Transformer
  /// Engine's one cuBLAS workspace (Framework::megatron_te runs).
  double cublas_workspace_bytes = 0.0;
  double transformer_engine_workspace_bytes = 0.0;
  /// Power, thermal and DVFS parameters (power.hpp, thermal.hpp, governor.hpp), per die.
  PowerParams power;
  ThermalParams thermal;
  GovernorParams governor;
  /// Default cooling of this GPU's usual chassis; a run config may override it.
  CoolingSpec cooling;
  /// Efficiencies of named attention kernel implementations on this GPU (`kernels.attention_implementations`:
  /// "flash2", "cudnn", ...). A run that names one (training.attention) uses it instead of the attention class's
  /// default efficiency.
  std::map<std::string, AttentionImplementation, std::less<>> attention_implementations;
  /// The default attention kernel (efficiency[attention]) at head dimension 64 reaches this share of the compute
  /// efficiency it reaches at head dimension 128, where its figures are measured (in (0, 1]; 1 = no measurement).
  /// compute_params_for() applies it for the model's head dimension.
  double attention_head_dim_64_ratio = 1.0;
};

/// The compute parameters of `hardware` for a run using the attention implementation `attention` (a key of
/// hardware.attention_implementations; empty: the attention class's default) on a model whose attention heads are
/// `head_dim` wide (the query/key width; 0 = not known: the efficiency as measured). Throws ModelError for an unknown
/// name.
[[nodiscard]] ComputeParams compute_params_for(const HardwareSpec& hardware, std::string_view attention,
                                               double head_dim = 0.0);

/// The power model parameters of `hardware`: its power_model section with the idle power and the max clock filled in.
[[nodiscard]] PowerParams power_params_for(const HardwareSpec& hardware);

}  // namespace chopsim
