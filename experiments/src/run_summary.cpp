// What a run reports: summary.json and the text summary `chopsim run` prints (run.hpp, summary_json and
// print_run_summary).
#include "run_summary.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "chopsim/common/json_writer.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/common/version.hpp"
#include "chopsim/experiments/run.hpp"
#include "observers.hpp"
#include "power_report.hpp"

namespace chopsim {

namespace {

std::string_view schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::interleaved ? "interleaved" : "1f1b";
}

std::string_view recompute_name(RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::none:
      return "none";
    case RecomputePolicy::selective:
      return "selective";
    case RecomputePolicy::full:
      return "full";
  }
  return "none";
}

/// "dp8 zero3", "tp8 sp pp4 (1f1b) dp2", ...
std::string parallelism_label(const ParallelismSpec& p) {
  std::string label;
  auto add = [&label](const std::string& part) {
    if (!label.empty()) label += ' ';
    label += part;
  };
  if (p.tp > 1) add("tp" + std::to_string(p.tp) + (p.sequence_parallel ? "+sp" : ""));
  if (p.pp > 1) {
    std::string pp = "pp" + std::to_string(p.pp);
    if (p.pp_schedule == PipelineSchedule::interleaved) pp += "x" + std::to_string(p.virtual_stages) + " (interleaved)";
    if (!p.stage_layers.empty()) {
      pp += " (layers";
      for (std::size_t i = 0; i < p.stage_layers.size(); ++i) pp += (i ? "/" : " ") + std::to_string(p.stage_layers[i]);
      pp += ")";
    }
    add(pp);
  }
  if (p.cp > 1) add("cp" + std::to_string(p.cp));
  if (p.ep > 1) add("ep" + std::to_string(p.ep));
  if (p.etp > 0 && p.etp != p.tp) add("etp" + std::to_string(p.etp));
  add("dp" + std::to_string(p.dp));
  if (p.zero_stage > 0) add("zero" + std::to_string(p.zero_stage));
  if (p.shard_group_size > 0) add("shard" + std::to_string(p.shard_group_size));
  return label;
}

/// The calibration profile as seen from the run file's folder (no absolute path of the machine in outputs).
std::string calibration_label(const RunSpec& run) {
  std::error_code error;
  const std::filesystem::path base = std::filesystem::absolute(run.source, error).parent_path();
  const std::filesystem::path profile = std::filesystem::absolute(run.calibration, error);
  if (run.source.empty() || error) return run.calibration.filename().string();
  return profile.lexically_proximate(base).generic_string();
}

/// 2.5e+10 -> "2.5e10"-style text for messages: three significant digits.

}  // namespace

std::string summary_json(const RunSpec& run, const RunReport& report) {
  std::ostringstream out;
  detail::write_summary_json(out, run, report);
  return out.str();
}

