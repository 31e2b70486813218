// Hugging Face transformers `config.json` files as chopsim model files (docs/import.md): the decoder shapes chopsim
// models (Llama, Mistral, Qwen2, Qwen3 and their mixture-of-experts kin Mixtral and Qwen3-MoE), every key that sets
// the cost mapped one to one, the rest listed as not imported.

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/import.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

/// Architectures whose layers chopsim's transformer describes: pre-norm RMSNorm decoders with rotary positions,
/// grouped-query attention and a SwiGLU MLP (dense, or routed experts with shared ones and dense first layers).
const std::set<std::string> kSupported = {"LlamaForCausalLM",    "MistralForCausalLM",    "Qwen2ForCausalLM",
                                          "Qwen3ForCausalLM",    "MixtralForCausalLM",    "Qwen3MoeForCausalLM",
                                          "Qwen2MoeForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
                                          "GptOssForCausalLM",   "NemotronHForCausalLM"};

/// Architectures with parts chopsim does not model yet, and which parts (issue 15 lists them to build).
const std::map<std::string, std::string> kNotModelled = {
    {"Gemma2ForCausalLM", "logit soft-capping (its alternating sliding-window layers are modelled)"},
};

/// Keys that set nothing chopsim predicts (token ids, initialisation, numerics, inference caches).
const std::set<std::string> kNoEffect = {"bos_token_id",
                                         "eos_token_id",
                                         "pad_token_id",
                                         "initializer_range",
                                         "rms_norm_eps",
                                         "use_cache",
                                         "torch_dtype",
                                         "transformers_version",
                                         "max_position_embeddings",
                                         "rope_theta",
                                         "rope_scaling",
                                         "attention_dropout",
                                         "pretraining_tp",
                                         "model_type",
                                         "architectures",
                                         "max_window_layers",
                                         "use_sliding_window",
                                         "router_aux_loss_coef",
                                         "output_router_logits",
                                         "norm_topk_prob",
                                         "_name_or_path",
                                         "use_qk_norm",
                                         "hidden_act",
                                         "mlp_bias",
                                         "dtype",
                                         "router_jitter_noise",
                                         "num_experts_per_tok",
                                         "initial_context_length",
                                         "swiglu_limit"};

/// Largest config.json read (the files are a few KB; a device or a huge file is refused before it is read).
constexpr std::uintmax_t kLargestConfigBytes = 16 * 1024 * 1024;

