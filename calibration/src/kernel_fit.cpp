// Kernel efficiencies: chopsim's roofline (models/src/compute_model.cpp) fitted to measured kernel times.
//
//   d(F, B) = max( F / (P * eta_c(F)), B / (BW * eta_m) ),   eta_c(F) = eta_max * F / (F + F_half)
//
// P is the dense peak of the kernel's element type at the measurement clock (peak_tflops scaled by f / f_rated), BW
// the HBM bandwidth. Measured kernel durations exclude the gap to the next kernel, which is what launch_overhead
// adds (launch_fit below), so the fit has no constant term. The parameters are fitted by Levenberg-Marquardt on
// r_i = log d_model_i - log d_measured_i: relative errors, because the times span four decades (1 µs to 10 ms) and
// a 5 % error matters the same at both ends. eta_max and eta_m are mapped through a logistic function so that they
// stay in (0, 1) (the range the hardware file accepts) and F_half through exp() so that it stays positive.
//
// A memory-bound class (elementwise, norm, reduction, copies, optimizer) has one parameter, eta_m, and it is the
// ratio estimate sum(B) / (BW * sum(d)): the efficiency at which the class's kernels take their measured total time.
// Its kernels differ in efficiency by kind far more than by size (in the H200 eager trace, vectorised contiguous
// casts reach 0.9 of the HBM peak and broadcasting mixed-dtype products 0.2), so the least-squares fit of log times
// would return their geometric mean, which weights every kernel alike whatever its share of the time: on that trace
// 0.58 instead of 0.64 for elementwise kernels, which would make their total 10 % too long (reductions: 11 %). The
// simulator sums kernel times, so the total is what has to be right. The kind is mostly PyTorch's TensorIterator path
// (ElementwisePath: 0.89 vectorized, 0.43 unrolled and strided on that trace), so PyTorch's elementwise kernels are
// fitted again per path (fit_elementwise_path), each with the same ratio estimate.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "chopsim/calibration/fits.hpp"
#include "chopsim/common/attention_head_dim.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"

