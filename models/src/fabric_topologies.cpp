// Scale-out fabrics: switches that join the nodes' NICs.
//
// Both builders put NICs on leaf switches and join the leaves with a folded Clos (fat tree) built by
// add_clos_upper_levels():
// * Leaf capacity. A leaf has `leaf_downlinks` NIC ports and an uplink capacity of
//   leaf_downlinks * nic_bandwidth / oversubscription, split over S = round(capacity / uplink_bandwidth) uplinks of
//   capacity / S each (uplink_bandwidth = FabricSpec::uplink_bandwidth, or one NIC's rate when 0), one to each of S
//   spines. Oversubscription 2 thus halves what all NICs of a leaf can send off the leaf at once; one flow alone
//   still runs at the NIC rate. (nic_bandwidth is the nominal rate here; the NIC's own link carries
//   nic_bandwidth * nic_efficiency, what collectives achieve over it.)
// * Two levels while the spines' ports suffice: a spine is the same switch as a leaf, radix 2 * leaf_downlinks, so up
//   to 2 * leaf_downlinks leaves (2048 NICs with 32-port leaf halves, as the 64-port switches of a DGX SuperPOD).
// * Three levels beyond that: pods of leaf_downlinks leaves, each with its own S pod spines; pod spine j of every pod
//   joins core group j. The leaf_downlinks core switches of a group are reached only from pod spines j, so they
//   are merged into one logical switch whose link to each pod spine carries their whole bandwidth (the pod spine's
//   downlink capacity: no oversubscription above the leaves). ECMP across the merged cores is thereby taken as
//   perfectly balanced. Core groups have 2 * leaf_downlinks ports, so at most 2 * leaf_downlinks pods:
//   2 * leaf_downlinks^3 NICs (65,536 with 32-port halves); larger clusters are rejected.
// * Adaptive routing (FabricSpec::routing): a leaf's S uplinks are used by load, not by a flow's hash, so they act as
//   one link of S times the bandwidth to one logical spine (per pod, and one logical core above the pods). The
//   capacities between levels are those of the ECMP fabric; what changes is that no two flows can be hashed onto one
//   uplink while another idles. A flow alone is still held to its NIC's rate by the NIC's own link.
// * Latency: FabricSpec::switch_latency_s per switch traversal is split in halves over the two links a path uses at a
//   switch; a switch-to-switch link adds FabricSpec::cable_latency_s; a NIC's link adds HardwareSpec::nic_latency_s.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim {
namespace {

int add_switch(Topology& topology, std::string name) {
  TopologyVertex vertex;
  vertex.kind = VertexKind::switch_;
  vertex.name = std::move(name);
  return topology.add_vertex(std::move(vertex));
}

struct FabricParams {
  int downlinks = 0;
  int uplinks = 0;  ///< per leaf = spines per pod
  double uplink_bandwidth = 0.0;
  bool adaptive = false;  ///< FabricRouting::adaptive: each level's parallel uplinks as one link
  double nic_bandwidth = 0.0;
  double nic_link_latency = 0.0;
  double switch_link_latency = 0.0;
};

FabricParams fabric_params(const std::vector<std::vector<int>>& nics, const ClusterSpec& cluster,
                           const HardwareSpec& hardware) {
  const FabricSpec& fabric = cluster.fabric;
  if (nics.empty() || nics.front().empty())
    throw ModelError("topology: fabric '" + fabric.kind + "' joins nodes through NICs, but cluster '" + cluster.name +
                     "' has nics_per_node = 0");
  for (const auto& node_nics : nics)
    if (node_nics.size() != nics.front().size()) throw ModelError("topology: nodes have different NIC counts");
  if (!(hardware.nic_bandwidth_bytes_per_s > 0.0))
    throw ModelError("topology: hardware '" + hardware.name +
                     "' needs a positive nic_bandwidth for a multi-node fabric");
  if (fabric.leaf_downlinks < 1) throw ModelError("topology: fabric leaf_downlinks must be at least 1");
  if (!(fabric.oversubscription > 0.0)) throw ModelError("topology: fabric oversubscription must be positive");
  FabricParams p;
  p.downlinks = fabric.leaf_downlinks;
  // Switch ports are sized from the nominal NIC rate; the NIC's own link carries what collectives achieve over it
  // (HardwareSpec::nic_efficiency).
  const double nominal_nic = hardware.nic_bandwidth_bytes_per_s;
  p.nic_bandwidth = nominal_nic * hardware.nic_efficiency;
  const double capacity = p.downlinks * nominal_nic / fabric.oversubscription;
  const double link = fabric.uplink_bandwidth_bytes_per_s > 0.0 ? fabric.uplink_bandwidth_bytes_per_s : nominal_nic;
  p.uplinks = std::max(1, static_cast<int>(std::lround(capacity / link)));
  p.uplink_bandwidth = capacity / p.uplinks;
  p.nic_link_latency = hardware.nic_latency_s + fabric.switch_latency_s / 2;
  p.switch_link_latency = fabric.cable_latency_s + fabric.switch_latency_s;
  p.adaptive = fabric.routing == FabricRouting::adaptive;
  return p;
}

/// Spines (and pods and cores) above `leaves`, in the order given: see the file comment.
void add_clos_upper_levels(Topology& topology, const std::vector<int>& leaves, const FabricParams& p) {
  const auto leaf_count = static_cast<long long>(leaves.size());
  if (leaf_count <= 1) return;
  const long long radix = 2LL * p.downlinks;
  // Under adaptive routing the S spines a leaf reaches (per pod) are one logical spine, its S uplinks one link.
  const int spines = p.adaptive ? 1 : p.uplinks;
  const double leaf_uplink_bandwidth = p.adaptive ? p.uplinks * p.uplink_bandwidth : p.uplink_bandwidth;
  // Switch j of a level: "spine3", "core3"; under adaptive routing the one logical switch is "spine", "core".
  const auto numbered = [&](const std::string& name, int j) { return p.adaptive ? name : name + std::to_string(j); };
  if (leaf_count <= radix) {
    for (int j = 0; j < spines; ++j) {
      const int spine = add_switch(topology, numbered("spine", j));
      for (const int leaf : leaves)
        topology.add_link(leaf, spine, leaf_uplink_bandwidth, p.switch_link_latency, LinkClass::fabric);
    }
    return;
  }
  const long long pods = (leaf_count + p.downlinks - 1) / p.downlinks;
  if (pods > radix)
    throw ModelError("topology: " + std::to_string(leaf_count) + " leaf switches exceed the three-level limit of " +
                     std::to_string(radix * p.downlinks) + " leaves (" + std::to_string(radix) + " pods of " +
                     std::to_string(p.downlinks) + ") for leaf_downlinks = " + std::to_string(p.downlinks));
  std::vector<int> cores;
  for (int j = 0; j < spines; ++j) cores.push_back(add_switch(topology, numbered("core", j)));
  const double core_link_bandwidth = p.downlinks * leaf_uplink_bandwidth;
  for (long long pod = 0; pod < pods; ++pod) {
    for (int j = 0; j < spines; ++j) {
      const int spine = add_switch(topology, numbered("pod" + std::to_string(pod) + ".spine", j));
      const long long end = std::min(leaf_count, (pod + 1) * p.downlinks);
      for (long long l = pod * p.downlinks; l < end; ++l)
        topology.add_link(leaves[static_cast<std::size_t>(l)], spine, leaf_uplink_bandwidth, p.switch_link_latency,
                          LinkClass::fabric);
      topology.add_link(spine, cores[static_cast<std::size_t>(j)], core_link_bandwidth, p.switch_link_latency,
                        LinkClass::fabric);
    }
  }
}

/// Rail-optimized (NVIDIA DGX SuperPOD reference architecture): NIC r of every node goes to a rail-r leaf, so traffic
/// between GPUs with the same local index crosses one switch. Nodes form groups of leaf_downlinks (a scalable unit);
/// each (rail, group) has its own leaf, "rail<r>" with one group or "rail<r>.leaf<g>" with several. All leaves join
/// one Clos above them (file comment), ordered rail-major so that a pod holds leaves of one rail: rail-aligned
/// traffic between groups stays in the pod and only cross-rail traffic reaches the cores.
class RailOptimizedFabric final : public FabricTopologyBuilder {
 public:
  void connect(Topology& topology, const std::vector<std::vector<int>>& nics, const ClusterSpec& cluster,
               const HardwareSpec& hardware) const override {
    if (nics.size() <= 1) return;  // one node needs no fabric
    const FabricParams p = fabric_params(nics, cluster, hardware);
    const int nodes = static_cast<int>(nics.size());
    const int rails = static_cast<int>(nics.front().size());
    const int groups = (nodes + p.downlinks - 1) / p.downlinks;
    std::vector<int> leaves;
    for (int r = 0; r < rails; ++r)
      for (int g = 0; g < groups; ++g)
        leaves.push_back(add_switch(topology, groups == 1 ? "rail" + std::to_string(r)
                                                          : "rail" + std::to_string(r) + ".leaf" + std::to_string(g)));
    for (int n = 0; n < nodes; ++n)
      for (int r = 0; r < rails; ++r)
        topology.add_link(nics[static_cast<std::size_t>(n)][static_cast<std::size_t>(r)],
                          leaves[static_cast<std::size_t>(r * groups + n / p.downlinks)], p.nic_bandwidth,
                          p.nic_link_latency, LinkClass::nic);
    add_clos_upper_levels(topology, leaves, p);
  }
};

/// Fat tree: NICs in node-major order (node 0's NICs, then node 1's, ...) fill leaves of leaf_downlinks ports,
/// "leaf<l>"; the leaves join the Clos of the file comment.
class FatTreeFabric final : public FabricTopologyBuilder {
 public:
  void connect(Topology& topology, const std::vector<std::vector<int>>& nics, const ClusterSpec& cluster,
               const HardwareSpec& hardware) const override {
    if (nics.size() <= 1) return;  // one node needs no fabric
    const FabricParams p = fabric_params(nics, cluster, hardware);
    std::vector<int> leaves;
    long long index = 0;
    for (const auto& node_nics : nics) {
      for (const int nic : node_nics) {
        const auto leaf = static_cast<std::size_t>(index / p.downlinks);
        if (leaf == leaves.size()) leaves.push_back(add_switch(topology, "leaf" + std::to_string(leaf)));
        topology.add_link(nic, leaves[leaf], p.nic_bandwidth, p.nic_link_latency, LinkClass::nic);
        ++index;
      }
    }
    add_clos_upper_levels(topology, leaves, p);
  }
};

/// A single node: nothing to connect.
class NoFabric final : public FabricTopologyBuilder {
 public:
  void connect(Topology&, const std::vector<std::vector<int>>& nics, const ClusterSpec& cluster,
               const HardwareSpec&) const override {
    if (nics.size() > 1)
      throw ModelError("topology: fabric 'none' is for a single node, but cluster '" + cluster.name + "' has " +
                       std::to_string(nics.size()) + " nodes; use 'rail_optimized' or 'fat_tree'");
  }
};

template <class Builder>
FabricTopologyRegistry::Factory factory() {
  return []() -> std::unique_ptr<FabricTopologyBuilder> { return std::make_unique<Builder>(); };
}

}  // namespace

void register_builtin_fabric_topologies(FabricTopologyRegistry& registry) {
  registry.add("rail_optimized", "NIC r of every node on rail-r leaves, leaves joined by a Clos of spines",
               factory<RailOptimizedFabric>());
  registry.add("fat_tree", "leaf/spine Clos with oversubscription at the leaves, three levels when large",
               factory<FatTreeFabric>());
  registry.add("none", "single node, no scale-out fabric", factory<NoFabric>());
}

}  // namespace chopsim
