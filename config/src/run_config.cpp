// Run configs: YAML -> RunSpec. The format (docs/configs.md):
//
//   model: llama3-8b                         # a name (configs/models/NAME.yaml), a path, or a mapping
//   hardware: {name: MI300X, kernels: {...}} # a name or path plus overrides of that file's keys
//   cluster: {name: mi300x, nodes: 1}
//   parallelism: {...}  training: {...}  iterations: N  models: {...}  collectives: {...}  simulation: {...}
//
// Components are decoded by components.cpp, the cross-field rules live in validate.cpp
// and the strict YAML reading in yaml.cpp. Order: structure, types and ranges while decoding;
// then registry names; then each component's consistency; then the cross-field rules.

#include <algorithm>
#include <array>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "chopsim/common/config_files.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/decode.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using namespace config_detail;

namespace {

/// One component kind: its key in a run, its folder under a configs root, and its name in messages.
struct Kind {
  const char* key;
  const char* folder;
  const char* what;
};
constexpr Kind kHardware{"hardware", "hardware", "hardware file"};
constexpr Kind kModel{"model", "models", "model file"};
constexpr Kind kCluster{"cluster", "clusters", "cluster file"};

std::vector<std::string> available_names(const ConfigSearchPath& search, const Kind& kind) {
  std::set<std::string> names;
  for (const auto& root : search.roots)
    for (auto& name : config_names_in(root / kind.folder)) names.insert(std::move(name));
  return {names.begin(), names.end()};
}

/// Resolves `text` (a name or a path) written at `owner.key` to an existing file.
fs::path find_component(const std::string& text, bool force_path, const Kind& kind, const ConfigSearchPath& search,
                        const fs::path& run_dir, const Mapping& owner, std::string_view key) {
  std::error_code error;
  if (force_path || looks_like_config_path(text)) {
    const fs::path file = (fs::path(text).is_absolute() ? fs::path(text) : run_dir / text).lexically_normal();
    if (!fs::is_regular_file(file, error))
      owner.fail(
          key,
          std::string(kind.what) + " not found: looked at " + fs::absolute(file, error).lexically_normal().string(),
          "paths are relative to the run file's folder (" + display_path(run_dir.empty() ? "." : run_dir) +
              "); check the spelling");
    return file;
  }
  std::vector<std::string> looked;
  for (auto root = search.roots.begin(); root != search.roots.end(); ++root) {
    // A folder named twice (--configs and the shipped configs) is looked in once.
    if (holds_folder(search.roots.begin(), root, *root)) continue;
    const fs::path file = *root / kind.folder / (text + ".yaml");
    if (fs::is_regular_file(file, error)) return file;
    looked.push_back(display_path(file));
  }
  if (search.roots.empty())
    owner.fail(key,
               "no " + std::string(kind.key) + " named '" + text +
                   "': no configs folder was found (looked for a 'hardware/' folder next to the run file and in "
                   "its parents)",
               "give a path to the file instead (e.g. " + std::string(kind.key) + ": ../" + kind.folder + "/" + text +
                   ".yaml), or keep the run inside a configs folder");
  const std::vector<std::string> names = available_names(search, kind);
  const std::string suggestion = closest_match(text, names);
  owner.fail(key,
             "no " + std::string(kind.key) + " named '" + text + "': looked for " + join(looked, " and ") +
                 "; available " + kind.key + " names: " + (names.empty() ? "(none)" : join(names)),
             (suggestion.empty() ? std::string("use one of the available names. Or")
                                 : "did you mean '" + suggestion + "'? Or") +
                 " give a path to a file (e.g. " + kind.key + ": ./my-" + kind.key + ".yaml)");
}

template <class Spec>
struct Component {
  const Kind& kind;
  void (*apply)(Mapping& m, Spec& spec, Need need, bool in_run);
};

void apply_hardware_any(Mapping& m, HardwareSpec& spec, Need need, bool) { apply_hardware(m, spec, need); }
void apply_model_any(Mapping& m, TransformerSpec& spec, Need need, bool) { apply_model(m, spec, need); }
void apply_cluster_any(Mapping& m, ClusterSpec& spec, Need need, bool in_run) { apply_cluster(m, spec, need, in_run); }

/// Decodes a whole component file. Its keys are recorded as `record_prefix.KEY`.
template <class Spec>
Spec decode_file(const Component<Spec>& component, const fs::path& file, KeyLocations* locations,
                 const std::string& record_prefix) {
  const YAML::Node root = load_yaml_file(file, component.kind.what);
  Mapping m(root, Scope{display_path(file), "", record_prefix, locations});
  Spec spec{};
  component.apply(m, spec, Need::required, false);
  m.finish();
  spec.name = file.stem().string();
  return spec;
}

/// The component at `top[kind.key]`: a name or path, a {name|path, overrides...} mapping, or an inline mapping.
/// `after_file` runs on the spec the file (or the inline definition) gave, before the run's overrides: the hook of the
/// calibration profile, which sits between the two.
/// The file it reads, if any, is appended to `files`.
template <class Spec>
Spec resolve(Mapping& top, const Component<Spec>& component, const ConfigSearchPath& search, const fs::path& run_dir,
             KeyLocations* locations, std::vector<fs::path>& files, const std::function<void(Spec&)>& after_file = {}) {
  const char* key = component.kind.key;
  top.require(key, "a name, a path to a file, or a mapping");
  const YAML::Node value = top.value(key);
  if (value.IsScalar() && !value.Scalar().empty()) {
    const fs::path file = find_component(value.Scalar(), false, component.kind, search, run_dir, top, key);
    files.push_back(file);
    Spec spec = decode_file(component, file, locations, key);
    if (after_file) after_file(spec);
    return spec;
  }
  if (!value.IsMap())
    top.fail(key, "expected a name, a path or a mapping, found " + describe_value(value),
             std::string("write e.g. '") + key + ": NAME' or '" + key + ": {name: NAME, ...overrides}'");

  Mapping ref = top.child(key);
  const bool by_name = ref.has("name");
  const bool by_path = ref.has("path");
  if (by_name && by_path)
    ref.fail("path", "both 'name' and 'path' are given",
             "keep one: 'name' looks in the configs folder, 'path' is a file");
  Spec spec{};
  if (by_name || by_path) {
    std::string text;
    ref.read(by_name ? "name" : "path", text, Need::required);
    const fs::path file =
        find_component(text, by_path, component.kind, search, run_dir, ref, by_name ? "name" : "path");
    files.push_back(file);
    spec = decode_file(component, file, locations, key);
    if (after_file) after_file(spec);
    component.apply(ref, spec, Need::optional, true);  // overrides of the file's keys
  } else {
    component.apply(ref, spec, Need::required, true);  // a complete inline definition
    spec.name = std::string("inline ") + key;
    if (after_file) after_file(spec);
  }
  ref.finish();
  return spec;
}

/// `gpus`: the cluster's GPU count, for `dp: auto` (what tp * pp * cp leave of it).
void decode_parallelism(Mapping& p, ParallelismSpec& par, long long gpus) {
  bool auto_dp = false;
  if (const YAML::Node dp = p.value("dp"); dp.IsDefined() && dp.IsScalar() && dp.Scalar() == "auto") {
    auto_dp = true;
  } else {
    p.read("dp", par.dp, kPositiveInt);
  }
  p.read("tp", par.tp, kPositiveInt);
  p.read("sequence_parallel", par.sequence_parallel);
  p.read("pp", par.pp, kPositiveInt);
  p.read_choice<PipelineSchedule>(
      "pp_schedule", par.pp_schedule,
      {{"1f1b", PipelineSchedule::one_f_one_b}, {"interleaved", PipelineSchedule::interleaved}});
  p.read("virtual_stages", par.virtual_stages, kPositiveInt);
  p.read("stage_layers", par.stage_layers, kPositiveInt);
  p.read("account_for_embedding_in_split", par.account_for_embedding_in_split);
  p.read("account_for_loss_in_split", par.account_for_loss_in_split);
  p.read("cp", par.cp, kPositiveInt);
  p.read("ep", par.ep, kPositiveInt);
  p.read("etp", par.etp, kPositiveInt);
  if (auto_dp) {
    const long long model_parallel = static_cast<long long>(par.tp) * par.pp * par.cp;
    if (model_parallel < 1 || gpus % model_parallel != 0)
      p.fail("dp",
             "dp: auto needs the cluster's " + std::to_string(gpus) +
                 " GPUs to be a multiple of tp*pp*cp = " + std::to_string(model_parallel),
             "change tp, pp or cp, or cluster.nodes");
    par.dp = static_cast<int>(gpus / model_parallel);
  }
  const bool has_zero = p.read("zero_stage", par.zero_stage, IntRule{0, 3, "an integer from 0 to 3"});
  std::string fsdp;
  const bool has_fsdp = p.read_choice<std::string>("fsdp", fsdp,
                                                   {{"full_shard", "full_shard"},
                                                    {"shard_grad_op", "shard_grad_op"},
                                                    {"hybrid_shard", "hybrid_shard"},
                                                    {"no_shard", "no_shard"}});
  p.read("shard_group_size", par.shard_group_size, kNonNegativeInt);
  if (!has_fsdp) return;
  // PyTorch FSDP sharding strategies as ZeRO stages (FSDP docs: FULL_SHARD ~ ZeRO-3, SHARD_GRAD_OP ~ ZeRO-2,
  // HYBRID_SHARD = FULL_SHARD inside a group and replication across groups, NO_SHARD ~ DDP).
  const int stage = fsdp == "shard_grad_op" ? 2 : fsdp == "no_shard" ? 0 : 3;
  if (has_zero && par.zero_stage != stage)
    p.fail("fsdp",
           "fsdp: " + fsdp + " means zero_stage " + std::to_string(stage) + ", but zero_stage is " +
               std::to_string(par.zero_stage),
           "give only one of 'fsdp' and 'zero_stage'");
  par.zero_stage = stage;
  if (fsdp == "hybrid_shard" && par.shard_group_size == 0)
    p.fail("fsdp",
           "fsdp: hybrid_shard shards inside groups of data ranks and replicates across them, but "
           "shard_group_size is not set",
           "add 'shard_group_size: N' (data ranks per shard group, e.g. the data ranks of one node)");
  if (fsdp == "full_shard" && par.shard_group_size > 0)
    p.fail("shard_group_size",
           "fsdp: full_shard shards over the whole data group; shard_group_size is for hybrid_shard",
           "use fsdp: hybrid_shard, or remove shard_group_size");
}

/// The entries of the list `key` of `m`, each looked up by name in `table`: `list_problem` when the value is not a list
/// (or, with `non_empty`, an empty one), "'NAME' `unknown`" for a name the table lacks, both with `fix`.
template <class Value, std::size_t N>
std::vector<Value> read_name_list(Mapping& m, std::string_view key,
                                  const std::array<std::pair<std::string_view, Value>, N>& table,
                                  const std::string& list_problem, const std::string& unknown, const std::string& fix,
                                  bool non_empty = false) {
  const YAML::Node list = m.value(key);
  if (!list.IsSequence() || (non_empty && list.size() == 0)) m.fail(key, list_problem, fix);
  std::vector<Value> values;
  for (const YAML::Node& entry : list) {
    const std::string name = entry.IsScalar() ? entry.Scalar() : std::string();
    const auto found = std::find_if(table.begin(), table.end(), [&](const auto& known) { return known.first == name; });
    if (found == table.end()) m.fail(key, "'" + name + "' " + unknown, fix);
    values.push_back(found->second);
  }
  return values;
}

/// The bytes of PyTorch's cuBLAS workspace that CUBLAS_WORKSPACE_CONFIG `text` sets: the sum of SIZE KiB x COUNT
/// over its ":SIZE:COUNT" pairs, as PyTorch parses it (aten/src/ATen/cuda/CublasHandlePool.cpp,
/// parseChosenWorkspaceSize).
double parse_cublas_workspace_config(const Mapping& t, const std::string& text) {
  const auto bad = [&] {
    t.fail("cublas_workspace_config", "'" + text + "' is not a CUBLAS_WORKSPACE_CONFIG value",
           "write it as the environment variable, one or more :SIZE:COUNT pairs with SIZE in KiB, e.g. \":4096:8\" "
           "(32 MiB) or \":16:8\"");
  };
  double bytes = 0.0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::array<long long, 2> numbers{};
    for (long long& number : numbers) {
      if (at >= text.size() || text[at] != ':') bad();
      ++at;
      const std::size_t digits = at;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - digits < 9) ++at;
      if (at == digits || (at < text.size() && text[at] != ':')) bad();
      number = std::stoll(text.substr(digits, at - digits));
    }
    bytes += static_cast<double>(numbers[0]) * 1024.0 * static_cast<double>(numbers[1]);
  }
  if (bytes <= 0.0) bad();
  return bytes;
}

