#pragma once
// A fully decoded, validated run: what `chopsim run CONFIG` simulates. Plain data; produced by
// load_run_config() (config.hpp) and by sweeps and validation cases that build runs in code.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/models/cluster.hpp"
#include "chopsim/models/collective.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim {

/// Power, DVFS and thermal settings of a run (the `power:` and `thermal:` sections; docs/configs.md).
struct PowerRunSpec {
  /// false: no power model at all (every GPU at the rated clock, no telemetry): chopsim before power dynamics.
  bool dynamics = true;
  std::string power_model = "cv2f";    ///< name in the power model registry
  std::string thermal_model = "rc";    ///< name in the thermal model registry
  std::string governor = "firmware";   ///< name in the governor registry
  double cap_w = 0.0;                  ///< power cap per GPU (per GCD on MI250/MI250X); 0 = the hardware TDP
  double lock_clock_hz = 0.0;          ///< nvidia-smi -lgc style clock ceiling; 0 = none (boost, or rated if fixed)
  double telemetry_interval_s = 1e-3;  ///< sampling interval of the ops.h5 telemetry table
  std::optional<CoolingSpec> cooling;  ///< nullopt: the hardware file's cooling
  /// The GPUs start warm: at the steady-state temperature of this fraction of the cap (0 = idle power), as in a
  /// job that has been running (estimate: power-capped training GPUs average 90-100 % of the cap).
  double start_power_fraction = 0.9;
  /// Relative standard deviation of the dynamic power that chips of one product draw at the same clock and load
  /// (manufacturing variation). A synchronous job runs at the pace of its slowest chip: every GPU's governor holds the
  /// cap for the slowest of the run's GPUs (slowest_chip_dynamic_scale). Sinha et al. (SC'22, "Not All GPUs Are Created
  /// Equal": V100 and MI60 clusters) measured 8 % performance variation between a cluster's power-capped GPUs of one
  /// SKU, read as the range between the box plot's whiskers (about 5.4 standard deviations of a normal population):
  /// 1.5 % of performance. Under the cap the dynamic power grows about as the cube of the clock (f V^2 with V rising
  /// with f near the top of the curve), so 4.5 % of dynamic power. 0: identical chips.
  double chip_variation = 0.045;
};

struct RunSpec {
  std::string name;              ///< run name (defaults to the config file's stem)
  std::filesystem::path source;  ///< the run config file, empty for runs built in code
  /// Every file load_run_config read, in reading order: the run config, then its model, calibration profile,
  /// hardware and cluster files where it names them. With chopsim's build they decide the run's result (a sweep
  /// point's cache key hashes their text). Empty for runs built in code.
  std::vector<std::filesystem::path> input_files;
  TransformerSpec model;
  HardwareSpec hardware;
  ClusterSpec cluster;
  ParallelismSpec parallelism;
  TrainingSpec training;
  std::string compute_model = "roofline";  ///< name in the compute model registry
  std::string collective_model = "nccl";   ///< name in the collective model registry
  CollectiveParams collectives;
  std::string engine = "fast";  ///< name in the engine registry ("simgrid": the reference)
  EngineOptions engine_options;
  /// simulation.fold: a run that writes no per-op files simulates a few of its steady micro-batches and lets them
  /// stand for the rest, on an engine that folds (docs/design.md, "Folding"). Off by default: iteration time and
  /// every integral agree with the full run within 0.5 %, but extremes (peak power, the lowest clock) are those of
  /// the micro-batches simulated.
  bool fold = false;
  int iterations = 1;  ///< iterations simulated back to back
  PowerRunSpec power;
  /// The calibration profile applied to `hardware` and `collectives` (run key `calibration`,
  /// apply_calibration_profile()); empty = none.
  std::filesystem::path calibration;
};

}  // namespace chopsim
