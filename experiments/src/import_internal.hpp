#pragma once
// Private to import_*.cpp: the one mapping of Megatron-Core's vocabulary (import_nemo.cpp) that every front-end
// (NeMo YAML, Megatron-LM arguments) feeds.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>

#include "chopsim/experiments/import.hpp"
#include "chopsim/models/cluster.hpp"

namespace chopsim::import_detail {

/// Maps a job described with NeMo's keys (model.num_layers, model.tensor_model_parallel_size, trainer.precision,
/// ...; Megatron's arguments with underscores under model.) to a run config. `file` is named in errors; `format`
/// ("nemo", "megatron") in the result and the written file's header.
[[nodiscard]] ImportResult import_megatron_core(const std::string& file, const YAML::Node& root,
                                                const ImportOptions& options, const std::string& format);

/// The node at a dotted path of mappings (model.optim.bucket_cap_mb); undefined when a part is missing.
[[nodiscard]] YAML::Node at_path(const YAML::Node& root, const std::string& path);

/// The name of the first model file (configs/models of each search root, in name order) that `matches`, or "".
[[nodiscard]] std::string shipped_model_with_shape(const ConfigSearchPath& search,
                                                   const std::function<bool(const TransformerSpec&)>& matches);

/// The cluster file the job is imported for (a name under the search path's clusters/, or a path), if there is one.
[[nodiscard]] std::optional<ClusterSpec> find_cluster(const ImportOptions& options);

/// GPUs per node of the cluster the job is imported for (a name under the search path's clusters/, or a path), or
/// 0 when there is no such file: a job's data-parallel size (and Megatron's default gradient bucket) follows it.
[[nodiscard]] int cluster_gpus_per_node(const ImportOptions& options);

/// Whether --model names a Hugging Face config.json (a .json file) rather than a model of the configs.
[[nodiscard]] bool model_is_hf_config(const std::string& model);

/// The run config's `model:` entry: `model: NAME`, or for a Hugging Face config.json the model file it maps to
/// (import_hf_model), inline and indented, so that the run needs no second file.
[[nodiscard]] std::string model_entry(const std::string& model);
/// As model_entry, with the job's multi-token prediction depth where it states one that the model's file does not
/// have (Megatron's mtp_num_layers is a training choice on the model): the model is then written inline, its file's
/// keys with that mtp_layers.
[[nodiscard]] std::string model_entry(const std::string& model, std::optional<int> mtp_layers,
                                      const ConfigSearchPath& search);

}  // namespace chopsim::import_detail
