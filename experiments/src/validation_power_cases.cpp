// The power, DVFS and thermal cases `chopsim validate` predicts (validation_cases.cpp has the step-time records and
// load_validation_cases): the H200 measurement made for this project, Perseus and Zeus/Merak on A100, and the seed
// papers' findings.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <set>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "validation_internal.hpp"

namespace chopsim::validation_detail {

namespace {

// ---- power, DVFS and thermal cases ----------------------------------------------------------------------------

/// CSV rows as maps of column -> text (the files in ../shared/data/power are plain comma-separated, quoted fields
/// only in columns read here as a whole).
std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(SourceLocation{path.string(), 0, 0}, "", "cannot read the file", "restore it from ../shared/data");
  std::string line;
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (const char c : text) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        fields.push_back(field);
        field.clear();
      } else if (c != '\r') {
        field += c;
      }
    }
    fields.push_back(field);
    return fields;
  };
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    const auto fields = split(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    if (fields.size() != header.size())
      throw InputError(SourceLocation{path.string(), line_number, 1}, "",
                       "has " + std::to_string(fields.size()) + " fields, the header " + std::to_string(header.size()),
                       "restore the file from ../shared/data");
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double number(const std::map<std::string, std::string>& row, const std::string& key,
              const std::filesystem::path& file) {
  const auto it = row.find(key);
  if (it == row.end()) throw InputError(SourceLocation{file.string(), 0, 0}, key, "column missing", "restore the file");
  return std::stod(it->second);
}

}  // namespace