namespace chopsim {

namespace {

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logit(double p) {
  const double q = std::clamp(p, 1e-6, 1.0 - 1e-6);
  return std::log(q / (1.0 - q));
}

bool is_compute_class(KernelClass c) { return c == KernelClass::gemm || c == KernelClass::attention; }

std::string format_g(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

/// Problem sizes that differ by more than 5 % count as distinct: two sizes can determine eta_max and F_half.
std::size_t distinct_sizes(std::vector<double> sizes) {
  std::sort(sizes.begin(), sizes.end());
  std::size_t count = 0;
  double last = -1.0;
  for (const double s : sizes)
    if (last < 0.0 || s > last * 1.05) {
      ++count;
      last = s;
    }
  return count;
}

/// Predictions, residual statistics, time totals and notes of a fit whose parameters are set.
KernelClassFit finish_fit(KernelClassFit& fit, const std::vector<KernelSample>& points,
                          const std::vector<double>& peaks, double bandwidth);

}  // namespace

double held_clock_hz(const KernelSample& sample, const HardwareReference& hardware) {
  const PowerModelReference& m = hardware.power_model;
  if (!m.present || !(hardware.tdp_w > 0.0) || !(sample.duration_s > 0.0) || !(hardware.boost_clock_hz > 0.0))
    return hardware.rated_clock_hz;
  const bool compute = is_compute_class(sample.kernel_class) && sample.flops > 0.0;
  const double peak_rated = compute ? hardware.peak_for(sample.dtype) : 0.0;
  // Tensor cores for the compute classes except in fp32 (as the power domain's activity, models/power_dynamics.cpp).
  const double activity_per_use = compute && sample.dtype != "fp32" ? m.tensor_activity : m.vector_activity;
  const double hbm_use = hardware.hbm_bandwidth_bytes_per_s > 0.0 && sample.bytes > 0.0
                             ? std::min(1.0, sample.bytes / (sample.duration_s * hardware.hbm_bandwidth_bytes_per_s))
                             : 0.0;
  const double temperature_c = hardware.thermal_resistance_k_per_w > 0.0
                                   ? hardware.ambient_c + hardware.thermal_resistance_k_per_w * hardware.tdp_w
                                   : m.reference_c;
  const double static_w = std::max(hardware.idle_power_w + m.leakage_w_per_k * (temperature_c - m.reference_c),
                                   hardware.idle_power_w / 3.0);
  // Below this clock the kernel would have needed more than the whole peak.
  const double lowest =
      peak_rated > 0.0 ? sample.flops * hardware.rated_clock_hz / (sample.duration_s * peak_rated) : 0.0;
  const auto power_w = [&](double clock_hz) {
    const double use =
        peak_rated > 0.0
            ? std::min(1.0, sample.flops / (sample.duration_s * peak_rated * clock_hz / hardware.rated_clock_hz))
            : 0.0;
    return static_w +
           m.dynamic_w * dynamic_power_scale(m.voltage, clock_hz, hardware.boost_clock_hz) *
               (m.busy_activity + activity_per_use * use) +
           m.hbm_w * hbm_use;
  };
  const double top = hardware.boost_clock_hz;
  if (lowest >= top || power_w(top) <= hardware.tdp_w) return top;
  double low = std::max({lowest, hardware.min_clock_hz, 1e-3 * top});
  if (power_w(low) > hardware.tdp_w) return low;
  double high = top;  // power_w(low) <= TDP < power_w(high); the power does not fall with the clock
  for (int i = 0; i < 60 && high - low > 1e-3 * units::kMega; ++i) {
    const double mid = 0.5 * (low + high);
    (power_w(mid) <= hardware.tdp_w ? low : high) = mid;
  }
  return low;
}

double roofline_duration_s(const KernelSample& sample, double compute, double half_efficiency_flops, double memory,
                           double peak, double bandwidth) {
  double compute_s = 0.0;
  if (sample.flops > 0.0 && peak > 0.0) {
    double eta = compute;
    if (half_efficiency_flops > 0.0) eta *= sample.flops / (sample.flops + half_efficiency_flops);
    compute_s = sample.flops / (peak * std::max(eta, 1e-12));
  }
  const double memory_s = sample.bytes > 0.0 ? sample.bytes / (bandwidth * std::max(memory, 1e-12)) : 0.0;
  return std::max(compute_s, memory_s);
}

namespace {
KernelClassFit fit_kernel_class(KernelClass kernel_class, const std::string& dtype_group, ElementwisePath path,
                                std::span<const KernelSample> samples, const HardwareReference& hardware,
                                const KernelFitOptions& options);
}  // namespace

KernelClassFit fit_kernel_class(KernelClass kernel_class, const std::string& dtype_group,
                                std::span<const KernelSample> samples, const HardwareReference& hardware,
                                const KernelFitOptions& options) {
  return fit_kernel_class(kernel_class, dtype_group, ElementwisePath::fused, samples, hardware, options);
}

KernelClassFit fit_elementwise_path(ElementwisePath path, std::span<const KernelSample> samples,
                                    const HardwareReference& hardware, const KernelFitOptions& options) {
  return fit_kernel_class(KernelClass::elementwise, "", path, samples, hardware, options);
}

namespace {
KernelClassFit fit_kernel_class(KernelClass kernel_class, const std::string& dtype_group, ElementwisePath path,
                                std::span<const KernelSample> samples, const HardwareReference& hardware,
                                const KernelFitOptions& options) {
  KernelClassFit fit;
  fit.kernel_class = kernel_class;
  fit.dtype_group = dtype_group;
  fit.path = path;
  fit.defaults = hardware.efficiency[static_cast<std::size_t>(kernel_class)];
  if (const double path_memory = hardware.elementwise_path_memory[static_cast<std::size_t>(path)];
      path != ElementwisePath::fused && path_memory > 0.0)
    fit.defaults.memory = path_memory;
  fit.compute = fit.defaults.compute;
  fit.half_efficiency_flops = fit.defaults.half_efficiency_flops;
  fit.memory = fit.defaults.memory;
  const bool held = options.uses_held_clock();
  const double clock = options.clock_hz > 0.0 ? options.clock_hz : hardware.rated_clock_hz;
  const double bandwidth = hardware.hbm_bandwidth_bytes_per_s;
  const bool compute_class = is_compute_class(kernel_class);

  // Points: long enough, with a size the model can use.
  std::vector<KernelSample> points;
  std::vector<double> peaks;
  std::set<std::size_t> inputs;
  std::vector<double> clocks;
  std::size_t narrow_heads = 0;
  for (const KernelSample& s : samples) {
    if (!(s.duration_s > 0.0)) continue;
    const double kernel_clock = held ? held_clock_hz(s, hardware) : clock;
    // An attention kernel at a head dimension below 128 reaches a share of the head-dim-128 efficiency the profile
    // states (kernels.attention_head_dim_64_ratio): fitted against that share of the peak, as runs apply it.
    const double head_dim_factor = kernel_class == KernelClass::attention
                                       ? attention_head_dim_factor(hardware.attention_head_dim_64_ratio, s.head_dim)
                                       : 1.0;
    const double peak = compute_class ? hardware.efficiency_peak_for(kernel_class, s.dtype) * head_dim_factor *
                                            kernel_clock / hardware.rated_clock_hz
                                      : 0.0;
    KernelSample usable = s;
    if (!compute_class) usable.flops = 0.0;
    if (usable.flops <= 0.0 && usable.bytes <= 0.0) continue;
    if (compute_class && usable.flops > 0.0 && peak <= 0.0) continue;
    if (s.duration_s < options.min_duration_s) {
      ++fit.excluded_short;
      continue;
    }
    if (head_dim_factor < 1.0) ++narrow_heads;
    points.push_back(usable);
    peaks.push_back(peak);
    clocks.push_back(kernel_clock);
    inputs.insert(s.input);
  }
  fit.inputs.assign(inputs.begin(), inputs.end());
  if (points.empty()) {
    fit.notes.push_back("no kernel of at least " + format_g(options.min_duration_s * 1e6) +
                        " µs with a FLOP or byte count: nothing fitted");
    return fit;
  }
  if (narrow_heads > 0)
    fit.notes.push_back(std::to_string(narrow_heads) +
                        " kernels with heads narrower than 128 fitted against the peak times the hardware file's "
                        "head-dimension factor (kernels.attention_head_dim_64_ratio " +
                        format_g(hardware.attention_head_dim_64_ratio) + " at 64): the efficiency is head dim 128's");
  fit.min_clock_hz = *std::min_element(clocks.begin(), clocks.end());
  fit.max_clock_hz = *std::max_element(clocks.begin(), clocks.end());
  fit.median_clock_hz = quantile(clocks, 0.5);
  if (held)
    fit.notes.push_back(
        "each kernel at the clock the hardware file's power model holds for its measured load under "
        "the " +
        format_g(hardware.tdp_w) + " W TDP: " + std::to_string(std::lround(fit.min_clock_hz / units::kMega)) + "-" +
        std::to_string(std::lround(fit.max_clock_hz / units::kMega)) + " MHz, median " +
        std::to_string(std::lround(fit.median_clock_hz / units::kMega)) + " MHz");
  fit.min_flops = fit.max_flops = points.front().flops;
  fit.min_bytes = fit.max_bytes = points.front().bytes;
  for (const auto& p : points) {
    fit.min_flops = std::min(fit.min_flops, p.flops);
    fit.max_flops = std::max(fit.max_flops, p.flops);
    fit.min_bytes = std::min(fit.min_bytes, p.bytes);
    fit.max_bytes = std::max(fit.max_bytes, p.bytes);
  }

  // Which limit binds at the hardware file's values decides which parameters the data can determine.
  std::vector<double> compute_sizes;
  std::size_t memory_points = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const KernelSample& p = points[i];
    KernelSample compute_only = p, memory_only = p;
    compute_only.bytes = 0.0;
    memory_only.flops = 0.0;
    const double c = roofline_duration_s(compute_only, fit.defaults.compute, fit.defaults.half_efficiency_flops,
                                         fit.defaults.memory, peaks[i], bandwidth);
    const double m = roofline_duration_s(memory_only, fit.defaults.compute, fit.defaults.half_efficiency_flops,
                                         fit.defaults.memory, peaks[i], bandwidth);
    if (c >= m && p.flops > 0.0)
      compute_sizes.push_back(p.flops);
    else if (p.bytes > 0.0)
      ++memory_points;
  }
  const bool kept = options.keep_asymptote.count(kernel_class) > 0;
  const bool free_compute = compute_class && !compute_sizes.empty() && !kept;
  const bool free_half = compute_class && !compute_sizes.empty() && distinct_sizes(compute_sizes) >= 2;
  if (kept && compute_class)
    fit.notes.push_back("asymptote kept at the hardware file's " + format_g(fit.defaults.compute) +
                        " (--keep-asymptote): only F_half fitted");
  const bool free_memory = memory_points > 0;
  if (compute_class && compute_sizes.empty())
    fit.notes.push_back("no compute-bound kernel: compute efficiency kept at the hardware file's value");
  if (compute_class && !compute_sizes.empty() && !free_half)
    fit.notes.push_back(
        "one problem size among the compute-bound kernels: half_efficiency_gflop kept at the "
        "hardware file's " +
        format_g(fit.defaults.half_efficiency_flops * 1e-9) + " and only the asymptote fitted");
  if (!free_memory)
    fit.notes.push_back(compute_class ? "no memory-bound kernel: memory efficiency kept at the hardware file's value"
                                      : "no kernel with a byte count: nothing fitted");
  fit.compute_fitted = free_compute;
  fit.half_fitted = free_half;
  fit.memory_fitted = free_memory;

