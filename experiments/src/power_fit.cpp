// `chopsim calibrate --power-runs`: the power model's voltage knee and activity weights fitted to measured runs by
// simulating them (power_fit.hpp).

#include "chopsim/experiments/power_fit.hpp"

#include <tbb/parallel_for.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <system_error>

#include "chopsim/calibration/measurements.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/decode.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/traces/timestamps.hpp"
#include "power_sensor.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using config_detail::Mapping;
using config_detail::Need;
using config_detail::Scope;

namespace {

// The accuracy each fitted quantity is held to (issue 20's targets for a calibrated H200): mean power 5 %, mean SM
// clock 3 %, largest power reading 10 %. Scaling the errors by them makes the fit trade a point of clock error against
// 1.7 points of mean power and 3.3 of the largest reading: the clock is read exactly (NVML's SM clock), while the
// largest reading of a 10 ms sensor depends on where its samples fall on millisecond peaks.
constexpr double kPowerScale = 0.05, kClockScale = 0.03, kLargestScale = 0.10;

/// The parameters searched: the voltage knee (MHz), the busy and tensor activity weights and the governor's control
/// period (ms).
struct PowerKnobs {
  double knee_mhz = 0.0, busy = 0.0, tensor = 0.0, period_ms = 0.0;
  auto operator<=>(const PowerKnobs&) const = default;
};

/// Simulated mean power, mean clock, largest sensor reading and lowest clock of each run for one parameter set.
struct Prediction {
  std::vector<double> power_w, clock_hz, largest_w, lowest_clock_hz;
  /// What the search minimises: the mean over runs of the summed squared relative errors of the first three, each
  /// in units of the accuracy asked of it (kPowerScale, kClockScale, kLargestScale). The lowest clock is reported, not
  /// fitted: with it in the cost the fit gives up the clock's fall with load (docs/calibration.md).
  double cost = 0.0;
  /// The same mean with the errors unscaled (the RMS the report gives is sqrt(squared_error / 3)).
  double squared_error = 0.0;
};

/// GPU 0's power over the run ((time, power from then on)): what a power sensor would read of it.
class PowerTrace final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent& /*event*/) override {}
  void on_telemetry(const GpuStateSample& s) override {
    if (s.gpu != 0) return;
    power.emplace_back(s.time_s, s.power_w);
    clock.emplace_back(s.time_s, s.clock_hz);
  }
  /// The lowest clock held in [start_s, end_s) (a clock that starts before start_s and holds into it counts).
  [[nodiscard]] double lowest_clock_hz(double start_s, double end_s) const {
    double lowest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < clock.size(); ++i) {
      const double until = i + 1 < clock.size() ? clock[i + 1].first : end_s;
      if (until > start_s && clock[i].first < end_s && clock[i].second > 0.0)
        lowest = std::min(lowest, clock[i].second);
    }
    return lowest;
  }
  std::vector<std::pair<double, double>> power, clock;
};

/// "2026-11-26 03:20:25.317 UTC" for seconds since the Unix epoch (messages).
std::string utc_text(double unix_s) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_s));
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02d %02d:%02d:%06.3f UTC", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec + (unix_s - std::floor(unix_s)));
  return text;
}

double read_time(Mapping& m, std::string_view key) {
  const YAML::Node value = m.value(key);
  if (!value.IsDefined() || !value.IsScalar())
    m.fail(key, "missing or not a time",
           "write e.g. " + std::string(key) + ": \"2026-11-26 03:20:54.36\" (UTC, as nvidia-smi writes it)");
  const auto ns = parse_timestamp_ns(value.Scalar());
  if (!ns)
    m.fail(key, "'" + value.Scalar() + "' is not a time",
           "write a UTC time as \"2026-11-26 03:20:54.36\" or \"2026-11-26T03:20:54.36Z\", or seconds since the Unix "
           "epoch");
  return static_cast<double>(*ns) * 1e-9;
}

}  // namespace

