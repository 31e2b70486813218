#pragma once
// `chopsim import` (issue 18; docs/import.md): a training job as a framework describes it, turned into a chopsim run
// config by one general mapping, with every setting it could not carry over listed.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/experiments/config.hpp"

namespace chopsim {

struct ImportOptions {
  std::string hardware;      ///< a hardware name of the configs (none of the job formats names the GPU)
  std::string cluster;       ///< a cluster name (the fabric)
  std::optional<int> nodes;  ///< overrides the job's node count
  std::string model;         ///< a model name; empty: the shipped model whose shape matches the job's
  ConfigSearchPath search;   ///< where hardware, clusters and models are found
};

struct ImportResult {
  std::string format;              ///< "nemo"
  std::string yaml;                ///< the run config
  std::vector<std::string> notes;  ///< settings of the job chopsim does not model, or reads differently
};

/// The format of a job file ("nemo"), or "" when it is none chopsim imports.
[[nodiscard]] std::string detect_job_format(const std::filesystem::path& file);

/// Maps a NeMo (Megatron-Core) training config to a run config. InputError naming the file and key for a job that is
/// not pre-training (LoRA/PEFT, inference), a missing or malformed key, or a model shape that matches no shipped
/// model (give --model).
[[nodiscard]] ImportResult import_nemo(const std::filesystem::path& file, const ImportOptions& options);

}  // namespace chopsim