  if (!compute_class && free_memory) {
    double bytes = 0.0, seconds = 0.0;
    for (const KernelSample& p : points) {
      bytes += p.bytes;
      seconds += p.duration_s;
    }
    fit.memory = std::clamp(bytes / (bandwidth * seconds), 1e-6, 1.0);
    return finish_fit(fit, points, peaks, bandwidth);
  }

  auto unpack = [&](std::span<const double> x, double& compute, double& half, double& memory) {
    std::size_t k = 0;
    compute = free_compute ? logistic(x[k++]) : fit.defaults.compute;
    half = free_half ? std::exp(x[k++]) : fit.defaults.half_efficiency_flops;
    memory = free_memory ? logistic(x[k++]) : fit.defaults.memory;
  };
  const ResidualFunction residuals = [&](std::span<const double> x, std::span<double> r) {
    double compute = 0.0, half = 0.0, memory = 0.0;
    unpack(x, compute, half, memory);
    for (std::size_t i = 0; i < points.size(); ++i)
      r[i] = std::log(roofline_duration_s(points[i], compute, half, memory, peaks[i], bandwidth)) -
             std::log(points[i].duration_s);
  };

  // A few deterministic starts over F_half (the parameter with the widest plausible range); keep the best.
  std::vector<std::array<double, 3>> starts;
  const double median_size = compute_sizes.empty() ? 1e10 : quantile(compute_sizes, 0.5);
  for (const double half : {median_size * 0.01, median_size * 0.1, median_size, median_size * 10.0})
    starts.push_back({0.7, half, 0.8});
  LevenbergMarquardtResult best;
  bool have_best = false;
  for (const auto& start : starts) {
    std::vector<double> x;
    if (free_compute) x.push_back(logit(start[0]));
    if (free_half) x.push_back(std::log(start[1]));
    if (free_memory) x.push_back(logit(start[2]));
    if (x.empty()) break;
    LevenbergMarquardtResult result = levenberg_marquardt(residuals, points.size(), x);
    if (!have_best || result.cost < best.cost) {
      best = std::move(result);
      have_best = true;
    }
    if (!free_half) break;  // the other parameters are unimodal: one start suffices
  }
  if (have_best) unpack(best.params, fit.compute, fit.half_efficiency_flops, fit.memory);
  // F_half driven to nothing (below a millionth of the smallest kernel, where it changes no time): the data show no
  // shape dependence, which the profile states as 0.
  if (free_half && fit.half_efficiency_flops < 1e-6 * fit.min_flops) fit.half_efficiency_flops = 0.0;
  return finish_fit(fit, points, peaks, bandwidth);
}

KernelClassFit finish_fit(KernelClassFit& fit, const std::vector<KernelSample>& points,
                          const std::vector<double>& peaks, double bandwidth) {
  const bool free_half = fit.half_fitted;
  std::vector<double> measured, predicted;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const KernelSample& p = points[i];
    measured.push_back(p.duration_s);
    predicted.push_back(
        roofline_duration_s(p, fit.compute, fit.half_efficiency_flops, fit.memory, peaks[i], bandwidth));
    KernelSample memory_only = p;
    memory_only.flops = 0.0;
    const double m =
        roofline_duration_s(memory_only, fit.compute, fit.half_efficiency_flops, fit.memory, peaks[i], bandwidth);
    (m >= predicted.back() && p.bytes > 0.0 ? fit.memory_bound : fit.compute_bound) += 1;
    fit.measured_s += measured.back();
    fit.predicted_s += predicted.back();
    fit.default_predicted_s += roofline_duration_s(p, fit.defaults.compute, fit.defaults.half_efficiency_flops,
                                                   fit.defaults.memory, peaks[i], bandwidth);
  }
  fit.stats = fit_stats(measured, predicted);
  // With one problem size the model predicts one time: R² (variance explained across sizes) is undefined.
  std::vector<double> sizes;
  for (const auto& p : points) sizes.push_back(p.flops > 0.0 ? p.flops : p.bytes);
  if (distinct_sizes(sizes) < 2) fit.stats.r2 = std::numeric_limits<double>::quiet_NaN();
  if ((fit.compute_fitted && fit.compute > 0.999) || (fit.memory_fitted && fit.memory > 0.999))
    fit.notes.push_back(
        "an efficiency reached its bound of 1: the kernels are slower than the roofline explains "
        "(fixed per-kernel cost), so this fit is not meaningful");
  if (free_half && fit.half_efficiency_flops > 10.0 * fit.max_flops)
    fit.notes.push_back("F_half lies far above the largest kernel: the asymptote is an extrapolation");
  return fit;
}

}  // namespace

