// Helpers of the collective tests (collective_test.cpp, collective_rings_test.cpp): topologies, the NCCL model, plans.
#pragma once

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim::collective_test {

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// n GPUs, each with one link of bandwidth `bw` and latency alpha/2 to one switch: every route has bandwidth bw and
/// latency alpha, and each GPU's link direction is its own. `node_per_gpu` puts each GPU on its own node.
inline Topology uniform_star(int n, double bw, double alpha, bool node_per_gpu = false) {
  Topology t;
  const int sw = t.add_vertex({VertexKind::switch_, "switch", -1, -1});
  for (int i = 0; i < n; ++i) {
    const int g = t.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, node_per_gpu ? i : 0});
    t.add_link({g, sw, bw, alpha / 2, LinkClass::fabric, "link" + std::to_string(i)});
  }
  return t;
}

inline HardwareSpec h100() {
  HardwareSpec h;
  h.name = "H100-test";
  h.intra_node_link_bandwidth_bytes_per_s = 25 * kGB;
  h.intra_node_links_per_gpu = 18;
  h.intra_node_link_latency_s = 1e-6;
  h.pcie_bandwidth_bytes_per_s = 64 * kGB;
  h.nic_bandwidth_bytes_per_s = 50 * kGB;
  h.nic_latency_s = 2e-6;
  h.dies_per_package = 2;  // used by the MI250 node only
  h.in_package_link_bandwidth_bytes_per_s = 200 * kGB;
  return h;
}

inline Topology cluster(const std::string& node_topology, int nodes, int nics_per_node = 8) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.node_topology = node_topology;
  c.nics_per_node = nics_per_node;
  c.fabric.kind = nodes > 1 ? "rail_optimized" : "none";
  c.fabric.leaf_downlinks = 8;
  NodeTopologyRegistry node_registry("node topology");
  register_builtin_node_topologies(node_registry);
  FabricTopologyRegistry fabric_registry("fabric");
  register_builtin_fabric_topologies(fabric_registry);
  return build_topology(c, h100(), node_registry, fabric_registry);
}

inline std::unique_ptr<CollectiveModel> nccl(const CollectiveParams& params = {}) {
  CollectiveModelRegistry registry("collective model");
  register_builtin_collective_models(registry);
  return registry.create("nccl", params);
}

inline std::vector<CollectivePlan> plans(const CollectiveModel& model, const CollectiveCall& call, const Topology& t) {
  std::vector<CollectivePlan> out;
  for (int me = 0; me < static_cast<int>(call.members.size()); ++me) out.push_back(model.plan(call, me, t));
  return out;
}

inline double bytes_sent(const CollectivePlan& plan) {
  double total = 0.0;
  for (const auto& step : plan.steps)
    for (const Transfer& t : step.sends) total += t.bytes;
  return total;
}

inline std::vector<int> first(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace chopsim::collective_test
