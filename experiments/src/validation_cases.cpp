// The measured cases `chopsim validate` predicts: one builder per source in ../shared/data (here the step-time records:
// Megatron-LM goldens and llm-foundry; NVIDIA's Megatron-Core tables are in validation_records.cpp, the power, DVFS
// and thermal cases in validation_power_cases.cpp), and load_validation_cases, which pairs each case with the
// calibration profile of its GPU.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "validation_internal.hpp"

namespace chopsim {

YAML::Node validation_detail::load_yaml_data(const std::filesystem::path& path) {
  return config_detail::load_data_file(path, "the measured data file is malformed; restore it from ../shared/data");
}

namespace {

using validation_detail::add_h200_eager_cases;
using validation_detail::add_megatron_record_cases;
using validation_detail::add_perseus_cases;
using validation_detail::add_seed_findings;
using validation_detail::add_zeus_cases;
using validation_detail::gpu_count_band;
using validation_detail::load_yaml_data;
using validation_detail::median;

/// Numeric values of a series of a Megatron-LM golden-values file (`root`, read from `path`: {"METRIC": {"values":
/// {"1": 7.9, "2": "nan", ...}}}); empty when the file does not log the metric.
std::vector<double> megatron_series(const YAML::Node& root, const std::filesystem::path& path,
                                    const std::string& metric) {
  if (!root[metric]) return {};  // not logged in this file (golden_values_lts_dgx_a100.json of tp4_pp1: loss only)
  const YAML::Node values = root[metric]["values"];
  if (!values || !values.IsMap())
    throw InputError(SourceLocation{path.string(), 0, 0}, metric, "has no 'values' mapping",
                     "use a Megatron-LM golden_values_*.json file");
  std::vector<double> numbers;
  for (const auto& entry : values) {
    const std::string text = entry.second.as<std::string>();
    if (text == "nan") continue;
    numbers.push_back(std::stod(text));
  }
  return numbers;
}

/// A Megatron-LM golden-values file's machine, from its name: golden_values_{dev,lts}[_MACHINE][_2nd].json.
struct MegatronMachine {
  const char* tag;            ///< MACHINE in the file name
  const char* config_suffix;  ///< configs/validation/<case>SUFFIX.yaml
  const char* system;         ///< as the row names it
  const char* group_suffix;   ///< megatron_lm<model>SUFFIX
  /// Transformer Engine ran its unfused attention (UnfusedDotProductAttention: baddbmm, the fused scale-mask-softmax,
  /// dropout, bmm) on this machine rather than flash-attn 2. Inferred, not recorded: the dracooci clusters' lts peaks
  /// exceed the same branch's on DGX A100 by 1.83 GiB (tp 1, 12 layers of 8 heads) and 0.46 GiB (tp 2 pp 2, 6 layers
  /// of 4 heads) at the same resident memory after the step (0.514 and 0.449 GiB on both), which is what the unfused
  /// path keeps per layer for its backward: the softmax output, the dropout mask and its output, 5 bytes per score
  /// (tests/experiments/validation_test.cpp, TheDracoociPeaksAreTheUnfusedAttentionsScores). Under --deterministic-mode
  /// TE falls back to it on A100 when no flash-attn it accepts is installed (cuDNN's attention backward is not
  /// deterministic there).
  bool unfused_attention = false;
};
constexpr std::array<MegatronMachine, 5> kMegatronMachines = {{
    {"dgx_h100", "", "DGX H100", "", false},
    {"dgx_a100", "-a100", "DGX A100", "_a100", false},
    {"dgxa100_dracooci", "-a100", "DGX A100 dracooci", "_a100", true},
    {"dgxa100_dracooci-ord", "-a100", "DGX A100 dracooci-ord", "_a100", true},
    {"dgx_gb200", "-gb200", "GB200", "_gb200", false},
}};

/// The Megatron-LM functional tests in ../shared/data/validation/megatron_lm (NVIDIA/Megatron-LM @ d98e8a6,
/// tests/functional_tests/test_cases/gpt/...): every golden-values file whose name says the machine becomes a step
/// time row and a peak-memory row, predicted with the case's run config for that machine. The H100 rows of the 7B
/// runs are the first issue's target (group megatron_lm); the other machines and the small model are their own groups.
/// A file without a machine in its name (golden_values_lts.json) cannot be placed and is left out.
void add_megatron_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                        const ModelRegistries& registries, std::vector<ValidationCase>& cases) {
  struct Entry {
    const char* directory;
    const char* config_stem;  ///< configs/validation/<stem><machine suffix>.yaml
    const char* group;        ///< before the machine's suffix
  };
  constexpr std::array<Entry, 4> kEntries = {{
      {"gpt3_7b_tp1_pp4_memory_speed", "megatron-gpt3-7b-tp1-pp4", "megatron_lm"},
      {"gpt3_7b_tp4_pp1_memory_speed", "megatron-gpt3-7b-tp4-pp1", "megatron_lm"},
      {"gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer", "megatron-gpt-tiny-tp1-pp1", "megatron_lm_tiny"},
      {"gpt3_mcore_te_tp2_pp2_resume_torch_dist_no_create_attention_mask_in_dataloader", "megatron-gpt-tiny-tp2-pp2",
       "megatron_lm_tiny"},
  }};
  const std::string prefix = "golden_values_";
  for (const auto& entry : kEntries) {
    const auto directory = data_dir / "validation" / "megatron_lm" / entry.directory;
    if (!std::filesystem::is_directory(directory)) continue;
    std::vector<std::string> files;
    for (const auto& file : std::filesystem::directory_iterator(directory)) {
      const std::string name = file.path().filename().string();
      if (name.starts_with(prefix) && file.path().extension() == ".json") files.push_back(name);
    }
    std::sort(files.begin(), files.end());  // directory order is not stable across file systems
    for (const std::string& file : files) {
      std::string rest = file.substr(prefix.size(), file.size() - prefix.size() - 5);  // without ".json"
      const std::string branch = rest.substr(0, rest.find('_'));                       // dev or lts
      rest = rest.size() > branch.size() ? rest.substr(branch.size() + 1) : std::string();
      const bool second = rest.ends_with("_2nd");
      if (second) rest.resize(rest.size() - 4);
      const MegatronMachine* machine = nullptr;
      for (const auto& m : kMegatronMachines)
        if (rest == m.tag) machine = &m;
      if (machine == nullptr) continue;
      const auto golden = directory / file;
      const YAML::Node values = load_yaml_data(golden);
      const auto times = megatron_series(values, golden, "iteration-time");
      const auto config =
          configs_dir / "validation" / (std::string(entry.config_stem) + machine->config_suffix + ".yaml");
      if (times.empty() || !std::filesystem::exists(config)) continue;
      RunSpec run = load_run_config(config, default_search_path(config), registries);
      if (machine->unfused_attention) {
        run.training.attention = std::string(kEagerAttention);
        run.training.masked_softmax_fusion = true;
      }

      std::string qualifier = machine->system;
      if (branch != "dev") qualifier += ", " + branch;
      if (second) qualifier += ", after resume";
      ValidationCase step_time;
      step_time.id = std::string(entry.directory) + " (" + qualifier + ")";
      step_time.group = std::string(entry.group) + machine->group_suffix;
      step_time.source = "NVIDIA/Megatron-LM@d98e8a6 tests/functional_tests/test_cases/gpt/" +
                         std::string(entry.directory) + "/" + file;
      step_time.metric = ValidationMetric::iteration_time_s;
      step_time.measured = median(times);  // two values: their mean
      step_time.notes = times.size() > 2
                            ? "median of the logged steps' iteration-time (first, warm-up step included as logged)"
                            : "mean of the " + std::to_string(times.size()) + " logged iteration-time values";
      const std::string unfused =
          machine->unfused_attention ? "; Transformer Engine's unfused attention (inferred from the peaks)" : "";
      step_time.notes += unfused;
      step_time.run = run;
      cases.push_back(step_time);

      // mem-max-allocated-bytes is PyTorch's allocator peak: it excludes the CUDA context, NCCL buffers and
      // fragmentation, which the prediction compares without (peak minus reserved minus fragmentation).
      const auto peaks = megatron_series(values, golden, "mem-max-allocated-bytes");
      if (peaks.empty()) continue;
      ValidationCase memory = step_time;
      memory.id = std::string(entry.directory) + " peak allocated (" + qualifier + ")";
      memory.metric = ValidationMetric::peak_memory_bytes;
      memory.measured = *std::max_element(peaks.begin(), peaks.end());
      memory.notes =
          "max over steps of mem-max-allocated-bytes (the last rank, which logs it: last pipeline stage)" + unfused;
      cases.push_back(memory);
    }
  }
}

/// llm-foundry's published H100 FSDP throughput tables (../shared/data/validation/published_dev_records.yaml).
void add_llm_foundry_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                           std::vector<ValidationCase>& cases) {
  const auto records_path = data_dir / "validation" / "published_dev_records.yaml";
  if (!std::filesystem::exists(records_path)) return;
  const YAML::Node records = load_yaml_data(records_path);
  const HardwareSpec h100 = load_hardware_config(configs_dir / "hardware" / "H100-SXM5-80GB.yaml");
  const ClusterSpec dgx = load_cluster_config(configs_dir / "clusters" / "dgx-h100.yaml");
  std::map<std::string, TransformerSpec> models;

  for (const auto& record : records) {
    const auto where = SourceLocation{records_path.string(), record.Mark().line + 1, record.Mark().column + 1};
    try {
      const std::string model_name = to_lower(record["model"].as<std::string>());
      const auto model_file = configs_dir / "models" / (model_name + ".yaml");
      if (!models.count(model_name)) models.emplace(model_name, load_model_config(model_file));

      ValidationCase c;
      c.id = record["id"].as<std::string>();
      c.group = "llm_foundry";
      c.source = record["source"].as<std::string>();
      c.metric = ValidationMetric::tokens_per_s_per_gpu;
      c.measured = record["tokens_per_s_per_gpu"].as<double>();
      c.measured_mfu = record["mfu_pct"].as<double>() / 100.0;
      const int gpus = record["num_gpus"].as<int>();

      RunSpec& run = c.run;
      run.name = c.id;
      run.model = models.at(model_name);
      run.hardware = h100;
      run.cluster = dgx;
      run.cluster.nodes = std::max(1, gpus / dgx.gpus_per_node);
      if (run.cluster.nodes == 1) run.cluster.fabric.kind = "none";
      run.parallelism.dp = gpus;
      // FSDP FULL_SHARD (ZeRO-3), or SHARD_GRAD_OP (ZeRO-2: each unit gathered for its forward, kept for its backward)
      // where the table says so (the record's framework field).
      const std::string framework = record["framework"] ? record["framework"].as<std::string>() : "";
      run.parallelism.zero_stage = framework.find("sharding=SHARD_GRAD_OP") != std::string::npos ? 2 : 3;
      // What the benchmark ran (mosaicml/llm-foundry, the commits that added the H100 tables): the 8..64-GPU tables
      // (b2a43a1, scripts/train/benchmarking/sweep.sh) leave --attn_impl at its default 'triton'
      // (llmfoundry/models/layers/flash_attn_triton.py, the FlashAttention Triton kernel); the large-scale table
      // (5e85bd6, sweep.py) passes --attn_impl flash (flash-attn 2.4.2, the gpu-flash2 extra) for MPT-1b/3b/7b and
      // triton for MPT-13b. FSDP mixed_precision DEFAULT (Composer: bf16 parameters, fp32 gradient reduction),
      // gradient clipping by norm 1.0 (the mpt-*.yaml algorithms), the fused xentropy cross-entropy loss (loss_fn
      // default fused_crossentropy), and limit_all_gathers with one unit prefetched (chopsim's default).
      const bool large_scale_table = c.source.find("Large Scale") != std::string::npos;
      run.training.attention = large_scale_table && model_name != "mpt-13b" ? "flash2" : "flash1_triton";
      // llm-foundry's flash path unpads Q, K, V and pads the output around flash-attn 2's varlen kernel
      // (flash_attn_fn; models/src/workload_unpad.cpp); its Triton kernel takes the padded tensors as they are.
      run.training.unpad_attention = run.training.attention == "flash2";
      run.training.fsdp_reduce_fp32 = true;
      // PyTorch 2.1's FullyShardedDataParallel (FlatParameter) under Composer 0.16-0.17 (llm-foundry's setup.py at
      // those commits: torch<2.1.1, mosaicml<0.17 and <0.18).
      run.training.fsdp_implementation = FsdpImplementation::fsdp1;
      run.training.grad_clip = true;
      run.training.cross_entropy_fusion = true;
      // The mpt-*.yaml optimizer (decoupled_adamw: Composer's per-tensor DecoupledAdamW, weight_decay 0.0) and the
      // train metrics llm-foundry v0.3.0's ComposerMPTCausalLM always sets (LanguageCrossEntropy,
      // LanguagePerplexity), which Composer 0.16 updates after every micro-batch; the sweep scripts install the
      // v0.3.0 branch (submit_benchmarks.py, git_branch).
      run.training.optimizer = Optimizer::decoupled_adamw;
      run.training.train_metrics = {TrainMetric::language_cross_entropy, TrainMetric::language_perplexity};
      run.training.global_batch = record["global_batch"].as<int>();
      run.training.micro_batch = record["micro_batch"].as<int>();
      run.training.seq_len = record["seq_len"].as<int>();
      const std::string precision = record["precision"].as<std::string>();
      run.training.precision = precision.find("fp8") != std::string::npos ? Precision::fp8 : Precision::bf16;
      const std::string recompute = record["recompute"].as<std::string>();
      run.training.recompute =
          recompute.find("full") != std::string::npos ? RecomputePolicy::full : RecomputePolicy::none;
      // The mpt-*.yaml fsdp_config sets activation_checkpointing_reentrant: false (b2a43a1 and 5e85bd6), so
      // Composer wraps each block in PyTorch's non-reentrant checkpoint, which in the runs' PyTorch 2.1
      // (mosaicml/pytorch:2.1.0 in sweep.sh; torch>=2.1,<2.1.1 in setup.py at 5e85bd6) stops a recomputed forward
      // once the block's saved tensors are rebuilt: before the MLP's down_proj GEMM and the residual add.
      run.training.recompute_early_stop = run.training.recompute == RecomputePolicy::full;
      c.categories = {{"source", "llm-foundry"},
                      {"GPU", "H100"},
                      {"model", "dense"},
                      {"precision", std::string(to_string(run.training.precision))},
                      {"GPUs", gpu_count_band(gpus)}};
      c.notes = record["model"].as<std::string>() + ", " + std::to_string(gpus) + " GPUs, seq " +
                std::to_string(run.training.seq_len) + ", mbs " + std::to_string(run.training.micro_batch) +
                (run.training.recompute == RecomputePolicy::full ? ", full recompute" : "") + ", " +
                std::string(to_string(run.training.precision));
      validate_run(run, where);
      cases.push_back(std::move(c));
    } catch (const YAML::Exception& error) {
      throw InputError(where, "", "malformed record: " + error.msg, "restore the file from ../shared/data");
    }
  }
}

}  // namespace