std::vector<KernelClassFit> fit_kernel_classes(const MeasurementSet& measurements, const HardwareReference& hardware,
                                               const KernelFitOptions& options) {
  std::vector<KernelClassFit> fits;
  for (std::size_t c = 0; c < kKernelClassCount; ++c) {
    const auto kernel_class = static_cast<KernelClass>(c);
    // A reduction kernel with a path (PyTorch's multi-pass softmax, which streams as vectorized kernels do) is fitted
    // with its path only: the class's efficiency times the reduce kernels and the frameworks' fused reductions.
    // (The elementwise class's fit keeps every path: it is their mixture, which a fused framework kernel keeps.)
    std::vector<KernelSample> of_class;
    for (const auto& k : measurements.kernels)
      if (k.kernel_class == kernel_class &&
          (kernel_class != KernelClass::reduction || k.path == ElementwisePath::fused))
        of_class.push_back(k);
    if (of_class.empty()) continue;
    if (!is_compute_class(kernel_class)) {
      KernelClassFit fit = fit_kernel_class(kernel_class, "", of_class, hardware, options);
      fit.in_profile = fit.memory_fitted;
      fits.push_back(std::move(fit));
      if (kernel_class != KernelClass::elementwise) continue;
      // PyTorch's own kernels again by TensorIterator path: a roofline with one efficiency for the class cannot time
      // them (the class's fit is their mixture, which a fused framework kernel keeps). The vectorized path also takes
      // the reduction class's multi-pass softmax kernels, which stream as it does (classify_elementwise_path).
      for (const ElementwisePath path : kPytorchElementwisePaths) {
        std::vector<KernelSample> of_path;
        for (const auto& k : measurements.kernels)
          if (k.path == path) of_path.push_back(k);
        if (of_path.empty()) continue;
        KernelClassFit path_fit = fit_elementwise_path(path, of_path, hardware, options);
        path_fit.in_profile = path_fit.memory_fitted;
        fits.push_back(std::move(path_fit));
      }
      continue;
    }
    // Compute classes per element type; bf16 and fp16 run on the same tensor units at the same peak on every GPU
    // chopsim ships, so they are also pooled, and that pooled fit (the training precisions) goes into the profile.
    std::map<std::string, std::vector<KernelSample>> by_dtype;
    for (const auto& k : of_class) by_dtype[k.dtype].push_back(k);
    const bool both = by_dtype.contains("bf16") && by_dtype.contains("fp16");
    std::vector<KernelClassFit> group;
    for (const auto& [dtype, samples] : by_dtype)
      group.push_back(fit_kernel_class(kernel_class, dtype, samples, hardware, options));
    if (both) {
      std::vector<KernelSample> pooled = by_dtype["bf16"];
      pooled.insert(pooled.end(), by_dtype["fp16"].begin(), by_dtype["fp16"].end());
      group.push_back(fit_kernel_class(kernel_class, "bf16+fp16", pooled, hardware, options));
    }
    const std::string chosen = both ? "bf16+fp16" : by_dtype.contains("bf16") ? "bf16" : "fp16";
    for (auto& fit : group) {
      fit.in_profile = fit.dtype_group == chosen && (fit.compute_fitted || fit.half_fitted || fit.memory_fitted);
      fits.push_back(std::move(fit));
    }
  }
  return fits;
}

