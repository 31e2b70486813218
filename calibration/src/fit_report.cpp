// The fit report (Markdown) of a calibration, built from CalibrationResult alone in a fixed order with fixed number
// formats, so the same inputs give the same bytes.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "chopsim/calibration/profile.hpp"
#include "chopsim/common/units.hpp"
#include "profile_text.hpp"

namespace chopsim {

using namespace calibration_detail;

namespace {

/// A fit's row label: its class, and the TensorIterator path of a path's fit ("elementwise, vectorized").
std::string fit_name(const KernelClassFit& fit) {
  std::string name(kernel_class_name(fit.kernel_class));
  if (fit.path != ElementwisePath::fused) name += ", " + std::string(elementwise_path_name(fit.path));
  return name;
}

/// The report's section on the power model fitted to whole runs (`--power-runs`).
void render_run_power(std::ostream& out, const CalibrationResult& result) {
  const RunPowerFit& r = result.run_power;
  const PowerModelReference& m = result.hardware.power_model;
  out << "\n## Power from whole runs (the profile's `power_model` weights and knee, `governor.control_period_ms`)\n\n"
      << "Each run of " << input_refs(r.inputs)
      << " simulated with this profile's kernels, idle and dynamic power and the firmware governor at the GPU's "
         "power limit; the voltage knee, the busy and tensor-core activity weights and the governor's control "
         "period searched (a grid over the "
         "plausible range, then a compass search from its four best points; "
      << r.evaluations
      << " parameter sets) for the least squares of the relative errors of the mean power, the mean core clock and "
         "the largest power reading against the telemetry over each run's window (mean and largest of every reading "
         "of every GPU; the simulation's clock while kernels run, its energy over its time, and the largest reading "
         "a sensor averaging 25 ms of every 100 ms gives of its last iteration's power over the window, the median "
         "over the sensor's phase).\n\n"
      << "| parameter | fitted | hardware file |\n|---|---|---|\n"
      << "| voltage knee | " << num(r.knee_hz / units::kMega) << " MHz | " << num(m.voltage.knee_hz / units::kMega)
      << " MHz |\n"
      << "| busy activity | " << num(r.busy_activity) << " | " << num(m.busy_activity) << " |\n"
      << "| tensor activity | " << num(r.tensor_activity) << " | " << num(m.tensor_activity) << " |\n"
      << "| governor control period | " << num(r.control_period_s * 1e3) << " ms | "
      << num(r.file_control_period_s * 1e3) << " ms |\n\n"
      << "| run | readings | mean W measured | file | fitted | MHz measured | file | fitted | largest W measured | "
         "file "
         "| fitted |\n"
      << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  const auto with_error = [](double predicted, double measured) {
    char text[64];
    std::snprintf(text, sizeof text, " (%+.1f %%)", (predicted - measured) / measured * 100.0);
    return num(predicted) + text;
  };
  for (const RunPowerRow& row : r.runs) {
    const double mhz = units::kMega;
    out << "| " << row.label << " | " << row.measured.readings << " | " << num(row.measured.power_w) << " | "
        << with_error(row.before_power_w, row.measured.power_w) << " | "
        << with_error(row.after_power_w, row.measured.power_w) << " | " << num(row.measured.clock_hz / mhz) << " | "
        << with_error(row.before_clock_hz / mhz, row.measured.clock_hz / mhz) << " | "
        << with_error(row.after_clock_hz / mhz, row.measured.clock_hz / mhz) << " | "
        << num(row.measured.largest_power_w) << " | " << with_error(row.before_largest_w, row.measured.largest_power_w)
        << " | " << with_error(row.after_largest_w, row.measured.largest_power_w) << " |\n";
  }
  out << "\nNot fitted, a check: the lowest clock. Measured: the lowest reading in the window; simulated: the lowest "
         "clock of the last iteration (the governor's clock at any instant, so at or below what readings every "
         "50-100 ms would catch).\n\n"
      << "| run | lowest MHz measured | file | fitted |\n|---|---|---|---|\n";
  for (const RunPowerRow& row : r.runs)
    out << "| " << row.label << " | " << num(row.measured.lowest_clock_hz / units::kMega) << " | "
        << with_error(row.before_lowest_clock_hz / units::kMega, row.measured.lowest_clock_hz / units::kMega) << " | "
        << with_error(row.after_lowest_clock_hz / units::kMega, row.measured.lowest_clock_hz / units::kMega) << " |\n";
  out << "\nRMS of the relative errors: " << percent(r.rms_before) << " with the hardware file's values, "
      << percent(r.rms_after)
      << " fitted. Under the power limit the governor trades clock for power, so a run's mean clock says how much "
         "power its load draws per unit of g(f): the fit learns how that differs between loads (the weights) and "
         "how steeply g(f) rises (the knee); the largest reading says how far power overshoots the cap before the "
         "governor answers (the weights' spread between kernels, the control period). P_dyn stays the trace's.\n";
}

}  // namespace

std::string render_fit_report(const CalibrationResult& result) {
  std::ostringstream out;
  const HardwareReference& hw = result.hardware;
  const double clock = result.kernel_options.clock_hz > 0.0 ? result.kernel_options.clock_hz : hw.rated_clock_hz;
  out << "# Calibration fit report: " << hw.name << "\n\n";
  out << "Written by `chopsim calibrate` (docs/calibration.md explains the fits). Hardware file: `" << hw.path
      << "`. Relative residual = |model - measured| / measured; R² is taken on log durations (the fits minimise "
         "relative errors), except for the thermal fit (on temperature).\n\n";

  out << "## Inputs\n\n| # | file | kind | SHA-256 | kernels | collectives | gaps | telemetry |\n"
         "|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < result.inputs.size(); ++i) {
    const InputFile& f = result.inputs[i];
    out << "| " << i + 1 << " | `" << f.path << "` | " << f.kind << " | `" << f.sha256.substr(0, 16) << "…` | "
        << f.kernels << " | " << f.collectives << " | " << f.gaps << " | " << f.telemetry << " |\n";
  }
  bool any_note = false;
  for (std::size_t i = 0; i < result.inputs.size(); ++i)
    for (const auto& note : result.inputs[i].notes) {
      if (!any_note) out << "\n";
      any_note = true;
      out << "* [" << i + 1 << "] " << note << "\n";
    }
  out << "\n## Roofline constants\n\n";
  if (result.kernel_options.uses_held_clock())
    out << "Each kernel is taken at the clock the hardware file's power model holds for its measured load under the "
        << num(hw.tdp_w) << " W TDP (`--clock-mhz held`; each class's clocks are in its notes). ";
  out << "Peaks (dense) at the measurement clock " << num(clock / units::kMega) << " MHz (rated "
      << num(hw.rated_clock_hz / units::kMega) << " MHz"
      << (result.kernel_options.clock_source.empty() ? std::string()
                                                     : "; measurement clock: " + result.kernel_options.clock_source)
      << "): ";
  bool first = true;
  for (const auto& [dtype, peak] : hw.peak_flops_per_s) {
    if (peak <= 0.0) continue;
    out << (first ? "" : ", ") << dtype << " " << num(peak * clock / hw.rated_clock_hz / units::kTera) << " TFLOP/s";
    first = false;
  }
  out << "; HBM " << num(hw.hbm_bandwidth_bytes_per_s / units::kTera) << " TB/s. Kernels shorter than "
      << num(result.kernel_options.min_duration_s / units::kMicrosecond)
      << " µs are left out of the efficiency fits.\n\n";

