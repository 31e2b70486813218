// NeMo (Megatron-Core) training configs as chopsim run configs (docs/import.md): the keys NeMo's
// megatron_gpt_config.yaml defines, mapped one to one where chopsim has the setting.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"
#include "import_nemo_job.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using import_detail::NemoJob;

namespace {

/// The leading dense layers of Megatron-Core's moe_layer_freq: 1 (every layer MoE) gives 0, a pattern
/// "([0]*k+[1]*n)" gives k; -1 for any other pattern (dense layers among the MoE ones, which chopsim does not model).
int leading_dense_layers(const std::string& frequency) {
  if (frequency.empty() || frequency == "1") return 0;
  std::string compact;
  for (const char c : frequency)
    if (c != ' ' && c != '(' && c != ')' && c != '"' && c != '\'') compact += c;
  const std::size_t plus = compact.find("+[1]*");
  if (compact.rfind("[0]*", 0) != 0 || plus == std::string::npos) return -1;
  try {
    std::size_t used = 0;
    const int dense = std::stoi(compact.substr(4, plus - 4), &used);
    return used == plus - 4 && dense >= 0 ? dense : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

/// The shipped model with the job's shape, or "". Megatron-Core's MoE models give the experts' width apart
/// (moe_ffn_hidden_size; ffn_hidden_size is then the dense layers'), shared experts and the dense first layers.
std::string matching_model(const NemoJob& job, const ConfigSearchPath& search) {
  const int heads = job.integer("model.num_attention_heads");
  const int experts = job.integer("model.num_moe_experts", 1);
  const int ffn = job.integer("model.ffn_hidden_size");
  const int expert_ffn = job.integer("model.moe_ffn_hidden_size", ffn);
  const int shared = job.integer("model.moe_shared_expert_intermediate_size", 0);
  const int dense_layers = leading_dense_layers(job.text("model.moe_layer_freq"));
  if (dense_layers < 0)
    job.fail("model.moe_layer_freq",
             "'" + job.text("model.moe_layer_freq") +
                 "' puts dense layers among the MoE ones; chopsim models dense first layers",
             "use a pattern ([0]*k+[1]*n) or 1, or describe the model by hand");
  // Megatron-Core's MLA defaults (TransformerConfig / MLATransformerConfig): q_lora_rank 512, kv_lora_rank 512,
  // qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128.
  const bool mla = job.flag("model.multi_latent_attention");
  const auto mla_matches = [&](const TransformerSpec& m) {
    if (!mla) return !m.is_mla();
    return m.is_mla() && m.q_lora_rank == job.integer("model.q_lora_rank", 512) &&
           m.kv_lora_rank == job.integer("model.kv_lora_rank", 512) &&
           m.head_dim() == job.integer("model.qk_head_dim", 128) &&
           m.qk_rope_head_dim == job.integer("model.qk_pos_emb_head_dim", 64) &&
           m.v_head_dim == job.integer("model.v_head_dim", 128);
  };
  return import_detail::shipped_model_with_shape(search, [&](const TransformerSpec& m) {
    return mla_matches(m) && m.layers == job.integer("model.num_layers") &&
           m.hidden == job.integer("model.hidden_size") && m.ffn_hidden == (experts > 1 ? expert_ffn : ffn) &&
           m.heads == heads && m.kv_heads == job.integer("model.num_query_groups", heads) &&
           m.experts == std::max(experts, 1) &&
           (experts <= 1 ||
            (m.top_k == job.integer("model.moe_router_topk", 2) && m.shared_expert_ffn_hidden == shared &&
             m.dense_layers == dense_layers && (dense_layers == 0 || m.dense_width() == ffn)));
  });
}

/// The attention kernel Transformer Engine picks on the run's GPU: cuDNN's fused attention where the hardware file
/// has it (Hopper and Blackwell), else FlashAttention 2; "" when the hardware file is not found or has neither.
std::string transformer_engine_attention(const ImportOptions& options) {
  for (const fs::path& root : options.search.roots) {
    const fs::path file = root / "hardware" / (options.hardware + ".yaml");
    std::error_code error;
    if (!fs::is_regular_file(file, error)) continue;
    try {
      const HardwareSpec hardware = load_hardware_config(file);
      for (const char* name : {"cudnn", "flash2"})
        if (hardware.attention_implementations.count(name)) return name;
    } catch (const InputError&) {
    }
    return "";
  }
  return "";
}

}  // namespace

std::vector<std::string> import_format_names() { return {"nemo", "megatron", "bridge", "foundry", "torchtitan", "hf"}; }

std::string detect_job_format(const fs::path& file) {
  try {
    // Through the config loader's checks: yaml-cpp alone can loop forever on some malformed files.
    const YAML::Node root = config_detail::load_yaml_file(file, "job config");
    if (root.IsMap() && root["model"].IsMap() && root["trainer"].IsMap() &&
        root["model"]["tensor_model_parallel_size"].IsDefined())
      return "nemo";
  } catch (const YAML::Exception&) {
  } catch (const InputError&) {
  }
  return "";
}

namespace {

/// training.lora from NeMo's model.peft.lora_tuning: its adapter_dim and target_modules (NeMo's names; absent, NeMo's
/// default: the fused QKV only, megatron_gpt_finetuning_config.yaml and NeMo 1's LoraKQVAdapter).
void write_lora(const NemoJob& job, std::ostringstream& y) {
  y << "  lora:\n    rank: " << job.integer("model.peft.lora_tuning.adapter_dim", 32)
    << "        # model.peft.lora_tuning.adapter_dim\n";
  // NeMo's module names and the linears each stands for.
  struct NemoModule {
    std::string_view name;
    LoraSpec targets;
  };
  static constexpr std::array<NemoModule, 7> kNemoModules{{
      {"attention_qkv", {.qkv = true, .proj = false, .fc1 = false, .fc2 = false}},
      {"attention_dense", {.qkv = false, .proj = true, .fc1 = false, .fc2 = false}},
      {"mlp_fc1", {.qkv = false, .proj = false, .fc1 = true, .fc2 = false}},
      {"mlp_fc2", {.qkv = false, .proj = false, .fc1 = false, .fc2 = true}},
      {"attention", {.qkv = true, .proj = true, .fc1 = false, .fc2 = false}},
      {"mlp", {.qkv = false, .proj = false, .fc1 = true, .fc2 = true}},
      {"all", {}},
  }};
  const std::string path = "model.peft.lora_tuning.target_modules";
  LoraSpec chosen = kNemoModules.front().targets;  // absent: NeMo's default, the fused QKV
  if (job.has(path)) {
    const YAML::Node list = job.at(path);
    const std::string fix = "use NeMo's names: attention_qkv, attention_dense, mlp_fc1, mlp_fc2, attention, mlp, all";
    if (!list.IsSequence()) job.fail(path, "expected a list of modules", fix);
    for (const auto& [name, target] : kLoraTargetNames) chosen.*target = false;
    for (const YAML::Node& entry : list) {
      const std::string name = entry.IsScalar() ? entry.Scalar() : std::string();
      const auto module = std::find_if(kNemoModules.begin(), kNemoModules.end(),
                                       [&](const NemoModule& known) { return known.name == name; });
      if (module == kNemoModules.end()) job.fail(path, "'" + name + "' is not a linear chopsim adapts", fix);
      for (const auto& [target_name, target] : kLoraTargetNames)
        chosen.*target = chosen.*target || module->targets.*target;
    }
  }
  y << "    targets: [";
  bool first = true;
  for (const auto& [name, target] : kLoraTargetNames)
    if (chosen.*target) {
      y << (first ? "" : ", ") << name;
      first = false;
    }
  y << "]        # " << path << "\n";
}

}  // namespace

namespace import_detail {

ImportResult import_megatron_core(const std::string& file, const YAML::Node& root, const ImportOptions& options,
                                  const std::string& format) {
  const NemoJob job(file, root);
  ImportResult result;
  result.format = format;
  if (job.has("inference"))
    job.fail("inference", "an inference job (NeMo's generation config): chopsim predicts training steps",
             "import a training config");
  // PEFT: LoRA is modelled (training.lora), and peft_scheme none is full fine-tuning (every weight trains); NeMo's
  // other schemes (adapters, p-tuning, IA3) are not.
  const std::string scheme = job.text("model.peft.peft_scheme");
  const bool lora = scheme == "lora";
  if (job.has("model.peft") && !lora && scheme != "none")
    job.fail(
        "model.peft.peft_scheme",
        "a " + (job.text("model.peft.peft_scheme").empty() ? std::string("PEFT") : job.text("model.peft.peft_scheme")) +
            " fine-tuning job: chopsim models full training and LoRA (peft_scheme: lora)",
        "import a pre-training or LoRA config");
  if (!job.has("trainer") || !job.has("model.tensor_model_parallel_size"))
    job.fail("trainer", "not a NeMo training config (no trainer and model.tensor_model_parallel_size)",
             "pass a NeMo/Megatron-Core training YAML, e.g. one written by NeMo's launcher");

  std::string model = options.model.empty() ? matching_model(job, options.search) : options.model;
  if (model.empty()) {
    std::ostringstream shape;
    shape << job.integer("model.num_layers") << " layers, hidden " << job.integer("model.hidden_size") << ", ffn "
          << job.integer("model.ffn_hidden_size") << ", " << job.integer("model.num_attention_heads") << " heads";
    job.fail("model.num_layers", "no shipped model has the job's shape (" + shape.str() + ")",
             "give --model NAME (a file in configs/models/) or --model config.json (a Hugging Face model's), or add "
             "the model there");
  }
  const int nodes = options.nodes.value_or(job.integer("trainer.num_nodes", 1));

  std::ostringstream y;
  y << "# Imported by chopsim import from " << job.file() << " ("
    << (format == "nemo"     ? "NeMo"
        : format == "bridge" ? "Megatron-Bridge"
                             : "Megatron-LM")
    << ")\n";
  y << "name: " << fs::path(job.file()).stem().string() << "\n";
  // Megatron-Core's mtp_num_layers (its default: none); where the job is silent, the model file's (the DeepSeek-V3
  // recipes train with the one module configs/models/deepseek-v3.yaml has).
  std::optional<int> mtp_layers;
  if (job.has("model.mtp_num_layers") && !job.text("model.mtp_num_layers").empty() &&
      job.text("model.mtp_num_layers") != "null")
    mtp_layers = job.integer("model.mtp_num_layers");
  y << model_entry(model, mtp_layers, options.search);
  y << "hardware: " << options.hardware << "\n";
  y << "cluster: {name: " << options.cluster << ", nodes: " << nodes << "}\n";

  y << "parallelism:\n";
  y << "  tp: " << job.integer("model.tensor_model_parallel_size", 1) << "        # model.tensor_model_parallel_size\n";
  y << "  pp: " << job.integer("model.pipeline_model_parallel_size", 1)
    << "        # model.pipeline_model_parallel_size\n";
  y << "  cp: " << job.integer("model.context_parallel_size", 1) << "        # model.context_parallel_size\n";
  if (job.has("model.expert_model_parallel_size"))
    y << "  ep: " << job.integer("model.expert_model_parallel_size") << "        # model.expert_model_parallel_size\n";
  // Megatron-Core's expert tensor parallelism (MoE parallel folding when it differs from tp); null = tp.
  if (job.has("model.expert_tensor_parallel_size"))
    y << "  etp: " << job.integer("model.expert_tensor_parallel_size")
      << "        # model.expert_tensor_parallel_size\n";
  y << "  dp: auto        # what the GPUs (trainer.num_nodes) leave of tp x pp x cp\n";
  if (job.flag("model.sequence_parallel")) y << "  sequence_parallel: true        # model.sequence_parallel\n";
  if (job.has("model.virtual_pipeline_model_parallel_size")) {
    y << "  pp_schedule: interleaved\n";
    y << "  virtual_stages: " << job.integer("model.virtual_pipeline_model_parallel_size") << "\n";
  }
  if (job.flag("model.fsdp")) {
    const std::string strategy = job.text("model.fsdp_sharding_strategy");
    const std::string fsdp = strategy == "hybrid" ? "hybrid_shard"
                             : strategy == "grad" ? "shard_grad_op"
                                                  : "full_shard";
    if (strategy == "hybrid")
      result.notes.push_back("model.fsdp_sharding_strategy hybrid: shard group size left to chopsim's default");
    y << "  fsdp: " << fsdp << "\n";
  } else if (job.text("model.optim.name") == "distributed_fused_adam" || job.flag("model.use_distributed_optimizer")) {
    y << "  zero_stage: 1              # distributed optimizer: optimizer states sharded over data ranks\n";
  }

  y << "training:\n";
  y << "  global_batch: " << job.integer("model.global_batch_size") << "        # model.global_batch_size\n";
  y << "  micro_batch: " << job.integer("model.micro_batch_size") << "        # model.micro_batch_size\n";
  int seq_len = 0;  // the tokens of a sample, which the attention's keys are too
  if (lora && job.has("model.data.train_ds.max_seq_length")) {
    (void)job.has("model.encoder_seq_length");  // read: the model's longest position, not the samples' length
    // A fine-tuning step runs the data's samples, at most max_seq_length tokens each (NeMo's GPTSFTDataset pads a
    // micro-batch to its longest sample, so shorter samples run faster than predicted).
    seq_len = job.integer("model.data.train_ds.max_seq_length");
    y << "  seq_len: " << seq_len << "        # model.data.train_ds.max_seq_length (the longest sample)\n";
    result.notes.push_back(
        "seq_len: the fine-tuning data's max_seq_length, an upper bound (NeMo pads a micro-batch "
        "to its longest sample)");
  } else {
    seq_len = job.integer("model.encoder_seq_length", job.integer("model.data.seq_length", 2048));
    y << "  seq_len: " << seq_len << "        # model.encoder_seq_length\n";
  }
  const std::string precision = job.text("trainer.precision");
  std::string chopsim_precision = "bf16";
  if (job.flag("model.fp8")) {
    chopsim_precision = "fp8";
  } else if (precision == "16" || precision == "16-mixed" || precision == "fp16") {
    chopsim_precision = "fp16";
  } else if (precision == "32" || precision == "32-true") {
    chopsim_precision = "fp32";
  }
  y << "  precision: " << chopsim_precision << "        # trainer.precision, model.fp8\n";
  // Megatron-Core's fp8_recipe (--fp8-recipe; NeMo model.fp8_recipe): tensorwise is Transformer Engine's current
  // scaling, mxfp8 its block scaling; blockwise (Float8BlockScaling, 128-element tiles) casts in one pass like delayed.
  if (const std::string recipe = job.text("model.fp8_recipe"); chopsim_precision == "fp8" && !recipe.empty()) {
    if (recipe == "tensorwise") {
      y << "  fp8_recipe: current        # model.fp8_recipe tensorwise (Float8CurrentScaling)\n";
    } else if (recipe == "mxfp8") {
      y << "  fp8_recipe: mxfp8        # model.fp8_recipe\n";
    } else if (recipe != "delayed") {
      result.notes.push_back("model.fp8_recipe " + recipe + ": cast in one pass, as delayed scaling");
    }
  }
  const std::string granularity = job.text("model.activations_checkpoint_granularity");
  y << "  recompute: "
    << (granularity == "full"        ? "full"
        : granularity == "selective" ? "selective"
                                     : "none")
    << "        # model.activations_checkpoint_granularity\n";
  const int stage_layers = job.integer("model.num_layers", 0) /
                           std::max(1, job.integer("model.pipeline_model_parallel_size", 1) *
                                           std::max(1, job.integer("model.virtual_pipeline_model_parallel_size", 1)));
  // Block recomputation of the first N layers of each chunk; uniform recomputation in groups of N layers
  // recomputes every layer (chopsim keeps one input per layer, not per group: a little more memory).
  if (granularity == "full" && job.has("model.activations_checkpoint_num_layers")) {
    const int checkpointed = job.integer("model.activations_checkpoint_num_layers");
    if (job.text("model.activations_checkpoint_method") == "block" &&
        (stage_layers == 0 || checkpointed < stage_layers))
      y << "  recompute_layers: " << checkpointed
        << "        # activations_checkpoint_method block, activations_checkpoint_num_layers\n";
    else if (job.text("model.activations_checkpoint_method") == "uniform" && checkpointed > 1)
      result.notes.push_back("model.activations_checkpoint_method uniform in groups of " +
                             std::to_string(checkpointed) +
                             " layers: chopsim keeps every layer's input (one checkpoint per layer)");
  }
  // Megatron-Core's token dispatcher (--moe-token-dispatcher-type): NCCL's all-to-all, or the flex dispatcher
  // (DeepEP/HybridEP). Its allgather dispatcher is not modelled: that job is imported with the all-to-all.
  if (const std::string dispatcher = job.text("model.moe_token_dispatcher_type"); !dispatcher.empty()) {
    if (dispatcher == "alltoall" || dispatcher == "flex")
      y << "  moe_dispatcher: " << dispatcher << "        # model.moe_token_dispatcher_type\n";
    else
      result.notes.push_back("model.moe_token_dispatcher_type " + dispatcher +
                             ": not modelled, imported as NCCL's all-to-all (alltoall)");
  }
  // Megatron-Core's router (its kernels: models/src/workload_moe.cpp): fused (--moe-router-fusion), its auxiliary
  // loss (--moe-router-load-balancing-type, on when --moe-aux-loss-coeff > 0; the type's default is aux_loss) and
  // aux-loss-free balancing (--moe-router-enable-expert-bias).
  const bool moe = job.integer("model.num_moe_experts", 1) > 1;
  if (moe) {
    if (job.flag("model.moe_router_fusion")) y << "  moe_router_fusion: true        # model.moe_router_fusion\n";
    const std::string balancing = job.text("model.moe_router_load_balancing_type");
    const bool coefficient = job.has("model.moe_aux_loss_coeff");
    const bool listed_coefficients = coefficient && job.text("model.moe_aux_loss_coeff").empty();
    if (coefficient && !listed_coefficients && job.number("model.moe_aux_loss_coeff") > 0.0) {
      const std::string type = balancing.empty() ? "aux_loss" : balancing;
      if (type == "aux_loss" || type == "seq_aux_loss" || type == "global_aux_loss")
        y << "  moe_aux_loss: " << type << "        # model.moe_router_load_balancing_type, moe_aux_loss_coeff\n";
      else
        result.notes.push_back("model.moe_router_load_balancing_type " + type +
                               ": its kernels are not modelled (imported without an auxiliary loss)");
    } else if (listed_coefficients) {
      result.notes.push_back(
          "model.moe_aux_loss_coeff: a list of coefficients is not read (imported without an "
          "auxiliary loss; set training.moe_aux_loss)");
    }
    if (job.flag("model.moe_router_enable_expert_bias"))
      y << "  moe_expert_bias: true        # model.moe_router_enable_expert_bias\n";
  }
  // Megatron-Core's CUDA graphs (--cuda-graph-impl, --cuda-graph-scope): Transformer Engine's graphs of the MoE router
  // and the dispatcher's preprocessing are modelled (training.cuda_graph_scope); other scopes, Megatron's own
  // graphs and whole-layer capture (no scope) are notes.
  if (const std::string impl = job.text("model.cuda_graph_impl"); !impl.empty() && impl != "none") {
    std::vector<std::string> scopes;
    if (job.has("model.cuda_graph_scope")) {
      const YAML::Node node = job.at("model.cuda_graph_scope");
      std::string names;
      if (node.IsSequence())
        for (const YAML::Node& entry : node) names += (entry.IsScalar() ? entry.Scalar() : std::string()) + " ";
      else
        names = node.Scalar();  // one name, or Megatron-LM's space-separated list
      std::istringstream words(names);
      for (std::string word; words >> word;) scopes.push_back(word);
    }
    const auto listed = [&](const char* scope) {
      return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
    };
    const bool router = impl == "transformer_engine" && listed("moe_router") && moe;
    if (router)
      y << "  cuda_graph_scope: [moe_router" << (listed("moe_preprocess") ? ", moe_preprocess" : "")
        << "]        # model.cuda_graph_impl, cuda_graph_scope\n";
    std::string others;
    for (const std::string& scope : scopes)
      if (!router || (scope != "moe_router" && scope != "moe_preprocess"))
        others += (others.empty() ? "" : ", ") + scope;
    if (scopes.empty())
      result.notes.push_back("model.cuda_graph_impl " + impl +
                             " without a scope (every layer in a graph): not modelled");
    else if (!others.empty())
      result.notes.push_back("model.cuda_graph_scope " + others + " (cuda_graph_impl " + impl +
                             "): not modelled (only Transformer Engine's graphs of a mixture of experts' router and "
                             "preprocessing are)");
  }
  // Megatron-Core's expert capacity (--moe-expert-capacity-factor; unset or null: dropless), each expert padded to it
  // or not (--moe-pad-expert-input-to-capacity).
  if (job.has("model.moe_expert_capacity_factor")) {
    const double capacity = job.number("model.moe_expert_capacity_factor");
    if (!(capacity > 0.0))
      job.fail("model.moe_expert_capacity_factor", "must be > 0",
               "set a capacity factor such as 1.0, or null (dropless)");
    y << "  moe_capacity_factor: " << JsonWriter::format_number(capacity)
      << "        # model.moe_expert_capacity_factor\n";
    if (!job.flag("model.moe_pad_expert_input_to_capacity"))
      y << "  moe_pad_to_capacity: false        # moe_pad_expert_input_to_capacity unset: tokens above the capacity "
           "dropped, none padded\n";
  }
  // Settings that cost time where the job states them (the Megatron-LM front-end states Megatron's defaults).
  if (job.flag("model.deterministic_mode")) y << "  deterministic: true\n";
  if (job.has("model.transformer_impl") && job.text("model.transformer_impl") == "transformer_engine") {
    const std::string attention = transformer_engine_attention(options);
    if (!attention.empty())
      y << "  attention: " << attention << "        # Transformer Engine's fused attention on this GPU\n";
  } else if (job.has("model.transformer_impl") && job.text("model.transformer_impl") == "local") {
    // Megatron-Core's local layers attend with DotProductAttention: materialised scores (baddbmm, softmax, bmm).
    // Its FusedScaleMaskSoftmax runs the fused kernel for 16-bit scores of at most 4,096 keys
    // (megatron/core/fusions/fused_softmax.py, is_kernel_available), else PyTorch's scale, mask and softmax.
    y << "  attention: eager        # model.transformer_impl local: DotProductAttention\n";
    const bool sixteen_bit = chopsim_precision == "bf16" || chopsim_precision == "fp16";
    const bool fusion = !job.has("model.masked_softmax_fusion") || job.flag("model.masked_softmax_fusion");  // on
    if (fusion && sixteen_bit && seq_len > 16 && seq_len <= 4096)
      y << "  masked_softmax_fusion: true        # model.masked_softmax_fusion (FusedScaleMaskSoftmax's kernel)\n";
  }
  const auto setting = [&](const char* key, const char* run_key) {
    if (job.has(key)) y << "  " << run_key << ": " << (job.flag(key) ? "true" : "false") << "\n";
  };
  setting("model.create_attention_mask_in_dataloader", "attention_mask_in_dataloader");
  setting("model.check_for_nan_in_loss_and_grad", "check_for_nan_in_grad");
  setting("model.gradient_accumulation_fusion", "gradient_accumulation_fusion");
  setting("model.cross_entropy_loss_fusion", "cross_entropy_fusion");
  setting("model.log_num_zeros_in_grad", "log_num_zeros_in_grad");
  setting("model.log_params_norm", "log_params_norm");
  if (job.has("trainer.gradient_clip_val"))
    y << "  grad_clip: "
      << (job.text("trainer.gradient_clip_val") != "0" && job.text("trainer.gradient_clip_val") != "0.0" ? "true"
                                                                                                         : "false")
      << "\n";
  if (lora) write_lora(job, y);
  y << "  overlap:\n";
  y << "    dp: " << (job.flag("model.optim.overlap_grad_sync") ? "true" : "false") << "\n";
  // NeMo's distributed_fused_adam overlap_param_sync (Megatron --overlap-param-gather); absent: as the reduction.
  if (job.has("model.optim.overlap_param_sync"))
    y << "    param_gather: " << (job.flag("model.optim.overlap_param_sync") ? "true" : "false") << "\n";
  y << "    tp: " << (job.flag("model.ub_tp_comm_overlap") ? "true" : "false") << "\n";
  if (job.has("model.overlap_p2p_comm"))
    y << "    pp: " << (job.flag("model.overlap_p2p_comm") ? "true" : "false") << "\n";
  // Megatron-Core's batch-level expert-parallel overlap (combined 1F1B; Megatron-Bridge's moe_a2a_overlap).
  if (job.flag("model.overlap_moe_expert_parallel_comm"))
    y << "    ep_1f1b: true        # model.overlap_moe_expert_parallel_comm\n";
  if (job.has("model.optim.bucket_cap_mb"))
    y << "  dp_bucket_mb: " << job.text("model.optim.bucket_cap_mb") << "        # model.optim.bucket_cap_mb\n";
  // Megatron-Core's grad_reduce_in_fp32 (Megatron-Bridge states it; Megatron-LM's
  // --accumulate-allreduce-grads-in-fp32): the data-parallel gradient buffer's precision.
  if (job.has("model.grad_reduce_in_fp32"))
    y << "  grad_reduce_dtype: " << (job.flag("model.grad_reduce_in_fp32") ? "fp32" : "bf16") << "\n";
  if (job.has("model.fsdp_grad_reduce_dtype") && job.text("model.fsdp_grad_reduce_dtype") == "bf16")
    y << "  fsdp_reduce_dtype: bf16\n";
  // Megatron-Core with Transformer Engine spends more host time per kernel launch than eager PyTorch (the default):
  // the cluster file's figure for its host CPU, where it has one.
  if (const std::optional<ClusterSpec> cluster = find_cluster(options); cluster && cluster->megatron_host_launch_s > 0)
    y << "  host_launch_us: " << cluster->megatron_host_launch_s * 1e6
      << "        # Megatron-Core's host time per launch on this cluster's CPU (its megatron_host_launch_us)\n";
  y << "iterations: 1\n";
  // What the job sets that the mapping did not read: chopsim does not model it (fusion flags, kernels chopsim
  // times as one), or reads it differently; the timeless settings are left out.
  if (const std::vector<std::string> unread = job.unread(); !unread.empty()) {
    std::string list;
    for (const std::string& key : unread) list += (list.empty() ? "" : ", ") + key;
    y << "# Not imported (chopsim does not model them, or they set nothing a step's time depends on): " << list << "\n";
    result.notes.push_back("not imported: " + list);
  }
  result.yaml = y.str();
  return result;
}

}  // namespace import_detail

ImportResult import_nemo(const fs::path& file, const ImportOptions& options) {
  return import_detail::import_megatron_core(config_detail::display_path(file),
                                             config_detail::load_yaml_file(file, "job config"), options, "nemo");
}

}  // namespace chopsim