/// A config.json being read: values by key, errors naming the file and the key.
class HfConfig {
 public:
  explicit HfConfig(const fs::path& file) : file_(config_detail::display_path(file)) {
    std::error_code error;
    if (!fs::is_regular_file(file, error))
      throw InputError({file_}, "", "not found, or not a regular file", "pass the model's config.json");
    if (fs::file_size(file, error) > kLargestConfigBytes)
      throw InputError({file_}, "", "larger than 16 MB: not a config.json", "pass the model's config.json");
    simdjson::padded_string text;
    if (simdjson::padded_string::load(file.string()).get(text) != simdjson::SUCCESS)
      throw InputError({file_}, "", "cannot be read", "check the file's permissions");
    simdjson::dom::element root;
    if (const auto code = parser_.parse(text).get(root); code != simdjson::SUCCESS)
      throw InputError({file_}, "", std::string("not valid JSON: ") + simdjson::error_message(code),
                       "pass the model's config.json from its Hugging Face repository");
    if (root.get_object().get(root_) != simdjson::SUCCESS)
      throw InputError({file_}, "", "not a Hugging Face config.json (the file is not a JSON object)",
                       "pass the model's config.json from its Hugging Face repository");
  }
  bool has(const std::string& key) const {
    simdjson::dom::element value;
    return root_.at_key(key).get(value) == simdjson::SUCCESS && !value.is_null();
  }
  int integer(const std::string& key, std::optional<int> fallback = std::nullopt) {
    used_.insert(key);
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(key, "the config has no " + key);
    }
    std::int64_t value = 0;
    if (root_.at_key(key).get_int64().get(value) != simdjson::SUCCESS) fail(key, "the value is not an integer");
    if (value < 1 || value > (1 << 30)) fail(key, std::to_string(value) + " is not a positive integer below 2^30");
    return static_cast<int>(value);
  }
  bool flag(const std::string& key, bool fallback) {
    used_.insert(key);
    if (!has(key)) return fallback;
    bool value = false;
    if (root_.at_key(key).get_bool().get(value) != simdjson::SUCCESS) fail(key, "the value is not true or false");
    return value;
  }
  /// A string value, a number's text, or "" (absent, null or another type).
  std::string text(const std::string& key) {
    used_.insert(key);
    simdjson::dom::element value;
    if (root_.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return "";
    std::string_view string;
    if (value.get_string().get(string) == simdjson::SUCCESS) return std::string(string);
    std::int64_t number = 0;
    if (value.get_int64().get(number) == simdjson::SUCCESS) return std::to_string(number);
    return "";
  }
  /// The length of an array value (0 when absent or not an array).
  std::size_t array_size(const std::string& key) {
    used_.insert(key);
    simdjson::dom::array array;
    return root_.at_key(key).get_array().get(array) == simdjson::SUCCESS ? array.size() : 0;
  }
  /// The strings of an array value (empty when absent); a non-string element fails naming the key.
  std::vector<std::string> string_array(const std::string& key) {
    used_.insert(key);
    std::vector<std::string> values;
    simdjson::dom::array array;
    if (root_.at_key(key).get_array().get(array) != simdjson::SUCCESS) return values;
    for (const auto element : array) {
      std::string_view value;
      if (element.get_string().get(value) != simdjson::SUCCESS) fail(key, "holds a value that is not a string");
      values.emplace_back(value);
    }
    return values;
  }
  /// The integers of an array value (empty when absent); a non-integer element fails naming the key.
  std::vector<std::int64_t> integer_array(const std::string& key) {
    used_.insert(key);
    std::vector<std::int64_t> values;
    simdjson::dom::array array;
    if (root_.at_key(key).get_array().get(array) != simdjson::SUCCESS) return values;
    for (const auto element : array) {
      std::int64_t value = 0;
      if (element.get_int64().get(value) != simdjson::SUCCESS) fail(key, "holds a value that is not an integer");
      values.push_back(value);
    }
    return values;
  }
  std::string architecture() {
    used_.insert("architectures");
    simdjson::dom::array list;
    std::string_view name;
    if (root_.at_key("architectures").get_array().get(list) == simdjson::SUCCESS && list.size() == 1 &&
        list.at(0).get_string().get(name) == simdjson::SUCCESS)
      return std::string(name);
    fail("architectures", "the config names no single architecture (\"architectures\": [\"LlamaForCausalLM\"])");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem,
                         const std::string& fix =
                             "fix the config, or write the model file by hand (docs/configs.md, "
                             "models)") const {
    throw InputError({file_}, key, problem, fix);
  }
  /// Keys neither read nor known to have no effect: listed in the model file as not imported.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto field : root_) {
      const std::string key(field.key);
      if (!used_.count(key) && !kNoEffect.count(key)) out.push_back(key);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  simdjson::dom::parser parser_;
  simdjson::dom::object root_;
  std::set<std::string> used_;
};

}  // namespace

bool is_hf_config(const fs::path& file) {
  if (file.extension() != ".json") return false;
  try {
    const HfConfig config(file);
    return config.has("architectures") && config.has("hidden_size");
  } catch (const InputError&) {
    return false;
  }
}

