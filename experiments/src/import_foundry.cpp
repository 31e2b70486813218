// llm-foundry training YAML (mosaicml/llm-foundry scripts/train/yamls/pretrain/*.yaml) as chopsim run configs
// (docs/import.md): MPT-style models by shape, Composer's FSDP settings, the attention implementation and the loss,
// by the rules the validation table uses for llm-foundry's published throughput (validation_cases.cpp).

#include <yaml-cpp/yaml.h>

#include <sstream>

#include "chopsim/common/error.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

/// An llm-foundry YAML being read: values by dotted path, `${name}` resolved from the top level (OmegaConf's
/// interpolation as llm-foundry's YAMLs use it), errors at the key's line.
class FoundryJob {
 public:
  explicit FoundryJob(const fs::path& file)
      : file_(config_detail::display_path(file)), root_(config_detail::load_yaml_file(file, "llm-foundry config")) {
    if (!root_.IsMap()) throw InputError({file_}, "", "not an llm-foundry training YAML", "pass a train YAML");
  }
  YAML::Node at(const std::string& path) const { return import_detail::at_path(root_, path); }
  bool has(const std::string& path) const {
    const YAML::Node n = at(path);
    return n.IsDefined() && !n.IsNull();
  }
  /// The scalar at `path` with one level of `${name}` interpolation resolved; "" when absent.
  std::string text(const std::string& path) const {
    if (!has(path) || !at(path).IsScalar()) return "";
    const std::string value = at(path).Scalar();
    if (value.size() > 3 && value.rfind("${", 0) == 0 && value.back() == '}') {
      const std::string name = value.substr(2, value.size() - 3);
      if (!has(name)) fail(path, "'" + value + "' names " + name + ", which the file does not set", "set " + name);
      return at(name).Scalar();
    }
    return value;
  }
  int integer(const std::string& path, std::optional<int> fallback = std::nullopt) const {
    if (!has(path)) {
      if (fallback) return *fallback;
      fail(path, "the config has no " + path, "llm-foundry's train YAMLs set it");
    }
    const std::string value = text(path);
    try {
      std::size_t used = 0;
      const int number = std::stoi(value, &used);
      if (used != value.size() || number < 1) throw std::invalid_argument(path);
      return number;
    } catch (const std::exception&) {
      fail(path, "'" + value + "' is not a positive integer", "give a number");
    }
  }
  [[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) const {
    const YAML::Node n = at(path);
    throw InputError(n.IsDefined() ? config_detail::location_of(n, file_) : SourceLocation{file_}, path, problem, fix);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  YAML::Node root_;
};

}  // namespace

bool is_foundry_config(const fs::path& file) {
  try {
    const YAML::Node root = config_detail::load_yaml_file(file, "llm-foundry config");
    return root.IsMap() && root["model"].IsMap() && root["model"]["d_model"].IsDefined() &&
           root["model"]["n_layers"].IsDefined();
  } catch (const YAML::Exception&) {
  } catch (const InputError&) {
  }
  return false;
}

ImportResult import_foundry(const fs::path& file, const ImportOptions& options) {
  const FoundryJob job(file);
  ImportResult result;
  result.format = "foundry";
  const int layers = job.integer("model.n_layers");
  const int hidden = job.integer("model.d_model");
  const int heads = job.integer("model.n_heads");
  const int expansion = job.integer("model.expansion_ratio", 4);
  const int vocab = job.has("model.vocab_size") ? job.integer("model.vocab_size") : 0;
  std::string model = options.model;
  if (model.empty())
    model = import_detail::shipped_model_with_shape(options.search, [&](const TransformerSpec& m) {
      // MPT attention is multi-head (kv heads = heads); the vocabulary tells MPT apart from other shapes like it.
      return m.layers == layers && m.hidden == hidden && m.heads == heads && m.kv_heads == heads &&
             m.ffn_hidden == expansion * hidden && m.experts == 1 && (vocab == 0 || m.vocab == vocab);
    });
  if (model.empty())
    job.fail("model.n_layers",
             "no shipped model has the job's shape (" + std::to_string(layers) + " layers, d_model " +
                 std::to_string(hidden) + ", " + std::to_string(heads) + " heads, expansion " +
                 std::to_string(expansion) + ")",
             "give --model NAME (a file in configs/models/) or --model config.json (a Hugging Face model's), or add "
             "the model there");
  if (job.text("device_train_microbatch_size") == "auto")
    job.fail("device_train_microbatch_size", "'auto' is chosen by Composer at run time",
             "set the micro-batch the run used (a number)");

  std::ostringstream y;
  y << "# Imported by chopsim import from " << job.file() << " (llm-foundry)\n";
  y << "name: " << fs::path(job.file()).stem().string() << "\n";
  y << import_detail::model_entry(model);
  y << "hardware: " << options.hardware << "\n";
  y << "cluster: {name: " << options.cluster << ", nodes: " << options.nodes.value_or(1) << "}\n";
  if (!options.nodes) result.notes.push_back("the YAML gives no node count: 1 node (give --nodes N)");
  y << "parallelism:\n  dp: auto\n";
  // Composer's FSDP: FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2 (with fsdp1, below: each unit gathered for its
  // forward, kept for its backward), NO_SHARD = data parallelism; without fsdp_config, DDP.
  const std::string sharding = job.has("fsdp_config") ? job.text("fsdp_config.sharding_strategy") : "NO_SHARD";
  if (sharding == "FULL_SHARD" || sharding.empty()) {
    y << "  zero_stage: 3           # fsdp_config.sharding_strategy FULL_SHARD\n";
  } else if (sharding == "SHARD_GRAD_OP") {
    y << "  zero_stage: 2           # fsdp_config.sharding_strategy SHARD_GRAD_OP\n";
  } else if (sharding == "HYBRID_SHARD") {
    y << "  fsdp: hybrid_shard\n";
  } else if (sharding != "NO_SHARD") {
    job.fail("fsdp_config.sharding_strategy", "'" + sharding + "' is not a sharding strategy chopsim knows",
             "use FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD or NO_SHARD");
  }
  y << "training:\n";
  y << "  global_batch: " << job.integer("global_train_batch_size") << "\n";
  y << "  micro_batch: " << job.integer("device_train_microbatch_size") << "\n";
  y << "  seq_len: " << job.integer("max_seq_len", job.integer("model.max_seq_len", 2048)) << "\n";
  const std::string precision = job.text("precision");
  y << "  precision: "
    << (precision == "amp_fp8"    ? "fp8"
        : precision == "amp_fp16" ? "fp16"
        : precision == "fp32"     ? "fp32"
                                  : "bf16")
    << "        # precision " << (precision.empty() ? "(absent)" : precision) << "\n";
  const std::string checkpointing = job.text("fsdp_config.activation_checkpointing");
  const bool recompute = checkpointing == "true" || checkpointing == "True";
  y << "  recompute: " << (recompute ? "full" : "none") << "\n";
  // Composer wraps each checkpointed block in PyTorch's checkpoint_wrapper, non-reentrant where the YAML sets
  // activation_checkpointing_reentrant: false (Composer's default is reentrant: dist_strategy.py set_fsdp_default in
  // 0.16, ParallelismConfig in later releases), and PyTorch's non-reentrant checkpoint stops a recomputed forward
  // early (on by default from PyTorch 2.1, which llm-foundry requires from v0.4).
  const std::string reentrant = job.text("fsdp_config.activation_checkpointing_reentrant");
  if (recompute && (reentrant == "false" || reentrant == "False"))
    y << "  recompute_early_stop: true        # fsdp_config.activation_checkpointing_reentrant false\n";
  // attn_impl: llm-foundry's own Triton FlashAttention (its default in the benchmark sweeps), flash-attn 2, or torch.
  const std::string attention = job.text("model.attn_config.attn_impl");
  if (attention == "triton" || attention.empty())
    y << "  attention: flash1_triton        # model.attn_config.attn_impl "
      << (attention.empty() ? "(default triton)" : attention) << "\n";
  else if (attention == "flash")
    y << "  attention: flash2        # model.attn_config.attn_impl flash\n"
      << "  unpad_attention: true        # flash_attn_fn unpads Q, K, V and pads the output around the kernel\n";
  else if (attention == "torch")
    y << "  attention: eager        # model.attn_config.attn_impl torch\n";
  // mixed_precision DEFAULT (Composer's default): bf16 parameters, fp32 gradient reduction; PURE: all bf16.
  const std::string mixed = job.text("fsdp_config.mixed_precision");
  y << "  fsdp_reduce_dtype: " << (mixed == "PURE" ? "bf16" : "fp32") << "        # fsdp_config.mixed_precision "
    << (mixed.empty() ? "(default DEFAULT)" : mixed) << "\n";
  // Composer wraps the model in PyTorch's FullyShardedDataParallel (FSDP1, FlatParameter), or in fully_shard (FSDP2)
  // when the environment sets FSDP_VERSION=2 (Composer 0.30+, trainer.py), which a YAML does not show.
  if (sharding != "NO_SHARD")
    y << "  fsdp_implementation: fsdp1        # Composer's FSDP (FSDP_VERSION=2 in the environment: fsdp2)\n";
  y << "  grad_clip: " << (job.has("algorithms.gradient_clipping") ? "true" : "false") << "\n";
  // optimizer.name: Composer's DecoupledAdamW (a per-tensor Python loop) or another, taken as fused AdamW.
  const std::string optimizer = job.text("optimizer.name");
  if (optimizer == "decoupled_adamw") {
    y << "  optimizer: decoupled_adamw        # optimizer.name decoupled_adamw (Composer's per-tensor loop)\n";
  } else if (!optimizer.empty()) {
    y << "  optimizer: fused_adamw        # optimizer.name " << optimizer << ": not modelled, taken as fused AdamW\n";
    result.notes.push_back("optimizer " + optimizer + " is modelled as fused AdamW (one pass per step)");
  }
  // The train metrics Composer updates after every micro-batch: llm-foundry's causal LMs' defaults
  // (DEFAULT_CAUSAL_LM_TRAIN_METRICS since v0.8; v0.3 to v0.7 had no token_accuracy) unless use_train_metrics is false.
  const std::string train_metrics = job.text("model.use_train_metrics");
  if (train_metrics == "false" || train_metrics == "False") {
    y << "  train_metrics: []        # model.use_train_metrics false\n";
  } else {
    y << "  train_metrics: [language_cross_entropy, language_perplexity, token_accuracy]        # llm-foundry's "
         "defaults (before v0.8 without token_accuracy)\n";
  }
  const std::string loss = job.text("model.loss_fn");
  y << "  cross_entropy_fusion: " << (loss == "torch_crossentropy" ? "false" : "true") << "        # model.loss_fn "
    << (loss.empty() ? "(default fused_crossentropy)" : loss) << "\n";
  y << "iterations: 1\n";
  result.yaml = y.str();
  return result;
}

}  // namespace chopsim