namespace detail {

double peak_flops(const RunSpec& run) {
  return run.hardware.compute.peak_flops_per_s[static_cast<std::size_t>(run.training.precision)];
}

namespace {
/// summary.json "power", "energy_j", "energy_per_token_j", "clock", "temperature", "throttled_fraction".
void write_power_json(JsonWriter& json, const RunSpec& run, const RunReport& report) {
  const PowerReport& p = report.power;
  json.key("power").begin_object();
  json.field("governor", run.power.governor);
  json.field("cap_w", p.cap_w);
  json.field("chip_variation", run.power.chip_variation);
  json.field("slowest_chip_dynamic_scale", p.slowest_chip_dynamic_scale);
  json.field("mean_w", p.mean_w);
  json.field("peak_w", p.peak_w);
  json.field("peak_1ms_w", p.peak_1ms_w);
  json.field("peak_25ms_w", p.peak_25ms_w);
  json.field("peak_100ms_w", p.peak_100ms_w);
  json.field("max_rise_w_per_ms", p.max_rise_w_per_ms);
  json.end_object();
  json.field("energy_j", p.energy_per_iteration_j);
  json.field("energy_per_token_j", p.energy_per_token_j);
  json.key("clock").begin_object();
  json.field("ceiling_mhz", p.ceiling_hz / units::kMega);
  json.field("max_mhz", p.max_clock_hz / units::kMega);
  json.field("mean_mhz", p.clock_mean_hz / units::kMega);
  json.field("mean_all_mhz", p.clock_mean_all_hz / units::kMega);
  json.field("min_mhz", p.clock_min_hz / units::kMega);
  json.field("time_below_90pct_s", p.below_90pct_s);
  json.field("fraction_below_90pct", p.below_90pct_fraction);
  json.end_object();
  json.key("temperature").begin_object();
  double peak = -1e300;
  for (double t : p.peak_temperature_c) peak = std::max(peak, t);
  json.field("peak_c", peak);
  json.key("peak_per_gpu_c").begin_array();
  for (double t : p.peak_temperature_c) json.value(t);
  json.end_array();
  json.end_object();
  json.field("throttled_fraction", p.throttled_fraction);
  json.field("power_capped_fraction", p.power_capped_fraction);
  json.field("thermal_throttled_fraction", p.thermal_throttled_fraction);
}
}  // namespace

void write_summary_json(std::ostream& out, const RunSpec& run, const RunReport& report) {
  JsonWriter json(out);
  json.begin_object();
  json.field("chopsim_version", kChopsimVersion);
  json.field("chopsim_build", build_id());  // the git commit (and uncommitted changes) that computed it
  json.field("status", report.out_of_memory ? "out_of_memory" : "ok");

  json.key("run").begin_object();
  json.field("name", run.name);
  json.field("model", run.model.name);
  json.field("hardware", run.hardware.name);
  json.field("cluster", run.cluster.name);
  json.field("nodes", run.cluster.nodes);
  json.field("gpus", report.gpus);
  json.field("engine", run.engine);
  json.key("parallelism").begin_object();
  json.field("dp", run.parallelism.dp).field("tp", run.parallelism.tp).field("pp", run.parallelism.pp);
  json.field("cp", run.parallelism.cp).field("ep", run.parallelism.ep);
  // Only when it differs from tp (MoE parallel folding): the other runs keep their bytes.
  if (run.parallelism.expert_tp() != run.parallelism.tp) json.field("etp", run.parallelism.expert_tp());
  json.field("sequence_parallel", run.parallelism.sequence_parallel);
  json.field("pp_schedule", schedule_name(run.parallelism.pp_schedule));
  json.field("virtual_stages", run.parallelism.virtual_stages);
  if (!run.parallelism.stage_layers.empty()) {  // only for an uneven split: even runs keep their bytes
    json.key("stage_layers").begin_array();
    for (const int layers : run.parallelism.stage_layers) json.value(layers);
    json.end_array();
  }
  json.field("zero_stage", run.parallelism.zero_stage);
  json.field("shard_group_size", run.parallelism.shard_group_size);
  json.end_object();
  json.key("training").begin_object();
  json.field("global_batch", run.training.global_batch).field("micro_batch", run.training.micro_batch);
  json.field("seq_len", run.training.seq_len).field("precision", to_string(run.training.precision));
  // Only for a non-default FP8 recipe: other runs keep their bytes.
  if (run.training.precision == Precision::fp8 && run.training.fp8_recipe != Fp8Recipe::delayed)
    json.field("fp8_recipe", to_string(run.training.fp8_recipe));
  json.field("recompute", recompute_name(run.training.recompute));
  if (run.training.recompute_layers > 0) json.field("recompute_layers", run.training.recompute_layers);
  if (run.training.recompute_early_stop) json.field("recompute_early_stop", true);  // other runs keep their bytes
  if (run.training.recompute_modules.any()) {  // only when listed: other runs keep their bytes
    json.key("recompute_modules").begin_array();
    for (const std::string& name : recompute_module_names(run.training.recompute_modules)) json.value(name);
    json.end_array();
  }
  if (run.training.lora.enabled()) {  // only for LoRA runs: full-training runs keep their bytes
    const LoraSpec& lora = run.training.lora;
    json.key("lora").begin_object().field("rank", lora.rank);
    json.key("targets").begin_array();
    for (const auto& [name, target] : kLoraTargetNames)
      if (lora.*target) json.value(name);
    json.end_array().end_object();
  }
  // Only for a mixture of experts: other runs keep their bytes.
  if (run.model.is_moe()) {
    if (run.training.moe_capacity_factor) {
      json.field("moe_capacity_factor", *run.training.moe_capacity_factor);
      json.field("moe_pad_to_capacity", run.training.moe_pad_to_capacity);
    }
    json.field("moe_load_imbalance", run.training.moe_load_imbalance);
    json.field("moe_router_fusion", run.training.moe_router_fusion);
    json.field("moe_aux_loss", to_string(run.training.moe_aux_loss));
    json.field("moe_expert_bias", run.training.moe_expert_bias);
    json.key("cuda_graph_scope").begin_array();
    for (const auto& [name, scope] : kCudaGraphScopeNames)
      if (run.training.cuda_graph_scope.*scope) json.value(name);
    json.end_array();
  }
  json.field("micro_batches_per_pipeline", run.training.micro_batches(run.parallelism));
  json.field("tokens_per_iteration", run.training.tokens_per_iteration());
  json.end_object();
  json.field("iterations", run.iterations);
  if (!run.calibration.empty()) json.field("calibration", calibration_label(run));
  json.end_object();

  if (report.simulated) {
    json.field("iteration_time_s", report.iteration_time_s);
    json.key("iteration_times_s").begin_array();
    for (double t : report.iteration_times_s) json.value(t);
    json.end_array();
    json.field("tokens_per_s", report.tokens_per_s);
    json.field("tokens_per_s_per_gpu", report.gpus > 0 ? report.tokens_per_s / report.gpus : 0.0);
    json.field("tflops_per_gpu", report.model_tflops_per_gpu);
    json.field("hardware_tflops_per_gpu", report.hardware_tflops_per_gpu);
    json.field("mfu", report.mfu);
    json.field("peak_tflops_per_gpu", peak_flops(run) / units::kTera);
  }

  const auto& memory = report.memory;
  json.key("memory").begin_object();
  json.field("peak_bytes_per_gpu", memory.total_bytes);
  json.field("allocated_bytes_per_gpu", memory.allocated_bytes());
  json.field("capacity_bytes", memory.capacity_bytes);
  json.field("fits", memory.fits());
  json.field("peak_stage", memory.pp_stage);
  const auto breakdown = [&](const MemoryBreakdown& m) {
    json.key("breakdown_bytes").begin_object();
    json.field("weights", m.weights_bytes);
    json.field("gathered_weights", m.gathered_weights_bytes);
    json.field("gradients", m.gradients_bytes);
    json.field("optimizer", m.optimizer_bytes);
    json.field("activations", m.activations_bytes);
    json.field("transient", m.transient_bytes);
    json.field("workspaces", m.workspace_bytes);
    json.field("reserved", m.reserved_bytes);
    json.field("fragmentation", m.fragmentation_bytes);
    json.end_object();
  };
  breakdown(memory);
  // Every pipeline stage (the first holds the embedding and the most micro-batches in flight, the last the output
  // head and the logits): what each needs, not only the largest.
  json.key("stages").begin_array();
  for (const MemoryBreakdown& stage : report.memory_by_stage) {
    json.begin_object();
    json.field("stage", stage.pp_stage);
    json.field("peak_bytes_per_gpu", stage.total_bytes);
    json.field("fits", stage.fits());
    breakdown(stage);
    json.end_object();
  }
  json.end_array();
  json.end_object();

  if (report.simulated) {
    const auto& b = report.breakdown;
    json.key("breakdown_s").begin_object();
    json.field("compute", b.compute_s);
    for (std::size_t c = 1; c < kCommCategoryCount; ++c)
      json.field("exposed_comm_" + std::string(to_string(static_cast<CommCategory>(c))), b.exposed_comm_s[c]);
    json.field("pipeline_bubble", b.pipeline_bubble_s);
    json.field("idle", b.idle_s);
    json.end_object();
    const auto& l = report.losses;
    json.key("losses_s").begin_object();
    json.field("ideal", l.ideal_s);
    json.field("frequency", l.frequency_s);
    json.field("kernel_efficiency", l.efficiency_loss_s);
    json.field("launch", l.launch_s);
    json.field("comm_contention", l.comm_contention_s);
    json.field("exposed_comm", l.exposed_comm_s);
    json.field("pipeline_bubble", l.pipeline_bubble_s);
    json.field("idle", l.idle_s);
    json.end_object();
    json.key("host").begin_object();  // RunReport::host: the busiest host's launches, a floor under the iteration
    json.field("launch_s", run.training.host_launch_s);
    json.field("launches_per_iteration", report.host.launches_per_iteration);
    json.field("launch_time_s", report.host.launch_time_s);
    json.field("bound", report.host.binds(report.iteration_time_s));
    json.end_object();
    if (report.power.available) write_power_json(json, run, report);
    json.key("simulation").begin_object();
    json.field("engine", run.engine);
    json.field("network_model", run.engine_options.network_model);
    json.field("makespan_s", report.stats.makespan_s);
    json.field("activities", report.stats.activities);
    json.field("op_events", report.stats.op_events);
    // Under symmetry the engine simulates one GPU per class and the others take its figures (docs/design.md).
    json.field("simulated_gpus",
               report.stats.simulated_ranks > 0 ? static_cast<int>(report.stats.simulated_ranks) : report.gpus);
    if (!report.stats.symmetry_limit.empty()) json.field("symmetry_limit", report.stats.symmetry_limit);
    // A fold simulates a few steady micro-batches for all of them (docs/design.md, "Folding").
    json.field("micro_batches", report.micro_batches);
    json.field("simulated_micro_batches", report.simulated_micro_batches);
    if (report.stats.folds > 0) json.field("folded_s", report.stats.folded_s);
    if (!report.fold_limit.empty()) json.field("fold_limit", report.fold_limit);
    if (report.power.available) {
      json.field("telemetry_samples", report.stats.telemetry_samples);
      json.field("governor_decisions", report.stats.governor_decisions);
      json.field("governor_timed_decisions", report.stats.governor_timed_events);
    }
    json.end_object();
  }
  json.end_object();
}

}  // namespace detail