std::map<std::string, std::filesystem::path> calibration_profiles_by_hardware(
    const std::filesystem::path& profiles_dir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(profiles_dir, error))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, std::filesystem::path> profiles;
  for (const auto& file : files) profiles.emplace(calibration_profile_hardware(file), file);
  return profiles;
}

std::vector<ValidationCase> load_validation_cases(const std::filesystem::path& data_dir,
                                                  const std::filesystem::path& configs_dir,
                                                  const ModelRegistries& registries,
                                                  const std::filesystem::path& profiles_dir) {
  std::vector<ValidationCase> cases;
  add_megatron_cases(data_dir, configs_dir, registries, cases);
  add_h200_eager_cases(data_dir, configs_dir, registries, cases);
  add_llm_foundry_cases(data_dir, configs_dir, cases);
  add_megatron_record_cases(data_dir, configs_dir, cases);
  add_perseus_cases(data_dir, configs_dir, cases);
  add_zeus_cases(data_dir, configs_dir, cases);
  add_seed_findings(configs_dir, registries, cases);
  // Each case again with the calibration profile of its GPU (docs/calibration.md), applied as the run key
  // `calibration:` would: kernels, intra_node_link and nic over the hardware file, collectives over the run's.
  const auto profiles = calibration_profiles_by_hardware(
      profiles_dir.empty() ? configs_dir.parent_path() / "calibration" / "profiles" : profiles_dir);
  for (ValidationCase& c : cases) {
    const auto it = profiles.find(c.run.hardware.name);
    if (it == profiles.end()) continue;
    c.profile = it->second;
    c.calibrated_run = c.run;
    apply_calibration_profile(c.calibrated_run, c.profile);
    if (!c.baseline_run.empty()) {
      if (c.baseline.hardware.name != c.run.hardware.name)
        throw ModelError("validation: case '" + c.id + "' compares runs on different GPUs");
      c.calibrated_baseline = c.baseline;
      apply_calibration_profile(c.calibrated_baseline, c.profile);
    }
  }
  return cases;
}
}  // namespace chopsim
