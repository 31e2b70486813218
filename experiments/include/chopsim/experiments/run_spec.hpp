#pragma once
// A fully decoded, validated run: what `chopsim run CONFIG` simulates. Plain data; produced by
// load_run_config() (config.hpp) and by sweeps and validation cases that build runs in code.

#include <cstdint>
#include <filesystem>
#include <string>

#include "chopsim/models/cluster.hpp"
#include "chopsim/models/collective.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim {

struct RunSpec {
  std::string name;              ///< run name (defaults to the config file's stem)
  std::filesystem::path source;  ///< the run config file, empty for runs built in code
  TransformerSpec model;
  HardwareSpec hardware;
  ClusterSpec cluster;
  ParallelismSpec parallelism;
  TrainingSpec training;
  std::string compute_model = "roofline";  ///< name in the compute model registry
  std::string collective_model = "nccl";   ///< name in the collective model registry
  CollectiveParams collectives;
  std::string engine = "simgrid";  ///< name in the engine registry
  EngineOptions engine_options;
  int iterations = 1;  ///< iterations simulated back to back
};

}  // namespace chopsim