PowerFitRuns load_power_fit_runs(const fs::path& file) {
  const std::string shown = config_detail::display_path(file);
  const YAML::Node root = config_detail::load_yaml_file(file, "power-fit runs file");
  Mapping top(root, Scope{shown, "", "", nullptr});
  PowerFitRuns result;
  result.file = file;
  top.require("runs", "a list of {name, config, from, to}");
  const YAML::Node list = top.value("runs");
  if (!list.IsSequence() || list.size() == 0)
    top.fail("runs", "runs is a non-empty list of {name, config, from, to}",
             "write runs: [{name: mb1, config: run.yaml, from: \"2026-11-26 03:20:54\", to: \"2026-11-26 03:20:56\"}]");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Mapping m(list[i], Scope{shown, "runs[" + std::to_string(i) + "]", "", nullptr});
    PowerFitRun run;
    run.where = m.where();
    run.key = "runs[" + std::to_string(i) + "]";
    m.read("name", run.name, Need::required);
    if (!names.insert(run.name).second) m.fail("name", "two runs are named '" + run.name + "'", "rename one");
    std::string config;
    m.read("config", config, Need::required);
    const fs::path given(config);
    run.config = given.is_relative() ? file.parent_path() / given : given;
    std::error_code error;
    if (!fs::is_regular_file(run.config, error))
      m.fail("config", "no run config at " + run.config.lexically_normal().string(),
             "give the path of a run config, relative to " + shown);
    run.from_s = read_time(m, "from");
    run.to_s = read_time(m, "to");
    if (!(run.to_s > run.from_s))
      m.fail("to", "the window ends before it starts", "give the run's window as from < to");
    m.finish();
    result.runs.push_back(std::move(run));
  }
  top.finish();
  return result;
}