/// The H200 measurement made for this project (../shared/data/measured/h200_llama32_1b, probe.py there): eager PyTorch
/// training of a Llama-3.2-1B shape at micro-batch 1, 2, 4, 8, then 60 s at micro-batch 4. Per phase: the median step
/// (the sustained phase: its mean) and the allocator peak (steps.json, not for the sustained phase), and from NVML
/// (nvml.csv, sampled every ~10 ms, refreshed every ~100 ms) over the second half of the phase's window: the mean
/// instantaneous power, the mean SM clock and the largest instantaneous power reading. The second half because the
/// phase starts from the previous phase's state (from idle for micro-batch 1, whose board 1-second power average is
/// still climbing through the first half of its 1.9 s window: 371 W over the whole window, 684 W instantaneous in its
/// second half) and with its three warm-up steps, which the timed steps leave out and the simulation does not run:
/// the whole windows' largest readings of micro-batch 2 and 8 fall in their third warm-up step (753 W at 0.50 s,
/// 923 W at 1.71 s; 734 W and 835 W in the second halves). The profile's power fit (calibration/runs/) takes the same
/// second halves.
void add_h200_eager_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                          const ModelRegistries& registries, std::vector<ValidationCase>& cases) {
  const auto folder = data_dir / "measured" / "h200_llama32_1b";
  const auto steps_file = folder / "steps.json";
  const auto nvml_file = folder / "nvml.csv";
  if (!std::filesystem::exists(steps_file) || !std::filesystem::exists(nvml_file)) return;
  const YAML::Node steps = load_yaml_data(steps_file);
  const auto nvml = read_csv(nvml_file);
  const std::string source = "../shared/data/measured/h200_llama32_1b/";
  // The four micro-batch phases, and the 60 s at micro-batch 4 that followed them: a held-out check of the power
  // fit (calibration/runs/h200-llama3.2-1b-eager.yaml fits the four phases only).
  for (const std::string key : {"mb1", "mb2", "mb4", "mb8", "sustained_mb4"}) {
    const bool sustained = key == "sustained_mb4";
    const int micro_batch = sustained ? 4 : std::stoi(key.substr(2));
    const YAML::Node phase = steps["runs"][key];
    const auto config =
        configs_dir / "validation" / ("h200-llama3.2-1b-eager-mb" + std::to_string(micro_batch) + ".yaml");
    if (!phase || !phase["window_s"] || !std::filesystem::exists(config)) continue;
    const double from = phase["window_s"][0].as<double>();
    const double to = phase["window_s"][1].as<double>();
    const double half = from + 0.5 * (to - from);
    double power = 0.0, clock = 0.0, peak = 0.0;
    int readings = 0;
    for (const auto& row : nvml) {
      const double t = number(row, "t_s", nvml_file);
      if (t < half || t > to) continue;
      peak = std::max(peak, number(row, "power_instant_w", nvml_file));
      power += number(row, "power_instant_w", nvml_file);
      clock += number(row, "sm_clock_mhz", nvml_file) * units::kMega;
      ++readings;
    }
    if (readings == 0) continue;
    ValidationCase base;
    base.group = "h200_eager";
    base.run = load_run_config(config, default_search_path(config), registries);
    base.shared_run = "h200 eager " + key;
    const std::string id =
        "Llama-3.2-1B eager, micro-batch " + std::to_string(micro_batch) + (sustained ? " sustained 60 s" : "");

    const auto add = [&](const std::string& what, const std::string& file, ValidationMetric metric,
                         const std::string& probe, double measured, const std::string& notes) {
      ValidationCase c = base;
      c.id = id + ", " + what;
      c.source = source + file;
      c.metric = metric;
      c.probe = probe;
      if (probe.empty()) c.shared_run.clear();  // memory: the model's estimate, no simulation
      c.measured = measured;
      c.notes = notes;
      cases.push_back(std::move(c));
    };
    const std::string window = "nvml.csv over the second half of runs." + key + ".window_s";
    if (sustained) {
      add("step", "steps.json runs." + key + ".step_s", ValidationMetric::iteration_time_s, "iteration_time",
          phase["step_s"].as<double>(),
          "mean of " + std::to_string(phase["steps"].as<int>()) + " steps run back to back for 60 s");
    } else {
      add("step", "steps.json runs." + key + ".median_step_s", ValidationMetric::iteration_time_s, "iteration_time",
          phase["median_step_s"].as<double>(), "median of ten timed steps after three warm-up steps");
      add("peak allocated", "steps.json runs." + key + ".peak_mem_gib", ValidationMetric::peak_memory_bytes, "",
          phase["peak_mem_gib"].as<double>() * units::kGiB, "torch.cuda.max_memory_allocated");
    }
    add("mean power", window, ValidationMetric::average_power_w, "average_power", power / readings,
        "mean of " + std::to_string(readings) + " instantaneous readings (700 W limit)");
    add("mean SM clock", window, ValidationMetric::mean_clock_hz, "clock_mean", clock / readings,
        "measured: every reading; predicted: while kernels run (the GPU is busy 98 % of a step)");
    // The sensor gives one 25 ms average per 100 ms (Yang et al., SC24): over the window's updates, at a phase
    // nobody controls, the largest reading is the largest of those few averages, not the trace's largest 25 ms
    // average (power_sensor.hpp); predicted as the median over the phase, the last iteration taken as the period.
    base.window_s = to - half;
    add("largest instantaneous power", window, ValidationMetric::peak_power_w, "largest_sensor_reading", peak,
        "largest NVML instantaneous reading vs the largest reading Hopper's sensor gives of the predicted power "
        "over the half window's " +
            std::to_string(static_cast<int>((to - half) / 0.1)) +
            " updates (each the average of 25 ms of every 100 ms, Yang et al., SC24; the median over its phase): it "
            "cannot show 1 ms peaks");
  }
}

constexpr const char* kPerseusSource =
    "ml-energy/zeus@38cb3f9 sosp24_data/emulation/stage_profile/gpt3-175b+a100_sxm_bf16.csv (Perseus, SOSP'24)";

