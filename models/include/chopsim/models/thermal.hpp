#pragma once
// Temperature of one GPU die: a lumped RC model, C dT/dt = P - (T - T_inlet) / R, integrated in closed form
// between events (power is constant between events). Steady state T = T_inlet + P R, time constant R C.
// Temperatures are absolute in °C; differences are in K.
//
// MI250/MI250X: each GCD is its own die with its own RC state; the two GCDs of a package share the package's
// power limit (governor.hpp) but not their thermal state. Heat flowing between the dies of a package through the
// shared substrate and cold plate is not modelled; both dies see the slot's inlet temperature.

#include <vector>

#include "chopsim/common/registry.hpp"

namespace chopsim {

struct ThermalParams {
  double resistance_k_per_w = 0.0;   ///< die to inlet (air or coolant), K/W
  double capacitance_j_per_k = 0.0;  ///< die, package and heat sink lumped, J/K
  double slowdown_c = 90.0;          ///< the firmware throttles at or above this temperature (°C)
};

class ThermalModel {
 public:
  virtual ~ThermalModel() = default;
  /// Temperature approached at constant power: T_inlet + P R.
  [[nodiscard]] virtual double steady_state_c(double inlet_c, double power_w) const = 0;
  /// Temperature after `dt_s` at constant `power_w`, starting from `temperature_c`.
  [[nodiscard]] virtual double advance_c(double temperature_c, double inlet_c, double power_w, double dt_s) const = 0;
  /// Time until the temperature reaches `target_c` at constant power; +infinity when it never does
  /// (0 when it is already there and heading past it).
  [[nodiscard]] virtual double time_to_reach_s(double temperature_c, double inlet_c, double power_w,
                                               double target_c) const = 0;
  /// The constant power whose steady state is `target_c`: (target - inlet) / R.
  [[nodiscard]] virtual double power_for_steady_w(double inlet_c, double target_c) const = 0;
  [[nodiscard]] virtual const ThermalParams& params() const = 0;
};

using ThermalModelRegistry = Registry<ThermalModel, const ThermalParams&>;
/// "rc": one thermal resistance and capacitance per die, closed-form exponential response.
void register_builtin_thermal_models(ThermalModelRegistry& registry);

/// Where the cooling air (or coolant) enters each GPU slot of a node.
struct CoolingSpec {
  enum class Profile { uniform, front_to_back, per_slot };
  double ambient_c = 25.0;  ///< cold-aisle air or coolant supply temperature: the inlet of the front slots (°C)
  Profile profile = Profile::front_to_back;
  /// front_to_back: air crosses the front half of a node's GPUs before the rear half, whose inlet is this much
  /// warmer (K). The rear half is slots gpus_per_node/2 .. gpus_per_node-1 (packages, for multi-die GPUs).
  double rear_rise_k = 0.0;
  /// per_slot: inlet offset of each slot of a node (K), gpus_per_node entries (or one per package).
  std::vector<double> slot_offsets_k;
};

/// Inlet temperature (°C) of the GPU `rank` in a cluster of nodes with `gpus_per_node` GPUs whose packages hold
/// `dies_per_package` of them (both dies of a package share a slot).
[[nodiscard]] double slot_inlet_c(const CoolingSpec& cooling, int rank, int gpus_per_node, int dies_per_package);

}  // namespace chopsim