void fit_power_to_runs(CalibrationResult& result, const MeasurementSet& measurements, const PowerFitRuns& runs,
                       const ModelRegistries& registries, const std::string& profile_name) {
  RunPowerFit& fit = result.run_power;
  fit = RunPowerFit{};

  // What each run measured, and the runs as the profile being written makes them.
  double first_reading = std::numeric_limits<double>::infinity(), last_reading = -first_reading;
  for (const TelemetryReading& r : measurements.telemetry) {
    first_reading = std::min(first_reading, r.time_s);
    last_reading = std::max(last_reading, r.time_s);
  }
  const std::string profile_yaml = render_profile_yaml(result);
  std::vector<RunSpec> specs;
  for (const PowerFitRun& run : runs.runs) {
    RunPowerRow row;
    row.label = run.name;
    row.measured = telemetry_window_mean(measurements, run.from_s, run.to_s);
    if (row.measured.readings == 0)
      throw InputError(run.where, run.key + ".from",
                       "no telemetry reading with a power and a clock between from and to" +
                           (measurements.telemetry.empty() ? std::string(" (no telemetry among the inputs)")
                                                           : " (the telemetry inputs span " + utc_text(first_reading) +
                                                                 " to " + utc_text(last_reading) + ")"),
                       "give the telemetry of the runs as inputs and each run's window in UTC on its clock");
    RunSpec spec = load_run_config(run.config, default_search_path(run.config), registries);
    if (!spec.calibration.empty())
      throw InputError(run.where, run.key + ".config",
                       "the run applies the calibration profile " + spec.calibration.string() +
                           "; a power fit simulates its runs with the profile being fitted",
                       "remove the run's calibration key");
    if (spec.hardware.name != result.hardware.name)
      throw InputError(run.where, run.key + ".config",
                       "the run uses hardware " + spec.hardware.name + ", the calibration " + result.hardware.name,
                       "fit the power of runs on the hardware being calibrated");
    apply_calibration_profile_text(spec, profile_yaml, profile_name);
    if (!spec.power.dynamics)
      throw InputError(run.where, run.key + ".config", "the run simulates no power (power dynamics off)",
                       "remove power.dynamics: false from the run");
    specs.push_back(std::move(spec));
    fit.runs.push_back(row);
  }

  if (specs.size() < 2)
    throw InputError(runs.runs.front().where, "runs",
                     "a power fit needs at least two runs: one run's power and clock cannot tell the voltage knee from "
                     "the activity weights",
                     "list runs of different loads (micro-batch sizes, models) measured on this GPU");

  // The runs file and the run configs are inputs of the profile (its header lists them with their SHA-256).
  const auto add_input = [&](const fs::path& path, const std::string& as_given, const std::string& kind) {
    InputFile input;
    input.path = as_given;
    input.kind = kind;
    input.sha256 = file_sha256(path);
    fit.inputs.push_back(result.inputs.size());
    result.inputs.push_back(std::move(input));
  };
  add_input(runs.file, runs.file.string(), "power-runs");
  for (const PowerFitRun& run : runs.runs) add_input(run.config, config_detail::display_path(run.config), "run-config");

  const PowerParams& file_power = specs.front().hardware.power;
  const PowerKnobs start{std::round(file_power.voltage.knee_hz / units::kMega), file_power.busy_activity,
                         file_power.tensor_activity, specs.front().hardware.governor.control_period_s * 1e3};
  const double min_knee_mhz = std::ceil(specs.front().hardware.min_clock_hz / units::kMega);
  const double max_knee_mhz = std::floor(specs.front().hardware.compute.boost_clock_hz / units::kMega);

  std::map<PowerKnobs, Prediction> simulated;
  const auto predict = [&](const PowerKnobs& knobs) -> const Prediction& {
    if (const auto it = simulated.find(knobs); it != simulated.end()) return it->second;
    Prediction p;
    p.power_w.assign(specs.size(), 0.0);
    p.clock_hz.assign(specs.size(), 0.0);
    p.largest_w.assign(specs.size(), 0.0);
    p.lowest_clock_hz.assign(specs.size(), 0.0);
    // Runs are independent engines: simulated side by side, each result in its own slot (thread-count invariant).
    tbb::parallel_for(std::size_t{0}, specs.size(), [&](std::size_t i) {
      RunSpec spec = specs[i];
      spec.hardware.power.voltage.knee_hz = knobs.knee_mhz * units::kMega;
      spec.hardware.power.busy_activity = knobs.busy;
      spec.hardware.power.tensor_activity = knobs.tensor;
      spec.hardware.governor.control_period_s = knobs.period_ms * 1e-3;
      PowerTrace trace;
      RunOptions options;
      options.observer = &trace;
      const RunReport report = run_simulation(spec, registries, options);
      p.power_w[i] = report.power.mean_w;
      p.clock_hz[i] = report.power.clock_mean_hz;
      // The last iteration as one period of the steady load, read by a sensor over the run's window.
      const std::vector<double>& ends = report.stats.iteration_end_s;
      const double start = ends.size() > 1 ? ends[ends.size() - 2] : 0.0;
      const double end = ends.empty() ? 0.0 : ends.back();
      p.largest_w[i] =
          detail::largest_sensor_reading_w(trace.power, start, end, runs.runs[i].to_s - runs.runs[i].from_s);
      p.lowest_clock_hz[i] = trace.lowest_clock_hz(start, end);
    });
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const TelemetryWindowMean& measured = fit.runs[i].measured;
      const double power_error = p.power_w[i] / measured.power_w - 1.0;
      const double clock_error = p.clock_hz[i] / measured.clock_hz - 1.0;
      const double largest_error = p.largest_w[i] / measured.largest_power_w - 1.0;
      p.squared_error += power_error * power_error + clock_error * clock_error + largest_error * largest_error;
      p.cost += std::pow(power_error / kPowerScale, 2) + std::pow(clock_error / kClockScale, 2) +
                std::pow(largest_error / kLargestScale, 2);
    }
    p.cost /= static_cast<double>(specs.size());
    p.squared_error /= static_cast<double>(specs.size());
    return simulated.emplace(knobs, std::move(p)).first->second;
  };

  // The governor's clock steps make the cost a staircase, flat at small parameter changes: a local search from the
  // file's values stalls. So first a coarse grid over the plausible range (knee every 200 MHz; busy weight 0-0.5 and
  // tensor weight 0.4-1.6, where the files' are 0.3 and 0.7 for P_dyn of about 2x the TDP; control period 2.5-10 ms,
  // NVIDIA publishing none), then a compass search from the best few grid points: each parameter one step up and
  // down, the best improvement taken, the steps halved when none improves. Whole-MHz knee steps, activity steps of
  // 0.01 and period steps of 1/8 ms keep every value exactly what the profile writes.
  std::vector<std::pair<double, PowerKnobs>> grid{{predict(start).cost, start}};
  for (double knee = 200.0 * std::ceil(min_knee_mhz / 200.0); knee <= max_knee_mhz; knee += 200.0)
    for (const double busy : {0.0, 0.1, 0.2, 0.3, 0.4, 0.5})
      for (const double tensor : {0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6})
        for (const double period : {2.5, 5.0, 7.5, 10.0}) {
          const PowerKnobs knobs{knee, busy, tensor, period};
          grid.emplace_back(predict(knobs).cost, knobs);
        }
  std::sort(grid.begin(), grid.end());
  const auto compass = [&](PowerKnobs best) {
    double best_cost = predict(best).cost;
    double knee_step = 128.0, activity_step = 0.16, period_step = 2.0;
    while (knee_step >= 4.0) {
      PowerKnobs candidate_best = best;
      double candidate_cost = best_cost;
      for (const double sign : {1.0, -1.0}) {
        std::array<PowerKnobs, 4> moves{best, best, best, best};
        moves[0].knee_mhz = std::clamp(best.knee_mhz + sign * knee_step, min_knee_mhz, max_knee_mhz);
        moves[1].busy = std::max(std::round((best.busy + sign * activity_step) * 100.0) / 100.0, 0.0);
        moves[2].tensor = std::max(std::round((best.tensor + sign * activity_step) * 100.0) / 100.0, 0.0);
        moves[3].period_ms = std::max(best.period_ms + sign * period_step, 0.5);
        for (const PowerKnobs& move : moves) {
          if (move == best) continue;
          if (const double cost = predict(move).cost; cost < candidate_cost) {
            candidate_cost = cost;
            candidate_best = move;
          }
        }
      }
      if (candidate_best == best) {
        knee_step /= 2.0;
        activity_step /= 2.0;
        period_step /= 2.0;
      } else {
        best = candidate_best;
        best_cost = candidate_cost;
      }
    }
    return std::make_pair(best_cost, best);
  };
  // The staircase also has many shallow pits: the compass search starts from the best few grid points.
  constexpr std::size_t kStarts = 4;
  std::pair<double, PowerKnobs> found = grid.front();
  for (std::size_t i = 0; i < std::min(kStarts, grid.size()); ++i) found = std::min(found, compass(grid[i].second));
  const PowerKnobs best = found.second;

  const Prediction& before = predict(start);
  const Prediction& after = predict(best);
  for (std::size_t i = 0; i < fit.runs.size(); ++i) {
    fit.runs[i].before_power_w = before.power_w[i];
    fit.runs[i].before_clock_hz = before.clock_hz[i];
    fit.runs[i].before_largest_w = before.largest_w[i];
    fit.runs[i].after_largest_w = after.largest_w[i];
    fit.runs[i].before_lowest_clock_hz = before.lowest_clock_hz[i];
    fit.runs[i].after_lowest_clock_hz = after.lowest_clock_hz[i];
    fit.runs[i].after_power_w = after.power_w[i];
    fit.runs[i].after_clock_hz = after.clock_hz[i];
  }
  fit.knee_hz = best.knee_mhz * units::kMega;
  fit.busy_activity = best.busy;
  fit.tensor_activity = best.tensor;
  fit.control_period_s = best.period_ms * 1e-3;
  fit.file_control_period_s = start.period_ms * 1e-3;
  fit.evaluations = simulated.size();
  fit.rms_before = std::sqrt(before.squared_error / 3.0);
  fit.rms_after = std::sqrt(after.squared_error / 3.0);
  fit.fitted = true;
}

}  // namespace chopsim
