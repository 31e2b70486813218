// torchtitan training jobs as chopsim run configs (docs/import.md): the TOML files of torchtitan's releases before
// its 2026 config refactor (torchtitan/models/llama3/train_configs/*.toml: [model] name and flavor, [training],
// [parallelism], [activation_checkpoint], [float8], [compile]), and the resolved job config its trainer dumps as
// JSON since then (the same sections as one object). torchtitan trains with FSDP2 in eager PyTorch (or
// torch.compile), so the run is `framework: pytorch-eager`.

#include <simdjson.h>
#include <toml++/toml.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "chopsim/common/error.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kLargestJobFileBytes = 1 << 20;

/// One value of the job: its text ("8", "bfloat16", "true", "float8,output" for an array) and the line it is on
/// (0 in JSON, where simdjson keeps no lines).
struct TitanValue {
  std::string text;
  int line = 0;
};

/// A torchtitan job, flattened: "parallelism.tensor_parallel_degree" -> value. Reads TOML or JSON alike.
class TitanJob {
 public:
  explicit TitanJob(const fs::path& file) : file_(file.string()) {
    std::error_code error;
    if (!fs::is_regular_file(file, error))
      throw InputError({file_}, "", "not found, or not a regular file", "pass a torchtitan job file (.toml or .json)");
    if (fs::file_size(file, error) > kLargestJobFileBytes)
      throw InputError({file_}, "", "larger than 1 MB: not a torchtitan job config", "pass a job's .toml or .json");
    std::ifstream in(file, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (file.extension() == ".json")
      read_json(text);
    else
      read_toml(text);
  }

  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::string text(const std::string& key, const std::string& fallback = "") const {
    const auto found = values_.find(key);
    return found == values_.end() ? fallback : found->second.text;
  }
  /// An integer setting; torchtitan's -1 ("the rest of the GPUs") is allowed where `allow_rest` says so.
  int integer(const std::string& key, int fallback, bool allow_rest = false) const {
    if (!has(key)) return fallback;
    const std::string& value = values_.at(key).text;
    try {
      std::size_t used = 0;
      const long long number = std::stoll(value, &used);
      if (used != value.size() || number > 1'000'000 || (number < 1 && !(allow_rest && number == -1)))
        throw std::invalid_argument(key);
      return static_cast<int>(number);
    } catch (const std::exception&) {
      fail(key, "'" + value + "' is not " + (allow_rest ? "a positive integer or -1" : "a positive integer"),
           "fix the job config");
    }
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const std::string& value = values_.at(key).text;
    try {
      std::size_t used = 0;
      const double number = std::stod(value, &used);
      if (used != value.size() || !std::isfinite(number)) throw std::invalid_argument(key);
      return number;
    } catch (const std::exception&) {
      fail(key, "'" + value + "' is not a number", "fix the job config");
    }
  }
  bool flag(const std::string& key) const {
    const std::string value = text(key);
    if (value.empty() || value == "false") return false;
    if (value == "true") return true;
    fail(key, "'" + value + "' is not true or false", "fix the job config");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const {
    const auto found = values_.find(key);
    throw InputError({file_, found == values_.end() ? 0 : found->second.line}, key, problem, fix);
  }
  const std::string& file() const { return file_; }
  const std::map<std::string, TitanValue>& values() const { return values_; }

 private:
  void read_toml(const std::string& text) {
    toml::table table;
    try {
      table = toml::parse(text, file_);
    } catch (const toml::parse_error& e) {
      throw InputError({file_, static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)}, "",
                       "TOML syntax error: " + std::string(e.description()), "correct the TOML at this position");
    }
    flatten_toml(table, "");
  }
  void flatten_toml(const toml::table& table, const std::string& prefix) {
    for (const auto& [key, node] : table) {
      const std::string name = prefix + std::string(key.str());
      if (const auto* sub = node.as_table()) {
        flatten_toml(*sub, name + ".");
        continue;
      }
      TitanValue value;
      value.line = static_cast<int>(node.source().begin.line);
      if (const auto* array = node.as_array()) {
        for (const auto& item : *array) value.text += (value.text.empty() ? "" : ",") + toml_scalar(item);
      } else {
        value.text = toml_scalar(node);
      }
      values_[name] = value;
    }
  }
  static std::string toml_scalar(const toml::node& node) {
    if (const auto* s = node.as_string()) return s->get();
    if (const auto* i = node.as_integer()) return std::to_string(i->get());
    if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
    if (const auto* f = node.as_floating_point()) {
      std::ostringstream out;
      out << f->get();
      return out.str();
    }
    return "";  // dates, times, nested arrays: no setting chopsim reads has them
  }

  void read_json(const std::string& text) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (const auto error = parser.parse(text).get(root))
      throw InputError({file_}, "", std::string("not valid JSON: ") + simdjson::error_message(error),
                       "pass the job config torchtitan's trainer wrote");
    if (!root.is_object())
      throw InputError({file_}, "", "not a torchtitan job config (the JSON is not an object)",
                       "pass the job config torchtitan's trainer wrote");
    flatten_json(root, "", 0);
  }
  void flatten_json(simdjson::dom::element element, const std::string& name, int depth) {
    if (depth > 16) return;  // torchtitan's config is three levels deep; nothing deeper is read
    simdjson::dom::object object;
    if (element.get_object().get(object) == simdjson::SUCCESS) {
      for (const auto field : object)
        flatten_json(field.value, (name.empty() ? "" : name + ".") + std::string(field.key), depth + 1);
      return;
    }
    TitanValue value;
    simdjson::dom::array array;
    if (element.get_array().get(array) == simdjson::SUCCESS) {
      for (const auto item : array) value.text += (value.text.empty() ? "" : ",") + json_scalar(item);
    } else {
      value.text = json_scalar(element);
    }
    if (!element.is_null()) values_[name] = value;
  }
  static std::string json_scalar(simdjson::dom::element element) {
    std::string_view text;
    bool flag = false;
    std::int64_t integer = 0;
    std::uint64_t unsigned_integer = 0;
    double real = 0;
    if (element.get_string().get(text) == simdjson::SUCCESS) return std::string(text);
    if (element.get_bool().get(flag) == simdjson::SUCCESS) return flag ? "true" : "false";
    if (element.get_int64().get(integer) == simdjson::SUCCESS) return std::to_string(integer);
    if (element.get_uint64().get(unsigned_integer) == simdjson::SUCCESS) return std::to_string(unsigned_integer);
    if (element.get_double().get(real) == simdjson::SUCCESS) {
      std::ostringstream out;
      out << real;
      return out.str();
    }
    return "";
  }