void decode_training(Mapping& t, TrainingSpec& train) {
  t.read_choice<Framework>("framework", train.framework,
                           {{"megatron-te", Framework::megatron_te}, {"pytorch-eager", Framework::pytorch_eager}});
  t.read("global_batch", train.global_batch, kPositiveInt);
  t.read("micro_batch", train.micro_batch, kPositiveInt);
  t.read("seq_len", train.seq_len, kPositiveInt);
  t.read_choice<Precision>("precision", train.precision,
                           {{"fp32", Precision::fp32},
                            {"tf32", Precision::tf32},
                            {"bf16", Precision::bf16},
                            {"fp16", Precision::fp16},
                            {"fp8", Precision::fp8}});
  t.read_choice<RecomputePolicy>(
      "recompute", train.recompute,
      {{"none", RecomputePolicy::none}, {"selective", RecomputePolicy::selective}, {"full", RecomputePolicy::full}});
  t.read("recompute_layers", train.recompute_layers, kNonNegativeInt);
  t.read("recompute_early_stop", train.recompute_early_stop);
  if (t.has("lora")) {
    Mapping l = t.child("lora");
    l.read("rank", train.lora.rank, kPositiveInt, Need::required);
    if (l.has("targets")) {
      const auto targets = read_name_list(l, "targets", kLoraTargetNames, "expected a non-empty list of linears",
                                          "is not a linear chopsim adapts",
                                          "list the linears that get adapters: qkv, proj, fc1, fc2 (Megatron-Bridge's "
                                          "linear_qkv, linear_proj, linear_fc1, linear_fc2)",
                                          true);
      for (const auto& [name, target] : kLoraTargetNames) train.lora.*target = false;
      for (const auto target : targets) train.lora.*target = true;
    }
    l.finish();
  }
  if (t.has("recompute_modules"))
    for (const auto module : read_name_list(t, "recompute_modules", kRecomputeModuleNames,
                                            "expected a list of module names", "is not a module chopsim recomputes",
                                            "list Megatron's --recompute-modules names: core_attn, layernorm, "
                                            "mla_up_proj, mlp, moe, moe_act, shared_experts"))
      train.recompute_modules.*module = true;
  if (t.has("overlap")) {
    Mapping o = t.child("overlap");
    o.read("dp", train.overlap.dp);
    // The parameter all-gather follows the gradient reduction unless the run sets it apart.
    train.overlap.param_gather = train.overlap.dp;
    o.read("param_gather", train.overlap.param_gather);
    o.read("fsdp", train.overlap.fsdp);
    o.read("tp", train.overlap.tp);
    o.read("tp_backward", train.overlap.tp_backward);
    o.read("pp", train.overlap.pp);
    o.read("cp", train.overlap.cp);
    o.read("ep", train.overlap.ep);
    o.read("ep_1f1b", train.overlap.ep_1f1b);
    o.finish();
  }
  t.read("fsdp_prefetch", train.fsdp_prefetch, kNonNegativeInt);
  if (t.has("fsdp_implementation")) {
    FsdpImplementation implementation = FsdpImplementation::megatron;
    t.read_choice<FsdpImplementation>("fsdp_implementation", implementation,
                                      {kFsdpImplementationNames.begin(), kFsdpImplementationNames.end()});
    train.fsdp_implementation = implementation;
  }
  // MiB, as PyTorch DDP's bucket_cap_mb and NeMo's bucket_cap_mb.
  t.read("dp_bucket_mb", train.dp_bucket_bytes, units::kMiB, kPositiveReal, "MiB");
  // Unset or null (Megatron's None): dropless.
  if (t.has("moe_capacity_factor") && !t.value("moe_capacity_factor").IsNull()) {
    double capacity = 1.0;
    t.read("moe_capacity_factor", capacity, 1.0, kPositiveReal, "");
    train.moe_capacity_factor = capacity;
  }
  t.read("moe_pad_to_capacity", train.moe_pad_to_capacity);
  t.read("moe_load_imbalance", train.moe_load_imbalance, 1.0,
         RealRule{1.0, false, std::numeric_limits<double>::infinity(), false,
                  "a number >= 1 (the busiest expert-parallel rank's routed tokens over the mean; 1: balanced)"},
         "");
  t.read_choice<MoeDispatcher>("moe_dispatcher", train.moe_dispatcher,
                               {{"alltoall", MoeDispatcher::alltoall}, {"flex", MoeDispatcher::flex}});
  t.read("moe_router_fusion", train.moe_router_fusion);
  t.read_choice<MoeAuxLoss>("moe_aux_loss", train.moe_aux_loss, {kMoeAuxLossNames.begin(), kMoeAuxLossNames.end()});
  t.read("moe_expert_bias", train.moe_expert_bias);
  if (t.has("cuda_graph_scope"))
    for (const auto scope :
         read_name_list(t, "cuda_graph_scope", kCudaGraphScopeNames, "expected a list of scope names",
                        "is not a CUDA graph scope chopsim models",
                        "list Megatron's --cuda-graph-scope names chopsim models: moe_router, moe_preprocess (attn, "
                        "mamba and the others are not modelled: leave them out)"))
      train.cuda_graph_scope.*scope = true;
  t.read_choice<Fp8Recipe>("fp8_recipe", train.fp8_recipe, {kFp8RecipeNames.begin(), kFp8RecipeNames.end()});
  t.read("attention", train.attention);
  t.read("deterministic", train.deterministic);
  t.read("fill_uninitialized_memory", train.fill_uninitialized_memory);
  if (std::string workspace; t.read("cublas_workspace_config", workspace))
    train.cublas_workspace_bytes = parse_cublas_workspace_config(t, workspace);
  t.read("attention_mask_in_dataloader", train.attention_mask_in_dataloader);
  t.read("check_for_nan_in_grad", train.check_for_nan_in_grad);
  t.read("gradient_accumulation_fusion", train.gradient_accumulation_fusion);
  t.read("cross_entropy_fusion", train.cross_entropy_fusion);
  t.read("unpad_attention", train.unpad_attention);
  t.read("masked_softmax_fusion", train.masked_softmax_fusion);
  t.read("grad_clip", train.grad_clip);
  t.read_choice<Optimizer>("optimizer", train.optimizer, {kOptimizerNames.begin(), kOptimizerNames.end()});
  if (t.has("train_metrics")) {
    train.train_metrics = read_name_list(
        t, "train_metrics", kTrainMetricNames, "expected a list of metric names", "is not a metric chopsim knows",
        "list llm-foundry's metric names: language_cross_entropy, language_perplexity, token_accuracy");
    for (auto metric = train.train_metrics.begin(); metric != train.train_metrics.end(); ++metric)
      if (std::find(train.train_metrics.begin(), metric, *metric) != metric)
        t.fail("train_metrics", "'" + std::string(to_string(*metric)) + "' is listed twice", "list each metric once");
  }
  t.read("log_num_zeros_in_grad", train.log_num_zeros_in_grad);
  t.read("log_params_norm", train.log_params_norm);
  t.read("host_launch_us", train.host_launch_s, units::kMicrosecond, kNonNegativeReal, "µs");
  t.read_choice<bool>("fsdp_reduce_dtype", train.fsdp_reduce_fp32, {{"bf16", false}, {"fp32", true}});
  t.read_choice<bool>("grad_reduce_dtype", train.grad_reduce_fp32, {{"bf16", false}, {"fp32", true}});
}

}  // namespace

