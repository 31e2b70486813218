#pragma once
// The fits (docs/calibration.md has the equations):
//   * kernels: chopsim's roofline, duration = max(F / (P(dtype) * f/f_rated * eta_c(F)), B / (BW * eta_m)) with
//     eta_c(F) = eta_max * F / (F + F_half), per kernel class (and element type for the compute classes), by
//     Levenberg-Marquardt on log durations;
//   * launch overhead: the mean gap between consecutive GPU records on a stream;
//   * compute under communication: how much longer kernels run while an NCCL/RCCL kernel shares their GPU;
//   * collectives: t = a + b * S per (kind, group size, intra/inter node), converted to bus bandwidth, per-link
//     bandwidth and per-step latency with the ring algorithm's factors;
//   * telemetry: power vs activity, and a first-order thermal RC model (steady state and step response).
// Results are plain numbers in SI units; profile.hpp turns them into YAML and a report.

#include <cstddef>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chopsim/calibration/fitting.hpp"
#include "chopsim/calibration/hardware_reference.hpp"
#include "chopsim/calibration/measurements.hpp"

namespace chopsim {

// ---------------------------------------------------------------------------------------------------------------
// Kernels

struct KernelFitOptions {
  /// Kernels shorter than this are left out of the efficiency fits: their time is a fixed per-kernel cost
  /// (launch latency, ramp-up, tail) that the roofline does not model; launch_overhead carries that part.
  double min_duration_s = 10e-6;
  /// Core clock the measurements ran at; 0 = the hardware's rated clock (the clock its peak figures hold at), or
  /// each kernel's held clock with `held_clock`.
  double clock_hz = 0.0;
  /// With clock_hz 0: each kernel ran at the clock the hardware file's power model holds for its measured load
  /// under the TDP (held_clock_hz()), not at the rated clock. For GPUs whose power limit binds far below the peak
  /// clock (MI300X: dense GEMMs at 1.2 of 2.1 GHz), where an efficiency at the rated clock would fold that loss in.
  bool held_clock = false;
  /// Each kernel at its held clock: held_clock asked for and no clock given.
  [[nodiscard]] bool uses_held_clock() const { return held_clock && !(clock_hz > 0.0); }
  /// Classes whose asymptote eta_max stays at the hardware file's value (F_half and eta_m are still fitted): where
  /// the data hold only small kernels and the file states the asymptote from a measurement of large ones, a free
  /// asymptote would be an extrapolation.
  std::set<KernelClass> keep_asymptote;
  /// Where clock_hz comes from, for the report ("" = the command line or the rated clock).
  std::string clock_source;
  /// Gaps between kernels longer than this are host stalls (data loading, synchronisation, Python), not launch
  /// overhead, and are left out of launch_overhead.
  double max_gap_s = 100e-6;
  /// Kernels shorter than this (median alone) are left out of the interference fit: a short kernel overlapped by
  /// communication loses more to block scheduling than to the SMs it shares (in the A100 HTA traces, kernels of
  /// 10-20 µs run ~1.6x as long under an NCCL kernel, those of 20 µs and more 1.07x).
  double min_interference_kernel_s = 20e-6;
};

/// The roofline parameters of one kernel class (and element-type group) fitted to measured kernels.
struct KernelClassFit {
  KernelClass kernel_class = KernelClass::other;
  /// "bf16+fp16" (the tensor-core group whose fit goes into the profile), "fp32", "fp8", ...; empty for the
  /// memory-bound classes, which are fitted on bytes alone.
  std::string dtype_group;
  /// Elementwise kernels of one TensorIterator path only (`kernels.pytorch_elementwise_memory.<path>` in the
  /// profile); `fused` for a fit over the whole class.
  ElementwisePath path = ElementwisePath::fused;
  bool compute_fitted = false;  ///< eta_max was free
  bool half_fitted = false;     ///< F_half was free
  bool memory_fitted = false;   ///< eta_m was free
  /// Fitted values, or the hardware file's where not fitted.
  double compute = 1.0;
  double half_efficiency_flops = 0.0;
  double memory = 1.0;
  EfficiencyDefaults defaults;
  std::size_t compute_bound = 0;  ///< points the fitted model calls compute-bound
  std::size_t memory_bound = 0;
  std::size_t excluded_short = 0;  ///< points shorter than KernelFitOptions::min_duration_s
  FitStats stats;
  /// Sums over the fitted points: measured time, and the roofline's time for the same kernels with the fitted
  /// values (what a step made of these kernels spends in the class before and after calibration).
  double measured_s = 0.0;
  double predicted_s = 0.0;
  double default_predicted_s = 0.0;  ///< the same with the hardware file's values
  double min_flops = 0.0, max_flops = 0.0, min_bytes = 0.0, max_bytes = 0.0;
  /// Clocks the fitted points are taken at (Hz): one clock, or the range of held clocks (KernelFitOptions).
  double min_clock_hz = 0.0, median_clock_hz = 0.0, max_clock_hz = 0.0;
  std::vector<std::size_t> inputs;  ///< indices into MeasurementSet::inputs
  std::vector<std::string> notes;
  bool in_profile = false;  ///< this fit's values are the class's values in the profile
};

/// The core clock (Hz) at which `hardware`'s power model (models/power.hpp's cv2f, restated here because
/// calibration sits below models/) draws its TDP for the load `sample` measured: busy 1, tensor (or vector) use
/// F / (d · peak(f)) and HBM use B / (d · BW), at the steady temperature of a die at its TDP in the usual chassis.
/// This is the clock the firmware governor holds for that load; the boost clock when the load stays within the TDP
/// there, never below the clock at which the kernel would have used the whole peak. The rated clock when the
/// hardware file has no power model or TDP.
[[nodiscard]] double held_clock_hz(const KernelSample& sample, const HardwareReference& hardware);

/// The roofline duration of `sample` with efficiencies (compute, half_efficiency_flops, memory), peak FLOP/s
/// `peak` (already scaled to the clock) and HBM bandwidth `bandwidth`: the model every kernel fit minimises against.
[[nodiscard]] double roofline_duration_s(const KernelSample& sample, double compute, double half_efficiency_flops,
                                         double memory, double peak, double bandwidth);

/// Fits one class to `samples` (all of `kernel_class`). Free parameters are chosen from the data: eta_max needs a
/// compute-bound point, F_half two problem sizes among them, eta_m a memory-bound point (bound judged with the
/// hardware file's values); the others stay at the hardware file's values and a note says so.
[[nodiscard]] KernelClassFit fit_kernel_class(KernelClass kernel_class, const std::string& dtype_group,
                                              std::span<const KernelSample> samples, const HardwareReference& hardware,
                                              const KernelFitOptions& options);

/// The same for the elementwise kernels of one TensorIterator path (`samples` all of it): eta_m alone, judged
/// against the hardware file's figure for the path (`kernels.pytorch_elementwise_memory`, else the class's).
[[nodiscard]] KernelClassFit fit_elementwise_path(ElementwisePath path, std::span<const KernelSample> samples,
                                                  const HardwareReference& hardware, const KernelFitOptions& options);

/// Every class with data: compute classes (gemm, attention) per element type, plus a pooled bf16+fp16 fit when both
/// occur; memory-bound classes on bytes; the elementwise class again per TensorIterator path where its kernels
/// have one (PyTorch's own kernels), each path's fit going into the profile beside the class's. Marks the fit that goes
/// into the profile (bf16+fp16 or the only tensor type for gemm/attention).
[[nodiscard]] std::vector<KernelClassFit> fit_kernel_classes(const MeasurementSet& measurements,
                                                             const HardwareReference& hardware,
                                                             const KernelFitOptions& options);

struct LaunchOverheadFit {
  bool fitted = false;
  std::size_t gaps = 0;  ///< gaps used (at most KernelFitOptions::max_gap_s)
  std::size_t streams = 0;
  std::size_t long_gaps = 0;  ///< left out as host stalls
  double long_gap_idle_s = 0.0;
  double max_gap_s = 0.0;
  double mean_s = 0.0;  ///< the profile's launch_overhead (idle time / records, as TraceLens' gpu_timeline)
  double median_s = 0.0;
  double p90_s = 0.0;
  double max_s = 0.0;
  double default_s = 0.0;
  std::vector<std::size_t> inputs;
};

[[nodiscard]] LaunchOverheadFit fit_launch_overhead(const MeasurementSet& measurements,
                                                    const HardwareReference& hardware, const KernelFitOptions& options);

/// Compute under communication (the profile's comm_compute_slowdown): the runs of a kernel that an NCCL/RCCL kernel
/// overlapped against the same kernel's runs alone (OverlapGroup). chopsim slows every compute kernel by one factor
/// while communication runs on its GPU, so the factor is the one that reproduces the overlapped runs' total time:
/// ratio = sum of overlapped durations / sum of the group's isolated median per overlapped run, slowdown = 1 - 1/ratio.
/// The profile takes the GEMM/attention kernels' ratio when there are kMinGroups of them (what LLM training overlaps
/// with its collectives: prefetches and gradient reductions under GEMMs), else all kernels'.
struct InterferenceFit {
  /// Groups need this many isolated and overlapped runs, and the fit this many groups.
  static constexpr std::size_t kMinIsolated = 3, kMinOverlapped = 2, kMinGroups = 10;
  bool fitted = false;
  std::size_t groups = 0;              ///< kernels (name, grid, block) used
  std::size_t short_groups = 0;        ///< left out: median alone below KernelFitOptions::min_interference_kernel_s
  std::size_t overlapped_runs = 0;     ///< runs of the used groups that communication overlapped
  double overlapped_s = 0.0;           ///< their time
  double isolated_equivalent_s = 0.0;  ///< the same runs at their group's isolated median
  double ratio = 1.0;                  ///< overlapped_s / isolated_equivalent_s
  double slowdown = 0.0;  ///< max(0, 1 - 1 / ratio) of the compute kernels, or of all (from_compute_kernels)
  bool from_compute_kernels = false;
  double median_group_ratio = 1.0;  ///< median over groups of overlapped median / isolated median
  double compute_ratio = 1.0;       ///< ratio of the GEMM and attention groups alone (1 = none)
  double other_ratio = 1.0;         ///< ratio of the other groups alone (1 = none)
  std::size_t compute_groups = 0, other_groups = 0;
  double default_slowdown = 0.0;  ///< the hardware file's comm_compute_slowdown
  std::vector<std::size_t> inputs;