/// Perseus (Chung et al., SOSP'24) stage profiles: time and energy of one forward and one backward pass of each
/// GPT-3 175B pipeline stage on A100-SXM at every SM clock from 1410 to 855 MHz (nvidia-smi locked clocks).
/// Stages 0-6 are identical (12 transformer layers), stage 7 adds the LM head and loss. Inferred from the data
/// (stated in the notes): one tensor-parallel (TP 8) shard of the stage, micro-batch 1, sequence 2048, without the
/// TP all-reduces (time is ~1/f down to a 3 ms clock-independent part, too small to hold 24 NVLink all-reduces of
/// 48 MiB), on a board with a 500 W limit (the measured average power at 1410 MHz is 475-480 W, above the 400 W
/// default). chopsim predicts it from a 12-layer GPT-3 175B with TP 8 on one DGX A100 node with free NVLink (no
/// all-reduce time) at the locked clock under a 500 W cap: the compute kernels of the second micro-batch's pass on
/// GPU 0, their time and their energy.
void add_perseus_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                       std::vector<ValidationCase>& cases) {
  const auto file =
      data_dir / "power" / "perseus_sosp24" / "emulation" / "stage_profile" / "gpt3-175b+a100_sxm_bf16.csv";
  if (!std::filesystem::exists(file)) return;
  RunSpec base;
  base.model = load_model_config(configs_dir / "models" / "gpt3-175b.yaml");
  base.model.layers = 12;
  // Perseus trains Merak's GPT-3: a Hugging Face GPT2LMHeadModel on GPT2Config.from_pretrained("gpt2")
  // (ml-energy/merak-zeus examples/language-modeling/config.py), whose 50,257-token vocabulary is not padded.
  base.model.make_vocab_size_divisible_by = 1;
  base.hardware = load_hardware_config(configs_dir / "hardware" / "A100-SXM4-80GB.yaml");
  base.cluster = load_cluster_config(configs_dir / "clusters" / "dgx-a100.yaml");
  base.cluster.nodes = 1;
  base.cluster.fabric.kind = "none";
  base.parallelism.tp = 8;
  base.training.global_batch = 2;
  base.training.micro_batch = 1;
  base.training.seq_len = 2048;
  base.training.recompute = RecomputePolicy::none;
  base.training.overlap.tp = false;
  base.power.cap_w = 500.0;
  // One shard without its all-reduces: NVLink made effectively free (the all-reduce ops remain, lasting ~0 s).
  base.hardware.intra_node_link_bandwidth_bytes_per_s = 1e18;
  base.hardware.intra_node_link_latency_s = 0.0;
  base.collectives.step_latency_s = 0.0;
  validate_run(base, SourceLocation{file.string(), 0, 0});
  for (const auto& row : read_csv(file)) {
    const int stage = static_cast<int>(number(row, "stage", file));
    if (stage != 0 && stage != 7) continue;  // 0..6 are the same stage
    const double clock = number(row, "frequency", file);
    const std::string pass = row.at("instruction");
    for (const bool energy : {false, true}) {
      ValidationCase c;
      c.group = "perseus_a100";
      c.source = kPerseusSource;
      c.metric = energy ? ValidationMetric::stage_energy_j : ValidationMetric::stage_time_s;
      c.measured = number(row, energy ? "energy" : "time", file);
      c.label = clock;
      const std::string where = stage == 0 ? "middle" : "last";
      c.id = "stage " + std::to_string(stage) + " " + pass + " @ " + std::to_string(static_cast<int>(clock)) + " MHz";
      c.probe = pass + "_" + (energy ? "energy" : "time") + "_" + where;
      c.shared_run = "perseus@" + std::to_string(static_cast<int>(clock));
      c.run = base;
      c.run.name = c.shared_run;
      c.run.power.lock_clock_hz = clock * units::kMega;
      c.notes = stage == 0 ? "stages 0-6: the 12 transformer layers" : "stage 7: layers, final norm, LM head, loss";
      cases.push_back(std::move(c));
    }
  }
}

constexpr const char* kZeusSource =
    "ml-energy/zeus@38cb3f9 sosp24_data/zeus/csv/A100/zeus_global.csv (Zeus power-limit baseline in Perseus, SOSP'24)";

constexpr const char* kMerakStageSource =
    "ml-energy/zeus@38cb3f9 sosp24_data/perseus/A100/dp1+pp4+tp1/merak+gpt3-xl+custom:0,8,14,21,27+dp1+pp4+tp1+mbs8+"
    "nmb128+PointSolution/1.prof.json (Perseus, SOSP'24)";