  std::string file_;
  std::map<std::string, TitanValue> values_;
};

/// torchtitan's Llama 3 flavors (torchtitan/models/llama3/__init__.py, llama3_configs): the arguments that fix the
/// shape. The SwiGLU width is multiple_of x ceil(ffn_dim_multiplier x (2/3 x 4 x dim) / multiple_of), as the model's
/// FeedForward computes it (8B: 14336, 70B: 28672, 405B: 53248).
struct TitanFlavor {
  const char* name;
  int dim, layers, heads, kv_heads, multiple_of;
  double ffn_dim_multiplier;
};
constexpr TitanFlavor kLlama3Flavors[] = {
    {"8B", 4096, 32, 32, 8, 1024, 1.3},
    {"70B", 8192, 80, 64, 8, 4096, 1.3},
    {"405B", 16384, 126, 128, 8, 4096, 1.2},
};
constexpr int kLlama3Vocab = 128256;

int swiglu_width(const TitanFlavor& flavor) {
  const int base = static_cast<int>(2 * (4 * flavor.dim) / 3);
  const int scaled = static_cast<int>(flavor.ffn_dim_multiplier * base);
  return flavor.multiple_of * ((scaled + flavor.multiple_of - 1) / flavor.multiple_of);
}

/// Settings chopsim reads, or that do not change a step's time (logging, checkpoints, data, the optimizer's
/// hyper-parameters); every other key of the job is listed as not imported.
bool read_or_timeless(const std::string& key) {
  static const char* const kRead[] = {"model.name",
                                      "model.flavor",
                                      "model.converters",
                                      "training.local_batch_size",
                                      "training.batch_size",
                                      "training.global_batch_size",
                                      "training.seq_len",
                                      "training.mixed_precision_param",
                                      "training.mixed_precision_reduce",
                                      "training.max_norm",
                                      "training.steps",
                                      "parallelism.data_parallel_replicate_degree",
                                      "parallelism.data_parallel_shard_degree",
                                      "parallelism.tensor_parallel_degree",
                                      "parallelism.pipeline_parallel_degree",
                                      "parallelism.context_parallel_degree",
                                      "parallelism.expert_parallel_degree",
                                      "parallelism.pipeline_parallel_schedule",
                                      "parallelism.pipeline_parallel_microbatch_size",
                                      "parallelism.pipeline_parallel_layers_per_stage",
                                      "parallelism.fsdp_reshard_after_forward",
                                      "parallelism.enable_async_tensor_parallel",
                                      "parallelism.disable_loss_parallel",
                                      "activation_checkpoint.mode",
                                      "activation_checkpoint.selective_ac_option",
                                      "activation_checkpoint.early_stop",
                                      "compile.enable",
                                      "compile.components",
                                      "float8.enable_fsdp_float8_all_gather",
                                      "float8.precompute_float8_dynamic_scale_for_fsdp",
                                      "float8.filter_fqns"};
  for (const char* read : kRead)
    if (key == read) return true;
  static const char* const kTimeless[] = {"job.",
                                          "metrics.",
                                          "profiling.",
                                          "checkpoint.",
                                          "optimizer.",
                                          "lr_scheduler.",
                                          "validation.",
                                          "comm.",
                                          "experimental.",
                                          "fault_tolerance.",
                                          "memory_estimation.",
                                          "model.hf_assets_path",
                                          "model.tokenizer_path",
                                          "training.dataset",
                                          "training.dataset_path",
                                          "training.seed",
                                          "training.deterministic",
                                          "training.gc_freq",
                                          "training.warmup_steps"};
  for (const char* prefix : kTimeless)
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool is_torchtitan_config(const fs::path& file) {
  // Every TOML job chopsim imports is torchtitan's: a damaged one is reported by the TOML reader.
  if (file.extension() == ".toml") return true;
  if (file.extension() != ".json") return false;
  try {
    const TitanJob job(file);
    return job.has("model.name") && (job.has("parallelism.data_parallel_shard_degree") ||
                                     job.has("parallelism.tensor_parallel_degree") || job.has("training.seq_len"));
  } catch (const InputError&) {
  }
  return false;
}

ImportResult import_torchtitan(const fs::path& file, const ImportOptions& options) {
  const TitanJob job(file);
  ImportResult result;
  result.format = "torchtitan";
  if (!job.has("model.name"))
    job.fail("model.name", "not a torchtitan job config (no [model] name)",
             "pass a torchtitan train config (.toml) or the job config its trainer wrote (.json)");

  // The model: --model, else the shipped model with the shape of torchtitan's flavor.
  std::string model = options.model;
  const std::string name = job.text("model.name");
  const std::string flavor = job.text("model.flavor", "debugmodel");
  const TitanFlavor* flavor_shape = nullptr;
  if (name == "llama3")
    for (const TitanFlavor& f : kLlama3Flavors)
      if (flavor == f.name) flavor_shape = &f;
  if (model.empty()) {
    const TitanFlavor* shape = flavor_shape;
    if (shape != nullptr)
      model = import_detail::shipped_model_with_shape(options.search, [&](const TransformerSpec& m) {
        return m.layers == shape->layers && m.hidden == shape->dim && m.heads == shape->heads &&
               m.kv_heads == shape->kv_heads && m.ffn_hidden == swiglu_width(*shape) && m.experts == 1 &&
               m.vocab == kLlama3Vocab;
      });
    if (model.empty())
      job.fail("model.flavor",
               "chopsim knows no shipped model for torchtitan's " + name + " flavor '" + flavor +
                   "' (it maps llama3 8B, 70B and 405B)",
               "give --model NAME (a file in configs/models/) or --model config.json (the Hugging Face config of "
               "the model's hf_assets_path)");
  }

  // GPUs: torchtitan's mesh is dp_replicate x dp_shard x cp x tp x pp, with dp_shard -1 taking the rest.
  const int replicate = job.integer("parallelism.data_parallel_replicate_degree", 1);
  const int shard = job.integer("parallelism.data_parallel_shard_degree", -1, true);
  const int tp = job.integer("parallelism.tensor_parallel_degree", 1);
  const int pp = job.integer("parallelism.pipeline_parallel_degree", 1);
  const int cp = job.integer("parallelism.context_parallel_degree", 1);
  const int ep = job.integer("parallelism.expert_parallel_degree", 1);
  int nodes = options.nodes.value_or(0);
  if (nodes == 0) {
    const int gpus_per_node = import_detail::cluster_gpus_per_node(options);
    const long long gpus = static_cast<long long>(replicate) * std::max(shard, 1) * tp * pp * cp;
    if (shard > 0 && gpus_per_node > 0 && gpus % gpus_per_node == 0) {
      nodes = static_cast<int>(gpus / gpus_per_node);
    } else {
      nodes = 1;
      result.notes.push_back(shard > 0
                                 ? "the job's degrees do not fill whole nodes of the cluster: 1 node (give --nodes N)"
                                 : "data_parallel_shard_degree -1 takes the GPUs the job is launched on: 1 node "
                                   "(give --nodes N)");
    }
  }

  std::ostringstream y;
  y << "# Imported by chopsim import from " << job.file() << " (torchtitan)\n";
  y << "name: " << fs::path(job.file()).stem().string() << "\n";
  y << import_detail::model_entry(model);
  y << "hardware: " << options.hardware << "\n";
  y << "cluster: {name: " << options.cluster << ", nodes: " << nodes << "}\n";
  y << "parallelism:\n";
  y << "  tp: " << tp << "        # parallelism.tensor_parallel_degree\n";
  // torchtitan's TP always shards the norms' and dropout's activations along the sequence (SequenceParallel).
  if (tp > 1) y << "  sequence_parallel: true\n";
  y << "  pp: " << pp << "        # parallelism.pipeline_parallel_degree\n";
  y << "  cp: " << cp << "        # parallelism.context_parallel_degree\n";
  if (ep > 1) y << "  ep: " << ep << "        # parallelism.expert_parallel_degree\n";
  y << "  dp: auto        # data_parallel_replicate_degree x data_parallel_shard_degree\n";
  // FSDP2's reshard_after_forward: "default" reshards except under pipeline parallelism (torchtitan's
  // parallelize: the pipeline's micro-batches would otherwise gather the weights again each time), "never" keeps the
  // weights gathered until the backward (ZeRO-2), "always" reshards.
  const std::string reshard = job.text("parallelism.fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never")
    job.fail("parallelism.fsdp_reshard_after_forward", "'" + reshard + "' is not default, always or never",
             "fix the job config");
  const bool keeps_weights = reshard == "never" || (reshard == "default" && pp > 1);
  if (shard == 1 && replicate >= 1) {
    y << "  zero_stage: 0        # data_parallel_shard_degree 1: replicated (DDP)\n";
  } else if (replicate > 1) {
    y << "  fsdp: hybrid_shard        # HSDP: data_parallel_replicate_degree " << replicate << "\n";
    if (shard > 0) {
      y << "  shard_group_size: " << shard << "        # parallelism.data_parallel_shard_degree\n";
    } else {
      result.notes.push_back("data_parallel_shard_degree -1 with replicate " + std::to_string(replicate) +
                             ": chopsim's shard group is the whole data group unless shard_group_size is set");
    }
    if (keeps_weights)
      result.notes.push_back("fsdp_reshard_after_forward " + reshard +
                             " under HSDP: chopsim reshards after the forward (ZeRO-3)");
  } else {
    y << "  zero_stage: " << (keeps_weights ? 2 : 3) << "        # FSDP2, fsdp_reshard_after_forward " << reshard
      << (pp > 1 && reshard == "default" ? " (no reshard under pipeline parallelism)" : "") << "\n";
  }
  const std::string schedule = job.text("parallelism.pipeline_parallel_schedule", "1F1B");
  int stages_per_rank = 1;  // model chunks per pipeline rank
  if (pp > 1) {
    if (schedule == "Interleaved1F1B" || schedule == "LoopedBFS" || schedule == "InterleavedZeroBubble") {
      // torchtitan's looped schedules build two stages per rank unless pipeline_parallel_layers_per_stage says.
      stages_per_rank = 2;
      if (job.has("parallelism.pipeline_parallel_layers_per_stage")) {
        const int per_stage = job.integer("parallelism.pipeline_parallel_layers_per_stage", 1);
        if (flavor_shape == nullptr || flavor_shape->layers % (pp * per_stage) != 0)
          job.fail("parallelism.pipeline_parallel_layers_per_stage",
                   "chopsim needs the model's layers to split evenly into stages of " + std::to_string(per_stage) +
                       " on " + std::to_string(pp) + " ranks",
                   "leave it out (two stages per rank) or pick a value that divides the layers");
        stages_per_rank = flavor_shape->layers / (pp * per_stage);
      }
      y << "  pp_schedule: interleaved        # parallelism.pipeline_parallel_schedule " << schedule << "\n";
      y << "  virtual_stages: " << stages_per_rank << "\n";
      if (schedule != "Interleaved1F1B")
        result.notes.push_back("pipeline_parallel_schedule " + schedule +
                               ": modelled as interleaved 1F1B (chopsim has no zero-bubble or breadth-first "
                               "schedule)");
    } else if (schedule != "1F1B") {
      result.notes.push_back("pipeline_parallel_schedule " + schedule +
                             ": modelled as 1F1B (chopsim has 1F1B and interleaved 1F1B)");
    }
  }

  y << "training:\n";
  // torchtitan is PyTorch modules with FSDP2 (pytorch-eager's kernels and memory); chopsim's pytorch-eager has no
  // model parallelism, so DTensor TP/PP/CP jobs take Megatron's layer implementation instead.
  if (tp == 1 && pp == 1 && cp == 1 && ep == 1) {
    y << "  framework: pytorch-eager        # torchtitan: FSDP2 in PyTorch\n";
  } else {
    result.notes.push_back(
        "tp/pp/cp/ep > 1: the step's kernels besides GEMMs and attention are modelled as Megatron "
        "with Transformer Engine's (chopsim's pytorch-eager framework has no model parallelism)");
  }
  // torchtitan shards with fully_shard: FSDP2's copies around its collectives, whatever the layer kernels.
  if (shard != 1) y << "  fsdp_implementation: fsdp2        # torchtitan's fully_shard\n";
  const int local_batch = job.has("training.local_batch_size") ? job.integer("training.local_batch_size", 8)
                                                               : job.integer("training.batch_size", 8);
  // global_batch_size -1: one local batch per data rank, no gradient accumulation.
  const int global_batch = job.integer("training.global_batch_size", -1, true);
  if (global_batch > 0) {
    y << "  global_batch: " << global_batch << "        # training.global_batch_size\n";
  } else {
    const int ranks = shard > 0 ? replicate * shard : 0;
    if (ranks > 0) {
      y << "  global_batch: " << static_cast<long long>(local_batch) * ranks
        << "        # training.local_batch_size x data ranks\n";
    } else {
      // dp: auto resolves the data ranks; the batch per step is local_batch_size on each of them.
      const int gpus_per_node = std::max(1, import_detail::cluster_gpus_per_node(options));
      const long long gpus = static_cast<long long>(nodes) * gpus_per_node;
      y << "  global_batch: " << std::max<long long>(1, local_batch * (gpus / std::max(1, tp * pp * cp)))
        << "        # training.local_batch_size x data ranks\n";
    }
  }
  // Under pipeline parallelism the local batch is cut into micro-batches of pipeline_parallel_microbatch_size.
  const int micro = pp > 1 ? job.integer("parallelism.pipeline_parallel_microbatch_size", 1) : local_batch;
  y << "  micro_batch: " << micro << "        # "
    << (pp > 1 ? "parallelism.pipeline_parallel_microbatch_size" : "training.local_batch_size") << "\n";
  y << "  seq_len: " << job.integer("training.seq_len", 2048) << "        # training.seq_len\n";
  const std::string converters = job.text("model.converters");
  const bool fp8 = converters.find("float8") != std::string::npos || converters.find("mx") != std::string::npos;
  const std::string param_dtype = job.text("training.mixed_precision_param", "bfloat16");
  y << "  precision: "
    << (fp8                        ? "fp8"
        : param_dtype == "float32" ? "fp32"
                                   : "bf16")
    << "        # " << (fp8 ? "model.converters " + converters : "training.mixed_precision_param " + param_dtype)
    << "\n";
  if (fp8)
    result.notes.push_back(
        "model.converters float8: modelled as Transformer Engine's fp8 recipe (torchao's "
        "dynamic scaling casts differ)");
  const std::string reduce_dtype = job.text("training.mixed_precision_reduce", "float32");
  y << "  fsdp_reduce_dtype: " << (reduce_dtype == "bfloat16" ? "bf16" : "fp32")
    << "        # training.mixed_precision_reduce " << reduce_dtype << "\n";
  // torchtitan's default activation checkpointing is selective, every second layer (selective_ac_option "2").
  const std::string mode = job.text("activation_checkpoint.mode", "selective");
  const std::string option = job.text("activation_checkpoint.selective_ac_option", "2");
  if (mode == "full") {
    y << "  recompute: full        # activation_checkpoint.mode full\n";
  } else if (mode == "none") {
    y << "  recompute: none        # activation_checkpoint.mode none\n";
  } else if (mode == "selective" && option == "op") {
    y << "  recompute: selective        # activation_checkpoint.mode selective, selective_ac_option op\n";
    result.notes.push_back(
        "selective_ac_option op (torchtitan saves matmul outputs and recomputes the rest): "
        "modelled as Megatron's selective recompute of the attention internals");
  } else if (mode == "selective") {
    // Layer-wise selective checkpointing: one layer in N is checkpointed (recomputed whole), the others keep their
    // activations; per model chunk, ceil(layers / N) of them.
    const int every = job.integer("activation_checkpoint.selective_ac_option", 2);
    y << "  recompute: full        # activation_checkpoint.mode selective, one layer in " << every << "\n";
    if (flavor_shape != nullptr && options.model.empty()) {
      const int chunks = pp * stages_per_rank;
      const int chunk_layers = flavor_shape->layers / std::max(1, chunks);
      y << "  recompute_layers: " << (chunk_layers + every - 1) / every
        << "        # ceil(layers of a chunk / selective_ac_option)\n";
    } else {
      result.notes.push_back("selective_ac_option " + option + " checkpoints one layer in " + option +
                             " of a model chopsim does not know the layers of here: every layer is recomputed");
    }
  } else {
    job.fail("activation_checkpoint.mode", "'" + mode + "' is not none, selective or full", "fix the job config");
  }
  // Whole blocks are checkpointed with PyTorch's non-reentrant checkpoint (ptd_checkpoint_wrapper), whose early stop
  // torchtitan sets from activation_checkpoint.early_stop (pytorch/torchtitan#1580, 2025-08-29; default false).
  const bool whole_blocks = mode == "full" || (mode == "selective" && option != "op");
  if (whole_blocks && job.flag("activation_checkpoint.early_stop"))
    y << "  recompute_early_stop: true        # activation_checkpoint.early_stop true\n";
  else if (whole_blocks && !job.has("activation_checkpoint.early_stop"))
    result.notes.push_back(
        "activation_checkpoint.early_stop absent: recomputed blocks run whole (torchtitan's default since "
        "2025-08-29; releases before it kept PyTorch's early stop, which leaves each block's last projection out)");
  y << "  grad_clip: " << (job.number("training.max_norm", 1.0) > 0 ? "true" : "false")
    << "        # training.max_norm " << job.text("training.max_norm", "1.0 (default)") << "\n";
  // Async TP (torch's micro-pipelined all-gather/reduce-scatter matmuls) overlaps the TP collectives with GEMMs.
  if (job.flag("parallelism.enable_async_tensor_parallel"))
    y << "  overlap:\n    tp: true        # parallelism.enable_async_tensor_parallel\n";
  y << "iterations: 1\n";
  if (job.flag("compile.enable"))
    result.notes.push_back(
        "compile.enable: torch.compile fuses the elementwise kernels that chopsim's "
        "pytorch-eager framework launches one by one (predicted time is an upper bound there)");

  std::string unread;
  for (const auto& [key, value] : job.values())
    if (!read_or_timeless(key)) unread += (unread.empty() ? "" : ", ") + key;
  if (!unread.empty()) result.notes.push_back("not imported: " + unread);
  result.yaml = y.str();
  return result;
}

}  // namespace chopsim