LaunchOverheadFit fit_launch_overhead(const MeasurementSet& measurements, const HardwareReference& hardware,
                                      const KernelFitOptions& options) {
  LaunchOverheadFit fit;
  fit.default_s = hardware.launch_overhead_s;
  fit.max_gap_s = options.max_gap_s;
  std::vector<double> all;
  std::set<std::size_t> inputs;
  for (const auto& stream : measurements.gaps) {
    if (stream.gaps_s.empty()) continue;
    ++fit.streams;
    for (const double gap : stream.gaps_s) {
      if (gap > options.max_gap_s) {
        ++fit.long_gaps;
        fit.long_gap_idle_s += gap;
      } else {
        all.push_back(gap);
      }
    }
    inputs.insert(stream.input);
  }
  fit.inputs.assign(inputs.begin(), inputs.end());
  fit.gaps = all.size();
  if (all.empty()) return fit;
  fit.fitted = true;
  double sum = 0.0;
  for (const double g : all) sum += g;
  // The mean gap (idle time / records, the figure TraceLens' gpu_timeline gives, without the host stalls): a
  // per-kernel constant that reproduces the stream's idle time when added to every kernel, as launch_overhead acts.
  fit.mean_s = sum / static_cast<double>(all.size());
  fit.median_s = quantile(all, 0.5);
  fit.p90_s = quantile(all, 0.9);
  fit.max_s = *std::max_element(all.begin(), all.end());
  return fit;
}

