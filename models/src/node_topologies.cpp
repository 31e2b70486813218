// placeholder: node builders are being written; the registration keeps the build linking.
#include "chopsim/models/topology.hpp"

namespace chopsim {
void register_builtin_node_topologies(NodeTopologyRegistry& registry) {
  for (const char* name : {"nvswitch", "xgmi_mesh", "mi250_xgmi", "pcie"})
    registry.add(name, "not implemented yet", []() -> std::unique_ptr<NodeTopologyBuilder> { throw ModelError("not implemented yet"); });
}
}  // namespace chopsim
