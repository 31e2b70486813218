#include "chopsim/experiments/validation.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/models/workload.hpp"
#include "power_sensor.hpp"
#include "validation_internal.hpp"

namespace chopsim {

namespace {

using validation_detail::display_value;
using validation_detail::format;
using validation_detail::median;
using validation_detail::metric_unit;
using validation_detail::narayanan_flops_per_token;

}  // namespace

namespace {

/// What the power probes read from one shared simulation.
struct SharedResult {
  bool ok = false;
  std::string failure;
  RunReport report;
  /// [pass: 0 forward, 1 backward][0 middle stage (layers only), 1 last stage (all kernels)]
  double time_s[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
  double energy_j[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
  /// Per rank, the kernel time of the second micro-batch's [0] forward and [1] backward, the backward with its
  /// recomputed forward (as a pipeline engine times its backward instruction).
  std::map<int, std::array<double, 2>> rank_pass_time_s;
  /// GPU 0's power over the run ((time, power from then on)) and the last iteration's bounds: one period of the
  /// steady load, for what a power sensor shows of it.
  std::vector<std::pair<double, double>> power;
  double last_iteration_start_s = 0.0, last_iteration_end_s = 0.0;
};

/// GPU 0's compute kernels of the second micro-batch (steady state) and GPU 0's power over time.
class StageProbe final : public SimulationObserver {
 public:
  explicit StageProbe(const Workload& workload) : workload_(workload) {}
  void on_op_event(const OpEvent& e) override {
    if (!e.is_end || e.iteration != 0) return;
    const Op& op = workload_.program(e.rank).streams[e.stream].ops[e.op];
    if (op.kind != OpKind::compute || op.micro_batch != 1) return;
    if (op.pass != Pass::forward && op.pass != Pass::backward && op.pass != Pass::recompute) return;
    rank_pass_time_s_[e.rank][op.pass == Pass::forward ? 0 : 1] += e.time_s - e.start_s;
    if (e.rank != 0 || op.pass == Pass::recompute) return;
    kernels_.push_back({e.start_s, e.time_s, op.pass == Pass::backward ? 1 : 0, op.layer >= 0});
  }
  void on_telemetry(const GpuStateSample& s) override {
    if (s.gpu == 0) power_.emplace_back(s.time_s, s.power_w);
  }
  void finish(SharedResult& r) const {
    r.rank_pass_time_s = rank_pass_time_s_;
    r.power = power_;
    for (const Kernel& k : kernels_) {
      const double t = k.end - k.start;
      const double e = energy(k.start, k.end);
      for (int stage = 0; stage < 2; ++stage) {
        if (stage == 0 && !k.layer) continue;
        r.time_s[k.pass][stage] += t;
        r.energy_j[k.pass][stage] += e;
      }
    }
  }

 private:
  struct Kernel {
    double start, end;
    int pass;
    bool layer;
  };
  /// Integral of GPU 0's piecewise-constant power over [a, b].
  double energy(double a, double b) const {
    double e = 0.0;
    for (std::size_t i = 0; i < power_.size(); ++i) {
      const double from = std::max(a, power_[i].first);
      const double to = std::min(b, i + 1 < power_.size() ? power_[i + 1].first : b);
      if (to > from) e += power_[i].second * (to - from);
    }
    return e;
  }
  const Workload& workload_;
  std::vector<Kernel> kernels_;
  std::vector<std::pair<double, double>> power_;
  std::map<int, std::array<double, 2>> rank_pass_time_s_;
};

SharedResult simulate_shared(const RunSpec& run, const ModelRegistries& registries) {
  SharedResult r;
  try {
    const Workload workload = build_run_workload(run);
    StageProbe probe(workload);
    RunOptions options;
    options.observer = &probe;
    r.report = run_simulation(run, registries, options);
    if (!r.report.simulated) {
      r.failure = "does not fit in memory (" + format(r.report.memory.total_bytes / units::kGiB, 1) + " GiB)";
      return r;
    }
    probe.finish(r);
    const std::vector<double>& ends = r.report.stats.iteration_end_s;
    if (!ends.empty()) {
      r.last_iteration_end_s = ends.back();
      r.last_iteration_start_s = ends.size() > 1 ? ends[ends.size() - 2] : 0.0;
    }
    r.ok = true;
  } catch (const std::exception& error) {
    r.failure = error.what();
  }
  return r;
}

std::string mhz(double hz) { return format(hz / units::kMega, 0) + " MHz"; }

/// The predicted value of a power case from its shared simulation(s); findings also explain themselves in `notes`.
double probe_value(const ValidationCase& c, const SharedResult& r, const SharedResult* baseline, std::string& notes) {
  const std::string& p = c.probe;
  if (p == "iteration_time") return r.report.iteration_time_s;
  if (p == "average_power") return r.report.power.mean_w;
  if (p == "clock_mean") return r.report.power.clock_mean_hz;
  if (p == "peak_power_25ms") return r.report.power.peak_25ms_w;
  if (p == "largest_sensor_reading") {
    notes = c.notes + "; the predicted trace's largest 25 ms average is " + format(r.report.power.peak_25ms_w, 0) +
            " W, its largest 1 ms average " + format(r.report.power.peak_1ms_w, 0) + " W";
    return detail::largest_sensor_reading_w(r.power, r.last_iteration_start_s, r.last_iteration_end_s, c.window_s);
  }
  if (p == "relative_time") return r.report.iteration_time_s / baseline->report.iteration_time_s;
  for (const auto& [rank, times] : r.rank_pass_time_s)
    for (int pass = 0; pass < 2; ++pass)
      if (p == "rank" + std::to_string(rank) + (pass == 0 ? "_forward_time" : "_backward_time")) return times[pass];
  for (int pass = 0; pass < 2; ++pass)
    for (int stage = 0; stage < 2; ++stage)
      for (const bool energy : {false, true}) {
        const std::string name = std::string(pass == 0 ? "forward" : "backward") + (energy ? "_energy_" : "_time_") +
                                 (stage == 0 ? "middle" : "last");
        if (p == name) return energy ? r.energy_j[pass][stage] : r.time_s[pass][stage];
      }
  const PowerReport& power = r.report.power;
  const LossBreakdown& l = r.report.losses;
  if (p == "chopper_clock") {
    notes = "predicted mean clock in kernels " + mhz(power.clock_mean_hz) + " of " + mhz(power.max_clock_hz) +
            "; frequency overhead " + format(1e3 * l.frequency_s, 0) + " ms of " +
            format(1e3 * r.report.iteration_time_s, 0) + " ms per iteration; power-capped " +
            format(100.0 * power.power_capped_fraction, 0) + " % of the time";
    return power.clock_mean_hz < power.max_clock_hz ? 1.0 : 0.0;
  }
  if (p == "chopper_largest") {
    notes = "predicted losses per iteration: frequency " + format(1e3 * l.frequency_s, 0) + " ms, kernel efficiency " +
            format(1e3 * l.efficiency_loss_s, 0) + " ms, exposed communication " + format(1e3 * l.exposed_comm_s, 0) +
            " ms, contention " + format(1e3 * l.comm_contention_s, 0) + " ms, launch " + format(1e3 * l.launch_s, 0) +
            " ms";
    const double largest_other =
        std::max({l.efficiency_loss_s, l.exposed_comm_s, l.comm_contention_s, l.launch_s, l.pipeline_bubble_s});
    const bool holds = l.frequency_s > largest_other;
    // Why, in either case: the MI300X power model and GEMM efficiency are fitted to AMD's measured GEMM clocks.
    notes += holds ? ". It holds because MI300X's power model holds a dense GEMM at AMD's measured ~1.2 GHz under "
                     "750 W (ROCm blog 'Measuring Max-Achievable FLOPs - Part 2': 1207 MHz; MI325X 1447 MHz under "
                     "1000 W) with 0.94 of the peak at that clock, so the clock, not the kernels, is the largest loss"
                   : ". Why it does not hold: the kernel efficiencies of this run (the profile's, where it has one) "
                     "fall further below the roofline than the clock falls below 2.1 GHz";
    return holds ? 1.0 : 0.0;
  }
  if (p == "charllm_peak" || p == "charllm_throttle") {
    const PowerReport& small = baseline->report.power;
    notes = "micro-batch 1 -> 4: 1 ms peak " + format(small.peak_1ms_w, 0) + " -> " + format(power.peak_1ms_w, 0) +
            " W, 100 ms peak " + format(small.peak_100ms_w, 0) + " -> " + format(power.peak_100ms_w, 0) +
            " W, largest rise " + format(small.max_rise_w_per_ms, 0) + " -> " + format(power.max_rise_w_per_ms, 0) +
            " W/ms, power-capped " + format(100.0 * small.power_capped_fraction, 1) + " -> " +
            format(100.0 * power.power_capped_fraction, 1) + " % of the time";
    if (p == "charllm_peak") return power.peak_1ms_w > small.peak_1ms_w ? 1.0 : 0.0;
    return power.power_capped_fraction > small.power_capped_fraction ? 1.0 : 0.0;
  }
  if (p == "charllm_hot_slot") {
    const auto& first = power.first_thermal_throttle_s;
    bool holds = first.size() > 5 && first[5] >= 0.0;
    for (std::size_t g = 0; holds && g < first.size(); ++g)
      if (g != 5 && first[g] >= 0.0 && first[g] <= first[5]) holds = false;
    notes = "hot slot: throttles from " +
            (first.size() > 5 && first[5] >= 0.0 ? format(1e3 * first[5], 1) + " ms" : "never") + ", peak " +
            format(power.peak_temperature_c.size() > 5 ? power.peak_temperature_c[5] : 0.0, 1) +
            " °C; the others peak at " +
            format(power.peak_temperature_c.empty() ? 0.0 : power.peak_temperature_c[0], 1) + " °C";
    return holds ? 1.0 : 0.0;
  }
  throw ModelError("validation: unknown probe '" + p + "'");
}

}  // namespace

std::vector<ValidationCase> select_validation_cases(std::vector<ValidationCase> cases, const std::string& patterns) {
  if (patterns.empty()) return cases;
  std::vector<std::string> wanted;
  std::stringstream list(patterns);
  for (std::string pattern; std::getline(list, pattern, ',');)
    if (!pattern.empty()) wanted.push_back(pattern);
  std::erase_if(cases, [&](const ValidationCase& c) {
    return std::none_of(wanted.begin(), wanted.end(), [&](const std::string& pattern) {
      return c.id.find(pattern) != std::string::npos || c.group.find(pattern) != std::string::npos;
    });
  });
  return cases;
}

std::vector<ValidationResult> run_validation(const std::vector<ValidationCase>& cases,
                                             const ModelRegistries& registries, int jobs,
                                             const std::function<void(std::size_t, std::size_t)>& on_progress,
                                             const std::filesystem::path& summaries_dir) {
  std::vector<ValidationResult> results(cases.size());
  std::atomic<std::size_t> done{0};
  std::size_t total = 0;  // the shared simulations, then each case with and without its profile
  const auto progressed = [&] {
    const std::size_t now = ++done;
    if (on_progress) on_progress(now, total);
  };
  tbb::task_arena arena(std::max(jobs, 1));
  // Simulations shared by power cases, once each; the calibrated ones under their own keys.
  const auto shared_key = [](const std::string& key, bool calibrated) {
    return calibrated ? key + " [calibrated]" : key;
  };
  std::map<std::string, const RunSpec*> specs;
  for (const ValidationCase& c : cases) {
    for (const bool calibrated : {false, true}) {
      if (calibrated && c.profile.empty()) continue;
      if (!c.shared_run.empty())
        specs.emplace(shared_key(c.shared_run, calibrated), calibrated ? &c.calibrated_run : &c.run);
      if (!c.baseline_run.empty())
        specs.emplace(shared_key(c.baseline_run, calibrated), calibrated ? &c.calibrated_baseline : &c.baseline);
    }
  }
  std::vector<std::pair<std::string, const RunSpec*>> list(specs.begin(), specs.end());
  std::vector<SharedResult> shared(list.size());
  total = list.size() + 2 * cases.size();
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, list.size(), [&](std::size_t i) {
      shared[i] = simulate_shared(*list[i].second, registries);
      progressed();
    });
  });
  auto find_shared = [&](const std::string& key) -> const SharedResult* {
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].first == key) return &shared[i];
    return nullptr;
  };
  // One prediction of case `c` with `run` (the case's own or its calibrated copy).
  auto predict = [&](const ValidationCase& c, const RunSpec& run, bool calibrated) {
    ValidationPrediction result;
    if (!c.not_modelled.empty()) {
      result.failure = "not modelled: " + c.not_modelled;
      return result;
    }
    if (!c.probe.empty()) {
      const SharedResult* r = find_shared(shared_key(c.shared_run, calibrated));
      const SharedResult* base = c.baseline_run.empty() ? nullptr : find_shared(shared_key(c.baseline_run, calibrated));
      if (r == nullptr || !r->ok || (base != nullptr && !base->ok)) {
        result.failure = r == nullptr ? "no simulation" : !r->ok ? r->failure : base->failure;
        return result;
      }
      try {
        result.predicted = probe_value(c, *r, base, result.notes);
        result.predicted_mfu = r->report.mfu;
        result.ok = true;
        result.relative_error = c.metric == ValidationMetric::finding ? result.predicted - c.measured
                                                                      : (result.predicted - c.measured) / c.measured;
      } catch (const std::exception& error) {
        result.failure = error.what();
      }
      return result;
    }
    try {
      if (c.metric == ValidationMetric::peak_memory_bytes) {
        // Memory needs no simulation: the model's estimate of the allocator peak of the last rank, the one that
        // logs it (Megatron's TensorBoard and W&B writers live on rank world_size - 1: the last pipeline stage;
        // megatron/training/global_vars.py, _set_tensorboard_writer; the other sources run one stage).
        const auto memory = estimate_stage_memory(run.model, run.parallelism, run.training, run.hardware,
                                                  std::max(run.parallelism.pp, 1) - 1);
        result.predicted = memory.total_bytes - memory.reserved_bytes - memory.fragmentation_bytes;
        result.ok = true;
      } else {
        // The case's micro-batch, or the fastest of its choices (ValidationCase::micro_batch_choices).
        RunSpec chosen = run;
        RunReport report = run_simulation(run, registries, RunOptions{});
        for (const int micro_batch : c.micro_batch_choices) {
          if (micro_batch == run.training.micro_batch) continue;
          RunSpec candidate = run;
          candidate.training.micro_batch = micro_batch;
          RunReport other = run_simulation(candidate, registries, RunOptions{});
          if (other.simulated && (!report.simulated || other.iteration_time_s < report.iteration_time_s)) {
            report = std::move(other);
            chosen = std::move(candidate);
          }
        }
        if (!c.micro_batch_choices.empty()) {
          std::string tried;
          for (const int micro_batch : c.micro_batch_choices)
            tried += (tried.empty() ? "" : ", ") + std::to_string(micro_batch);
          result.notes = c.notes + "; micro-batch " + std::to_string(chosen.training.micro_batch) +
                         " (not printed: the fastest of " + tried + ")";
        }
        if (!summaries_dir.empty())
          write_file_atomically(summaries_dir / (file_name_slug(c.id) + (calibrated ? ".calibrated.json" : ".json")),
                                summary_json(chosen, report));
        if (!report.simulated) {
          result.failure = "does not fit in memory (" + format(report.memory.total_bytes / units::kGiB, 1) + " GiB)";
        } else {
          result.ok = true;
          result.predicted_mfu = report.mfu;
          const double tokens_per_gpu = report.tokens_per_s / report.gpus;
          result.predicted =
              c.metric == ValidationMetric::iteration_time_s ? report.iteration_time_s
              : c.metric == ValidationMetric::model_tflops_per_gpu
                  ? tokens_per_gpu * (c.flops_count_recompute
                                          ? narayanan_flops_per_token(chosen.model, chosen.training.seq_len)
                                          : model_training_flops_per_token(chosen.model, chosen.training.seq_len))
                  : tokens_per_gpu;
        }
      }
      if (result.ok) result.relative_error = (result.predicted - c.measured) / c.measured;
    } catch (const std::exception& error) {
      result.ok = false;
      result.failure = error.what();
    }
    return result;
  };
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, 2 * cases.size(), [&](std::size_t job) {
      const std::size_t i = job / 2;
      const bool calibrated = job % 2 == 1;
      const ValidationCase& c = cases[i];
      if (!calibrated) {
        results[i].validation_case = c;
        results[i].uncalibrated = predict(c, c.run, false);
      } else if (c.profile.empty()) {
        results[i].calibrated.failure = "no calibration profile for " + c.run.hardware.name;
      } else {
        results[i].calibrated = predict(c, c.calibrated_run, true);
      }
      progressed();
    });
  });
  return results;
}

}  // namespace chopsim