InterferenceFit fit_comm_compute_interference(const MeasurementSet& measurements, const HardwareReference& hardware,
                                              const KernelFitOptions& options) {
  InterferenceFit fit;
  fit.default_slowdown = hardware.comm_compute_slowdown;
  struct Sums {
    double overlapped = 0.0, isolated = 0.0;
  };
  Sums all, compute, other;
  std::vector<double> group_ratios;
  std::set<std::size_t> inputs;
  for (const OverlapGroup& group : measurements.overlaps) {
    if (group.isolated_s.size() < InterferenceFit::kMinIsolated ||
        group.overlapped_s.size() < InterferenceFit::kMinOverlapped)
      continue;
    // Medians: a run's duration in a trace also holds the odd preemption or clock step.
    const double isolated = quantile(group.isolated_s, 0.5);
    if (isolated < options.min_interference_kernel_s) {
      ++fit.short_groups;
      continue;
    }
    double overlapped = 0.0;
    for (const double d : group.overlapped_s) overlapped += d;
    const double equivalent = isolated * static_cast<double>(group.overlapped_s.size());
    const bool compute_class = group.kernel_class == KernelClass::gemm || group.kernel_class == KernelClass::attention;
    for (Sums* sums : {&all, compute_class ? &compute : &other}) {
      sums->overlapped += overlapped;
      sums->isolated += equivalent;
    }
    (compute_class ? fit.compute_groups : fit.other_groups) += 1;
    group_ratios.push_back(quantile(group.overlapped_s, 0.5) / isolated);
    fit.overlapped_runs += group.overlapped_s.size();
    inputs.insert(group.input);
  }
  fit.groups = group_ratios.size();
  fit.inputs.assign(inputs.begin(), inputs.end());
  if (fit.groups < InterferenceFit::kMinGroups) return fit;
  fit.fitted = true;
  fit.overlapped_s = all.overlapped;
  fit.isolated_equivalent_s = all.isolated;
  fit.ratio = all.overlapped / all.isolated;
  fit.median_group_ratio = quantile(group_ratios, 0.5);
  if (compute.isolated > 0.0) fit.compute_ratio = compute.overlapped / compute.isolated;
  if (other.isolated > 0.0) fit.other_ratio = other.overlapped / other.isolated;
  fit.from_compute_kernels = fit.compute_groups >= InterferenceFit::kMinGroups;
  fit.slowdown = std::max(0.0, 1.0 - 1.0 / fit.chosen_ratio());
  return fit;
}

HostLaunchFit fit_host_launch(const MeasurementSet& measurements) {
  HostLaunchFit fit;
  std::vector<double> intervals;
  std::set<std::size_t> inputs;
  for (const HostLaunches& thread : measurements.host_launches) {
    fit.launches += thread.launches;
    if (thread.waited_intervals_s.empty()) continue;
    intervals.insert(intervals.end(), thread.waited_intervals_s.begin(), thread.waited_intervals_s.end());
    inputs.insert(thread.input);
  }
  fit.intervals = intervals.size();
  fit.inputs.assign(inputs.begin(), inputs.end());
  if (fit.intervals < HostLaunchFit::kMinIntervals) return fit;
  fit.fitted = true;
  fit.median_s = quantile(intervals, 0.5);
  fit.p25_s = quantile(intervals, 0.25);
  fit.p75_s = quantile(intervals, 0.75);
  return fit;
}

}  // namespace chopsim
