// `chopsim replay` (docs/replay.md): options and hardware resolution, kernel durations on the target GPU, the engine
// run, and the report (terminal, summary.json, timeline.json).

#include "chopsim/experiments/replay.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "chopsim/calibration/measurements.hpp"
#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/config_files.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/version.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/run_spec.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/topology.hpp"
#include "observers.hpp"
#include "replay_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using replay_detail::MeasuredRecord;

namespace {

/// GPU names as traces report them (nvidia-smi / CUDA device names, ROCm marketing names) -> the shipped hardware
/// file and the node it usually sits in. First match wins; `unless` excludes other boards of the same chip.
struct GpuName {
  const char* contains;
  const char* unless;
  const char* hardware;
  const char* cluster;
};
constexpr std::array<GpuName, 11> kGpuNames = {{
    // "NVIDIA H100 80GB HBM3" is the SXM5 board; the PCIe and NVL cards say so in their names.
    {"h100", "pcie", "H100-SXM5-80GB", "dgx-h100"},
    {"h200", "nvl", "H200-SXM-141GB", "dgx-h200"},
    // "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", and Meta's "NVIDIA A100-PG509-200" (an SXM4 board).
    {"a100", "pcie", "A100-SXM4-80GB", "dgx-a100"},
    // "NVIDIA GB200" before "b200", which it contains; its 8-GPU NVLink domain is modelled as a DGX B200 node.
    {"gb200", nullptr, "GB200", "dgx-b200"},
    {"b200", nullptr, "B200", "dgx-b200"},
    {"mi300x", nullptr, "MI300X", "mi300x"},  // also the SR-IOV "MI300X VF"
    // MI325X, MI350X and MI355X boards sit in the same 8-OAM Infinity Fabric mesh as MI300X's
    // (configs/clusters/mi300x).
    {"mi325x", nullptr, "MI325X", "mi300x"},
    {"mi350x", nullptr, "MI350X", "mi300x"},
    {"mi355x", nullptr, "MI355X", "mi300x"},
    {"mi250x", nullptr, "MI250X", "mi250x"},
    {"mi250", nullptr, "MI250", "mi250"},
}};

std::string default_cluster(const std::string& hardware) {
  for (const GpuName& g : kGpuNames)
    if (hardware == g.hardware) return g.cluster;
  return {};
}

std::string names_in(const fs::path& folder) {
  const std::string text = join(config_names_in(folder));
  return text.empty() ? "(none)" : text;
}

/// A component file by name (configs_dir/FOLDER/NAME.yaml) or path; InputError listing the names otherwise.
fs::path component_file(const std::string& text, const fs::path& configs_dir, const char* folder, const char* option) {
  const fs::path file = looks_like_config_path(text) ? fs::path(text) : configs_dir / folder / (text + ".yaml");
  std::error_code error;
  if (fs::is_regular_file(file, error)) return file;
  if (looks_like_config_path(text))
    throw InputError(SourceLocation{"command line"}, option, "file not found: " + text, "check the path");
  throw InputError(SourceLocation{"command line"}, option,
                   "no " + std::string(folder == std::string("hardware") ? "hardware" : "cluster") + " named '" + text +
                       "': looked for " + file.string() + "; available: " + names_in(configs_dir / folder),
                   "use one of the available names, a path to a YAML file, or --configs DIR");
}

Precision precision_of(const MeasuredRecord& k, const std::vector<std::string>& names) {
  if (k.kernel_class != KernelClass::gemm && k.kernel_class != KernelClass::attention) return Precision::bf16;
  const std::string dtype = dtype_from_kernel_name(names.at(k.name));
  return precision_from_string(dtype).value_or(Precision::bf16);
}

/// A GPU's roofline and power model, and the clock it sustains for a kernel under its power limit.
class ClockedGpu {
 public:
  ClockedGpu(const HardwareSpec& hardware, const ModelRegistries& registries)
      : compute_(registries.compute.create("roofline", compute_params_for(hardware, ""))),
        power_(registries.power.create("cv2f", power_params_for(hardware))),
        // A die at its power limit in its usual chassis's front slot, in steady state (leakage).
        limits_(sustained_clock_limits(hardware, *registries.thermal.create("rc", hardware.thermal))) {}
  /// `work`'s timing at the clock this GPU holds while running it.
  [[nodiscard]] KernelTiming timing(const KernelWork& work) const {
    return compute_->timing(work, sustained_clock_hz(*compute_, *power_, work, limits_));
  }