  out << "## Kernel efficiencies\n\n"
         "Model: d = max(F / (P · η_max · F / (F + F_half)), B / (BW · η_m)), fitted by Levenberg-Marquardt on log "
         "durations. Values in parentheses are the hardware file's; **bold** rows are written to the profile.\n\n"
         "| class | dtype | points (short, left out) | compute / memory-bound | R² | median | p90 | η_max | "
         "F_half (GFLOP) | η_m |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& fit : result.kernels) {
    const std::string b = fit.in_profile ? "**" : "";
    auto value = [&](bool fitted, double v, double d, double scale) {
      return (fitted ? b + num(v / scale) + b : std::string("—")) + " (" + num(d / scale) + ")";
    };
    out << "| " << b << fit_name(fit) << b << " | " << (fit.dtype_group.empty() ? "—" : fit.dtype_group) << " | "
        << fit.stats.points << " (" << fit.excluded_short << ") | " << fit.compute_bound << " / " << fit.memory_bound
        << " | " << (fit.stats.points > 0 ? r2(fit.stats.r2) : "-") << " | "
        << (fit.stats.points > 0 ? percent(fit.stats.median_rel_residual) : "-") << " | "
        << (fit.stats.points > 0 ? percent(fit.stats.p90_rel_residual) : "-") << " | "
        << value(fit.compute_fitted, fit.compute, fit.defaults.compute, 1.0) << " | "
        << value(fit.half_fitted, fit.half_efficiency_flops, fit.defaults.half_efficiency_flops, units::kGiga) << " | "
        << value(fit.memory_fitted, fit.memory, fit.defaults.memory, 1.0) << " |\n";
  }
  bool notes = false;
  for (const auto& fit : result.kernels) {
    std::string sizes;
    if (fit.stats.points > 0) {
      if (fit.max_flops > 0.0)
        sizes += "F " + num(fit.min_flops / units::kGiga, 3) + "–" + num(fit.max_flops / units::kGiga, 3) + " GFLOP";
      if (fit.max_bytes > 0.0)
        sizes += std::string(sizes.empty() ? "" : ", ") + "B " + num(fit.min_bytes / units::kMega, 3) + "–" +
                 num(fit.max_bytes / units::kMega, 3) + " MB";
    }
    std::string text = sizes;
    for (const auto& n : fit.notes) text += (text.empty() ? "" : "; ") + n;
    if (text.empty()) continue;
    if (!notes) out << "\n";
    notes = true;
    out << "* " << fit_name(fit) << (fit.dtype_group.empty() ? "" : " " + fit.dtype_group) << " "
        << input_refs(fit.inputs) << ": " << text << "\n";
  }

  // Where a step's time goes, class by class, before and after: the fitted kernels' measured total against the
  // roofline's total for the same kernels with the hardware file's values and with the profile's.
  double all_measured = 0.0;
  // (A path's fit covers kernels its class's fit already counts.)
  for (const auto& fit : result.kernels)
    if (fit.in_profile && fit.path == ElementwisePath::fused) all_measured += fit.measured_s;
  if (all_measured > 0.0) {
    out << "\nTime by class, over the fitted kernels of the profile's rows: measured, and the roofline's time for the "
           "same kernels with the hardware file's values and with the fitted ones.\n\n"
           "| class | measured (ms) | share | hardware file (ms) | error | fitted (ms) | error |\n"
           "|---|---|---|---|---|---|---|\n";
    for (const auto& fit : result.kernels) {
      if (!fit.in_profile || !(fit.measured_s > 0.0)) continue;
      const auto error = [&](double predicted) { return percent((predicted - fit.measured_s) / fit.measured_s); };
      out << "| " << fit_name(fit) << " | " << num(fit.measured_s * 1e3) << " | "
          << percent(fit.measured_s / all_measured) << " | " << num(fit.default_predicted_s * 1e3) << " | "
          << error(fit.default_predicted_s) << " | " << num(fit.predicted_s * 1e3) << " | " << error(fit.predicted_s)
          << " |\n";
    }
  }

  out << "\n## Launch overhead\n\n";
  const LaunchOverheadFit& l = result.launch;
  if (l.fitted)
    out << "Gaps between consecutive GPU records on a stream " << input_refs(l.inputs) << ": " << l.gaps << " gaps on "
        << l.streams << " streams; mean **" << num(l.mean_s * 1e6) << " µs** (the profile's "
        << "`launch_overhead_us`; hardware file " << num(l.default_s * 1e6) << " µs), median " << num(l.median_s * 1e6)
        << " µs, p90 " << num(l.p90_s * 1e6) << " µs, max " << num(l.max_s * 1e6) << " µs. " << l.long_gaps
        << " gaps longer than " << num(l.max_gap_s * 1e6) << " µs (" << num(l.long_gap_idle_s * 1e6)
        << " µs of idle time in all) are host stalls and left out.\n";
  else
    out << "No input has a kernel timeline (a trace or store): `launch_overhead_us` keeps the hardware file's "
        << num(l.default_s * 1e6) << " µs.\n";

  out << "\n## Compute under communication\n\n";
  const InterferenceFit& i = result.interference;
  if (i.fitted) {
    out << "Kernels (same name, grid and block on one GPU) timed both alone and with an NCCL/RCCL kernel running on "
           "their GPU throughout "
        << input_refs(i.inputs) << ": " << i.groups << " kernels (" << i.compute_groups << " GEMM/attention, "
        << i.other_groups << " others) with at least " << InterferenceFit::kMinIsolated << " runs alone and "
        << InterferenceFit::kMinOverlapped << " overlapped; " << i.overlapped_runs << " overlapped runs take "
        << num(i.overlapped_s * 1e3) << " ms against " << num(i.isolated_equivalent_s * 1e3)
        << " ms at their kernel's median alone: " << num(i.ratio) << "x; GEMM/attention "
        << (i.compute_groups > 0 ? "**" + num(i.compute_ratio) + "x**" : std::string("-")) << ", others "
        << (i.other_groups > 0 ? num(i.other_ratio) + "x" : std::string("-")) << "; median over kernels "
        << num(i.median_group_ratio) << "x (time-weighted ratios are larger when long kernels lose more: a GEMM "
        << "grid that no longer fits in one wave). `comm_compute_slowdown` **" << num(i.slowdown) << "** = 1 − 1/"
        << num(i.chosen_ratio()) << " from "
        << (i.from_compute_kernels ? "the GEMM/attention kernels (what LLM training overlaps with its collectives)"
                                   : "all kernels (too few GEMM/attention kernels)")
        << " (hardware file " << num(i.default_slowdown) << ").";
    if (i.short_groups > 0)
      out << " " << i.short_groups << " kernels shorter than "
          << num(result.kernel_options.min_interference_kernel_s * 1e6)
          << " µs alone are left out (short kernels lose more to block scheduling than to shared SMs).";
    out << "\n";
  } else {
    out << "Fewer than " << InterferenceFit::kMinGroups << " kernels timed both alone and under an NCCL/RCCL kernel ("
        << i.groups << "): `comm_compute_slowdown` keeps the hardware file's " << num(i.default_slowdown) << ".\n";
  }

  out << "\n## Host time per kernel launch\n\n";
  const HostLaunchFit& h = result.host_launch;
  if (h.fitted) {
    out << "Intervals between consecutive launch calls on one CPU thread where the GPU waited for the later launch "
           "(its kernel started within "
        << num(HostLaunches::kWaitedWithin * 1e6) << " µs of the call's end and the earlier one had ended) "
        << input_refs(h.inputs) << ": " << h.intervals << " of " << h.launches << " launches, median **"
        << num(h.median_s * 1e6) << " µs** (p25 " << num(h.p25_s * 1e6) << ", p75 " << num(h.p75_s * 1e6)
        << " µs). This is the host's own time per launch, the framework's Python and dispatch included: a run's "
           "`training.host_launch_us` (not part of this hardware profile; chopsim's default is 43 µs).\n";
  } else {
    out << "Fewer than " << HostLaunchFit::kMinIntervals << " launch intervals where the GPU waited for the host ("
        << h.intervals << " of " << h.launches
        << " launches; only Kineto traces carry launch calls): no host launch time measured.\n";
  }

  out << "\n## Collectives\n\nt = a + b·S per (kind, GPUs, scope), least squares of relative errors; bus bandwidth "
         "= factor / b as nccl-tests reports it (all-reduce 2(n−1)/n, all-gather and reduce-scatter (n−1)/n, "
         "send/recv 1).\n\n";
  const CollectiveCalibration& c = result.collectives;
  if (c.fits.empty()) {
    out << "No collective measurements.\n";
  } else {
    out << "| kind | GPUs | scope | points | sizes | a (µs) | bus bandwidth (GB/s) | R² | median | p90 |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& f : c.fits)
      out << "| " << collective_kind_name(f.kind) << " | " << f.group_size << " | " << to_string(f.scope) << " | "
          << f.points << " | " << bytes_text(f.min_bytes) << " – " << bytes_text(f.max_bytes) << " | "
          << num(f.alpha_s * 1e6) << (f.latency_fitted ? "" : " (not a latency)") << " | "
          << (f.bandwidth_fitted ? num(f.bus_bandwidth_bytes_per_s / units::kGiga) : std::string("—")) << " | "
          << r2(f.stats.r2) << " | " << percent(f.stats.median_rel_residual) << " | "
          << percent(f.stats.p90_rel_residual) << " |\n";
    bool fit_notes = false;
    for (const auto& f : c.fits)
      for (const auto& n : f.notes) {
        if (!fit_notes) out << "\n";
        fit_notes = true;
        out << "* " << collective_kind_name(f.kind) << " on " << f.group_size << " GPUs (" << to_string(f.scope) << ") "
            << input_refs(f.inputs) << ": " << n << "\n";
      }
    out << "\nProfile values (node links: " << (c.node_links == NodeLinks::nvswitch ? "NVSwitch" : "xGMI full mesh")
        << "):\n\n";
    if (c.link_bandwidth_fitted)
      out << "* `intra_node_link.efficiency` **" << num(c.link_efficiency) << "** (hardware file "
          << num(hw.intra_node_link_efficiency) << "): " << num(c.link_bandwidth_bytes_per_s / units::kGiga)
          << " GB/s per link achieved of the nominal " << num(hw.intra_node_link_bandwidth_bytes_per_s / units::kGiga)
          << " GB/s; " << c.link_bandwidth_from << ".\n";
    else
      out << "* `intra_node_link.efficiency`: file value kept: "
          << (c.link_bandwidth_from.empty() ? std::string("no intra-node ring collective with a bandwidth")
                                            : c.link_bandwidth_from)
          << ".\n";
    if (c.step_latency_fitted)
      out << "* `collectives.step_latency_us` **" << num(c.step_latency_s * 1e6) << "** (default 2; per-step α "
          << num(c.per_step_alpha_s * 1e6) << " µs): " << c.step_latency_from
          << ". The link latency (`intra_node_link.latency_us`) keeps the hardware file's value: timings give only "
             "their sum.\n";
    else
      out << "* `collectives.step_latency_us`: default kept: "
          << (c.step_latency_from.empty() ? std::string("no intra-node ring collective with small messages")
                                          : c.step_latency_from)
          << ".\n";
    if (c.nic_bandwidth_fitted)
      out << "* `nic.efficiency` **" << num(c.nic_efficiency) << "** (hardware file " << num(hw.nic_efficiency)
          << "): " << num(c.nic_bandwidth_bytes_per_s * 8.0 / units::kGiga) << " Gbit/s achieved of the nominal "
          << num(hw.nic_bandwidth_bytes_per_s * 8.0 / units::kGiga) << " Gbit/s; " << c.nic_bandwidth_from << ".\n";
    if (!c.checks.empty()) {
      out << "\nchopsim's alpha-beta time with the profile's values (links at the nominal bandwidth times the "
             "efficiency, route latency "
          << num(hw.intra_node_link_latency_s * 1e6)
          << " µs + step latency per step, bandwidth of the links a ring drives) against the measurements:\n\n"
             "| kind | GPUs | points | R² | median | p90 |\n|---|---|---|---|---|---|\n";
      for (const auto& check : c.checks)
        out << "| " << collective_kind_name(check.kind) << " | " << check.group_size << " | " << check.stats.points
            << " | " << r2(check.stats.r2) << " | " << percent(check.stats.median_rel_residual) << " | "
            << percent(check.stats.p90_rel_residual) << " |\n";
    }
  }

  out << "\n## Telemetry\n\n";
  const TelemetryFit& t = result.telemetry;
  if (t.gpus == 0) {
    out << "No telemetry.\n";
  } else {
    out << "Readings joined per GPU on the absolute clock " << input_refs(t.inputs) << ", " << t.gpus
        << " GPUs (the section `telemetry_fit` of the profile).\n\n| quantity | value | from | hardware file |\n"
           "|---|---|---|---|\n";
    if (t.idle_points > 0)
      out << "| idle power | " << num(t.idle_power_w) << " W | median of " << t.idle_points
          << " readings at activity ≤ 1 % | " << num(hw.idle_power_w) << " W |\n";
    if (t.load_points > 0)
      out << "| load power | " << num(t.load_power_w) << " W | median of " << t.load_points
          << " readings at activity ≥ 90 % | TDP " << num(hw.tdp_w) << " W |\n";
    if (t.power_fitted)
      out << "| P = p0 + p1·activity | p0 " << num(t.power_at_zero_activity_w) << " W, p1 "
          << num(t.power_per_activity_w) << " W | " << stats_comment(t.power_stats) << " | — |\n";
    if (t.thermal_fitted) {
      out << "| thermal resistance (" << t.sensor << ") | " << num(t.resistance_k_per_w) << " K/W | "
          << t.thermal_stats.points << " consecutive readings, R² " << r2(t.thermal_stats.r2) << " (temperature), "
          << "median abs. error " << num(t.thermal_median_abs_k, 2) << " K, p90 " << num(t.thermal_p90_abs_k, 2)
          << " K; median / p90 relative error of the rise above ambient "
          << percent(t.thermal_stats.median_rel_residual) << " / " << percent(t.thermal_stats.p90_rel_residual) << " | "
          << num(hw.thermal_resistance_k_per_w) << " K/W |\n";
      if (t.thermal_step_points > 0)
        out << "| thermal error at power steps > 100 W | median " << num(t.thermal_step_median_abs_k, 2) << " K, p90 "
            << num(t.thermal_step_p90_abs_k, 2) << " K | " << t.thermal_step_points << " readings | — |\n";
      out << "| thermal time constant | " << num(t.time_constant_s) << " s | same fit | "
          << num(hw.thermal_resistance_k_per_w * hw.thermal_capacitance_j_per_k) << " s |\n";
      out << "| thermal capacitance | " << num(t.capacitance_j_per_k) << " J/K | τ / R | "
          << num(hw.thermal_capacitance_j_per_k) << " J/K |\n";
      out << "| ambient (fitted intercept) | " << num(t.ambient_c) << " °C | same fit | — |\n";
    }
    for (const auto& n : t.notes) out << "\n* " << n;
    if (!t.notes.empty()) out << "\n";
  }

  out << "\n## Dynamic power (the profile's `power_model.dynamic_w`)\n\n";
  const DynamicPowerFit& p = result.power_model;
  if (!p.fitted) {
    out << "Not fitted: " << p.not_fitted_because << ".\n";
  } else {
    const PowerModelReference& m = hw.power_model;
    out << "The power model (models/power.hpp) P = static(T) + P_dyn·g(f)·a + P_hbm·u, with the activity weights, HBM "
           "power and voltage curve of the hardware file, solved for P_dyn at the operating point the telemetry "
        << input_refs(p.inputs) << " read while the traced kernels ran (" << p.readings << " readings over "
        << num(p.span_s, 3) << " s of kernels, " << p.kernels << " kernels):\n\n"
        << "| quantity | value | from |\n|---|---|---|\n"
        << "| mean power | " << num(p.mean_power_w) << " W | readings |\n"
        << "| mean clock | " << num(p.mean_clock_hz / units::kMega) << " MHz | readings |\n"
        << "| mean g(f) | " << num(p.mean_dynamic_scale) << " | readings, the file's voltage curve |\n"
        << "| mean temperature | " << num(p.mean_temperature_c) << " °C | readings |\n"
        << "| busy | " << percent(p.busy) << " | kernel time / span |\n"
        << "| tensor-core use | " << percent(p.tensor) << " | GEMM/attention FLOPs / (peak at the clock × span) |\n"
        << "| vector use | " << percent(p.vector) << " | other FLOPs / (peak × span) |\n"
        << "| HBM use | " << percent(p.hbm) << " | bytes / (bandwidth × span) |\n"
        << "| activity a | " << num(p.activity) << " | " << num(m.busy_activity) << "·busy + " << num(m.tensor_activity)
        << "·tensor + " << num(m.vector_activity) << "·vector |\n"
        << "| static power | " << num(p.static_w) << " W | idle " << num(p.idle_w) << " W + leakage |\n"
        << "| HBM power | " << num(p.hbm_power_w) << " W | P_hbm " << num(m.hbm_w) << " W × u |\n"
        << "| **P_dyn** | **" << num(p.dynamic_w) << " W** | hardware file: " << num(m.dynamic_w) << " W |\n";
  }
  if (result.run_power.fitted) render_run_power(out, result);
  return out.str();
}

}  // namespace chopsim
