// Megatron-LM training arguments as chopsim run configs (docs/import.md): a file of the arguments given to
// pretrain_gpt.py (a launch script's argument list, `--name value` or `--name=value`, `\` continuations and `#`
// comments allowed), or the MODEL_ARGS mapping of a Megatron-LM functional test's model_config.yaml. The arguments
// are renamed to the keys NeMo gives the same Megatron-Core settings and go through the one mapping
// (import_nemo.cpp), with Megatron-LM's own defaults for the settings that cost time.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "chopsim/common/config_files.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

using Arguments = std::map<std::string, std::string>;  // name without "--" -> value ("true" for a bare flag)

constexpr std::uintmax_t kLargestArgumentFileBytes = 1 << 20;

std::string read_text(const fs::path& file, const std::string& shown) {
  std::error_code error;
  if (!fs::is_regular_file(file, error))
    throw InputError({shown}, "", "not found, or not a regular file", "pass a file of Megatron-LM arguments");
  if (fs::file_size(file, error) > kLargestArgumentFileBytes)
    throw InputError({shown}, "", "larger than 1 MB: not a list of arguments", "pass a file of Megatron-LM arguments");
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The arguments of an argument file: shell-like words (quotes, `\` line continuations, `#` comments); the launcher
/// and the script before them are skipped.
Arguments parse_argument_text(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        word += c;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;
      continue;
    }
    if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    word += c;
    in_word = true;
  }
  if (in_word) words.push_back(word);
  Arguments args;
  // The script's arguments: after the script (torchrun's own --nnodes and --nproc_per_node come before it), or from
  // the first --name when the file holds the arguments alone.
  std::size_t i = 0;
  const auto script = std::find_if(words.begin(), words.end(), [](const std::string& w) {
    return w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0;
  });
  if (script != words.end()) i = static_cast<std::size_t>(script - words.begin()) + 1;
  while (i < words.size() && words[i].rfind("--", 0) != 0) ++i;
  for (; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) continue;  // a stray word (an argument's second value) is not a setting
    const std::string name = words[i].substr(2);
    if (const auto equals = name.find('='); equals != std::string::npos) {
      args[name.substr(0, equals)] = name.substr(equals + 1);
    } else if (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) {
      args[name] = words[++i];
      // Arguments that take several values (nargs='+'): the words up to the next --name, space-separated.
      if (name == "cuda-graph-scope")
        while (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) args[name] += " " + words[++i];
    } else {
      args[name] = "true";
    }
  }
  return args;
}

/// MODEL_ARGS of a functional test's model_config.yaml: `--name: value` (true for a flag).
Arguments parse_model_args(const YAML::Node& map, const std::string& shown) {
  Arguments args;
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>();
    if (key.rfind("--", 0) != 0)
      throw InputError(config_detail::location_of(entry.first, shown), "MODEL_ARGS",
                       "'" + key + "' is not a Megatron-LM argument (they start with --)", "fix the file's MODEL_ARGS");
    if (!entry.second.IsScalar())
      throw InputError(config_detail::location_of(entry.second, shown), key, "the value is not a single value",
                       "give the argument one value");
    args[key.substr(2)] = entry.second.Scalar();
  }
  return args;
}

bool is_true(const Arguments& args, const std::string& name) {
  const auto it = args.find(name);
  return it != args.end() && (it->second == "true" || it->second == "True" || it->second == "1");
}

/// The argument's integer value, or `fallback`.
int integer(const Arguments& args, const std::string& name, int fallback, const std::string& shown) {
  const auto it = args.find(name);
  if (it == args.end()) return fallback;
  try {
    std::size_t used = 0;
    const long value = std::stol(it->second, &used);
    if (used != it->second.size() || value < 0 || value > (1L << 30)) throw std::invalid_argument(name);
    return static_cast<int>(value);
  } catch (const std::exception&) {
    throw InputError({shown}, "--" + name, "'" + it->second + "' is not a non-negative integer",
                     "fix the argument (as pretrain_gpt.py would refuse it)");
  }
}