 private:
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<PowerModel> power_;
  SustainedClockLimits limits_;
};

/// Replayed time per class and per rank, from the op events.
class ReplayObserver final : public SimulationObserver {
 public:
  ReplayObserver(const replay_detail::ReplayWorkload& replay) : replay_(replay) {
    first_.assign(replay.workload.programs.size(), -1.0);
    last_.assign(replay.workload.programs.size(), 0.0);
  }
  void on_op_event(const OpEvent& e) override {
    if (!e.is_end) return;
    const Op& op = replay_.workload.program(static_cast<int>(e.rank)).streams[e.stream].ops[e.op];
    if (op.kind == OpKind::delay) return;
    class_s_[static_cast<std::size_t>(op.kernel_class)] += e.time_s - e.start_s;
    double& first = first_[e.rank];
    if (first < 0.0 || e.start_s < first) first = e.start_s;
    last_[e.rank] = std::max(last_[e.rank], e.time_s);
  }
  [[nodiscard]] double class_s(KernelClass c) const { return class_s_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] double first(int rank) const { return std::max(first_[static_cast<std::size_t>(rank)], 0.0); }
  [[nodiscard]] double last(int rank) const { return last_[static_cast<std::size_t>(rank)]; }

 private:
  const replay_detail::ReplayWorkload& replay_;
  std::array<double, kKernelClassCount> class_s_{};
  std::vector<double> first_, last_;
};

std::string fixed(double value, int decimals) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  return text.data();
}

std::string signed_percent(double fraction) { return (fraction >= 0 ? "+" : "") + fixed(100.0 * fraction, 2) + " %"; }

void write_summary(std::ostream& out, const ReplayReport& r) {
  JsonWriter json(out);
  json.begin_object();
  json.field("chopsim_version", kChopsimVersion);
  json.field("store", r.store);
  json.key("measured").begin_object();
  json.field("gpu", r.measured_gpu);
  json.field("hardware", r.measured_hardware);
  json.end_object();
  json.key("target").begin_object();
  json.field("hardware", r.target_hardware);
  json.field("cluster", r.cluster);
  json.field("nodes", r.nodes);
  json.field("same_hardware", r.same_hardware);
  json.end_object();
  json.key("span_s").begin_object();
  json.field("measured", r.measured_span_s);
  json.field("replayed", r.replayed_span_s);
  json.field("error", r.span_error());
  json.end_object();
  json.key("classes").begin_array();
  for (const auto& c : r.classes) {
    json.begin_object();
    json.field("class", kernel_class_name(c.kernel_class));
    json.field("records", c.records);
    json.field("measured_s", c.measured_s);
    json.field("replayed_s", c.replayed_s);
    json.end_object();
  }
  json.end_array();
  json.key("ranks").begin_array();
  for (const auto& rank : r.ranks) {
    json.begin_object();
    json.field("rank", rank.rank);
    json.field("records", rank.records);
    json.field("streams", rank.streams);
    json.field("measured_span_s", rank.measured_s);
    json.field("replayed_span_s", rank.replayed_s);
    json.end_object();
  }
  json.end_array();
  json.key("workload").begin_object();
  json.field("records", r.records);
  json.field("host_gaps", r.delays);
  json.field("host_gap_s", r.delay_s);
  json.field("cross_stream_dependencies", r.cross_stream_dependencies);
  json.field("collectives_matched", r.collectives_matched);
  json.field("collectives_simulated", r.collectives_simulated);
  json.field("collectives_measured_alone", r.collectives_measured);
  json.field("kernels_scaled_by_work", r.kernels_scaled_by_work);
  json.field("kernels_scaled_by_class", r.kernels_scaled_by_class);
  json.end_object();
  json.key("notes").begin_array();
  for (const auto& n : r.notes) json.value(n);
  json.end_array();
  json.end_object();
  out << "\n";
}

}  // namespace

std::string hardware_for_gpu_name(const std::string& gpu_name) {
  const std::string name = to_lower(gpu_name);
  for (const GpuName& g : kGpuNames)
    if (name.find(g.contains) != std::string::npos && (g.unless == nullptr || name.find(g.unless) == std::string::npos))
      return g.hardware;
  return {};
}