namespace {
std::string fixed(double value, int decimals) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  return text.data();
}

std::string with_thousands(double value) {
  std::string digits = fixed(value, 0);
  std::string out;
  const std::size_t start = (!digits.empty() && digits[0] == '-') ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string gib(double bytes) { return fixed(bytes / units::kGiB, 1); }
}  // namespace

void print_run_summary(std::ostream& out, const RunSpec& run, const RunReport& report) {
  out << "chopsim run " << run.name << ": " << run.model.name << " on " << report.gpus << " x " << run.hardware.name
      << " (" << run.cluster.nodes << (run.cluster.nodes == 1 ? " node" : " nodes") << ", "
      << run.cluster.node_topology;
  if (run.cluster.nodes > 1) out << " + " << run.cluster.fabric.kind;
  out << "), " << parallelism_label(run.parallelism) << "\n";
  out << "  global batch " << run.training.global_batch << " x " << run.training.seq_len << " tokens, micro-batch "
      << run.training.micro_batch << " (" << run.training.micro_batches(run.parallelism) << " per pipeline), "
      << to_string(run.training.precision) << ", recompute " << recompute_name(run.training.recompute)
      << (run.training.recompute_layers > 0
              ? " (" + std::to_string(run.training.recompute_layers) + " layers of each chunk)"
              : std::string())
      << (run.training.recompute_early_stop ? ", stopping early" : "");
  if (run.training.recompute_modules.any()) {
    std::string names;
    for (const std::string& name : recompute_module_names(run.training.recompute_modules))
      names += (names.empty() ? "" : ", ") + name;
    out << " (" << names << ")";
  }
  if (run.training.lora.enabled()) out << ", LoRA rank " << run.training.lora.rank << " (base weights frozen)";
  // The experts' load when it is not the balanced, dropless default: every rank is timed as the busiest one.
  if (run.model.is_moe() && run.training.moe_capacity_factor)
    out << ", experts " << (run.training.moe_pad_to_capacity ? "padded to" : "capped at") << " capacity "
        << fixed(*run.training.moe_capacity_factor, 2);
  if (run.model.is_moe() && run.training.moe_load_imbalance != 1.0)
    out << ", busiest expert rank at " << fixed(run.training.moe_load_imbalance, 2) << " x the mean load";
  out << (run.training.deterministic ? ", deterministic" : "") << "\n";
  if (!run.calibration.empty()) out << "  calibrated by " << calibration_label(run) << "\n";
  out << "\n";

  const auto& m = report.memory;
  out << "  peak memory / GPU   " << gib(m.total_bytes) << " GiB of " << gib(m.capacity_bytes) << " GiB"
      << (m.fits() ? "" : "  -> OUT OF MEMORY") << "\n";
  out << "    weights " << gib(m.weights_bytes + m.gathered_weights_bytes) << ", gradients " << gib(m.gradients_bytes)
      << ", optimizer " << gib(m.optimizer_bytes) << ", activations " << gib(m.activations_bytes) << ", transient "
      << gib(m.transient_bytes) << ", workspaces " << gib(m.workspace_bytes) << ", reserved+fragmentation "
      << gib(m.reserved_bytes + m.fragmentation_bytes) << " GiB (stage " << m.pp_stage << ")\n";
  if (!report.simulated) {
    out << "\n  not simulated: the run does not fit in GPU memory (pass --simulate-oom to simulate it anyway)\n";
    return;
  }
  out << "\n  iteration time      " << fixed(report.iteration_time_s, 4) << " s";
  if (report.iteration_times_s.size() > 1) out << " (mean of " << report.iteration_times_s.size() << " iterations)";
  out << "\n";
  out << "  throughput          " << with_thousands(report.tokens_per_s) << " tokens/s ("
      << with_thousands(report.tokens_per_s / report.gpus) << " per GPU)\n";
  out << "  model TFLOP/s / GPU " << fixed(report.model_tflops_per_gpu, 1) << "   MFU " << fixed(100.0 * report.mfu, 1)
      << " % of " << fixed(detail::peak_flops(run) / units::kTera, 1) << " TFLOP/s "
      << to_string(run.training.precision) << "\n";
  out << "\n  time per iteration, mean over GPUs:\n";
  const auto& b = report.breakdown;
  const double total = std::max(b.total_s(), 1e-300);
  auto line = [&](const std::string& label, double seconds) {
    std::string padded = label;
    padded.resize(24, ' ');
    out << "    " << padded << fixed(seconds, 4) << " s  " << fixed(100.0 * seconds / total, 1) << " %\n";
  };
  line("compute", b.compute_s);
  for (std::size_t c = 1; c < kCommCategoryCount; ++c)
    if (b.exposed_comm_s[c] > 0.0)
      line("exposed " + std::string(to_string(static_cast<CommCategory>(c))) + " comm", b.exposed_comm_s[c]);
  if (run.parallelism.pp > 1) line("pipeline bubble", b.pipeline_bubble_s);
  line("idle", b.idle_s);
  // The host's launches bound the iteration from below; near it the GPUs wait for the host (their gaps are idle).
  if (report.host.launch_time_s > 0.0 && report.iteration_time_s > 0.0) {
    const double share = report.host.launch_time_s / report.iteration_time_s;
    out << "  host launches       " << with_thousands(report.host.launches_per_iteration) << " per iteration x "
        << fixed(run.training.host_launch_s * 1e6, 0) << " us = " << fixed(report.host.launch_time_s, 4) << " s, "
        << fixed(100.0 * share, 0) << " % of the iteration"
        << (report.host.binds(report.iteration_time_s) ? " (host-bound)" : "") << "\n";
  }
  const auto& l = report.losses;
  out << "\n  gap to the ideal time (every kernel at its roofline peak and max clock, no communication):\n";
  line("ideal", l.ideal_s);
  line("frequency overhead", l.frequency_s);
  line("kernel efficiency loss", l.efficiency_loss_s);
  line("launch overhead", l.launch_s);
  line("comm contention", l.comm_contention_s);
  line("exposed comm", l.exposed_comm_s);
  if (run.parallelism.pp > 1) line("pipeline bubble", l.pipeline_bubble_s);
  line("idle", l.idle_s);
  if (report.power.available) {
    const auto& p = report.power;
    double peak_c = -1e300;
    for (double t : p.peak_temperature_c) peak_c = std::max(peak_c, t);
    out << "\n  power / GPU         mean " << fixed(p.mean_w, 0) << " W, peak " << fixed(p.peak_w, 0) << " W (1 ms "
        << fixed(p.peak_1ms_w, 0) << " W, 25 ms " << fixed(p.peak_25ms_w, 0) << " W, 100 ms "
        << fixed(p.peak_100ms_w, 0) << " W), cap " << fixed(p.cap_w, 0) << " W, largest rise "
        << fixed(p.max_rise_w_per_ms, 0) << " W/ms\n";
    out << "  energy              " << fixed(p.energy_per_iteration_j / 1e3, 2) << " kJ per iteration, "
        << fixed(p.energy_per_token_j, 3) << " J per token\n";
    out << "  clock (in kernels)  mean " << fixed(p.clock_mean_hz / units::kMega, 0) << " MHz, min "
        << fixed(p.clock_min_hz / units::kMega, 0) << " MHz of " << fixed(p.max_clock_hz / units::kMega, 0)
        << " MHz max; below 90 % of max " << fixed(100.0 * p.below_90pct_fraction, 1) << " % of kernel time\n";
    out << "  throttled           " << fixed(100.0 * p.throttled_fraction, 1) << " % of GPU time (power cap "
        << fixed(100.0 * p.power_capped_fraction, 1) << " %, thermal " << fixed(100.0 * p.thermal_throttled_fraction, 1)
        << " %); peak temperature " << fixed(peak_c, 1) << " °C (" << run.power.governor << " governor)\n";
    if (p.slowest_chip_dynamic_scale > 1.0)
      out << "  slowest chip        the cap holds the pace of the slowest of " << p.chips << " chips: dynamic power +"
          << fixed(100.0 * (p.slowest_chip_dynamic_scale - 1.0), 1) << " % (power.chip_variation "
          << fixed(run.power.chip_variation, 3) << ")\n";
  }
  out << "\n  simulated ";
  if (report.stats.simulated_ranks > 0 && static_cast<int>(report.stats.simulated_ranks) < report.gpus)
    out << report.stats.simulated_ranks << " of " << report.gpus << " GPUs (one per symmetry class), ";
  out << with_thousands(static_cast<double>(report.stats.op_events / 2)) << " ops ("
      << with_thousands(static_cast<double>(report.stats.activities)) << " engine activities) in "
      << fixed(report.wall_time_s, 2) << " s wall time\n";
  if (report.stats.folds > 0)
    out << "  folded              " << report.simulated_micro_batches << " of " << report.micro_batches
        << " micro-batches per pipeline simulated, a window of steady ones standing for the rest (simulation.fold); "
           "peak power and the lowest clock are the simulated ones'\n";
  else if (!report.fold_limit.empty())
    out << "  not folded          " << report.fold_limit << "\n";
  else if (report.foldable_simulated_micro_batches > 0)
    out << "  folding             off; --set simulation.fold=true would simulate "
        << report.foldable_simulated_micro_batches << " of " << report.micro_batches << " micro-batches per pipeline:\n"
        << "                      iteration time and energy within 0.4 %; peak power and the lowest clock from those "
           "(docs/design.md)\n";
  for (const auto& file : report.files_written) out << "  wrote " << file.string() << "\n";
}

}  // namespace chopsim