ImportResult import_hf_model(const fs::path& file) {
  HfConfig hf(file);
  ImportResult result;
  result.format = "hf";
  const std::string architecture = hf.architecture();
  if (const auto it = kNotModelled.find(architecture); it != kNotModelled.end())
    hf.fail("architectures", architecture + " has " + it->second + ", which chopsim does not model yet",
            "predict a model chopsim describes, or write an approximate model file by hand and say so");
  if (!kSupported.count(architecture))
    hf.fail("architectures", architecture +
                                 " is not an architecture chopsim imports (Llama, Mistral, Qwen2, Qwen3, "
                                 "Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3, GPT-OSS, Nemotron-H)");
  const int layers = hf.integer("num_hidden_layers");
  const int hidden = hf.integer("hidden_size");
  const int heads = hf.integer("num_attention_heads");
  const int kv_heads = hf.integer("num_key_value_heads", heads);
  const int vocab = hf.integer("vocab_size");
  // transformers' LlamaConfig (and kin) default head_dim to hidden_size / num_attention_heads; DeepSeek's
  // multi-latent heads are set below.
  const bool deepseek = architecture == "DeepseekV3ForCausalLM" || architecture == "DeepseekV2ForCausalLM";
  const int head_dim = deepseek ? 0 : hf.integer("head_dim", hidden / heads);
  int ffn = 0, experts = 1, top_k = 1, dense_layers = 0, dense_ffn = 0, shared_ffn = 0;
  int kv_lora = 0, q_lora = 0, rope_dim = 0, v_dim = 0, qk_nope = 0;
  int sliding_window = 0, full_attention_every = 0;
  int mtp_layers = 0;  // DeepSeek's num_nextn_predict_layers
  struct {
    std::string pattern;  // Nemotron-H's hybrid_override_pattern
    int heads = 0, head_dim = 0, state = 0, groups = 0, conv = 0, chunk = 0;
  } hybrid;
  std::string ffn_source;
  if (architecture == "MixtralForCausalLM") {
    ffn = hf.integer("intermediate_size");
    experts = hf.integer("num_local_experts");
    top_k = hf.integer("num_experts_per_tok");
    ffn_source = "intermediate_size (per expert)";
  } else if (architecture == "GptOssForCausalLM") {
    // GPT-OSS (openai/gpt-oss-20b and -120b): experts of intermediate_size, sliding-window attention on every other
    // layer (layer_types: sliding, full, sliding, ...).
    ffn = hf.integer("intermediate_size");
    ffn_source = "intermediate_size (per expert)";
    experts = hf.integer("num_local_experts");
    top_k = hf.integer("num_experts_per_tok");
    if (!hf.text("experts_per_token").empty() && hf.integer("experts_per_token") != top_k)
      hf.fail("experts_per_token", "differs from num_experts_per_tok");
    sliding_window = hf.integer("sliding_window");
    const std::vector<std::string> types = hf.string_array("layer_types");
    full_attention_every = 2;
    for (std::size_t i = 0; i < types.size(); ++i)
      if (types[i] != ((i + 1) % 2 == 0 ? "full_attention" : "sliding_attention"))
        hf.fail("layer_types",
                "is not sliding and full attention alternating from a sliding first layer, the "
                "pattern chopsim models for GPT-OSS");
    result.notes.push_back(
        "GPT-OSS's attention sinks (one learned logit per head), the projections' and experts' "
        "biases and the SwiGLU clamp are not modelled (small elementwise work)");
  } else if (deepseek) {
    // DeepSeek-V2/V3 (modeling_deepseek.py): multi-latent attention, the first first_k_dense_replace layers dense
    // (intermediate_size), then n_routed_experts of moe_intermediate_size and n_shared_experts of the same width.
    kv_lora = hf.integer("kv_lora_rank");
    q_lora = hf.text("q_lora_rank").empty() ? 0 : hf.integer("q_lora_rank");  // null in DeepSeek-V2-Lite
    qk_nope = hf.integer("qk_nope_head_dim");
    rope_dim = hf.integer("qk_rope_head_dim");
    v_dim = hf.integer("v_head_dim");
    ffn = hf.integer("moe_intermediate_size");
    ffn_source = "moe_intermediate_size (per routed expert)";
    experts = hf.integer("n_routed_experts");
    top_k = hf.integer("num_experts_per_tok");
    shared_ffn = (hf.text("n_shared_experts").empty() ? 0 : hf.integer("n_shared_experts")) * ffn;
    dense_layers = hf.text("first_k_dense_replace").empty() ? 0 : hf.integer("first_k_dense_replace");
    dense_ffn = hf.integer("intermediate_size");
    if (!hf.text("moe_layer_freq").empty() && hf.integer("moe_layer_freq") != 1)
      hf.fail("moe_layer_freq",
              "dense layers between the expert layers are not modelled (chopsim's dense layers "
              "are the first ones)");
    if (!hf.text("n_group").empty() && hf.integer("n_group") > 1)
      result.notes.push_back(
          "grouped top-k routing (n_group, topk_group) is modelled as plain top-k routing (the "
          "same expert FLOPs)");
    mtp_layers = hf.text("num_nextn_predict_layers").empty() ? 0 : hf.integer("num_nextn_predict_layers");
  } else if (architecture == "Qwen3MoeForCausalLM" || architecture == "Qwen2MoeForCausalLM") {
    ffn = hf.integer("moe_intermediate_size");
    experts = hf.integer("num_experts");
    top_k = hf.integer("num_experts_per_tok");
    ffn_source = "moe_intermediate_size (per expert)";
    const int dense_width = hf.integer("intermediate_size", 1);  // the MLP width of mlp_only_layers
    if (hf.integer("decoder_sparse_step", 1) != 1)
      hf.fail("decoder_sparse_step",
              "dense layers between the expert layers are not modelled (chopsim's dense "
              "layers are the first ones)");
    // mlp_only_layers [0, 1, ..., k-1]: the first k layers are dense (chopsim's dense_layers).
    const std::vector<std::int64_t> dense = hf.integer_array("mlp_only_layers");
    for (std::size_t i = 0; i < dense.size(); ++i)
      if (dense[i] != static_cast<std::int64_t>(i))
        hf.fail("mlp_only_layers",
                "dense layers among the expert layers are modelled only as the first ones "
                "(0, 1, ..., k-1)");
    dense_layers = static_cast<int>(dense.size());
    if (dense_layers > 0) dense_ffn = dense_width;
    if (architecture == "Qwen2MoeForCausalLM") {
      shared_ffn = hf.integer("shared_expert_intermediate_size");
      result.notes.push_back("the shared expert's sigmoid gate (hidden_size weights, one per token) is not modelled");
    }
  } else if (architecture == "NemotronHForCausalLM") {
    // Nemotron-H and Nemotron 3 (transformers' NemotronHConfig, configuration_nemotron_h.py): hybrid_override_pattern
    // gives each layer's kind (M Mamba-2, * attention, - MLP, E MoE); squared-ReLU MLPs of intermediate_size, experts
    // of moe_intermediate_size beside n_shared_experts of moe_shared_expert_intermediate_size.
    hybrid.pattern = hf.text("hybrid_override_pattern");
    if (hybrid.pattern.empty()) hf.fail("hybrid_override_pattern", "the config has no hybrid_override_pattern");
    if (static_cast<int>(hybrid.pattern.size()) != layers)
      hf.fail("hybrid_override_pattern", "has " + std::to_string(hybrid.pattern.size()) +
                                             " symbols but num_hidden_layers is " + std::to_string(layers));
    if (hybrid.pattern.find_first_not_of("M*-E") != std::string::npos)
      hf.fail("hybrid_override_pattern", "holds a symbol other than M, *, - and E");
    if (const std::string act = hf.text("mlp_hidden_act"); !act.empty() && act != "relu2")
      hf.fail("mlp_hidden_act", act + " is not modelled for Nemotron-H (relu2: squared ReLU)");
    // The saved config.json holds NemotronHConfig's attribute names; hand-written ones its argument names.
    const auto either = [&](const std::string& saved, const std::string& argument, int fallback) {
      return hf.has(saved) ? hf.integer(saved) : hf.integer(argument, fallback);
    };
    hybrid.heads = hf.integer("mamba_num_heads");
    hybrid.head_dim = hf.integer("mamba_head_dim", 64);
    hybrid.state = hf.integer("ssm_state_size", 128);
    hybrid.groups = either("n_groups", "mamba_n_groups", 8);
    hybrid.conv = either("conv_kernel", "mamba_d_conv", 4);
    hybrid.chunk = either("chunk_size", "mamba_chunk_size", 128);
    for (const char* key : {"mamba_hidden_act",
                            "expand",
                            "mamba_expand",
                            "time_step_min",
                            "time_step_max",
                            "time_step_limit",
                            "time_step_floor",
                            "mamba_dt_min",
                            "mamba_dt_max",
                            "mamba_dt_limit",
                            "mamba_dt_init_floor",
                            "use_conv_bias",
                            "mamba_conv_bias",
                            "mamba_proj_bias",
                            "use_mamba_kernels",
                            "rescale_prenorm_residual",
                            "residual_in_fp32",
                            "layer_norm_epsilon",
                            "num_logits_to_keep",
                            "hidden_dropout",
                            "routed_scaling_factor",
                            "n_group",
                            "topk_group",
                            "use_bias",
                            "attention_bias",
                            "mlp_bias"})
      (void)hf.text(key);  // numerics, initialisation and inference settings: nothing chopsim predicts
    if (hybrid.pattern.find('E') != std::string::npos) {
      ffn = hf.integer("moe_intermediate_size");
      ffn_source = "moe_intermediate_size (per routed expert)";
      experts = hf.integer("n_routed_experts");
      top_k = hf.integer("num_experts_per_tok");
      shared_ffn = hf.integer("n_shared_experts", 1) * hf.integer("moe_shared_expert_intermediate_size");
      if (hybrid.pattern.find('-') != std::string::npos)
        dense_ffn = hf.integer("intermediate_size");
      else
        (void)hf.text("intermediate_size");  // the - layers' MLP width; this pattern has none
      result.notes.push_back("the router's sigmoid scores and expert bias are not modelled (a small elementwise pass)");
    } else {
      ffn = hf.integer("intermediate_size");
      ffn_source = "intermediate_size";
    }
  } else {
    ffn = hf.integer("intermediate_size");
    ffn_source = "intermediate_size";
  }
  const bool tied = hf.flag("tie_word_embeddings", false);  // the default of these architectures' configs
  const std::string act = hf.text("hidden_act");
  if (!act.empty() && act != "silu" && hybrid.pattern.empty())
    result.notes.push_back("hidden_act " + act + ": modelled as SwiGLU (silu); the gate's cost is the same");
  if (hf.flag("attention_bias", false) || architecture == "Qwen2ForCausalLM" || architecture == "Qwen2MoeForCausalLM")
    result.notes.push_back("the q, k, v projections' biases are not modelled (a negligible elementwise add)");
  // Mistral attends through its window in every layer (Mistral-7B-v0.1: 4096; null in later versions); Qwen2's
  // sliding_window applies only with use_sliding_window, which its released configs leave off.
  if (!hf.text("sliding_window").empty() && architecture == "MistralForCausalLM")
    sliding_window = hf.integer("sliding_window");

  std::ostringstream y;
  y << "# Imported by chopsim import from " << hf.file() << " (Hugging Face transformers " << architecture << ").\n";
  y << "layers: " << layers << "        # num_hidden_layers\n";
  y << "hidden: " << hidden << "        # hidden_size\n";
  if (kv_lora > 0) {
    y << "head_dim: " << qk_nope << "        # qk_nope_head_dim (the unrotated query/key part)\n";
    y << "qk_rope_head_dim: " << rope_dim << "        # qk_rope_head_dim\n";
    y << "v_head_dim: " << v_dim << "        # v_head_dim\n";
    y << "kv_lora_rank: " << kv_lora << "        # kv_lora_rank\n";
    if (q_lora > 0) y << "q_lora_rank: " << q_lora << "        # q_lora_rank\n";
  } else if (head_dim * heads != hidden) {
    y << "head_dim: " << head_dim << "        # head_dim (not hidden_size / heads)\n";
  }
  y << "ffn_hidden: " << ffn << "        # " << ffn_source << "\n";
  y << "heads: " << heads << "        # num_attention_heads\n";
  y << "kv_heads: " << kv_heads << "        # num_key_value_heads\n";
  y << "vocab: " << vocab << "        # vocab_size\n";
  if (!hybrid.pattern.empty()) {
    y << "hybrid_pattern: \"" << hybrid.pattern << "\"        # hybrid_override_pattern\n";
    y << "mamba: {heads: " << hybrid.heads << ", head_dim: " << hybrid.head_dim << ", state_dim: " << hybrid.state
      << ", groups: " << hybrid.groups << ", conv_kernel: " << hybrid.conv << ", chunk_size: " << hybrid.chunk
      << "}        # mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel, chunk_size\n";
  }
  if (experts > 1) {
    y << "experts: " << experts << "        # "
      << (architecture == "MixtralForCausalLM" || architecture == "GptOssForCausalLM" ? "num_local_experts"
          : deepseek || !hybrid.pattern.empty()                                       ? "n_routed_experts"
                                                                                      : "num_experts")
      << "\n";
    y << "top_k: " << top_k << "        # num_experts_per_tok\n";
    if (dense_ffn > 0 && dense_layers == 0)
      y << "dense_ffn_hidden: " << dense_ffn << "        # intermediate_size (the - layers' MLP)\n";
    if (dense_layers > 0) {
      y << "dense_layers: " << dense_layers << "        # " << (deepseek ? "first_k_dense_replace" : "mlp_only_layers")
        << "\n";
      y << "dense_ffn_hidden: " << dense_ffn << "        # intermediate_size (the dense layers' MLP)\n";
    }
    if (shared_ffn > 0)
      y << "shared_expert_ffn_hidden: " << shared_ffn << "        # "
        << (deepseek                  ? "n_shared_experts x moe_intermediate_size"
            : !hybrid.pattern.empty() ? "n_shared_experts x moe_shared_expert_intermediate_size"
                                      : "shared_expert_intermediate_size")
        << "\n";
  }
  if (sliding_window > 0)
    y << "sliding_window: " << sliding_window << "        # sliding_window"
      << (full_attention_every > 0 ? "" : " (every layer)") << "\n";
  if (full_attention_every > 0)
    y << "full_attention_every: " << full_attention_every << "        # layer_types: sliding and full alternating\n";
  if (hybrid.pattern.empty()) {
    y << "mlp: swiglu        # hidden_act silu with a gate projection\n";
  } else {
    y << "mlp: squared_relu        # mlp_hidden_act relu2\n";
    y << "position_embedding: none        # Nemotron-H's layers carry position without rotary embeddings\n";
  }
  y << "norm: rmsnorm\n";
  if (architecture == "Qwen3ForCausalLM" || architecture == "Qwen3MoeForCausalLM")
    y << "qk_norm: true        # Qwen3 normalises each head's query and key (q_norm, k_norm)\n";
  y << "tied_embeddings: " << (tied ? "true" : "false") << "        # tie_word_embeddings\n";
  y << "causal: true\n";
  if (mtp_layers > 0) y << "mtp_layers: " << mtp_layers << "        # num_nextn_predict_layers\n";
  const std::vector<std::string> unread = hf.unread();
  if (!unread.empty()) {
    std::string list;
    for (const std::string& key : unread) list += (list.empty() ? "" : ", ") + key;
    y << "# Not imported (not read by chopsim): " << list << "\n";
    result.notes.push_back("not imported: " + list);
  }
  result.yaml = y.str();
  return result;
}

}  // namespace chopsim