ReplayReport run_replay(const ReplayOptions& options, const ModelRegistries& registries) {
  const auto wall_start = std::chrono::steady_clock::now();
  ReplayReport report;
  report.store = options.store.string();

  // ---- the store -------------------------------------------------------------------------------------------------
  const replay_detail::MeasuredTrace trace = replay_detail::read_measured_trace(options.store);
  const std::vector<MeasuredRecord>& records = trace.records;

  // ---- hardware ----------------------------------------------------------------------------------------------------
  const std::set<std::string>& gpu_names = trace.gpu_names;
  const int world_size = trace.world_size;
  const bool world_consistent = trace.world_consistent;
  report.measured_gpu = join(gpu_names);
  if (report.measured_gpu.empty()) report.measured_gpu = "not stated in the store";

  std::string measured_name = options.measured_hardware;
  if (measured_name.empty() && gpu_names.size() == 1) {
    measured_name = hardware_for_gpu_name(*gpu_names.begin());
    if (!measured_name.empty())
      report.notes.push_back("measured GPU '" + *gpu_names.begin() + "' read as " + measured_name +
                             " (--measured-hardware to choose another file)");
  }
  const std::string target_name = options.hardware.empty() ? measured_name : options.hardware;
  if (!options.hardware.empty() && measured_name.empty())
    throw InputError(SourceLocation{"command line"}, "--measured-hardware",
                     "cannot tell which hardware file describes the measured GPU (" + report.measured_gpu +
                         "), which replaying on " + options.hardware + " needs to scale its kernels",
                     "pass --measured-hardware NAME or a path to a hardware YAML file of that GPU");
  std::optional<HardwareSpec> measured_hw, target_hw;
  CollectiveParams collective_params;
  if (!measured_name.empty()) {
    measured_hw =
        load_hardware_config(component_file(measured_name, options.configs_dir, "hardware", "--measured-hardware"));
    target_hw =
        options.hardware.empty()
            ? *measured_hw
            : load_hardware_config(component_file(options.hardware, options.configs_dir, "hardware", "--hardware"));
  }
  // `profile` applied to `hardware` as the run key `calibration:` applies it (kernels and links over the hardware
  // file's, collective parameters over the defaults).
  const auto calibrated = [&](const std::optional<HardwareSpec>& hardware, const std::filesystem::path& profile,
                              const char* flag, const std::string& gpu, const char* fix) {
    if (!hardware)
      throw InputError(SourceLocation{"command line"}, flag,
                       "a calibration profile needs to know the " + gpu + " (" + report.measured_gpu + ")", fix);
    RunSpec spec;
    spec.hardware = *hardware;
    apply_calibration_profile(spec, profile);
    return spec;
  };
  if (!options.calibration.empty()) {
    const RunSpec spec =
        calibrated(target_hw, options.calibration, "--calibration", "GPU", "pass --hardware or --measured-hardware");
    target_hw = spec.hardware;
    collective_params = spec.collectives;
  }
  if (!options.measured_calibration.empty())
    measured_hw = calibrated(measured_hw, options.measured_calibration, "--measured-calibration", "measured GPU",
                             "pass --measured-hardware")
                      .hardware;
  report.same_hardware = !measured_hw || measured_hw->name == target_hw->name;
  report.measured_hardware = measured_hw ? measured_hw->name : "unknown (no hardware file: replayed as measured)";
  report.target_hardware = target_hw ? target_hw->name : report.measured_hardware;

  // ---- workload --------------------------------------------------------------------------------------------------
  // A kernel moves from the measured GPU to the target at the clock each holds for it under its power limit (the
  // firmware governor's steady state for that load): a dense GEMM on MI300X runs near 1.2 GHz under 750 W, one on
  // H100 near its boost clock, and the hardware files' efficiencies are fractions of the peak at the running clock.
  std::optional<ClockedGpu> source_gpu, target_gpu;
  if (measured_hw) {
    source_gpu.emplace(*measured_hw, registries);
    target_gpu.emplace(*target_hw, registries);
  }
  // Per distinct work, once: each ratio takes two held-clock searches, a trace repeats its shapes every layer, and
  // the class ratios below visit every record before the workload is built.
  std::map<std::tuple<KernelClass, Precision, double, double>, double> ratios;
  auto ratio_of = [&](const KernelWork& work) {
    const auto [it, inserted] = ratios.try_emplace({work.kernel_class, work.precision, work.flops, work.bytes}, 1.0);
    if (inserted) {
      const KernelTiming s = source_gpu->timing(work);
      const KernelTiming t = target_gpu->timing(work);
      const double ds = s.duration_s - s.launch_s, dt = t.duration_s - t.launch_s;
      if (ds > 0.0 && dt > 0.0) it->second = dt / ds;
    }
    return it->second;
  };
  auto work_of = [&](const MeasuredRecord& k) -> std::optional<KernelWork> {
    const bool has_flops = std::isfinite(k.flops) && k.flops > 0.0;
    const bool has_bytes = std::isfinite(k.bytes) && k.bytes > 0.0;
    if (!has_flops && !has_bytes) return std::nullopt;
    return KernelWork{k.kernel_class, precision_of(k, trace.names), has_flops ? k.flops : 0.0,
                      has_bytes ? k.bytes : 0.0};
  };
  // Records with neither FLOPs nor bytes scale as the store's records of the same class and precision that have
  // them (their measured time x ratio over their measured time: the class's mix of sizes in this trace), or, when
  // none has, as a large kernel of the class at its roofline limit (compute classes at their FLOP/s, the others at
  // HBM bandwidth).
  std::map<std::pair<KernelClass, Precision>, double> class_ratio;
  if (!report.same_hardware) {
    std::map<std::pair<KernelClass, Precision>, std::pair<double, double>> scaled;  // measured s, replayed s
    for (const MeasuredRecord& k : records)
      if (const auto work = work_of(k)) {
        auto& [measured, replayed] = scaled[{work->kernel_class, work->precision}];
        measured += k.end_s - k.start_s;
        replayed += (k.end_s - k.start_s) * ratio_of(*work);
      }
    for (const auto& [key, times] : scaled)
      if (times.first > 0.0) class_ratio[key] = times.second / times.first;
  }
  replay_detail::BuildOptions build;
  build.dependency_window_s = options.dependency_window_s;
  build.whole_world = world_consistent && world_size > 1;
  if (build.whole_world)
    for (int r = 0; r < world_size && build.whole_world; ++r)
      build.whole_world =
          std::any_of(records.begin(), records.end(), [&](const MeasuredRecord& m) { return m.rank == r; });
  build.precision = [&](const MeasuredRecord& k) { return precision_of(k, trace.names); };
  const bool other_cluster = !options.cluster.empty();
  build.simulate_collectives = target_hw && (options.simulate_collectives || !report.same_hardware || other_cluster);
  if (options.simulate_collectives && !target_hw)
    throw InputError(SourceLocation{"command line"}, "--simulate-collectives",
                     "re-simulating collectives needs a hardware model of the GPU (" + report.measured_gpu + ")",
                     "pass --measured-hardware NAME");
  build.kernel_duration = [&](const MeasuredRecord& k) {
    const double measured = k.end_s - k.start_s;
    if (report.same_hardware) return measured;
    if (const auto work = work_of(k)) {
      ++report.kernels_scaled_by_work;
      return measured * ratio_of(*work);
    }
    ++report.kernels_scaled_by_class;
    const Precision p = precision_of(k, trace.names);
    auto [it, inserted] = class_ratio.emplace(std::make_pair(k.kernel_class, p), 1.0);
    if (inserted) {
      const bool compute_class = k.kernel_class == KernelClass::gemm || k.kernel_class == KernelClass::attention;
      it->second =
          ratio_of(compute_class ? KernelWork{k.kernel_class, p, 1e15, 0.0} : KernelWork{k.kernel_class, p, 0.0, 1e12});
    }
    return measured * it->second;
  };
  replay_detail::ReplayWorkload replay = replay_detail::build_replay_workload(trace, build);
  const int world = static_cast<int>(replay.workload.program_of_rank.size());

  // ---- platform ----------------------------------------------------------------------------------------------------
  Topology topology;
  std::unique_ptr<ComputeModel> engine_compute;
  int gpus_per_node = 8;
  if (target_hw) {
    std::string cluster_name = options.cluster.empty() ? default_cluster(target_hw->name) : options.cluster;
    if (cluster_name.empty())
      throw InputError(SourceLocation{"command line"}, "--cluster",
                       "no usual node is known for hardware '" + target_hw->name + "'",
                       "pass --cluster NAME (configs/clusters) or a path to a cluster YAML file");
    ClusterSpec cluster =
        load_cluster_config(component_file(cluster_name, options.configs_dir, "clusters", "--cluster"));
    cluster.nodes = std::max(1, (world + cluster.gpus_per_node - 1) / cluster.gpus_per_node);
    if (cluster.nodes == 1) cluster.fabric.kind = "none";
    if (cluster.gpus_per_node % std::max(target_hw->dies_per_package, 1) != 0)
      throw InputError(SourceLocation{"command line"}, "--cluster",
                       "cluster '" + cluster.name + "' does not fit hardware '" + target_hw->name + "'",
                       "choose a cluster built for that GPU");
    gpus_per_node = cluster.gpus_per_node;
    report.cluster = cluster.name;
    report.nodes = cluster.nodes;
    topology = build_topology(cluster, *target_hw, registries.node_topology, registries.fabric_topology);
    engine_compute = registries.compute.create("roofline", compute_params_for(*target_hw, ""));
  } else {
    // As measured without a hardware model: every op has its measured duration and no collective moves data, so the
    // GPUs need no links.
    for (int r = 0; r < world; ++r) topology.add_vertex({VertexKind::gpu, "gpu" + std::to_string(r), r, 0});
    ComputeParams params;
    params.boost_clock_hz = 1e9;
    params.hbm_bandwidth_bytes_per_s = 1e12;
    params.peak_flops_per_s.fill(1e12);
    engine_compute = registries.compute.create("roofline", params);
    report.cluster = "none (GPUs without links)";
    report.nodes = 1;
  }
  const auto collectives = registries.collective.create("nccl", collective_params);
  const auto engine = registries.engine.create(options.engine, EngineOptions{});

  // ---- outputs and the run
  // -------------------------------------------------------------------------------------------
  AtomicOutputSet outputs;
  const bool write_files = !options.output_dir.empty();
  if (write_files) create_output_directory(options.output_dir, "--out");
  detail::FanOutObserver observers;
  ReplayObserver observer(replay);
  observers.add(observer);
  std::unique_ptr<detail::TimelineWriter> timeline;
  if (write_files) {
    timeline = std::make_unique<detail::TimelineWriter>(
        replay.workload, outputs.stage(options.output_dir / detail::timeline_file_name(options.timeline_format)),
        gpus_per_node, std::vector<int>{}, options.timeline_format);
    observers.add(*timeline);
  }
  SimulationInput input;
  input.workload = &replay.workload;
  input.topology = &topology;
  input.compute = engine_compute.get();
  input.collectives = collectives.get();
  (void)engine->run(input, observers);
  if (timeline) timeline->finish();

  // ---- report ------------------------------------------------------------------------------------------------------
  std::array<ReplayClassTime, kKernelClassCount> classes{};
  std::map<int, ReplayRankSpan> spans;
  std::map<int, std::pair<double, double>> measured_span;
  std::map<int, std::set<std::pair<std::int32_t, std::int64_t>>> streams;
  double first = 0.0, last = 0.0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const MeasuredRecord& m = records[i];
    ReplayClassTime& c = classes[static_cast<std::size_t>(m.kernel_class)];
    ++c.records;
    c.measured_s += m.end_s - m.start_s;
    auto [it, inserted] = measured_span.emplace(m.rank, std::make_pair(m.start_s, m.end_s));
    if (!inserted) it->second = {std::min(it->second.first, m.start_s), std::max(it->second.second, m.end_s)};
    ++spans[m.rank].records;
    streams[m.rank].insert({m.device, m.stream});
    first = i == 0 ? m.start_s : std::min(first, m.start_s);
    last = std::max(last, m.end_s);
  }
  report.measured_span_s = last - first;
  double replay_first = -1.0, replay_last = 0.0;
  for (auto& [rank, span] : spans) {
    span.rank = rank;
    span.streams = streams[rank].size();
    span.measured_s = measured_span[rank].second - measured_span[rank].first;
    span.replayed_s = observer.last(rank) - observer.first(rank);
    replay_first = replay_first < 0.0 ? observer.first(rank) : std::min(replay_first, observer.first(rank));
    replay_last = std::max(replay_last, observer.last(rank));
    report.ranks.push_back(span);
  }
  report.replayed_span_s = replay_last - std::max(replay_first, 0.0);
  for (std::size_t c = 0; c < kKernelClassCount; ++c) {
    if (classes[c].records == 0) continue;
    classes[c].kernel_class = static_cast<KernelClass>(c);
    classes[c].replayed_s = observer.class_s(static_cast<KernelClass>(c));
    report.classes.push_back(classes[c]);
  }
  report.records = records.size();
  report.delays = replay.delays;
  report.delay_s = replay.delay_s;
  report.cross_stream_dependencies = replay.dependencies;
  report.collectives_matched = replay.collectives_matched;
  report.collectives_simulated = replay.collectives_simulated;
  report.collectives_measured = replay.collectives_measured;
  for (auto& n : replay.notes) report.notes.push_back(std::move(n));
  if (replay.collectives_measured > 0)
    report.notes.push_back(
        std::to_string(replay.collectives_measured) +
        " communication records keep their measured durations alone (their process group is not "
        "all in the store, or it is not known): " +
        (report.same_hardware ? std::string("as measured") : "not re-simulated on " + report.target_hardware));
  if (replay.collectives_matched > replay.collectives_simulated && build.simulate_collectives)
    report.notes.push_back(std::to_string(replay.collectives_matched - replay.collectives_simulated) +
                           " matched collectives of unknown kind or size keep their measured transfer times");
  if (!report.same_hardware)
    report.notes.push_back("host gaps are kept as measured: the replay assumes the host launches at the same pace on " +
                           report.target_hardware);

  if (write_files) {
    std::ostringstream summary;
    write_summary(summary, report);
    const auto staged = outputs.stage(options.output_dir / "summary.json");
    auto file = open_for_writing(staged);
    file << summary.str();
    file.close();
    if (!file) throw OutputError("cannot write " + staged.string());
    outputs.commit();
    report.files_written = {options.output_dir / "summary.json",
                            options.output_dir / detail::timeline_file_name(options.timeline_format)};
  }
  report.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report;
}