namespace {

/// The same GPT-3 XL run profiled per stage by Perseus at its 1410 MHz (maximum) frequency plan under the boards'
/// 300 W limit (iteration 60.0 s, as Zeus's 300 W row): each rank's forward and backward time per micro-batch, the
/// median over the 128 micro-batches of iterations 1-3 (iteration 0 warms up). Predicted from `reference`'s shared
/// simulation: the kernels of each rank's second micro-batch, the backward with its recomputed forward.
void add_merak_stage_cases(const std::filesystem::path& data_dir, const ValidationCase& reference,
                           std::vector<ValidationCase>& cases) {
  const auto file = data_dir / "power" / "perseus_sosp24" / "perseus" / "A100" / "dp1+pp4+tp1" /
                    "merak+gpt3-xl+custom:0,8,14,21,27+dp1+pp4+tp1+mbs8+nmb128+PointSolution" / "1.prof.json";
  if (!std::filesystem::exists(file)) return;
  const YAML::Node ranks = load_yaml_data(file);  // JSON is YAML
  const auto malformed = [&](const std::string& problem) {
    return InputError(SourceLocation{file.string(), 0, 0}, "", problem, "restore the file from ../shared/data");
  };
  if (!ranks.IsSequence() || ranks.size() != 4) throw malformed("expected a list of the 4 ranks' profiles");
  std::set<int> seen;
  for (const YAML::Node& entry : ranks) {
    int rank = -1;
    std::map<std::string, std::vector<double>> pass_times;
    try {
      rank = entry["rank"].as<int>();
      for (const char* pass : {"forward", "backward"}) {
        const YAML::Node iterations = entry["time_breakdown"][pass];
        for (std::size_t i = 1; i < iterations.size(); ++i)
          for (const YAML::Node& t : iterations[i]) pass_times[pass].push_back(t.as<double>());
      }
    } catch (const YAML::Exception& error) {
      throw malformed(std::string("a rank's 'rank' or 'time_breakdown' is missing or not numbers: ") + error.what());
    }
    if (rank < 0 || rank >= 4 || !seen.insert(rank).second)
      throw malformed("rank " + std::to_string(rank) + " is outside 0-3 or repeated");
    for (const char* pass : {"forward", "backward"}) {
      std::vector<double>& times = pass_times[pass];
      if (times.empty()) throw malformed("rank " + std::to_string(rank) + " has no " + pass + " times");
      std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
      ValidationCase c = reference;
      c.source = kMerakStageSource;
      c.metric = ValidationMetric::stage_time_s;
      c.measured = times[times.size() / 2];
      const int layers = reference.run.parallelism.stage_layers.at(static_cast<std::size_t>(rank));
      c.id = "GPT-3 XL pp4 @ 300 W: stage " + std::to_string(rank) + " " + pass + " per micro-batch";
      c.probe = "rank" + std::to_string(rank) + "_" + pass + "_time";
      c.notes = std::to_string(layers) + " layers" +
                (rank == 0   ? " + embeddings"
                 : rank == 3 ? " + LM head, loss"
                             : "") +
                (std::string(pass) == "backward" ? "; with the recomputed forward" : "");
      cases.push_back(std::move(c));
    }
  }
}

}  // namespace

