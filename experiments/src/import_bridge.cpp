// Megatron-Bridge configs as chopsim run configs (docs/import.md): a YAML of ConfigContainer overrides (the sections
// model, train, ddp, dataset, optimizer, mixed_precision, or their *_config names of the override examples), and the
// performance scripts' files (scripts/performance/configs/<family>/<recipe>_llm_pretrain.yaml) whose
// `perf_matrix[gpu][num_gpus_N][precision]` holds the measured settings per GPU, GPU count and precision over a
// `common` entry. Megatron-Bridge speaks Megatron-Core's vocabulary, so its keys are renamed to the ones NeMo gives the
// same settings and go through the one mapping (import_nemo.cpp), with Bridge's recipe defaults where the file is
// silent.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <sstream>
#include <string_view>

#include "chopsim/common/error.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

/// The ConfigContainer of a Bridge file: the mapping under `ConfigContainer:` (performance scripts) or the root.
YAML::Node container_of(const YAML::Node& root) {
  const YAML::Node inner = root["ConfigContainer"];
  return inner.IsDefined() && inner.IsMap() ? inner : root;
}

bool is_map(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }

/// A ConfigContainer section by its field name (`model`) or the override examples' name (`model_config`).
YAML::Node section(const YAML::Node& container, const std::string& name) {
  if (is_map(container[name])) return container[name];
  if (is_map(container[name + "_config"])) return container[name + "_config"];
  return YAML::Node(YAML::NodeType::Null);
}

/// Megatron-Bridge recipe names (the performance configs' file names, <recipe>_llm_pretrain.yaml) of the models
/// chopsim ships: the perf files give no model shape, the recipe's Python does.
struct RecipeModel {
  const char* recipe;
  const char* model;
};
constexpr RecipeModel kRecipeModels[] = {
    {"llama3_8b", "llama3-8b"},       {"llama3_70b", "llama3-70b"},       {"llama31_405b", "llama3-405b"},
    {"llama3_405b", "llama3-405b"},   {"qwen3_30b_a3b", "qwen3-30b-a3b"}, {"qwen3_235b_a22b", "qwen3-235b-a22b"},
    {"mixtral_8x7b", "mixtral-8x7b"}, {"mixtral_8x22b", "mixtral-8x22b"},
};

std::string recipe_of(const fs::path& file) {
  std::string stem = file.stem().string();
  for (const char* suffix : {"_llm_pretrain", "_pretrain_override_example", "_pretrain"}) {
    const std::string s(suffix);
    if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0) {
      stem.resize(stem.size() - s.size());
      break;
    }
  }
  return stem;
}

/// The perf_matrix key of the run's GPU: the hardware name's first part, lower case (H100-SXM5-80GB -> h100).
std::string perf_gpu_key(const std::string& hardware) {
  std::string key = fs::path(hardware).stem().string();
  key = key.substr(0, key.find('-'));
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  return key;
}

std::string keys_of(const YAML::Node& map) {
  std::string list;
  for (const auto& entry : map) list += (list.empty() ? "" : ", ") + entry.first.as<std::string>();
  return list;
}

/// Copies `from[key]` to `to[renamed]` when it is set (not null).
void carry(const YAML::Node& from, const std::string& key, YAML::Node to, const std::string& renamed) {
  if (is_map(from) && from[key].IsDefined() && !from[key].IsNull()) to[renamed] = YAML::Clone(from[key]);
}

}  // namespace

bool is_bridge_config(const fs::path& file) {
  try {
    const YAML::Node root = config_detail::load_yaml_file(file, "Megatron-Bridge config");
    if (!root.IsMap()) return false;
    if (is_map(root["perf_matrix"]) || is_map(root["ConfigContainer"])) return true;
    // An override file: ConfigContainer sections without NeMo's trainer.
    return !root["trainer"].IsDefined() && (is_map(root["model_config"]) || is_map(root["train_config"]) ||
                                            (is_map(root["model"]) && is_map(root["train"])));
  } catch (const YAML::Exception&) {
  } catch (const InputError&) {
  }
  return false;
}

