#pragma once
// `chopsim import` (issue 18; docs/import.md): a training job as a framework describes it, turned into a chopsim run
// config by one general mapping, with every setting it could not carry over listed.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/config/config.hpp"

namespace chopsim {

struct ImportOptions {
  std::string hardware;      ///< a hardware name of the configs (none of the job formats names the GPU)
  std::string cluster;       ///< a cluster name (the fabric)
  std::optional<int> nodes;  ///< overrides the job's node count
  std::string model;         ///< a model name; empty: the shipped model whose shape matches the job's
  std::string precision;     ///< Megatron-Bridge perf_matrix: the precision entry to import (empty: bf16)
  ConfigSearchPath search;   ///< where hardware, clusters and models are found
};

struct ImportResult {
  std::string format;  ///< "nemo", "megatron", "bridge", "foundry", "torchtitan" (a run config), or "hf" (a model file)
  std::string yaml;    ///< the run config, or for "hf" the model file
  std::vector<std::string> notes;  ///< settings of the job chopsim does not model, or reads differently
};

/// The formats `chopsim import --format` takes: nemo, megatron, bridge, foundry, torchtitan (jobs) and hf (models).
[[nodiscard]] std::vector<std::string> import_format_names();

/// The format of a job file ("nemo"), or "" when it is none chopsim imports.
[[nodiscard]] std::string detect_job_format(const std::filesystem::path& file);

/// Maps a NeMo (Megatron-Core) training config to a run config. InputError naming the file and key for a job that is
/// not pre-training (LoRA/PEFT, inference), a missing or malformed key, or a model shape that matches no shipped
/// model (give --model).
[[nodiscard]] ImportResult import_nemo(const std::filesystem::path& file, const ImportOptions& options);

/// Whether `file` holds Megatron-LM arguments (an argument list with --num-layers and --hidden-size, or a functional
/// test's model_config.yaml with MODEL_ARGS).
[[nodiscard]] bool is_megatron_arguments(const std::filesystem::path& file);

/// Maps Megatron-LM arguments (a file of pretrain_gpt.py's arguments, or a model_config.yaml's MODEL_ARGS) to a run
/// config by the same mapping as NeMo configs, with Megatron-LM's defaults; the node count comes from
/// options.nodes (1 when not given, with a note). InputError naming the file and argument for a missing or
/// malformed argument.
[[nodiscard]] ImportResult import_megatron(const std::filesystem::path& file, const ImportOptions& options);

/// Whether `file` is a Megatron-Bridge config: ConfigContainer overrides (model/train/ddp sections, or their
/// *_config names) without NeMo's trainer, or a performance config with `perf_matrix`.
[[nodiscard]] bool is_bridge_config(const std::filesystem::path& file);

/// Maps a Megatron-Bridge config to a run config by the NeMo mapping (Megatron-Core's vocabulary), with Bridge's
/// recipe defaults (distributed optimizer, overlapped gradient reduce, Transformer Engine). A performance config's
/// `perf_matrix[gpu][num_gpus_N][precision]` entry is chosen by --hardware, --nodes (or its only GPU count) and
/// options.precision (bf16); the model comes from --model, the file's shape, or the recipe its name gives
/// (llama3_70b_llm_pretrain.yaml -> llama3-70b). InputError naming the file, line and key.
[[nodiscard]] ImportResult import_bridge(const std::filesystem::path& file, const ImportOptions& options);

/// Whether `file` is an llm-foundry training YAML (model.d_model and model.n_layers).
[[nodiscard]] bool is_foundry_config(const std::filesystem::path& file);

/// Maps an llm-foundry training YAML (MPT models by shape, Composer FSDP, attn_impl, loss) to a run config, by the
/// rules the validation table uses for llm-foundry's published throughput. InputError naming the file and key.
[[nodiscard]] ImportResult import_foundry(const std::filesystem::path& file, const ImportOptions& options);

/// Whether `file` is a torchtitan job config: a .toml train config or the .json job config its trainer writes,
/// with [model] name and a [parallelism] or [training] section.
[[nodiscard]] bool is_torchtitan_config(const std::filesystem::path& file);

/// Maps a torchtitan job (Llama 3 flavors by shape, FSDP2/HSDP, TP with sequence sharding, pipeline schedules,
/// activation checkpointing, float8) to a `framework: pytorch-eager` run config. InputError naming the file, line and
/// key for a malformed value or a flavor chopsim has no model for (give --model).
[[nodiscard]] ImportResult import_torchtitan(const std::filesystem::path& file, const ImportOptions& options);

/// Whether `file` is a Hugging Face transformers config.json (a JSON object with `architectures` and `hidden_size`).
[[nodiscard]] bool is_hf_config(const std::filesystem::path& file);

/// Maps a Hugging Face config.json of a decoder chopsim models (Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen3-MoE) to
/// a chopsim model file (configs/models); each value names its source key, and keys chopsim does not read are listed.
/// InputError naming the file and key for another architecture (those with parts chopsim does not model say which),
/// a missing or malformed key, or dense layers mixed with expert layers.
[[nodiscard]] ImportResult import_hf_model(const std::filesystem::path& file);

}  // namespace chopsim