/// The Zeus (Chung et al., NSDI'23) power-limit sweep on A100 as measured for Perseus: GPT-3 XL trained with a
/// 4-stage pipeline (micro-batch 8, 128 micro-batches) with every GPU's power limit set from 300 down to 175 W.
/// The limit tops out at 300 W: an A100 PCIe board, modelled with the SXM4 file (same GA100 die and clocks) and the
/// limit as its cap, and Merak's custom stage split (0,8,14,21,27 over its graph shards).
void add_zeus_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                    std::vector<ValidationCase>& cases) {
  const auto file = data_dir / "power" / "perseus_sosp24" / "zeus" / "csv" / "A100" / "zeus_global.csv";
  if (!std::filesystem::exists(file)) return;
  RunSpec base;
  base.model.name = "gpt3-xl";
  base.model.layers = 24;  // GPT-3 XL (Brown et al. 2020, table 2.1): 1.3B, 24 layers, d 2048, 16 heads
  base.model.hidden = 2048;
  base.model.ffn_hidden = 8192;
  base.model.heads = 16;
  base.model.kv_heads = 16;
  base.model.vocab = 50257;  // Merak's GPT-3 is Hugging Face GPT-2 (see add_perseus_cases): not padded
  base.model.mlp = MlpKind::gelu;
  base.model.norm = NormKind::layernorm;
  base.model.tied_embeddings = true;
  base.model.position_embedding = PositionEmbedding::learned;  // GPT-3's learned absolute positions
  // Hugging Face GPT2Attention._attn: unfused attention over materialised scores, with GPT-2's 0.1 dropouts
  // (attn_pdrop, resid_pdrop); the per-block times of perseus/A100/.../0.prof.json (17.4 ms forward) need it.
  base.model.dropout = true;
  base.training.attention = std::string(kEagerAttention);
  base.hardware = load_hardware_config(configs_dir / "hardware" / "A100-SXM4-80GB.yaml");
  base.cluster = load_cluster_config(configs_dir / "clusters" / "dgx-a100.yaml");
  base.cluster.nodes = 1;
  base.cluster.gpus_per_node = 4;
  base.cluster.nics_per_node = 4;
  base.cluster.fabric.kind = "none";
  base.parallelism.pp = 4;
  // Merak's partition "custom:0,8,14,21,27" over its 27 graph shards (run_gpt.py: shard_count = 2 embeddings +
  // 24 blocks + 1 head): stage 0 holds the embeddings and 6 blocks, then 6, 7, and 5 blocks with the final norm and
  // the LM head (the measured stage times agree: 104 / 105 / 122 / 112 ms forward, 17.4 ms per block).
  base.parallelism.stage_layers = {6, 6, 7, 5};
  base.training.micro_batch = 8;
  base.training.global_batch = 8 * 128;
  base.training.seq_len = 2048;
  // Merak checkpoints every layer by default (MerakArguments activation_checkpointing true, checkpoint_num_layers 1;
  // ml-energy/merak-zeus Merak/utils/merak_args.py): the measured backward passes are 2.6-2.7x the forward
  // (perseus/A100/.../0.prof.json), the forward recomputed before each backward.
  base.training.recompute = RecomputePolicy::full;
  base.training.overlap.pp = false;
  validate_run(base, SourceLocation{file.string(), 0, 0});
  std::map<int, std::pair<double, double>> measured;  // limit -> (time, energy)
  for (const auto& row : read_csv(file)) {
    if (row.at("model_name") != "gpt3-xl") continue;
    const double limit = number(row, "power_limit_0", file);
    bool uniform = true;  // the global sweep: every stage at the same limit
    for (const char* column : {"power_limit_1", "power_limit_2", "power_limit_3"})
      uniform = uniform && number(row, column, file) == limit;
    if (uniform) measured[static_cast<int>(limit)] = {number(row, "time", file), number(row, "energy", file)};
  }
  if (!measured.count(300)) return;
  auto spec = [&](int limit) {
    RunSpec run = base;
    run.power.cap_w = limit;
    run.name = "zeus@" + std::to_string(limit) + "W";
    return run;
  };
  for (const auto& [limit, values] : measured) {
    ValidationCase time;
    time.group = "zeus_a100_power_limit";
    time.source = kZeusSource;
    time.metric = ValidationMetric::relative_time;
    time.measured = values.first / measured.at(300).first;
    time.label = limit;
    time.id = "GPT-3 XL pp4 @ " + std::to_string(limit) + " W: time / time at 300 W";
    time.probe = "relative_time";
    time.shared_run = "zeus@" + std::to_string(limit) + "W";
    time.baseline_run = "zeus@300W";
    time.run = spec(limit);
    time.baseline = spec(300);
    time.notes = "Merak's custom split: 6, 6, 7, 5 layers";
    cases.push_back(time);
    ValidationCase power = time;
    power.metric = ValidationMetric::average_power_w;
    power.measured = values.second / values.first / 4.0;
    power.id = "GPT-3 XL pp4 @ " + std::to_string(limit) + " W: mean power per GPU";
    power.probe = "average_power";
    power.baseline_run.clear();
    power.notes = "measured: energy of the 4 GPUs / time / 4";
    cases.push_back(power);
  }
  ValidationCase absolute;
  absolute.group = "zeus_a100_power_limit";
  absolute.source = kZeusSource;
  absolute.metric = ValidationMetric::iteration_time_s;
  absolute.measured = measured.at(300).first;
  absolute.label = 300;
  absolute.id = "GPT-3 XL pp4 @ 300 W: iteration time";
  absolute.probe = "iteration_time";
  absolute.shared_run = "zeus@300W";
  absolute.run = spec(300);
  absolute.notes = "1024 sequences of 2048 tokens; Merak's split";
  cases.push_back(absolute);
  add_merak_stage_cases(data_dir, absolute, cases);
}