/// Arguments read here; any other is listed as not imported (when it is not known to leave the cost unchanged).
const std::set<std::string> kRead = {
    "num-layers", "hidden-size", "ffn-hidden-size", "num-attention-heads", "group-query-attention", "num-query-groups",
    "num-experts", "moe-router-topk", "moe-ffn-hidden-size", "moe-shared-expert-intermediate-size", "moe-layer-freq",
    "multi-latent-attention", "q-lora-rank", "kv-lora-rank", "qk-head-dim", "qk-pos-emb-head-dim", "v-head-dim",
    "mtp-num-layers", "tensor-model-parallel-size", "pipeline-model-parallel-size", "context-parallel-size",
    "expert-model-parallel-size", "expert-tensor-parallel-size", "num-layers-per-virtual-pipeline-stage",
    "virtual-pipeline-model-parallel-size", "sequence-parallel", "use-distributed-optimizer", "global-batch-size",
    "micro-batch-size", "seq-length", "bf16", "fp16", "fp8-format", "fp8-recipe", "recompute-granularity",
    "recompute-method", "recompute-num-layers", "overlap-grad-reduce", "overlap-param-gather", "tp-comm-overlap",
    "deterministic-mode", "transformer-impl", "no-masked-softmax-fusion", "no-create-attention-mask-in-dataloader",
    "no-check-for-nan-in-loss-and-grad", "no-gradient-accumulation-fusion", "cross-entropy-loss-fusion",
    "log-num-zeros-in-grad", "log-params-norm", "clip-grad", "ddp-bucket-size", "swiglu", "use-mcore-models",
    "no-overlap-p2p-communication", "moe-token-dispatcher-type", "overlap-moe-expert-parallel-comm",
    "moe-expert-capacity-factor", "moe-pad-expert-input-to-capacity", "moe-router-fusion",
    "moe-router-load-balancing-type", "moe-aux-loss-coeff", "moe-router-enable-expert-bias", "cuda-graph-impl",
    "cuda-graph-scope",
    // The model's shape beyond what selects the model file: the matched file
    // (configs/models) states them.
    "vocab-size", "untie-embeddings-and-output-weights", "normalization", "position-embedding-type",
    "disable-bias-linear", "make-vocab-size-divisible-by"};