ImportResult import_bridge(const fs::path& file, const ImportOptions& options) {
  const std::string shown = config_detail::display_path(file);
  const YAML::Node root = config_detail::load_yaml_file(file, "Megatron-Bridge config");
  const auto fail = [&](const YAML::Node& at, const std::string& key, const std::string& problem,
                        const std::string& fix) -> void {
    throw InputError(at.IsDefined() ? config_detail::location_of(at, shown) : SourceLocation{shown}, key, problem, fix);
  };
  if (!root.IsMap()) fail(root, "", "not a Megatron-Bridge config (not a mapping)", "pass a ConfigContainer YAML");
  const YAML::Node container = container_of(root);
  std::vector<std::string> notes;

  // The NeMo-shaped job the one mapping reads.
  YAML::Node job;
  YAML::Node model = job["model"];
  YAML::Node trainer = job["trainer"];
  // Megatron-Bridge's recipe defaults (megatron/bridge/recipes: the distributed optimizer, overlapped gradient
  // reduce and parameter gather, Transformer Engine layers, fused cross entropy, fp32 gradient reduction, clip 1.0),
  // overridden below by what the file sets.
  model["use_distributed_optimizer"] = true;
  model["optim"]["overlap_grad_sync"] = true;
  model["optim"]["overlap_param_sync"] = true;
  model["transformer_impl"] = "transformer_engine";
  model["cross_entropy_loss_fusion"] = true;
  model["grad_reduce_in_fp32"] = true;
  trainer["precision"] = "bf16";
  trainer["gradient_clip_val"] = "1.0";

  // ConfigContainer.model's fields are Megatron-Core's TransformerConfig names: most are NeMo's model keys as they are,
  // a few are renamed; cross_entropy_fusion_impl and the TE op fuser choose among fused kernels chopsim models as one.
  static constexpr std::array<std::string_view, 39> kSameName = {"tensor_model_parallel_size",
                                                                 "pipeline_model_parallel_size",
                                                                 "context_parallel_size",
                                                                 "virtual_pipeline_model_parallel_size",
                                                                 "expert_model_parallel_size",
                                                                 "expert_tensor_parallel_size",
                                                                 "sequence_parallel",
                                                                 "num_layers",
                                                                 "hidden_size",
                                                                 "ffn_hidden_size",
                                                                 "num_attention_heads",
                                                                 "num_query_groups",
                                                                 "num_moe_experts",
                                                                 "moe_router_topk",
                                                                 "moe_ffn_hidden_size",
                                                                 "moe_shared_expert_intermediate_size",
                                                                 "moe_layer_freq",
                                                                 "multi_latent_attention",
                                                                 "q_lora_rank",
                                                                 "kv_lora_rank",
                                                                 "qk_head_dim",
                                                                 "qk_pos_emb_head_dim",
                                                                 "v_head_dim",
                                                                 "mtp_num_layers",
                                                                 "fp8",
                                                                 "fp8_recipe",
                                                                 "gradient_accumulation_fusion",
                                                                 "deterministic_mode",
                                                                 "cross_entropy_loss_fusion",
                                                                 "moe_token_dispatcher_type",
                                                                 "moe_expert_capacity_factor",
                                                                 "moe_pad_expert_input_to_capacity",
                                                                 "overlap_moe_expert_parallel_comm",
                                                                 "moe_router_fusion",
                                                                 "moe_router_load_balancing_type",
                                                                 "moe_aux_loss_coeff",
                                                                 "moe_router_enable_expert_bias",
                                                                 "cuda_graph_impl",
                                                                 "cuda_graph_scope"};
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kRenamed = {{
      {"seq_length", "encoder_seq_length"},
      {"recompute_granularity", "activations_checkpoint_granularity"},
      {"recompute_method", "activations_checkpoint_method"},
      {"recompute_num_layers", "activations_checkpoint_num_layers"},
      {"tp_comm_overlap", "ub_tp_comm_overlap"},
  }};
  static constexpr std::array<std::string_view, 2> kSameKernels = {"cross_entropy_fusion_impl",
                                                                   "use_transformer_engine_op_fuser"};
  const YAML::Node model_section = section(container, "model");
  for (const std::string_view key : kSameName) carry(model_section, std::string(key), model, std::string(key));
  for (const auto& [key, renamed] : kRenamed) carry(model_section, std::string(key), model, std::string(renamed));
  if (is_map(model_section)) {
    std::string unread;
    for (const auto& setting : model_section) {
      const std::string& key = setting.first.Scalar();
      const auto is = [&](std::string_view known) { return known == key; };
      if (std::none_of(kSameName.begin(), kSameName.end(), is) &&
          std::none_of(kSameKernels.begin(), kSameKernels.end(), is) &&
          std::none_of(kRenamed.begin(), kRenamed.end(), [&](const auto& r) { return r.first == key; }))
        unread += (unread.empty() ? "" : ", ") + key;
    }
    if (!unread.empty()) notes.push_back("not imported from model: " + unread);
  }
  const YAML::Node train = section(container, "train");
  carry(train, "global_batch_size", model, "global_batch_size");
  carry(train, "micro_batch_size", model, "micro_batch_size");
  const YAML::Node dataset = section(container, "dataset");
  carry(dataset, "sequence_length", model, "encoder_seq_length");
  carry(dataset, "seq_length", model, "encoder_seq_length");
  const YAML::Node ddp = section(container, "ddp");
  carry(ddp, "overlap_grad_reduce", model["optim"], "overlap_grad_sync");
  carry(ddp, "overlap_param_gather", model["optim"], "overlap_param_sync");
  carry(ddp, "use_distributed_optimizer", model, "use_distributed_optimizer");
  carry(ddp, "grad_reduce_in_fp32", model, "grad_reduce_in_fp32");
  if (is_map(ddp) && ddp["use_megatron_fsdp"].IsDefined() && ddp["use_megatron_fsdp"].as<bool>(false))
    model["fsdp"] = true;
  // The ConfigContainer's comm_overlap (CommOverlapConfig), which Bridge applies to the model config.
  const YAML::Node comm_overlap = section(container, "comm_overlap");
  carry(comm_overlap, "tp_comm_overlap", model, "ub_tp_comm_overlap");
  carry(comm_overlap, "overlap_moe_expert_parallel_comm", model, "overlap_moe_expert_parallel_comm");
  const YAML::Node mixed = section(container, "mixed_precision");
  carry(mixed, "grad_reduce_in_fp32", model, "grad_reduce_in_fp32");
  if (is_map(mixed) && mixed["fp8"].IsDefined() && !mixed["fp8"].IsNull()) model["fp8"] = true;
  carry(mixed, "fp8_recipe", model, "fp8_recipe");
  if (const YAML::Node recipe_precision = container["mixed_precision"];
      recipe_precision.IsDefined() && recipe_precision.IsScalar()) {
    // A recipe's precision name: bf16_mixed, fp16_mixed, bf16_with_fp8_delayed_scaling_mixed, ...
    const std::string name = recipe_precision.Scalar();
    if (name.find("fp8") != std::string::npos || name.find("mxfp8") != std::string::npos) model["fp8"] = true;
    // bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed (src/megatron/bridge/training/mixed_precision.py).
    if (name.find("current_scaling") != std::string::npos) model["fp8_recipe"] = "tensorwise";
    if (name.find("mxfp8") != std::string::npos) model["fp8_recipe"] = "mxfp8";
    if (name.rfind("fp16", 0) == 0) trainer["precision"] = "16";
  }
  // PEFT: Megatron-Bridge's peft section (its LoRA dataclass: dim, target_modules; src/megatron/bridge/peft/lora.py)
  // in NeMo's names, with Bridge's defaults (dim 32 on all four linears) where the file is silent.
  if (const YAML::Node peft = section(container, "peft"); is_map(peft)) {
    const std::string target = peft["_target_"].IsDefined() ? peft["_target_"].Scalar() : "";
    const bool lora = target.empty() || target.ends_with(".LoRA");
    model["peft"]["peft_scheme"] = lora ? "lora" : target.substr(target.rfind('.') + 1);
    if (lora) {
      model["peft"]["lora_tuning"]["adapter_dim"] = peft["dim"].IsDefined() ? YAML::Clone(peft["dim"]) : YAML::Node(32);
      YAML::Node modules = model["peft"]["lora_tuning"]["target_modules"];
      // Bridge's module names (its defaults, all four) and NeMo's for the same linears.
      static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kBridgeToNemo{{
          {"linear_qkv", "attention_qkv"},
          {"linear_proj", "attention_dense"},
          {"linear_fc1", "mlp_fc1"},
          {"linear_fc2", "mlp_fc2"},
      }};
      const YAML::Node listed = peft["target_modules"];
      std::vector<std::string> names;
      for (const auto& [bridge, nemo] : kBridgeToNemo) names.emplace_back(bridge);
      if (listed.IsDefined() && listed.IsSequence()) {
        names.clear();
        for (const YAML::Node& entry : listed) names.push_back(entry.IsScalar() ? entry.Scalar() : std::string());
      }
      for (const std::string& name : names) {
        const auto known = std::find_if(kBridgeToNemo.begin(), kBridgeToNemo.end(),
                                        [&](const auto& pair) { return pair.first == name; });
        if (known == kBridgeToNemo.end())
          fail(listed, "peft.target_modules",
               "'" + name + "' is not a linear chopsim adapts (wildcards and other modules are not modelled)",
               "list linear_qkv, linear_proj, linear_fc1, linear_fc2");
        modules.push_back(std::string(known->second));
      }
    }
  }
  const YAML::Node optimizer = section(container, "optimizer");
  carry(optimizer, "clip_grad", trainer, "gradient_clip_val");

  // perf_matrix: the settings of the run's GPU, GPU count and precision, over the entry's `common`.
  int nodes = options.nodes.value_or(0);
  const YAML::Node perf = root["perf_matrix"];
  if (perf.IsDefined()) {
    if (!perf.IsMap()) fail(perf, "perf_matrix", "not a mapping", "pass a performance config of Megatron-Bridge");
    const std::string gpu = perf_gpu_key(options.hardware);
    const YAML::Node per_gpu = perf[gpu];
    if (!is_map(per_gpu))
      fail(perf, "perf_matrix",
           "no entry for the GPU of --hardware " + options.hardware + " ('" + gpu + "'); the file has " + keys_of(perf),
           "import with --hardware for one of those GPUs");
    const int gpus_per_node = import_detail::cluster_gpus_per_node(options);
    YAML::Node entry;
    std::string entry_key;
    if (options.nodes && gpus_per_node > 0) {
      entry_key = "num_gpus_" + std::to_string(*options.nodes * gpus_per_node);
      const YAML::Node found = per_gpu[entry_key];
      if (!is_map(found))
        fail(
            per_gpu, "perf_matrix." + gpu,
            "no " + entry_key + " for --nodes " + std::to_string(*options.nodes) + "; the file has " + keys_of(per_gpu),
            "give --nodes for one of those GPU counts");
      entry.reset(found);
    } else if (per_gpu.size() == 1) {
      entry_key = per_gpu.begin()->first.as<std::string>();
      entry.reset(per_gpu.begin()->second);
    } else {
      fail(per_gpu, "perf_matrix." + gpu, "several GPU counts (" + keys_of(per_gpu) + ")",
           "give --nodes N for the one to import");
    }
    const std::string precision = options.precision.empty() ? "bf16" : options.precision;
    if (!entry[precision].IsDefined())
      fail(entry, "perf_matrix." + gpu + "." + entry_key,
           "no precision '" + precision + "'; the entry has " + keys_of(entry),
           "give --precision with one of those (other than common)");
    YAML::Node settings = YAML::Clone(is_map(entry["common"]) ? entry["common"] : YAML::Node(YAML::NodeType::Map));
    if (is_map(entry[precision]))
      for (const auto& override_entry : entry[precision])
        settings[override_entry.first.Scalar()] = override_entry.second;
    const std::string where = "perf_matrix." + gpu + "." + entry_key + "." + precision;
    const auto integer_of = [&](const char* key) -> std::optional<int> {
      const YAML::Node value = settings[key];
      if (!value.IsDefined() || value.IsNull()) return std::nullopt;
      try {
        const int number = value.as<int>();
        if (number < 1) throw YAML::Exception(YAML::Mark::null_mark(), "not positive");
        return number;
      } catch (const YAML::Exception&) {
        fail(value, where + "." + key, "'" + value.Scalar() + "' is not a positive integer", "fix the perf matrix");
      }
      return std::nullopt;
    };
    const std::pair<const char*, const char*> renames[] = {
        {"tp", "tensor_model_parallel_size"}, {"pp", "pipeline_model_parallel_size"},
        {"cp", "context_parallel_size"},      {"vp", "virtual_pipeline_model_parallel_size"},
        {"ep", "expert_model_parallel_size"}, {"etp", "expert_tensor_parallel_size"},
        {"mbs", "micro_batch_size"},          {"gbs", "global_batch_size"},
        {"seq_length", "encoder_seq_length"}, {"recompute_num_layers", "activations_checkpoint_num_layers"}};
    for (const auto& [key, renamed] : renames)
      if (const auto value = integer_of(key)) model[renamed] = *value;
    // Bridge's performance scripts turn sequence parallelism on with TP (scripts/performance: set_perf_overrides).
    if (model["tensor_model_parallel_size"].as<int>(1) > 1) model["sequence_parallel"] = true;
    if (settings["use_megatron_fsdp"].IsDefined() && settings["use_megatron_fsdp"].as<bool>(false))
      model["fsdp"] = true;
    if (precision.rfind("fp8", 0) == 0) model["fp8"] = true;
    // The performance scripts' compute dtypes: fp8_cs current scaling, fp8_mx MXFP8 (scripts/performance/utils).
    if (precision == "fp8_cs") model["fp8_recipe"] = "tensorwise";
    if (precision == "fp8_mx") model["fp8_recipe"] = "mxfp8";
    if (settings["recompute_modules"].IsDefined() && !settings["recompute_modules"].IsNull())
      model["activations_checkpoint_granularity"] = "selective";
    if (settings["cuda_graphs"].IsDefined() && settings["cuda_graphs"].as<bool>(false))
      notes.push_back(where +
                      ".cuda_graphs: CUDA graphs replay the step without per-kernel host launches; chopsim "
                      "launches each kernel from the host");
    std::string unread;
    for (const auto& setting : settings) {
      const std::string key = setting.first.Scalar();
      static const std::set<std::string> kRead = {"num_gpus_per_node",
                                                  "seq_length",
                                                  "mbs",
                                                  "gbs",
                                                  "cuda_graphs",
                                                  "tp",
                                                  "pp",
                                                  "cp",
                                                  "vp",
                                                  "ep",
                                                  "etp",
                                                  "use_megatron_fsdp",
                                                  "recompute_num_layers",
                                                  "recompute_modules"};
      if (!kRead.count(key)) unread += (unread.empty() ? "" : ", ") + key;
    }
    if (!unread.empty()) notes.push_back("not imported from " + where + ": " + unread);
    const int total = std::stoi(entry_key.substr(entry_key.rfind('_') + 1));
    if (nodes == 0 && gpus_per_node > 0) {
      if (total % gpus_per_node != 0)
        fail(entry, where, std::to_string(total) + " GPUs do not fill nodes of " + std::to_string(gpus_per_node),
             "give --nodes N");
      nodes = total / gpus_per_node;
    }
    if (const auto per_node = integer_of("num_gpus_per_node");
        per_node && gpus_per_node > 0 && *per_node != gpus_per_node)
      notes.push_back(where + ".num_gpus_per_node " + std::to_string(*per_node) + ": the cluster '" + options.cluster +
                      "' has " + std::to_string(gpus_per_node) + " GPUs per node");
  }
  if (nodes == 0) {
    nodes = 1;
    notes.push_back("the config gives no GPU count: 1 node (give --nodes N)");
  }
  trainer["num_nodes"] = nodes;

  for (const char* needed : {"global_batch_size", "micro_batch_size", "encoder_seq_length"})
    if (!model[needed].IsDefined())
      fail(root, needed,
           std::string("the config sets no ") + (std::string(needed) == "encoder_seq_length"
                                                     ? "sequence length (dataset.sequence_length, seq_length)"
                                                     : std::string("train.") + needed),
           "set it in the file (Bridge's recipe default is not read from its Python)");
  if (!model["tensor_model_parallel_size"].IsDefined()) model["tensor_model_parallel_size"] = 1;

  // The model: --model, the shape the file gives, or the recipe the file is named after.
  ImportOptions with_model = options;
  if (with_model.model.empty() && !model["num_layers"].IsDefined()) {
    const std::string recipe = recipe_of(file);
    for (const RecipeModel& known : kRecipeModels)
      if (recipe == known.recipe) with_model.model = known.model;
    if (with_model.model.empty())
      fail(root, "model",
           "the config gives no model shape and its name names no recipe chopsim has a model for ('" + recipe + "')",
           "give --model NAME (a file in configs/models/) or --model config.json");
    notes.push_back("model " + with_model.model + ": from the recipe name " + recipe);
  }
  ImportResult result = import_detail::import_megatron_core(shown, job, with_model, "bridge");
  result.notes.insert(result.notes.end(), notes.begin(), notes.end());
  return result;
}

}  // namespace chopsim