void config_detail::decode_collectives(Mapping& c, CollectiveParams& params) {
  const std::vector<std::pair<std::string, std::string>> reduce = {
      {"ring", "ring"}, {"tree", "tree"}, {"hierarchical", "hierarchical"}, {"auto", "auto"}};
  const std::vector<std::pair<std::string, std::string>> gather = {
      {"ring", "ring"}, {"hierarchical", "hierarchical"}, {"auto", "auto"}};
  c.read_choice<std::string>("all_reduce", params.all_reduce, reduce);
  c.read_choice<std::string>("all_gather", params.all_gather, gather);
  c.read_choice<std::string>("reduce_scatter", params.reduce_scatter, gather);
  c.read_choice<std::string>("all_to_all", params.all_to_all, {{"grouped", "grouped"}, {"pairwise", "pairwise"}});
  c.read("step_latency_us", params.step_latency_s, units::kMicrosecond, kNonNegativeReal, "µs");
  c.read("mesh_channels", params.mesh_channels, kNonNegativeInt);
  c.read("pipelined_rings", params.pipelined_rings);
}

namespace {

void decode_power(Mapping& p, PowerRunSpec& power) {
  p.read("dynamics", power.dynamics);
  p.read("model", power.power_model);
  p.read("governor", power.governor);
  p.read("cap_w", power.cap_w, 1.0, kPositiveReal, "W per GPU");
  p.read("lock_clock_mhz", power.lock_clock_hz, units::kMega, kPositiveReal, "MHz");
  p.read("telemetry_interval_ms", power.telemetry_interval_s, units::kMillisecond, kPositiveReal, "ms");
  p.read("chip_variation", power.chip_variation, 1.0,
         RealRule{0.0, false, 0.5, true, "a relative standard deviation in [0, 0.5) (0: identical chips)"}, "");
}

template <class R>
void check_registered(const R& registry, const std::string& name, const std::string& key, const Locator& locate) {
  if (registry.contains(name)) return;
  const std::vector<std::string> names = registry.names();
  const std::string suggestion = closest_match(name, names);
  throw InputError(locate(key), key,
                   "unknown " + registry.kind() + " '" + name +
                       "'; valid names: " + (names.empty() ? std::string("(none registered)") : join(names)),
                   suggestion.empty() ? "use one of the valid names" : "did you mean '" + suggestion + "'?");
}

}  // namespace