void print_replay_summary(std::ostream& out, const ReplayReport& r) {
  out << "chopsim replay " << r.store << ": " << r.records << " GPU records of " << r.ranks.size()
      << (r.ranks.size() == 1 ? " rank" : " ranks") << " measured on " << r.measured_gpu << " (" << r.measured_hardware
      << ")\n";
  out << "  replayed on " << r.target_hardware << ", " << r.cluster;
  if (r.nodes > 1) out << " x " << r.nodes << " nodes";
  out << (r.same_hardware ? " (kernels as measured)" : " (kernels scaled by the roofline's target/source ratio)")
      << "\n\n";
  out << "  class          records   measured ms   replayed ms   change\n";
  double measured_total = 0.0, replayed_total = 0.0;
  for (const auto& c : r.classes) {
    std::array<char, 160> line{};
    std::snprintf(line.data(), line.size(), "  %-13s %8llu %13.3f %13.3f   %s\n",
                  std::string(kernel_class_name(c.kernel_class)).c_str(), static_cast<unsigned long long>(c.records),
                  c.measured_s * 1e3, c.replayed_s * 1e3,
                  c.measured_s > 0.0 ? signed_percent((c.replayed_s - c.measured_s) / c.measured_s).c_str() : "-");
    out << line.data();
    measured_total += c.measured_s;
    replayed_total += c.replayed_s;
  }
  std::array<char, 160> line{};
  std::snprintf(
      line.data(), line.size(), "  %-13s %8llu %13.3f %13.3f   %s\n", "GPU time",
      static_cast<unsigned long long>(r.records), measured_total * 1e3, replayed_total * 1e3,
      measured_total > 0.0 ? signed_percent((replayed_total - measured_total) / measured_total).c_str() : "-");
  out << line.data();
  std::snprintf(line.data(), line.size(), "  %-13s %8s %13.3f %13.3f   %s\n", "span", "", r.measured_span_s * 1e3,
                r.replayed_span_s * 1e3, signed_percent(r.span_error()).c_str());
  out << line.data() << "\n";
  if (r.ranks.size() > 1)
    for (const auto& rank : r.ranks)
      out << "  rank " << rank.rank << ": span " << fixed(rank.measured_s * 1e3, 3) << " -> "
          << fixed(rank.replayed_s * 1e3, 3) << " ms (" << rank.streams << " streams)\n";
  out << "  " << r.delays << " host gaps kept (" << fixed(r.delay_s * 1e3, 3) << " ms), " << r.cross_stream_dependencies
      << " cross-stream dependencies, " << r.collectives_matched << " collectives matched across ranks ("
      << r.collectives_simulated << " re-simulated), " << r.collectives_measured << " measured alone\n";
  if (!r.same_hardware)
    out << "  " << r.kernels_scaled_by_work << " kernels scaled by their FLOPs/bytes, " << r.kernels_scaled_by_class
        << " by their class's roofline peak\n";
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
  for (const auto& f : r.files_written) out << "  wrote " << f.string() << "\n";
}

}  // namespace chopsim
