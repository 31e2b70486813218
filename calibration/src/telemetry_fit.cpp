// Telemetry fits: power against GPU activity, and a first-order thermal RC model of the die (the model of
// models/thermal.hpp: C dT/dt = P - (T - T_inlet) / R, time constant tau = R C).
//
// Logs of one run often come as separate files (rocm-smi writes power, temperature and use to three CSVs), so
// readings are joined per GPU on the absolute clock: each power reading takes the nearest temperature and activity
// readings of the same GPU within half the median interval between power readings (at least 1 s).

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "chopsim/calibration/fits.hpp"

namespace chopsim {

namespace {

struct Series {
  std::vector<std::pair<double, double>> power, util, junction, edge;  // (time, value), sorted by time
};

/// The value of the reading nearest to `time` within `tolerance`; NaN if none.
double nearest(const std::vector<std::pair<double, double>>& series, double time, double tolerance) {
  if (series.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto it =
      std::lower_bound(series.begin(), series.end(), std::make_pair(time, -std::numeric_limits<double>::infinity()));
  double best = std::numeric_limits<double>::quiet_NaN();
  double best_distance = tolerance;
  for (auto candidate : {it, it == series.begin() ? it : std::prev(it)}) {
    if (candidate == series.end()) continue;
    const double distance = std::fabs(candidate->first - time);
    if (distance <= best_distance) {
      best_distance = distance;
      best = candidate->second;
    }
  }
  return best;
}

struct Joined {
  double time = 0.0, power = 0.0, util = 0.0, temperature = 0.0;
};

}  // namespace

TelemetryFit fit_telemetry(const MeasurementSet& measurements) {
  TelemetryFit fit;
  std::map<std::string, Series> gpus;
  std::set<std::size_t> inputs;
  bool any_junction = false;
  for (const auto& r : measurements.telemetry) {
    Series& s = gpus[r.gpu];
    if (std::isfinite(r.power_w) && r.power_w > 0.0) s.power.push_back({r.time_s, r.power_w});
    if (std::isfinite(r.util)) s.util.push_back({r.time_s, r.util});
    if (std::isfinite(r.temp_junction_c)) {
      s.junction.push_back({r.time_s, r.temp_junction_c});
      any_junction = true;
    }
    if (std::isfinite(r.temp_edge_c)) s.edge.push_back({r.time_s, r.temp_edge_c});
    inputs.insert(r.input);
  }
  fit.inputs.assign(inputs.begin(), inputs.end());
  if (gpus.empty()) return fit;
  fit.sensor = any_junction ? "junction" : "edge";

  std::map<std::string, std::vector<Joined>> joined;
  std::vector<double> intervals;
  for (auto& [gpu, s] : gpus) {
    for (auto* series : {&s.power, &s.util, &s.junction, &s.edge}) std::sort(series->begin(), series->end());
    for (std::size_t i = 1; i < s.power.size(); ++i) intervals.push_back(s.power[i].first - s.power[i - 1].first);
  }
  const double interval = intervals.empty() ? 1.0 : quantile(intervals, 0.5);
  const double tolerance = std::max(0.5 * interval, 1.0);
  for (auto& [gpu, s] : gpus) {
    if (s.power.empty()) continue;
    ++fit.gpus;
    const auto& temperature = any_junction ? s.junction : s.edge;
    for (const auto& [time, power] : s.power)
      joined[gpu].push_back({time, power, nearest(s.util, time, tolerance), nearest(temperature, time, tolerance)});
  }

  // Power vs activity.
  std::vector<std::vector<double>> rows;
  std::vector<double> powers, ones, idle, load;
  for (const auto& [gpu, readings] : joined)
    for (const auto& j : readings) {
      if (!std::isfinite(j.util)) continue;
      rows.push_back({1.0, j.util});
      powers.push_back(j.power);
      ones.push_back(1.0);
      if (j.util <= 0.01) idle.push_back(j.power);
      if (j.util >= 0.9) load.push_back(j.power);
    }
  fit.power_points = powers.size();
  fit.idle_points = idle.size();
  fit.load_points = load.size();
  if (!idle.empty()) fit.idle_power_w = quantile(idle, 0.5);
  if (!load.empty()) fit.load_power_w = quantile(load, 0.5);
  if (powers.size() >= 3 && !idle.empty() && !load.empty()) {
    const auto c = weighted_linear_least_squares(rows, powers, ones);
    fit.power_at_zero_activity_w = c[0];
    fit.power_per_activity_w = c[1];
    std::vector<double> predicted;
    for (const auto& row : rows) predicted.push_back(std::max(c[0] + c[1] * row[1], 1e-9));
    fit.power_stats = fit_stats(powers, predicted);
    fit.power_fitted = true;
  } else if (!powers.empty()) {
    fit.notes.push_back("power vs activity not fitted: readings at both idle (<= 1 %) and load (>= 90 %) are needed");
  }

  // Thermal step response over consecutive readings with a temperature.
  struct Step {
    double dt, power, t0, t1;
    bool power_step;  ///< power changed by more than 100 W between the two readings
  };
  std::vector<Step> steps;
  double min_power = std::numeric_limits<double>::infinity(), max_power = 0.0;
  double min_temp = std::numeric_limits<double>::infinity(), max_temp = -min_temp;
  for (const auto& [gpu, readings] : joined) {
    const Joined* previous = nullptr;
    for (const auto& j : readings) {
      if (!std::isfinite(j.temperature)) {
        previous = nullptr;
        continue;
      }
      if (previous != nullptr) {
        const double dt = j.time - previous->time;
        if (dt > 0.0 && dt <= 3.0 * interval)
          steps.push_back({dt, 0.5 * (previous->power + j.power), previous->temperature, j.temperature,
                           std::fabs(j.power - previous->power) > 100.0});
      }
      min_power = std::min(min_power, j.power);
      max_power = std::max(max_power, j.power);
      min_temp = std::min(min_temp, j.temperature);
      max_temp = std::max(max_temp, j.temperature);
      previous = &j;
    }
  }
  fit.thermal_points = steps.size();
  if (steps.size() < 10 || max_power - min_power < 50.0 || max_temp - min_temp < 2.0) {
    if (!joined.empty())
      fit.notes.push_back(
          "thermal RC not fitted: needs >= 10 consecutive readings with temperature and a power swing "
          "of >= 50 W (found " +
          std::to_string(steps.size()) + ")");
    return fit;
  }
  // Parameters: T_amb (°C), log R, log tau. Residuals in kelvin (the noise of the sensors is additive: 1 K steps).
  const ResidualFunction residuals = [&](std::span<const double> x, std::span<double> r) {
    const double ambient = x[0], resistance = std::exp(x[1]), tau = std::exp(x[2]);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      const double steady = ambient + resistance * s.power;
      r[i] = steady + (s.t0 - steady) * std::exp(-s.dt / tau) - s.t1;
    }
  };
  const double r0 = std::max((max_temp - min_temp) / (max_power - min_power), 1e-3);
  LevenbergMarquardtResult best;
  bool have = false;
  for (const double tau : {2.0, 5.0, 20.0, 60.0}) {
    auto result =
        levenberg_marquardt(residuals, steps.size(), {min_temp - r0 * min_power, std::log(r0), std::log(tau)});
    if (!have || result.cost < best.cost) {
      best = std::move(result);
      have = true;
    }
  }
  fit.ambient_c = best.params[0];
  fit.resistance_k_per_w = std::exp(best.params[1]);
  fit.time_constant_s = std::exp(best.params[2]);
  fit.capacitance_j_per_k = fit.time_constant_s / fit.resistance_k_per_w;
  fit.thermal_fitted = true;
  // Statistics on the temperature rise above the fitted ambient (degrees Celsius are not a ratio scale).
  std::vector<double> measured, predicted, absolute, at_steps;
  std::vector<double> r(steps.size());
  residuals(best.params, r);
  double ss_res = 0.0, ss_tot = 0.0, mean = 0.0;
  for (const auto& s : steps) mean += s.t1;
  mean /= static_cast<double>(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    absolute.push_back(std::fabs(r[i]));
    if (steps[i].power_step) at_steps.push_back(std::fabs(r[i]));
    ss_res += r[i] * r[i];
    ss_tot += (steps[i].t1 - mean) * (steps[i].t1 - mean);
    const double rise = steps[i].t1 - fit.ambient_c;
    if (rise > 0.0) {
      measured.push_back(rise);
      predicted.push_back(std::max(rise + r[i], 1e-9));
    }
  }
  fit.thermal_stats = fit_stats(measured, predicted);
  fit.thermal_stats.points = steps.size();
  fit.thermal_stats.r2 = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : std::numeric_limits<double>::quiet_NaN();
  fit.thermal_median_abs_k = quantile(absolute, 0.5);
  fit.thermal_p90_abs_k = quantile(absolute, 0.9);
  fit.thermal_step_points = at_steps.size();
  fit.thermal_step_median_abs_k = quantile(at_steps, 0.5);
  fit.thermal_step_p90_abs_k = quantile(at_steps, 0.9);
  if (fit.thermal_step_points > 0 && fit.thermal_step_median_abs_k > 3.0 * fit.thermal_median_abs_k)
    fit.notes.push_back("at power steps of more than 100 W the one-RC model misses by a median of about " +
                        std::to_string(static_cast<int>(std::lround(fit.thermal_step_median_abs_k))) +
                        " K: the die reacts faster than the fitted time constant (a second, faster RC node would "
                        "be needed); the fit is dominated by the steady readings");
  if (interval > fit.time_constant_s)
    fit.notes.push_back("the readings are " + std::to_string(static_cast<int>(std::lround(interval))) +
                        " s apart, longer than the fitted time constant: tau is poorly determined");
  return fit;
}

std::vector<std::pair<std::size_t, std::size_t>> readings_in_kernel_spans(const MeasurementSet& measurements) {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  for (std::size_t i = 0; i < measurements.telemetry.size(); ++i) {
    const double time = measurements.telemetry[i].time_s;
    for (std::size_t s = 0; s < measurements.kernel_spans.size(); ++s) {
      if (time < measurements.kernel_spans[s].start_s || time > measurements.kernel_spans[s].end_s) continue;
      found.emplace_back(i, s);
      break;
    }
  }
  return found;
}

DynamicPowerFit fit_dynamic_power(const MeasurementSet& measurements, const HardwareReference& hardware,
                                  const TelemetryFit& telemetry, double measurement_clock_hz) {
  DynamicPowerFit fit;
  const PowerModelReference& model = hardware.power_model;
  if (!model.present) {
    fit.not_fitted_because = "the hardware file has no power_model";
    return fit;
  }
  if (!(hardware.boost_clock_hz > 0.0) || !(hardware.hbm_bandwidth_bytes_per_s > 0.0)) {
    fit.not_fitted_because = "the hardware file gives no boost clock or HBM bandwidth";
    return fit;
  }
  // Readings taken while a trace's kernels ran, with power and clock.
  std::set<std::size_t> spans_used, inputs;
  double power = 0.0, clock = 0.0, scale = 0.0, temperature = 0.0;
  std::size_t temperatures = 0;
  for (const auto& [reading, s] : readings_in_kernel_spans(measurements)) {
    const TelemetryReading& r = measurements.telemetry[reading];
    if (!(std::isfinite(r.power_w) && r.power_w > 0.0 && r.gfx_clock_hz > 0.0)) continue;
    spans_used.insert(s);
    inputs.insert(r.input);
    inputs.insert(measurements.kernel_spans[s].input);
    ++fit.readings;
    power += r.power_w;
    clock += r.gfx_clock_hz;
    scale += dynamic_power_scale(model.voltage, r.gfx_clock_hz, hardware.boost_clock_hz);
    const double t = std::isfinite(r.temp_junction_c) ? r.temp_junction_c : r.temp_edge_c;
    if (std::isfinite(t) && t > -100.0) {
      temperature += t;
      ++temperatures;
    }
  }
  if (fit.readings == 0) {
    fit.not_fitted_because =
        "no telemetry reading (power and clock) was taken while a trace's kernels ran (give a trace and the "
        "telemetry of the same run, both on the Unix-epoch clock)";
    return fit;
  }
  const auto n = static_cast<double>(fit.readings);
  fit.mean_power_w = power / n;
  fit.mean_clock_hz = clock / n;
  fit.mean_dynamic_scale = scale / n;
  fit.mean_temperature_c = temperatures > 0 ? temperature / static_cast<double>(temperatures) : model.reference_c;

  // The kernels' load over their spans, as the power model counts it (models/src/power_dynamics.cpp): busy time,
  // FLOPs against the peak of their element type at the measured clock (tensor cores for GEMM and attention below
  // fp32, the vector units otherwise), bytes against the HBM bandwidth.
  std::set<std::size_t> span_inputs;
  for (const std::size_t s : spans_used) {
    span_inputs.insert(measurements.kernel_spans[s].input);
    fit.span_s += measurements.kernel_spans[s].end_s - measurements.kernel_spans[s].start_s;
  }
  const double clock_for_peak = measurement_clock_hz > 0.0 ? measurement_clock_hz : fit.mean_clock_hz;
  const double clock_ratio = clock_for_peak / hardware.rated_clock_hz;
  double busy_s = 0.0, tensor_s = 0.0, vector_s = 0.0, hbm_s = 0.0;
  for (const KernelSample& k : measurements.kernels) {
    if (span_inputs.count(k.input) == 0) continue;
    ++fit.kernels;
    busy_s += k.duration_s;
    const bool tensor = (k.kernel_class == KernelClass::gemm || k.kernel_class == KernelClass::attention) &&
                        !k.dtype.empty() && k.dtype != "fp32";
    if (k.flops > 0.0) {
      const double peak = hardware.peak_for(k.dtype.empty() ? std::string("fp32") : k.dtype) * clock_ratio;
      if (peak > 0.0) (tensor ? tensor_s : vector_s) += k.flops / peak;
    }
    if (k.bytes > 0.0) hbm_s += k.bytes / hardware.hbm_bandwidth_bytes_per_s;
  }
  if (!(fit.span_s > 0.0) || fit.kernels == 0) {
    fit.not_fitted_because = "the traces' kernel spans hold no kernels";
    return fit;
  }
  fit.busy = std::min(busy_s / fit.span_s, 1.0);
  fit.tensor = std::min(tensor_s / fit.span_s, 1.0);
  fit.vector = std::min(vector_s / fit.span_s, 1.0);
  fit.hbm = std::min(hbm_s / fit.span_s, 1.0);
  fit.activity =
      model.busy_activity * fit.busy + model.tensor_activity * fit.tensor + model.vector_activity * fit.vector;
  fit.idle_w = telemetry.idle_points > 0 ? telemetry.idle_power_w : hardware.idle_power_w;
  fit.static_w = std::max(fit.idle_w + model.leakage_w_per_k * (fit.mean_temperature_c - model.reference_c),
                          fit.idle_w / 3.0);  // as the power model bounds leakage
  fit.hbm_power_w = model.hbm_w * fit.hbm;
  const double dynamic_share = fit.mean_power_w - fit.static_w - fit.hbm_power_w;
  if (!(fit.activity > 0.0) || !(fit.mean_dynamic_scale > 0.0) || !(dynamic_share > 0.0)) {
    fit.not_fitted_because = "the measured power leaves no dynamic power above the static and HBM power";
    return fit;
  }
  fit.dynamic_w = dynamic_share / (fit.mean_dynamic_scale * fit.activity);
  fit.inputs.assign(inputs.begin(), inputs.end());
  fit.fitted = true;
  return fit;
}

}  // namespace chopsim

namespace chopsim {

TelemetryWindowMean telemetry_window_mean(const MeasurementSet& measurements, double from_s, double to_s) {
  TelemetryWindowMean mean;
  for (const TelemetryReading& r : measurements.telemetry) {
    if (r.time_s < from_s || r.time_s > to_s) continue;
    if (!(std::isfinite(r.power_w) && r.power_w > 0.0) || !(std::isfinite(r.gfx_clock_hz) && r.gfx_clock_hz > 0.0))
      continue;
    mean.power_w += r.power_w;
    mean.clock_hz += r.gfx_clock_hz;
    mean.largest_power_w = std::max(mean.largest_power_w, r.power_w);
    mean.lowest_clock_hz = mean.readings == 0 ? r.gfx_clock_hz : std::min(mean.lowest_clock_hz, r.gfx_clock_hz);
    ++mean.readings;
  }
  if (mean.readings > 0) {
    mean.power_w /= static_cast<double>(mean.readings);
    mean.clock_hz /= static_cast<double>(mean.readings);
  }
  return mean;
}

}  // namespace chopsim
