// The NeMo config reader of import_nemo.cpp (import_nemo_job.hpp).

#include "import_nemo_job.hpp"

#include "chopsim/common/error.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "import_internal.hpp"

namespace chopsim::import_detail {

namespace {

/// Settings that change nothing a step's time depends on: never listed as unmapped.
bool timeless(const std::string& path) {
  static const char* const kPrefixes[] = {"model.data",
                                          "model.tokenizer",
                                          "model.optim.lr",
                                          "model.optim.sched",
                                          "model.optim.betas",
                                          "model.optim.weight_decay",
                                          "model.optim.eps",
                                          "model.nsys_profile",
                                          "model.seed",
                                          "model.init_method_std",
                                          "model.use_scaled_init_method",
                                          "model.restore_from_path",
                                          "model.resume_from_checkpoint",
                                          "model.make_vocab_size_divisible_by",
                                          "model.max_position_embeddings",
                                          "model.rotary_base",
                                          "model.rotary_percentage",
                                          "model.seq_len_interpolation_factor",
                                          "model.layernorm_epsilon",
                                          "model.normalization",
                                          "model.activation",
                                          "model.position_embedding_type",
                                          "model.share_embeddings_and_output_weights",
                                          "model.apex_transformer_log_level",
                                          "model.mcore_gpt",
                                          "model.megatron_amp_O2",
                                          "model.rampup_batch_size",
                                          "model.hysteresis",
                                          "model.native_amp_init_scale",
                                          "model.native_amp_growth_interval",
                                          "model.use_cpu_initialization",
                                          "model.onnx_safe",
                                          "model.gradient_as_bucket_view",
                                          "model.sync_batch_comm",
                                          "trainer.devices",
                                          "trainer.accelerator",
                                          "trainer.logger",
                                          "trainer.enable_checkpointing",
                                          "trainer.max_steps",
                                          "trainer.max_epochs",
                                          "trainer.max_time",
                                          "trainer.log_every_n_steps",
                                          "trainer.val_check_interval",
                                          "trainer.limit_val_batches",
                                          "trainer.limit_test_batches",
                                          "trainer.accumulate_grad_batches",
                                          "trainer.benchmark",
                                          "trainer.enable_model_summary",
                                          "trainer.use_distributed_sampler",
                                          "trainer.num_sanity_val_steps"};
  for (const char* prefix : kPrefixes) {
    const std::string p(prefix);
    if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "_", 0) == 0) return true;
  }
  return false;
}

}  // namespace

YAML::Node NemoJob::at(const std::string& path) const {
  read_.insert(path);
  std::string current = path;
  YAML::Node node = at_path(root_, current);
  for (int hops = 0; hops < 16 && node.IsDefined() && node.IsScalar(); ++hops) {
    const std::string value = node.Scalar();
    if (value.size() < 4 || value.rfind("${", 0) != 0 || value.back() != '}') return node;
    std::string target = value.substr(2, value.size() - 3);
    if (target.front() == '.') {
      std::string base = current.substr(0, current.rfind('.') == std::string::npos ? 0 : current.rfind('.'));
      std::size_t dots = 0;
      while (dots < target.size() && target[dots] == '.') ++dots;
      for (std::size_t up = 1; up < dots; ++up)
        base = base.substr(0, base.rfind('.') == std::string::npos ? 0 : base.rfind('.'));
      target = (base.empty() ? "" : base + ".") + target.substr(dots);
    }
    const YAML::Node next = at_path(root_, target);
    if (!next.IsDefined())
      fail(path, "'" + value + "' refers to " + target + ", which the file does not set", "set " + target);
    current = target;
    node.reset(next);
  }
  return node;
}

std::vector<std::string> NemoJob::unread() const {
  std::vector<std::string> keys;
  for (const char* section : {"model", "trainer"}) collect(root_[section], section, keys);
  return keys;
}

bool NemoJob::has(const std::string& path) const {
  const YAML::Node n = at(path);
  return n.IsDefined() && !n.IsNull();
}

void NemoJob::fail(const std::string& path, const std::string& problem, const std::string& fix) const {
  const YAML::Node n = at_path(root_, path);  // the key's own line, not an interpolation's target
  throw InputError(n.IsDefined() ? config_detail::location_of(n, file_) : SourceLocation{file_}, path, problem, fix);
}

int NemoJob::integer(const std::string& path, std::optional<int> fallback) const {
  if (!has(path)) {
    if (fallback) return *fallback;
    fail(path, "the job has no " + path, "a NeMo training config sets it (megatron_gpt_config.yaml)");
  }
  try {
    return at(path).as<int>();
  } catch (const YAML::Exception&) {
    fail(path, "'" + at(path).Scalar() + "' is not an integer", "fix the job config");
  }
}

double NemoJob::number(const std::string& path) const {
  try {
    return at(path).as<double>();
  } catch (const YAML::Exception&) {
    fail(path, "'" + at(path).Scalar() + "' is not a number", "fix the job config");
  }
}

bool NemoJob::flag(const std::string& path) const {
  if (!has(path)) return false;
  try {
    return at(path).as<bool>();
  } catch (const YAML::Exception&) {
    fail(path, "'" + at(path).Scalar() + "' is not true or false", "fix the job config");
  }
}

std::string NemoJob::text(const std::string& path) const { return has(path) ? at(path).Scalar() : std::string(); }

void NemoJob::collect(const YAML::Node& node, const std::string& path, std::vector<std::string>& keys) const {
  if (!node.IsDefined() || read_.count(path) || timeless(path)) return;
  if (node.IsMap()) {
    for (const auto& entry : node) collect(entry.second, path + "." + entry.first.as<std::string>(""), keys);
    return;
  }
  if (!node.IsNull()) keys.push_back(path);
}

}  // namespace chopsim::import_detail
