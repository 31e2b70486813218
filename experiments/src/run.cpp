#include "chopsim/experiments/run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim/sim/observer_thread.hpp"
#include "fold.hpp"
#include "observers.hpp"
#include "power_report.hpp"
#include "run_summary.hpp"

namespace chopsim {

namespace {

std::string approximately(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

/// `run`'s workload with `training` in place of its own (a fold's fewer micro-batches); the hardware's KernelFacts
/// follow the run's own training.
Workload workload_of(const RunSpec& run, const TrainingSpec& training) {
  return build_workload(run.model, run.parallelism, training, kernel_facts_for(run.hardware, run.training));
}

}  // namespace

Workload build_run_workload(const RunSpec& run) { return workload_of(run, run.training); }

RunReport unsimulated_report(const RunSpec& run) {
  RunReport report;
  report.name = run.name;
  report.gpus = run.cluster.gpu_count();
  report.memory_by_stage = estimate_memory_by_stage(run.model, run.parallelism, run.training, run.hardware);
  report.memory = peak_stage_memory(report.memory_by_stage);
  report.out_of_memory = !report.memory.fits();
  return report;
}

/// The launch work of the host that launches most (RunReport::host), with the micro-batches a fold left out.
HostLoad host_load(const Workload& workload, double host_launch_s, const detail::FoldShape* fold) {
  HostLoad load;
  for (const Program& program : workload.programs) {
    double launches = fold != nullptr ? detail::left_out_launches(program, *fold) : 0.0;
    for (const IssueStep& step : program.issue_order) launches += step.launches;
    load.launches_per_iteration = std::max(load.launches_per_iteration, launches);
  }
  load.launch_time_s = load.launches_per_iteration * host_launch_s;
  return load;
}

RunReport run_simulation(const RunSpec& run, const ModelRegistries& registries, const RunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  RunReport report = unsimulated_report(run);

  AtomicOutputSet outputs;
  const bool write_files = !options.output_dir.empty();
  if (write_files) create_output_directory(options.output_dir, "--out");

  if (!report.out_of_memory || options.simulate_when_out_of_memory) {
    const auto engine = registries.engine.create(run.engine, run.engine_options);
    const detail::PowerSetup power = detail::make_power_setup(run, registries);
    // Decided whether or not simulation.fold asks for it: a run that does not is told what folding would simulate.
    const detail::FoldDecision folding =
        detail::decide_fold(run, power.input.inlet_c, {write_files, engine->folds(), options.observer});
    const std::optional<detail::FoldShape> fold = run.fold ? folding.shape : std::nullopt;
    if (run.fold) report.fold_limit = folding.limit;
    if (!run.fold && folding.shape) report.foldable_simulated_micro_batches = folding.shape->simulated;
    report.micro_batches = run.training.micro_batches(run.parallelism);
    report.simulated_micro_batches = fold ? fold->simulated : report.micro_batches;
    Workload workload = fold ? workload_of(run, detail::folded_training(run, *fold)) : build_run_workload(run);
    if (fold) detail::unfold_totals(workload, *fold);
    // The run's size before it starts: every GPU's ops per iteration (symmetry simulates fewer, but outputs and
    // the sizes users asked for scale with these).
    double ops_per_iteration = 0.0;
    for (const int program : workload.program_of_rank)
      ops_per_iteration += static_cast<double>(workload.programs[static_cast<std::size_t>(program)].op_count());
    const double total_ops = ops_per_iteration * run.iterations;
    if (total_ops > kLargestRunOps && !options.force)
      throw InputError({run.source.string()}, "iterations",
                       "the run is " + approximately(total_ops) + " ops (" + approximately(ops_per_iteration) +
                           " per iteration on " + std::to_string(report.gpus) + " GPUs x " +
                           std::to_string(run.iterations) + " iterations), more than the " +
                           approximately(kLargestRunOps) + " a run may simulate without --force",
                       "lower iterations (one iteration is what throughput, power and memory need), or pass --force");
    const Topology topology =
        build_topology(run.cluster, run.hardware, registries.node_topology, registries.fabric_topology);
    const auto compute = registries.compute.create(
        run.compute_model, compute_params_for(run.hardware, run.training.attention, run.model.qk_head_dim()));
    const auto collectives = registries.collective.create(run.collective_model, run.collectives);

    detail::FanOutObserver observers;
    detail::BreakdownObserver breakdown(workload);
    observers.add(breakdown);
    detail::PowerObserver power_observer(workload, run, power);
    if (power.enabled()) observers.add(power_observer);
    // The clock kernels run at until telemetry says otherwise: the fixed clock of runs without a governor.
    const double fixed_clock = power.enabled() ? power.input.ceiling_hz : run.hardware.compute.peak_clock_hz();
    detail::LossBreakdownObserver losses(workload, *compute, fixed_clock, run.hardware.compute.boost_clock_hz);
    observers.add(losses);
    if (options.observer != nullptr) observers.add(*options.observer);
    std::unique_ptr<detail::TimelineWriter> timeline;
    std::unique_ptr<detail::OpsTableWriter> ops_table;
    if (write_files) {
      timeline = std::make_unique<detail::TimelineWriter>(
          workload, outputs.stage(options.output_dir / detail::timeline_file_name(options.timeline_format)),
          run.cluster.gpus_per_node, options.timeline_ranks, options.timeline_format);
      timeline->limit_size(options.force ? 0.0 : kLargestTimelineBytes, run.iterations, power.enabled(),
                           run.source.string());
      ops_table =
          std::make_unique<detail::OpsTableWriter>(workload, outputs.stage(options.output_dir / "ops.h5"), run.name);
      if (power.enabled())
        ops_table->enable_telemetry(run.power.telemetry_interval_s, power.input.inlet_c, *power.thermal);
      observers.add(*timeline);
      observers.add(*ops_table);
    }

    SimulationInput input;
    input.workload = &workload;
    input.topology = &topology;
    input.compute = compute.get();
    input.collectives = collectives.get();
    input.iterations = run.iterations;
    input.host_launch_s = run.training.host_launch_s;
    if (power.enabled()) input.power = &power.input;
    if (fold) input.fold = detail::fold_plan(workload, *fold);
    // An engine that forks its simulation runs it on another core already, and must fork without a second thread.
    if (options.observer_thread && !engine->simulates_in_child_process()) {
      ObserverThread concurrent(observers);
      report.stats = engine->run(input, concurrent);
      concurrent.drain();
    } else {
      report.stats = engine->run(input, observers);
    }
    if (fold && report.stats.folds != static_cast<std::uint32_t>(run.iterations))
      throw EngineError("fold: " + std::to_string(report.stats.folds) + " folds in " + std::to_string(run.iterations) +
                        " iterations (the window's ops never ran)");
    report.simulated = true;

    double previous_end = 0.0;
    for (double end : report.stats.iteration_end_s) {
      report.iteration_times_s.push_back(end - previous_end);
      previous_end = end;
    }
    const int iterations = std::max(run.iterations, 1);
    report.iteration_time_s = report.stats.makespan_s / iterations;
    report.breakdown = breakdown.finish(report.stats.makespan_s, iterations);
    report.host = host_load(workload, run.training.host_launch_s, fold ? &*fold : nullptr);
    report.losses = losses.finish(report.breakdown, iterations);
    report.power = power_observer.finish(report.stats.makespan_s, iterations, workload.tokens_per_iteration);
    if (report.iteration_time_s > 0.0) {
      report.tokens_per_s = workload.tokens_per_iteration / report.iteration_time_s;
      report.model_tflops_per_gpu =
          workload.model_flops_per_iteration / report.iteration_time_s / report.gpus / units::kTera;
      report.hardware_tflops_per_gpu =
          (workload.executed_flops_per_iteration() + (fold ? detail::left_out_executed_flops(workload, *fold) : 0.0)) /
          report.iteration_time_s / report.gpus / units::kTera;
      const double peak = detail::peak_flops(run);
      if (peak > 0.0) report.mfu = report.model_tflops_per_gpu * units::kTera / peak;
    }
    if (timeline) timeline->finish();
    if (ops_table) ops_table->finish(report.stats.makespan_s);
  }

  if (write_files) {
    std::ostringstream summary;
    detail::write_summary_json(summary, run, report);
    const auto staged = outputs.stage(options.output_dir / "summary.json");
    auto file = open_for_writing(staged);
    file << summary.str();
    file.close();
    if (!file) throw OutputError("cannot write " + staged.string());
    outputs.commit();
    for (const std::string_view name :
         {std::string_view("summary.json"), detail::timeline_file_name(options.timeline_format),
          std::string_view("ops.h5")})
      if (std::filesystem::exists(options.output_dir / name)) report.files_written.push_back(options.output_dir / name);
  }
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

}  // namespace chopsim
