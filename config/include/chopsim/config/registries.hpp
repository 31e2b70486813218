#pragma once
// Every registry chopsim looks names up in, as one object (no global state: tests may build several).

#include "chopsim/models/collective.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/power.hpp"
#include "chopsim/models/thermal.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim {

struct ModelRegistries {
  ComputeModelRegistry compute{"compute model"};
  CollectiveModelRegistry collective{"collective model"};
  NodeTopologyRegistry node_topology{"node topology"};
  FabricTopologyRegistry fabric_topology{"fabric topology"};
  EngineRegistry engine{"engine"};
  PowerModelRegistry power{"power model"};
  ThermalModelRegistry thermal{"thermal model"};
  GovernorRegistry governor{"governor"};

  /// Registries holding every built-in model.
  [[nodiscard]] static ModelRegistries with_builtins();
};

}  // namespace chopsim