/// Arguments that set nothing chopsim predicts (logging, checkpoints, data, schedules of the learning rate).
bool leaves_cost_unchanged(const std::string& name) {
  for (const char* prefix : {"log-",
                             "save",
                             "load",
                             "lr",
                             "min-lr",
                             "eval-",
                             "tensorboard",
                             "wandb",
                             "data-",
                             "split",
                             "train-",
                             "exit-",
                             "timing-",
                             "tokenizer",
                             "vocab-file",
                             "merge-file",
                             "mock-data",
                             "seed",
                             "init-method",
                             "weight-decay",
                             "adam-",
                             "distributed-backend",
                             "ckpt-",
                             "dist-ckpt",
                             "async-save",
                             "use-persistent-ckpt",
                             "max-position-embeddings",
                             "attention-backend",
                             "use-checkpoint",
                             "no-load",
                             "profile"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool is_megatron_arguments(const fs::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error) || fs::file_size(file, error) > kLargestArgumentFileBytes) return false;
  std::ifstream in(file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.find("MODEL_ARGS") != std::string::npos && text.find("--num-layers") != std::string::npos) return true;
  return text.find("--num-layers") != std::string::npos && text.find("--hidden-size") != std::string::npos;
}

ImportResult import_megatron(const fs::path& file, const ImportOptions& options) {
  const std::string shown = config_detail::display_path(file);
  const std::string text = read_text(file, shown);
  Arguments args;
  if (text.find("MODEL_ARGS:") != std::string::npos) {
    const YAML::Node root = config_detail::load_yaml_file(file, "Megatron-LM test config");
    if (!root.IsMap() || !root["MODEL_ARGS"].IsMap())
      throw InputError({shown}, "MODEL_ARGS", "no MODEL_ARGS mapping", "pass a functional test's model_config.yaml");
    args = parse_model_args(root["MODEL_ARGS"], shown);
  } else {
    args = parse_argument_text(text);
  }
  for (const char* needed : {"num-layers", "hidden-size", "num-attention-heads", "global-batch-size", "seq-length"})
    if (!args.count(needed))
      throw InputError({shown}, std::string("--") + needed, std::string("the arguments have no --") + needed,
                       "pretrain_gpt.py needs it; add it to the file");
  std::vector<std::string> notes;

  // Megatron-LM's argument names with NeMo's keys for the same Megatron-Core settings.
  YAML::Node job;
  YAML::Node model = job["model"];
  const int layers = integer(args, "num-layers", 0, shown);
  const int hidden = integer(args, "hidden-size", 0, shown);
  model["num_layers"] = layers;
  model["hidden_size"] = hidden;
  // Megatron's default FFN width: 4 h, or with --swiglu 2/3 of it rounded down to a multiple of 64.
  const int default_ffn = is_true(args, "swiglu") ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden;
  model["ffn_hidden_size"] = integer(args, "ffn-hidden-size", default_ffn, shown);
  const int heads = integer(args, "num-attention-heads", 0, shown);
  model["num_attention_heads"] = heads;
  model["num_query_groups"] =
      is_true(args, "group-query-attention") ? integer(args, "num-query-groups", 1, shown) : heads;
  // Megatron-Core's multi-latent attention: the latent ranks and the head widths select the model.
  if (is_true(args, "multi-latent-attention")) {
    model["multi_latent_attention"] = true;
    for (const auto& [argument, key] : {std::pair<const char*, const char*>{"q-lora-rank", "q_lora_rank"},
                                        {"kv-lora-rank", "kv_lora_rank"},
                                        {"qk-head-dim", "qk_head_dim"},
                                        {"qk-pos-emb-head-dim", "qk_pos_emb_head_dim"},
                                        {"v-head-dim", "v_head_dim"}})
      if (args.count(argument)) model[key] = integer(args, argument, 1, shown);
  }
  // Megatron-LM trains without multi-token prediction unless --mtp-num-layers says otherwise.
  model["mtp_num_layers"] = args.count("mtp-num-layers") ? integer(args, "mtp-num-layers", 0, shown) : 0;
  if (args.count("num-experts")) {
    model["num_moe_experts"] = integer(args, "num-experts", 1, shown);
    model["moe_router_topk"] = integer(args, "moe-router-topk", 2, shown);
    if (args.count("moe-ffn-hidden-size"))
      model["moe_ffn_hidden_size"] = integer(args, "moe-ffn-hidden-size", 1, shown);
    if (args.count("moe-shared-expert-intermediate-size"))
      model["moe_shared_expert_intermediate_size"] = integer(args, "moe-shared-expert-intermediate-size", 1, shown);
    if (args.count("moe-layer-freq")) model["moe_layer_freq"] = args.at("moe-layer-freq");
  }
  const int tp = integer(args, "tensor-model-parallel-size", 1, shown);
  const int pp = integer(args, "pipeline-model-parallel-size", 1, shown);
  model["tensor_model_parallel_size"] = tp;
  model["pipeline_model_parallel_size"] = pp;
  const int cp = integer(args, "context-parallel-size", 1, shown);
  model["context_parallel_size"] = cp;
  if (args.count("expert-model-parallel-size"))
    model["expert_model_parallel_size"] = integer(args, "expert-model-parallel-size", 1, shown);
  if (args.count("expert-tensor-parallel-size"))
    model["expert_tensor_parallel_size"] = integer(args, "expert-tensor-parallel-size", 1, shown);
  int virtual_stages = integer(args, "virtual-pipeline-model-parallel-size", 1, shown);
  if (const int per = integer(args, "num-layers-per-virtual-pipeline-stage", 0, shown); per > 0)
    virtual_stages = layers / std::max(1, pp * per);
  if (virtual_stages > 1) {
    model["virtual_pipeline_model_parallel_size"] = virtual_stages;
    // Megatron overlaps the interleaved schedule's sends and receives unless --no-overlap-p2p-communication.
    model["overlap_p2p_comm"] = !is_true(args, "no-overlap-p2p-communication");
  }
  model["sequence_parallel"] = is_true(args, "sequence-parallel");
  model["use_distributed_optimizer"] = is_true(args, "use-distributed-optimizer");
  model["global_batch_size"] = integer(args, "global-batch-size", 0, shown);
  model["micro_batch_size"] = integer(args, "micro-batch-size", 1, shown);
  model["encoder_seq_length"] = integer(args, "seq-length", 0, shown);
  if (args.count("fp8-format")) model["fp8"] = true;
  if (args.count("fp8-recipe")) model["fp8_recipe"] = args.at("fp8-recipe");
  if (args.count("recompute-granularity")) {
    model["activations_checkpoint_granularity"] = args.at("recompute-granularity");
    if (args.count("recompute-method")) model["activations_checkpoint_method"] = args.at("recompute-method");
    if (args.count("recompute-num-layers"))
      model["activations_checkpoint_num_layers"] = integer(args, "recompute-num-layers", 1, shown);
  }
  model["optim"]["overlap_grad_sync"] = is_true(args, "overlap-grad-reduce");
  model["optim"]["overlap_param_sync"] = is_true(args, "overlap-param-gather");
  model["ub_tp_comm_overlap"] = is_true(args, "tp-comm-overlap");
  model["overlap_moe_expert_parallel_comm"] = is_true(args, "overlap-moe-expert-parallel-comm");
  if (args.count("moe-token-dispatcher-type"))
    model["moe_token_dispatcher_type"] = args.at("moe-token-dispatcher-type");
  if (args.count("moe-router-fusion")) model["moe_router_fusion"] = is_true(args, "moe-router-fusion");
  if (args.count("moe-router-enable-expert-bias"))
    model["moe_router_enable_expert_bias"] = is_true(args, "moe-router-enable-expert-bias");
  if (args.count("moe-router-load-balancing-type"))
    model["moe_router_load_balancing_type"] = args.at("moe-router-load-balancing-type");
  if (args.count("moe-aux-loss-coeff")) model["moe_aux_loss_coeff"] = args.at("moe-aux-loss-coeff");
  if (args.count("cuda-graph-impl")) model["cuda_graph_impl"] = args.at("cuda-graph-impl");
  if (args.count("cuda-graph-scope")) model["cuda_graph_scope"] = args.at("cuda-graph-scope");
  if (args.count("moe-expert-capacity-factor")) {
    model["moe_expert_capacity_factor"] = args.at("moe-expert-capacity-factor");
    model["moe_pad_expert_input_to_capacity"] = is_true(args, "moe-pad-expert-input-to-capacity");
  }
  // Megatron-Core DDP's gradient bucket: --ddp-bucket-size parameters, default max(40e6, 1e6 x data-parallel size);
  // chopsim counts it in MiB of bf16 gradients (as configs/validation/megatron-gpt3-7b-*.yaml state it).
  const int nodes = options.nodes.value_or(1);
  int gpus_per_node = import_detail::cluster_gpus_per_node(options);
  if (gpus_per_node <= 0) {
    gpus_per_node = 8;  // the run config's loader names the missing cluster; the bucket needs a size meanwhile
    notes.push_back("cluster '" + options.cluster + "' not found: its default gradient bucket assumes 8 GPUs per node");
  }
  const int dp = std::max(1, nodes * gpus_per_node / std::max(1, tp * pp * cp));
  const double bucket_parameters =
      args.count("ddp-bucket-size") ? integer(args, "ddp-bucket-size", 0, shown) : std::max(40e6, 1e6 * dp);
  std::array<char, 32> bucket_mb{};
  std::snprintf(bucket_mb.data(), bucket_mb.size(), "%.1f", bucket_parameters * 2.0 / (1 << 20));
  model["optim"]["bucket_cap_mb"] = std::string(bucket_mb.data());
  model["deterministic_mode"] = is_true(args, "deterministic-mode");
  // Megatron-Core models default to Transformer Engine's layers (--transformer-impl transformer_engine).
  model["transformer_impl"] = args.count("transformer-impl") ? args.at("transformer-impl") : "transformer_engine";
  model["masked_softmax_fusion"] = !is_true(args, "no-masked-softmax-fusion");  // Megatron-LM's default: on
  model["create_attention_mask_in_dataloader"] = !is_true(args, "no-create-attention-mask-in-dataloader");
  model["check_for_nan_in_loss_and_grad"] = !is_true(args, "no-check-for-nan-in-loss-and-grad");
  model["gradient_accumulation_fusion"] = !is_true(args, "no-gradient-accumulation-fusion");
  model["cross_entropy_loss_fusion"] = is_true(args, "cross-entropy-loss-fusion");
  model["log_num_zeros_in_grad"] = is_true(args, "log-num-zeros-in-grad");
  model["log_params_norm"] = is_true(args, "log-params-norm");

  YAML::Node trainer = job["trainer"];
  trainer["num_nodes"] = nodes;
  trainer["precision"] = is_true(args, "bf16") ? "bf16" : is_true(args, "fp16") ? "16" : "32";
  trainer["gradient_clip_val"] = args.count("clip-grad") ? args.at("clip-grad") : "1.0";  // Megatron's default
  if (!options.nodes) notes.push_back("the arguments give no node count: 1 node (give --nodes N)");

  std::vector<std::string> unread;
  for (const auto& [name, value] : args)
    if (!kRead.count(name) && !leaves_cost_unchanged(name)) unread.push_back("--" + name);
  ImportResult result = import_detail::import_megatron_core(shown, job, options, "megatron");
  if (!unread.empty()) {
    std::string list;
    for (const std::string& name : unread) list += (list.empty() ? "" : ", ") + name;
    result.notes.push_back("not imported: " + list);
  }
  result.notes.insert(result.notes.end(), notes.begin(), notes.end());
  return result;
}

}  // namespace chopsim
