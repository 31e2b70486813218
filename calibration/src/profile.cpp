// Calibration from inputs to files: the fits, the calibration profile (YAML; the fit report is fit_report.cpp), and
// the profile and report written together. Both files are built from CalibrationResult alone, in a fixed order with
// fixed number formats, so the same inputs give the same bytes.

#include "chopsim/calibration/profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "profile_text.hpp"

namespace chopsim {

using namespace calibration_detail;

CalibrationResult calibrate(const MeasurementSet& measurements, const HardwareReference& hardware,
                            const KernelFitOptions& kernel_options, NodeLinks node_links) {
  CalibrationResult result;
  result.hardware = hardware;
  result.inputs = measurements.inputs;
  result.kernel_options = kernel_options;
  result.kernels = fit_kernel_classes(measurements, hardware, kernel_options);
  result.launch = fit_launch_overhead(measurements, hardware, kernel_options);
  result.interference = fit_comm_compute_interference(measurements, hardware, kernel_options);
  result.host_launch = fit_host_launch(measurements);
  result.collectives = fit_collectives(measurements, hardware, node_links);
  result.telemetry = fit_telemetry(measurements);
  result.power_model = fit_dynamic_power(measurements, hardware, result.telemetry, kernel_options.clock_hz);
  return result;
}

std::string render_profile_yaml(const CalibrationResult& result) {
  std::ostringstream out;
  const HardwareReference& hw = result.hardware;
  out << "# chopsim calibration profile for " << hw.name << ", fitted by `chopsim calibrate` (docs/calibration.md)";
  out << (result.report_label.empty() ? std::string(".\n") : "; fit report: " + result.report_label + "\n");
  out << "# Inputs (SHA-256 of each file; [n] below refers to them):\n";
  for (std::size_t i = 0; i < result.inputs.size(); ++i)
    out << "#   [" << i + 1 << "] " << result.inputs[i].path << " (" << result.inputs[i].kind << ") "
        << result.inputs[i].sha256 << "\n";
  out << "# `kernels`, `intra_node_link`, `nic`, `power_w` (idle only), `power_model` and `governor` override the keys "
         "of\n"
         "# the same name and unit in the hardware file (docs/configs.md); keys not written here keep the hardware "
         "file's\n"
         "# values.\n"
         "# `collectives` holds run-level collective-model parameters (a run's `collectives:` section). "
         "`telemetry_fit`\n"
         "# is informational.\n";
  out << line(0, "profile_version", std::to_string(kCalibrationProfileVersion));
  out << line(0, "hardware", hw.name);

  // kernels
  std::vector<const KernelClassFit*> in_profile;
  for (const auto& fit : result.kernels)
    if (fit.in_profile) in_profile.push_back(&fit);
  const InterferenceFit& interference = result.interference;
  if (result.launch.fitted || interference.fitted || !in_profile.empty()) {
    out << line(0, "kernels", "");
    if (result.launch.fitted)
      out << line(2, "launch_overhead_us", num(result.launch.mean_s / units::kMicrosecond),
                  "mean gap between GPU records on a stream (gaps <= " + num(result.launch.max_gap_s * 1e6) + " µs), " +
                      std::to_string(result.launch.gaps) + " gaps " + input_refs(result.launch.inputs) +
                      "; file: " + num(result.launch.default_s * 1e6));
    if (interference.fitted)
      out << line(2, "comm_compute_slowdown", num(interference.slowdown),
                  std::string(interference.from_compute_kernels ? "GEMMs" : "kernels") +
                      " overlapped by NCCL/RCCL run " + num(interference.chosen_ratio()) + "x as long, " +
                      std::to_string(interference.chosen_groups()) + " kernels " + input_refs(interference.inputs) +
                      "; file: " + num(interference.default_slowdown));
    if (!in_profile.empty()) {
      out << line(2, "efficiency", "");
      for (const KernelClassFit* fit : in_profile) {
        if (fit->path != ElementwisePath::fused) continue;
        std::string what = fit->dtype_group.empty() ? std::string() : fit->dtype_group + ", ";
        out << line(4, std::string(kernel_class_name(fit->kernel_class)), "",
                    what + stats_comment(fit->stats) + " " + input_refs(fit->inputs));
        if (fit->compute_fitted) out << line(6, "compute", num(fit->compute), "file: " + num(fit->defaults.compute));
        if (fit->memory_fitted) out << line(6, "memory", num(fit->memory), "file: " + num(fit->defaults.memory));
        if (fit->half_fitted)
          out << line(6, "half_efficiency_gflop", num(fit->half_efficiency_flops / units::kGiga),
                      "file: " + num(fit->defaults.half_efficiency_flops / units::kGiga));
      }
      bool paths = false;
      for (const KernelClassFit* fit : in_profile) {
        if (fit->path == ElementwisePath::fused) continue;
        if (!paths) out << line(2, "pytorch_elementwise_memory", "");
        paths = true;
        out << line(4, std::string(elementwise_path_name(fit->path)), num(fit->memory),
                    stats_comment(fit->stats) + " " + input_refs(fit->inputs) + "; file: " + num(fit->defaults.memory));
      }
    }
  }
  const CollectiveCalibration& c = result.collectives;
  // Fitted bandwidths are written as efficiencies of the hardware file's nominal rates (runs build links with
  // bandwidth x efficiency; writing a bandwidth would derate it twice).
  if (c.link_bandwidth_fitted) {
    out << line(0, "intra_node_link", "");
    out << line(2, "efficiency", num(c.link_efficiency),
                "NCCL-achieved " + num(c.link_bandwidth_bytes_per_s / units::kGiga) + " GB/s per link of the nominal " +
                    num(hw.intra_node_link_bandwidth_bytes_per_s / units::kGiga) +
                    "; file: " + num(hw.intra_node_link_efficiency));
  }
  if (c.nic_bandwidth_fitted) {
    out << line(0, "nic", "");
    out << line(2, "efficiency", num(c.nic_efficiency),
                "achieved " + num(c.nic_bandwidth_bytes_per_s * 8.0 / units::kGiga) + " Gbit/s of the nominal " +
                    num(hw.nic_bandwidth_bytes_per_s * 8.0 / units::kGiga) + "; file: " + num(hw.nic_efficiency));
  }
  if (c.step_latency_fitted) {
    out << line(0, "collectives", "");
    out << line(2, "step_latency_us", num(c.step_latency_s / units::kMicrosecond),
                "per algorithm step on top of the link latency; default 2");
  }
  const TelemetryFit& t = result.telemetry;
  const DynamicPowerFit& p = result.power_model;
  if (p.fitted) {
    if (t.idle_points > 0) {
      out << line(0, "power_w", "");
      out << line(2, "idle", num(p.idle_w),
                  "median of " + std::to_string(t.idle_points) + " readings at activity <= 1 % " +
                      input_refs(t.inputs) + "; file: " + num(hw.idle_power_w));
    }
  }
  const RunPowerFit& runs = result.run_power;
  if (p.fitted || runs.fitted) out << line(0, "power_model", "");
  if (p.fitted)
    out << line(2, "dynamic_w", num(p.dynamic_w),
                "the traced kernels' load draws the " + num(p.mean_power_w, 3) + " W read at " +
                    num(p.mean_clock_hz / units::kMega, 4) + " MHz, " + std::to_string(p.readings) + " readings " +
                    input_refs(p.inputs) + "; file: " + num(hw.power_model.dynamic_w));
  if (runs.fitted) {
    const std::string fit = "the " + std::to_string(runs.runs.size()) + " runs of " + input_refs(runs.inputs) +
                            " simulated against their measured mean power, mean clock and largest reading (RMS error " +
                            percent(runs.rms_before) + " with the file's, " + percent(runs.rms_after) + " fitted)";
    out << line(2, "busy_activity", num(runs.busy_activity), fit + "; file: " + num(hw.power_model.busy_activity));
    out << line(2, "tensor_activity", num(runs.tensor_activity),
                "same fit; file: " + num(hw.power_model.tensor_activity));
    out << line(2, "voltage", "");
    out << line(4, "knee_mhz", num(runs.knee_hz / units::kMega),
                "same fit; file: " + num(hw.power_model.voltage.knee_hz / units::kMega));
    out << line(0, "governor", "");
    out << line(2, "control_period_ms", num(runs.control_period_s * 1e3),
                "same fit; file: " + num(runs.file_control_period_s * 1e3));
  }
  if (t.power_fitted || t.thermal_fitted || t.idle_points > 0) {
    out << line(
        0, "telemetry_fit", "",
        "informational: measured " + std::to_string(t.gpus) + " GPUs " + input_refs(t.inputs) + "; not read by runs");
    if (t.idle_points > 0)
      out << line(
          2, "idle_power_w", num(t.idle_power_w),
          "median at activity <= 1 %, " + std::to_string(t.idle_points) + " readings; file: " + num(hw.idle_power_w));
    if (t.load_points > 0)
      out << line(2, "load_power_w", num(t.load_power_w),
                  "median at activity >= 90 %, " + std::to_string(t.load_points) + " readings; TDP " + num(hw.tdp_w));
    if (t.power_fitted) {
      out << line(2, "power_at_zero_activity_w", num(t.power_at_zero_activity_w), "P = p0 + p1 * activity");
      out << line(2, "power_per_activity_w", num(t.power_per_activity_w), stats_comment(t.power_stats));
    }
    if (t.thermal_fitted) {
      out << line(2, "thermal_sensor", t.sensor);
      out << line(2, "thermal_ambient_c", num(t.ambient_c), "fitted steady state T = ambient + R * P");
      out << line(2, "thermal_resistance_k_per_w", num(t.resistance_k_per_w),
                  "file: " + num(hw.thermal_resistance_k_per_w));
      out << line(2, "thermal_time_constant_s", num(t.time_constant_s),
                  "file: " + num(hw.thermal_resistance_k_per_w * hw.thermal_capacitance_j_per_k));
      out << line(2, "thermal_capacitance_j_per_k", num(t.capacitance_j_per_k),
                  "tau / R; file: " + num(hw.thermal_capacitance_j_per_k));
      out << line(2, "thermal_fit_points", std::to_string(t.thermal_stats.points),
                  "R² " + r2(t.thermal_stats.r2) + ", median abs. error " + num(t.thermal_median_abs_k, 2) +
                      " K, p90 " + num(t.thermal_p90_abs_k, 2) + " K; at power steps median " +
                      num(t.thermal_step_median_abs_k, 2) + " K");
    }
  }
  return out.str();
}

void measurement_clock_from_telemetry(const MeasurementSet& measurements, KernelFitOptions& options) {
  double sum = 0.0;
  std::size_t readings = 0;
  std::set<std::size_t> telemetry_inputs, kernel_inputs;
  for (const auto& [reading, span] : readings_in_kernel_spans(measurements)) {
    const TelemetryReading& r = measurements.telemetry[reading];
    if (!(r.gfx_clock_hz > 0.0)) continue;
    sum += r.gfx_clock_hz;
    ++readings;
    telemetry_inputs.insert(r.input);
    kernel_inputs.insert(measurements.kernel_spans[span].input);
  }
  if (readings == 0) return;
  options.clock_hz = sum / static_cast<double>(readings);
  const auto refs = [](const std::set<std::size_t>& inputs) {
    std::string text;
    for (const std::size_t i : inputs) text += (text.empty() ? "[" : ",") + std::to_string(i + 1);
    return text + "]";
  };
  options.clock_source = "the mean of " + std::to_string(readings) + " telemetry readings " + refs(telemetry_inputs) +
                         " taken while the kernels of " + refs(kernel_inputs) + " ran";
}

CalibrationResult run_calibration(const CalibrateOptions& options) {
  if (options.output.empty())
    throw InputError(SourceLocation{"command line"}, "-o", "no output file named",
                     "write -o calibration/profiles/NAME.yaml");
  check_output_file(options.output, "-o", options.inputs);
  if (options.report) check_output_file(*options.report, "--report", options.inputs);
  if (options.min_kernel_s < 0.0)
    throw InputError(SourceLocation{"command line"}, "--min-kernel-us", "must not be negative", "write e.g. 10");
  if (!(options.max_gap_s > 0.0))
    throw InputError(SourceLocation{"command line"}, "--max-gap-us", "must be positive", "write e.g. 100");
  const HardwareReference hardware = load_hardware_reference(options.hardware, options.configs_dir);
  LoadOptions load;
  load.gpus_per_node = options.gpus_per_node;
  load.on_input = options.on_input;
  const MeasurementSet measurements = load_measurements(options.inputs, load);
  KernelFitOptions kernel_options;
  kernel_options.clock_hz = options.clock_hz;
  kernel_options.held_clock = options.held_clock;
  kernel_options.keep_asymptote = options.keep_asymptote;
  if (!(options.clock_hz > 0.0) && !options.held_clock) measurement_clock_from_telemetry(measurements, kernel_options);
  if (options.held_clock && !hardware.power_model.present)
    throw InputError(SourceLocation{"command line"}, "--clock-mhz",
                     "'held' needs a power model in the hardware file (" + hardware.path + ": power_model.dynamic_w)",
                     "give the clock the kernels ran at in MHz, or add the GPU's power model to its hardware file");
  kernel_options.min_duration_s = options.min_kernel_s;
  kernel_options.max_gap_s = options.max_gap_s;
  CalibrationResult result =
      calibrate(measurements, hardware, kernel_options, options.node_links.value_or(hardware.default_node_links()));
  if (options.report) result.report_label = options.report->string();
  if (options.refine) options.refine(result, measurements);
  const std::string yaml = render_profile_yaml(result);
  const std::string report = options.report ? render_fit_report(result) : std::string();
  AtomicOutputSet outputs;
  const auto write = [&](const std::filesystem::path& final_path, const std::string& content) {
    const auto temporary = outputs.stage(final_path);
    auto out = open_for_writing(temporary);
    out << content;
    out.close();
    if (!out) throw OutputError("cannot write " + temporary.string());
  };
  write(options.output, yaml);
  if (options.report) write(*options.report, report);
  outputs.commit();
  return result;
}

}  // namespace chopsim
