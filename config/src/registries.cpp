#include "chopsim/config/registries.hpp"

namespace chopsim {

ModelRegistries ModelRegistries::with_builtins() {
  ModelRegistries registries;
  register_builtin_compute_models(registries.compute);
  register_builtin_collective_models(registries.collective);
  register_builtin_node_topologies(registries.node_topology);
  register_builtin_fabric_topologies(registries.fabric_topology);
  register_builtin_engines(registries.engine);
  register_builtin_power_models(registries.power);
  register_builtin_thermal_models(registries.thermal);
  register_builtin_governors(registries.governor);
  return registries;
}

}  // namespace chopsim
