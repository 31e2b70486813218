#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/models/thermal.hpp"

namespace chopsim {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// Lumped RC (Newton cooling through a thermal resistance; Incropera, "Fundamentals of Heat and Mass Transfer",
/// lumped capacitance method): T(t) = T_ss + (T0 - T_ss) exp(-t / (R C)), T_ss = T_inlet + P R.
class RcThermalModel final : public ThermalModel {
 public:
  explicit RcThermalModel(const ThermalParams& params) : params_(params) {
    if (!(params_.resistance_k_per_w > 0.0)) throw ModelError("thermal model: resistance must be positive");
    if (!(params_.capacitance_j_per_k > 0.0)) throw ModelError("thermal model: capacitance must be positive");
    tau_s_ = params_.resistance_k_per_w * params_.capacitance_j_per_k;
  }

  double steady_state_c(double inlet_c, double power_w) const override {
    return inlet_c + power_w * params_.resistance_k_per_w;
  }

  double advance_c(double temperature_c, double inlet_c, double power_w, double dt_s) const override {
    if (dt_s <= 0.0) return temperature_c;
    const double steady = steady_state_c(inlet_c, power_w);
    return steady + (temperature_c - steady) * std::exp(-dt_s / tau_s_);
  }

  double time_to_reach_s(double temperature_c, double inlet_c, double power_w, double target_c) const override {
    const double steady = steady_state_c(inlet_c, power_w);
    const double from = temperature_c - steady;
    const double to = target_c - steady;
    if (from == to) return 0.0;
    // The exponential approaches the steady state monotonically: the target is reached only if it lies between
    // the present temperature and the steady state (strictly before the asymptote).
    if (from == 0.0 || to == 0.0 || (from > 0.0) != (to > 0.0) || std::abs(to) > std::abs(from)) return kInfinity;
    return tau_s_ * std::log(from / to);
  }

  double power_for_steady_w(double inlet_c, double target_c) const override {
    return (target_c - inlet_c) / params_.resistance_k_per_w;
  }

  const ThermalParams& params() const override { return params_; }

 private:
  ThermalParams params_;
  double tau_s_ = 0.0;
};

}  // namespace

void register_builtin_thermal_models(ThermalModelRegistry& registry) {
  registry.add("rc", "one thermal RC per die: C dT/dt = P - (T - T_inlet)/R, closed form between events",
               [](const ThermalParams& params) { return std::make_unique<RcThermalModel>(params); });
}

double slot_inlet_c(const CoolingSpec& cooling, int rank, int gpus_per_node, int dies_per_package) {
  const int dies = dies_per_package > 0 ? dies_per_package : 1;
  const int per_node = gpus_per_node > 0 ? gpus_per_node : 1;
  const int slot = rank % per_node;
  const int packages = (per_node + dies - 1) / dies;
  switch (cooling.profile) {
    case CoolingSpec::Profile::uniform:
      return cooling.ambient_c;
    case CoolingSpec::Profile::front_to_back:
      return cooling.ambient_c + (slot / dies >= packages / 2 && packages > 1 ? cooling.rear_rise_k : 0.0);
    case CoolingSpec::Profile::per_slot: {
      const auto n = static_cast<int>(cooling.slot_offsets_k.size());
      if (n == per_node) return cooling.ambient_c + cooling.slot_offsets_k[static_cast<std::size_t>(slot)];
      if (n == packages) return cooling.ambient_c + cooling.slot_offsets_k[static_cast<std::size_t>(slot / dies)];
      throw ModelError("cooling: " + std::to_string(n) + " slot offsets for nodes of " + std::to_string(per_node) +
                       " GPUs (" + std::to_string(packages) + " packages)");
    }
  }
  return cooling.ambient_c;
}

}  // namespace chopsim