  /// The ratio, and the kernels behind it, that `slowdown` comes from.
  [[nodiscard]] double chosen_ratio() const { return from_compute_kernels ? compute_ratio : ratio; }
  [[nodiscard]] std::size_t chosen_groups() const { return from_compute_kernels ? compute_groups : groups; }
};

[[nodiscard]] InterferenceFit fit_comm_compute_interference(const MeasurementSet& measurements,
                                                            const HardwareReference& hardware,
                                                            const KernelFitOptions& options);

/// The host's time per kernel launch (a run's training.host_launch_us, not part of the hardware profile): the median
/// of the launch intervals where the GPU waited for the host (HostLaunches), over every thread of every input.
struct HostLaunchFit {
  static constexpr std::size_t kMinIntervals = 20;  ///< fewer: not fitted
  bool fitted = false;
  std::size_t intervals = 0;  ///< waited intervals used
  std::size_t launches = 0;   ///< launch calls seen
  double median_s = 0.0;      ///< the host launch time
  double p25_s = 0.0, p75_s = 0.0;
  std::vector<std::size_t> inputs;
};

[[nodiscard]] HostLaunchFit fit_host_launch(const MeasurementSet& measurements);

// ---------------------------------------------------------------------------------------------------------------
// Collectives

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (2(n-1)/n all-reduce, (n-1)/n all-gather,
/// reduce-scatter and all-to-all, 1 broadcast and send/recv).
[[nodiscard]] double bus_factor(CollectiveKind kind, int group_size);
/// Latency terms of chopsim's ring algorithms (models/src/collective.cpp): 2(n-1) all-reduce, n-1 all-gather,
/// reduce-scatter, all-to-all and broadcast; 1 for send/recv.
[[nodiscard]] int latency_steps(CollectiveKind kind, int group_size);
/// Links one GPU drives at once in a ring collective over `group_size` GPUs of one node, as chopsim's collective
/// model builds its rings: all links_per_gpu NVLinks to the switch; on a full xGMI mesh one link per ring, with
/// 2 * floor((n-1)/2) rings (edge-disjoint Hamiltonian cycles, both directions), 1 for two GPUs.
[[nodiscard]] int parallel_links(NodeLinks node_links, int group_size, int links_per_gpu);

/// t = a + b * S for one (kind, group size, scope): a least-squares fit of relative errors (weights 1/t^2).
struct AlphaBetaFit {
  CollectiveKind kind = CollectiveKind::all_reduce;
  int group_size = 0;
  LinkScope scope = LinkScope::intra_node;
  std::size_t points = 0;
  double min_bytes = 0.0, max_bytes = 0.0;
  bool latency_fitted = false;    ///< a was determined (false: the sizes are too large to tell it from 0)
  bool bandwidth_fitted = false;  ///< b was determined (false: only tiny messages)
  double alpha_s = 0.0;
  double beta_s_per_byte = 0.0;
  double bus_bandwidth_bytes_per_s = 0.0;  ///< bus_factor / b
  FitStats stats;
  std::vector<std::size_t> inputs;
  std::vector<std::string> notes;
};

[[nodiscard]] AlphaBetaFit fit_alpha_beta(CollectiveKind kind, int group_size, LinkScope scope,
                                          std::span<const CollectiveSample> samples);

/// chopsim's alpha-beta prediction with the profile's values, against one group's points.
struct CollectiveModelCheck {
  CollectiveKind kind = CollectiveKind::all_reduce;
  int group_size = 0;
  FitStats stats;
};

struct CollectiveCalibration {
  NodeLinks node_links = NodeLinks::nvswitch;
  std::vector<AlphaBetaFit> fits;
  /// Per-step latency alpha = a / latency_steps of the chosen intra-node ring collective; the profile's
  /// collectives.step_latency = alpha - the hardware file's link latency (the two are not separable from timings).
  bool step_latency_fitted = false;
  double per_step_alpha_s = 0.0;
  double step_latency_s = 0.0;
  std::string step_latency_from;
  /// Per-link bandwidth: bus bandwidth / parallel_links of the chosen intra-node collective, refitted with its
  /// latency fixed at latency_steps * alpha so that chopsim's alpha-beta time reproduces the measured times.
  bool link_bandwidth_fitted = false;
  double bus_bandwidth_bytes_per_s = 0.0;
  double link_bandwidth_bytes_per_s = 0.0;
  int links = 0;
  std::string link_bandwidth_from;
  /// The profile's `intra_node_link.efficiency`: link_bandwidth / the hardware file's nominal bandwidth_gb_s (capped
  /// at 1). Runs build the links with nominal bandwidth x efficiency, so the fitted bandwidth applies exactly once.
  double link_efficiency = 0.0;
  /// NIC bandwidth from inter-node send/recv (one GPU's rail).
  bool nic_bandwidth_fitted = false;
  double nic_bandwidth_bytes_per_s = 0.0;
  std::string nic_bandwidth_from;
  double nic_efficiency = 0.0;               ///< the profile's `nic.efficiency`: nic_bandwidth / nominal (capped at 1)
  std::vector<CollectiveModelCheck> checks;  ///< intra-node groups, chopsim's formula with the profile's values
};

[[nodiscard]] CollectiveCalibration fit_collectives(const MeasurementSet& measurements,
                                                    const HardwareReference& hardware, NodeLinks node_links);

// ---------------------------------------------------------------------------------------------------------------
// Telemetry

struct TelemetryFit {
  std::size_t gpus = 0;
  std::vector<std::size_t> inputs;
  std::vector<std::string> notes;
  // Power vs activity: P = p0 + p1 * activity (least squares over readings with both).
  bool power_fitted = false;
  std::size_t power_points = 0;
  double idle_power_w = 0.0;  ///< median power of readings at activity <= 1 %
  std::size_t idle_points = 0;
  double load_power_w = 0.0;  ///< median power of readings at activity >= 90 %
  std::size_t load_points = 0;
  double power_at_zero_activity_w = 0.0;  ///< p0
  double power_per_activity_w = 0.0;      ///< p1: watts from 0 to 100 % activity
  FitStats power_stats;
  // Thermal: C dT/dt = P - (T - T_amb) / R, sampled: T_{k+1} = T_ss + (T_k - T_ss) exp(-dt / tau),
  // T_ss = T_amb + R * P (power held at the mean of the two readings), least squares over consecutive readings.
  bool thermal_fitted = false;
  std::string sensor;  ///< "junction" or "edge"
  std::size_t thermal_points = 0;
  double ambient_c = 0.0;
  double resistance_k_per_w = 0.0;
  double time_constant_s = 0.0;
  double capacitance_j_per_k = 0.0;  ///< tau / R
  /// points = consecutive reading pairs; R² on temperature (°C); relative residuals on the rise above ambient.
  FitStats thermal_stats;
  double thermal_median_abs_k = 0.0;
  double thermal_p90_abs_k = 0.0;
  /// The same errors over the readings where power changed by more than 100 W (the steps that decide throttling).
  std::size_t thermal_step_points = 0;
  double thermal_step_median_abs_k = 0.0;
  double thermal_step_p90_abs_k = 0.0;
};

[[nodiscard]] TelemetryFit fit_telemetry(const MeasurementSet& measurements);

/// The telemetry readings taken while a trace's kernels ran (both on the Unix-epoch clock): for each such reading,
/// its index in measurements.telemetry and the index of the first kernel span holding its time, in reading order.
[[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> readings_in_kernel_spans(
    const MeasurementSet& measurements);

/// The power model's dynamic power (models/power.hpp: P = static(T) + P_dyn g(f) a + P_hbm u) refitted so that the
/// load of a trace's kernels, at the clocks and temperatures the telemetry of the same run read while they ran,
/// draws the power it read:
///   P_dyn = (mean P - static(mean T) - P_hbm u) / (mean g(f_i) a),
/// with a = a_busy busy + a_tensor u_tensor + a_vector u_vector and u the HBM use, each averaged over the kernels'
/// span from their FLOPs, bytes and durations (u_tensor = sum FLOPs / (peak at the measured clock x span)). The
/// activity weights, the HBM power and the voltage curve stay the hardware file's: one measured operating point
/// determines one scale. A power-capped run is what makes the fit matter: its clock is where the model's power
/// reaches the cap, so a dynamic power too low by x % puts the simulated clock that much too high.
struct DynamicPowerFit {
  bool fitted = false;
  std::string not_fitted_because;  ///< when !fitted
  std::vector<std::size_t> inputs;
  std::size_t readings = 0;  ///< telemetry readings taken while the kernels ran
  std::size_t kernels = 0;   ///< kernels in the span
  double span_s = 0.0;       ///< summed length of the kernel spans
  double mean_power_w = 0.0, mean_clock_hz = 0.0, mean_dynamic_scale = 0.0, mean_temperature_c = 0.0;
  double busy = 0.0, tensor = 0.0, vector = 0.0, hbm = 0.0;  ///< time-averaged load (fractions)
  double activity = 0.0;                                     ///< a
  double idle_w = 0.0;    ///< static power at the reference temperature: the telemetry's idle reading, else the file's
  double static_w = 0.0;  ///< idle_w + leakage at mean_temperature_c
  double hbm_power_w = 0.0;  ///< P_hbm u
  double dynamic_w = 0.0;    ///< fitted P_dyn
};

[[nodiscard]] DynamicPowerFit fit_dynamic_power(const MeasurementSet& measurements, const HardwareReference& hardware,
                                                const TelemetryFit& telemetry, double measurement_clock_hz);

// ---------------------------------------------------------------------------------------------------------------
// Power from whole runs (`chopsim calibrate --power-runs`): the experiments layer simulates the runs, this layer
// holds what was measured and what was fitted.

/// What the telemetry read over one measured run's window: the mean of every reading of every GPU in it, and the
/// largest power reading.
struct TelemetryWindowMean {
  std::size_t readings = 0;  ///< readings with a power and a clock
  double power_w = 0.0;
  double clock_hz = 0.0;
  double largest_power_w = 0.0;
  double lowest_clock_hz = 0.0;
};

/// Mean power and core clock, the largest power and the lowest clock, of the telemetry readings taken in [from_s, to_s]
/// (seconds since the Unix epoch, the clock of nvidia-smi and amd-smi logs). Readings without a power or a clock are
/// skipped.
[[nodiscard]] TelemetryWindowMean telemetry_window_mean(const MeasurementSet& measurements, double from_s, double to_s);

/// One measured run of a power fit: what was measured and what the power model predicts before and after the fit.
struct RunPowerRow {
  std::string label;  ///< the run's name in the runs file
  TelemetryWindowMean measured;
  /// Simulated with the hardware file's power model: mean power, mean clock while kernels run, and the largest
  /// reading a power sensor would give over the window (experiments/src/power_sensor.hpp).
  double before_power_w = 0.0, before_clock_hz = 0.0, before_largest_w = 0.0, before_lowest_clock_hz = 0.0;
  /// The same with the fitted parameters.
  double after_power_w = 0.0, after_clock_hz = 0.0, after_largest_w = 0.0, after_lowest_clock_hz = 0.0;
};

/// The power model's voltage knee and activity weights, and the firmware governor's control period, fitted so that
/// simulated runs draw the measured mean power at the measured mean clock with the measured largest power reading
/// (the governor holds the cap: the clock's fall with load is the knee and the weights; how far 25 ms of power
/// overshoot the cap is the weights' spread and how soon the governor answers).
struct RunPowerFit {
  bool fitted = false;
  std::vector<std::size_t> inputs;  ///< the runs file and the run configs, in CalibrationResult::inputs
  std::vector<RunPowerRow> runs;
  double knee_hz = 0.0, busy_activity = 0.0, tensor_activity = 0.0;  ///< fitted
  double control_period_s = 0.0;                                     ///< fitted
  /// The hardware file's control period (the file's knee and weights are in HardwareReference::power_model).
  double file_control_period_s = 0.0;
  std::size_t evaluations = 0;               ///< parameter sets simulated
  double rms_before = 0.0, rms_after = 0.0;  ///< root mean square of the relative errors (power, clock, largest)
};

}  // namespace chopsim