/// The seed papers' findings as checks that can fail.
void add_seed_findings(const std::filesystem::path& configs_dir, const ModelRegistries& registries,
                       std::vector<ValidationCase>& cases) {
  const auto fsdp = configs_dir / "llama3-8b-fsdp.yaml";
  if (!std::filesystem::exists(fsdp)) return;
  const RunSpec chopper = load_run_config(fsdp, default_search_path(fsdp), registries);
  const char* chopper_source =
      "Kurzynski, Aga, Wu: Chopper (arXiv:2512.08242), Llama-3-8B FSDP on 8x MI300X; configs/llama3-8b-fsdp.yaml";
  ValidationCase below;
  below.group = "seed_findings";
  below.source = chopper_source;
  below.metric = ValidationMetric::finding;
  below.measured = 1.0;
  below.id = "MI300X mean clock under training load is below the 2100 MHz peak";
  below.probe = "chopper_clock";
  below.shared_run = "chopper";
  below.run = chopper;
  cases.push_back(below);
  ValidationCase largest = below;
  largest.id = "frequency overhead is the largest single loss (above kernel efficiency, communication, launch)";
  largest.probe = "chopper_largest";
  cases.push_back(largest);

  // CharLLM-PPT (MICRO'25): larger micro-batches -> burstier power, higher peaks, more throttling.
  const char* charllm_source =
      "CharLLM-PPT (sitar-lab/CharLLM-PPT, arXiv:2509.10371): H100/H200/MI250 training, power and thermal";
  RunSpec small = chopper;
  small.hardware = load_hardware_config(configs_dir / "hardware" / "H100-SXM5-80GB.yaml");
  small.cluster = load_cluster_config(configs_dir / "clusters" / "dgx-h100.yaml");
  small.cluster.fabric.kind = "none";
  small.parallelism = ParallelismSpec{};
  small.parallelism.tp = 8;
  small.parallelism.sequence_parallel = true;
  small.training.seq_len = 2048;
  small.training.global_batch = 8;
  small.training.micro_batch = 1;
  small.training.recompute = RecomputePolicy::full;
  small.name = "charllm-mbs1";
  RunSpec large = small;
  large.training.micro_batch = 4;
  large.name = "charllm-mbs4";
  validate_run(small, SourceLocation{"seed findings", 0, 0});
  validate_run(large, SourceLocation{"seed findings", 0, 0});
  ValidationCase peak;
  peak.group = "seed_findings";
  peak.source = charllm_source;
  peak.metric = ValidationMetric::finding;
  peak.measured = 1.0;
  peak.id = "a larger micro-batch (1 -> 4) raises the peak power (1 ms window), Llama-3-8B TP 8 on DGX H100";
  peak.probe = "charllm_peak";
  peak.shared_run = "charllm-mbs4";
  peak.run = large;
  peak.baseline_run = "charllm-mbs1";
  peak.baseline = small;
  cases.push_back(peak);
  ValidationCase throttle = peak;
  throttle.id = "a larger micro-batch (1 -> 4) throttles more (power-capped time)";
  throttle.probe = "charllm_throttle";
  cases.push_back(throttle);
  ValidationCase hot;
  hot.group = "seed_findings";
  hot.source = charllm_source;
  hot.metric = ValidationMetric::finding;
  hot.measured = 1.0;
  hot.id = "a hotter slot (inlet +18 K) reaches its slowdown temperature first (8x MI300X, 30 °C air, 3 iterations)";
  hot.probe = "charllm_hot_slot";
  hot.shared_run = "charllm-hot-slot";
  hot.run = chopper;
  hot.run.name = hot.shared_run;
  CoolingSpec cooling;
  cooling.ambient_c = 30.0;
  cooling.profile = CoolingSpec::Profile::per_slot;
  cooling.slot_offsets_k = {0, 0, 0, 0, 0, 18, 0, 0};
  hot.run.power.cooling = cooling;
  hot.run.iterations = 3;  // the hot slot starts below its slowdown temperature and warms up into it
  cases.push_back(hot);
}
}  // namespace chopsim::validation_detail