ConfigOverride parse_config_override(std::string_view text, std::string origin) {
  const auto equals = text.find('=');
  const std::string key(equals == std::string_view::npos ? text : text.substr(0, equals));
  const std::string value(equals == std::string_view::npos ? std::string_view() : text.substr(equals + 1));
  if (equals == std::string_view::npos || key.empty() || value.empty() || key.front() == '.' || key.back() == '.' ||
      key.find("..") != std::string::npos)
    throw InputError({"command line"}, "", origin + " '" + std::string(text) + "' is not KEY=VALUE with a dotted KEY",
                     "write e.g. " + origin + " training.micro_batch=4");
  return {key, value, std::move(origin)};
}

RunSpec load_run_config(const fs::path& run_file, const ConfigSearchPath& search, const ModelRegistries& registries,
                        const std::vector<ConfigOverride>& overrides) {
  KeyLocations locations;
  const std::string shown = display_path(run_file);
  YAML::Node root = load_yaml_file(run_file, "run config");
  if (!overrides.empty()) root = apply_overrides(root, overrides, shown);
  Mapping top(root, Scope{shown, "", "", &locations});
  const fs::path run_dir = run_file.parent_path();

  RunSpec run;
  run.source = run_file;
  run.input_files.push_back(run_file);
  run.name = run_file.stem().string();
  top.read("name", run.name);
  std::string description;  // free text for people; not used
  top.read("description", description);

  run.model =
      resolve(top, Component<TransformerSpec>{kModel, apply_model_any}, search, run_dir, &locations, run.input_files);
  // A calibration profile overrides the hardware file's keys (the run's own overrides still win) and sets the
  // collective parameters (the run's `collectives:` section still wins).
  std::function<void(HardwareSpec&)> apply_calibration;
  std::string calibration_text;
  if (top.read("calibration", calibration_text)) {
    run.calibration = find_profile(calibration_text, search, run_dir, top, "calibration");
    run.input_files.push_back(run.calibration);
    apply_calibration = [&](HardwareSpec& hardware) {
      apply_profile(run.calibration, shown, &hardware, &run.collectives, &locations);
    };
  }
  run.hardware = resolve(top, Component<HardwareSpec>{kHardware, apply_hardware_any}, search, run_dir, &locations,
                         run.input_files, apply_calibration);
  run.cluster =
      resolve(top, Component<ClusterSpec>{kCluster, apply_cluster_any}, search, run_dir, &locations, run.input_files);

  if (top.has("parallelism")) {
    Mapping p = top.child("parallelism");
    decode_parallelism(p, run.parallelism, run.cluster.gpu_count());
    p.finish();
  }
  if (top.has("training")) {
    Mapping t = top.child("training");
    decode_training(t, run.training);
    t.finish();
  }
  top.read("iterations", run.iterations, kPositiveInt);
  if (top.has("models")) {
    Mapping m = top.child("models");
    m.read("compute", run.compute_model);
    m.read("collective", run.collective_model);
    m.finish();
  }
  if (top.has("collectives")) {
    Mapping c = top.child("collectives");
    decode_collectives(c, run.collectives);
    c.finish();
  }
  if (top.has("simulation")) {
    Mapping s = top.child("simulation");
    s.read("engine", run.engine);
    // SimGrid 3.32 network/model values (docs/design.md explains the choice of CM02).
    s.read_choice<std::string>(
        "network_model", run.engine_options.network_model,
        {{"CM02", "CM02"}, {"LV08", "LV08"}, {"SMPI", "SMPI"}, {"IB", "IB"}, {"Constant", "Constant"}});
    s.read("isolate_in_child_process", run.engine_options.isolate_in_child_process);
    s.read("symmetry", run.engine_options.use_symmetry);
    s.read("fold", run.fold);
    s.finish();
  }
  if (top.has("power")) {
    Mapping p = top.child("power");
    decode_power(p, run.power);
    p.finish();
  }
  if (top.has("thermal")) {
    Mapping t = top.child("thermal");
    CoolingSpec cooling = run.hardware.cooling;
    t.read("model", run.power.thermal_model);
    apply_cooling(t, cooling);
    t.read("start_power_fraction", run.power.start_power_fraction, 1.0,
           RealRule{0.0, false, 1.5, false, "a fraction of the power cap in [0, 1.5]"}, "");
    t.finish();
    run.power.cooling = cooling;
  }
  top.finish();

  const Locator locate(SourceLocation{shown}, &locations);
  check_registered(registries.compute, run.compute_model, "models.compute", locate);
  check_registered(registries.collective, run.collective_model, "models.collective", locate);
  check_registered(registries.node_topology, run.cluster.node_topology, "cluster.node_topology", locate);
  check_registered(registries.fabric_topology, run.cluster.fabric.kind, "cluster.fabric.kind", locate);
  check_registered(registries.engine, run.engine, "simulation.engine", locate);
  check_registered(registries.power, run.power.power_model, "power.model", locate);
  check_registered(registries.governor, run.power.governor, "power.governor", locate);
  check_registered(registries.thermal, run.power.thermal_model, "thermal.model", locate);

  check_model(run.model, locate, "model.");
  check_hardware(run.hardware, locate, "hardware.");
  check_cluster(run.cluster, locate, "cluster.");
  validate_run_at(run, locate);
  return run;
}

namespace {
template <class Spec>
Spec load_component(const Component<Spec>& component, const fs::path& file,
                    void (*check)(const Spec&, const Locator&, std::string_view)) {
  KeyLocations locations;
  Spec spec = decode_file(component, file, &locations, "");
  check(spec, Locator(SourceLocation{display_path(file)}, &locations), "");
  return spec;
}
}  // namespace

HardwareSpec load_hardware_config(const fs::path& file) {
  return load_component(Component<HardwareSpec>{kHardware, apply_hardware_any}, file, check_hardware);
}

TransformerSpec load_model_config(const fs::path& file) {
  return load_component(Component<TransformerSpec>{kModel, apply_model_any}, file, check_model);
}

ClusterSpec load_cluster_config(const fs::path& file) {
  return load_component(Component<ClusterSpec>{kCluster, apply_cluster_any}, file, check_cluster);
}

}  // namespace chopsim
