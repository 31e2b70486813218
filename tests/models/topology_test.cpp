// Topology builders and routing: counts follow from the stated constructions (docs in node_topologies.cpp and
// fabric_topologies.cpp), routes from the routing rule (fewest hops, no GPU transit, widest, ECMP by hash).

#include "chopsim/models/topology.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim {
namespace {

constexpr double kGB = 1e9;

/// DGX H100 (NVIDIA DGX H100 user guide): 18 NVLink 4 links of 25 GB/s per direction per GPU, 8 ConnectX-7 400 Gb/s
/// NICs (50 GB/s), PCIe Gen5 x16 (64 GB/s).
HardwareSpec h100() {
  HardwareSpec h;
  h.name = "H100-test";
  h.intra_node_link_bandwidth_bytes_per_s = 25 * kGB;
  h.intra_node_links_per_gpu = 18;
  h.intra_node_link_latency_s = 1e-6;
  h.pcie_bandwidth_bytes_per_s = 64 * kGB;
  h.nic_bandwidth_bytes_per_s = 50 * kGB;
  h.nic_latency_s = 2e-6;
  return h;
}

ClusterSpec dgx(int nodes, const std::string& fabric, int leaf_downlinks = 32, double oversubscription = 1.0) {
  ClusterSpec c;
  c.name = "dgx-test";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.node_topology = "nvswitch";
  c.nics_per_node = 8;
  c.fabric.kind = fabric;
  c.fabric.leaf_downlinks = leaf_downlinks;
  c.fabric.oversubscription = oversubscription;
  c.fabric.switch_latency_s = 0.5e-6;
  c.fabric.cable_latency_s = 0.1e-6;
  return c;
}

Topology build(const ClusterSpec& cluster, const HardwareSpec& hardware) {
  NodeTopologyRegistry nodes("node topology");
  register_builtin_node_topologies(nodes);
  FabricTopologyRegistry fabrics("fabric");
  register_builtin_fabric_topologies(fabrics);
  return build_topology(cluster, hardware, nodes, fabrics);
}

int count(const Topology& t, VertexKind kind) {
  int n = 0;
  for (const auto& v : t.vertices()) n += v.kind == kind ? 1 : 0;
  return n;
}

int count(const Topology& t, LinkClass link_class) {
  int n = 0;
  for (const auto& l : t.links()) n += l.link_class == link_class ? 1 : 0;
  return n;
}

/// The vertices a route visits after `from` (the last one is `to`).
std::vector<int> path_vertices(const Topology& t, int from, int to) {
  std::vector<int> out;
  int v = t.gpu_vertex(from);
  for (const RouteHop& hop : t.route(from, to)) {
    const TopologyLink& link = t.links()[static_cast<std::size_t>(hop.link)];
    EXPECT_EQ(hop.forward ? link.u : link.v, v) << "route is not a connected path";
    v = hop.forward ? link.v : link.u;
    out.push_back(v);
  }
  return out;
}

TEST(Topology, DgxH100NodeHasGpusNvswitchAndNics) {
  const Topology t = build(dgx(1, "none"), h100());
  EXPECT_EQ(t.gpu_count(), 8);
  EXPECT_EQ(t.node_count(), 1);
  EXPECT_EQ(count(t, VertexKind::gpu), 8);
  EXPECT_EQ(count(t, VertexKind::switch_), 1);  // the NVSwitch fabric as one non-blocking switch
  EXPECT_EQ(count(t, VertexKind::nic), 8);
  EXPECT_EQ(t.vertices().size(), 17u);
  EXPECT_EQ(count(t, LinkClass::nvlink), 8);
  EXPECT_EQ(count(t, LinkClass::pcie), 8);
  EXPECT_EQ(t.links().size(), 16u);
  // GPU to GPU through the NVSwitch: 18 x 25 GB/s = 450 GB/s per direction, the stated GPU-to-GPU latency.
  EXPECT_EQ(t.route(0, 5).size(), 2u);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 5), 450 * kGB);
  EXPECT_DOUBLE_EQ(t.route_latency(0, 5), 1e-6);
}

TEST(Topology, FourNodeRailOptimizedCounts) {
  const int leaf_downlinks = 4;
  const Topology t = build(dgx(4, "rail_optimized", leaf_downlinks), h100());
  // One leaf per rail (4 nodes fit one group of 4); spines = leaf_downlinks * B / oversubscription / B = 4.
  const int rails = 8, spines = leaf_downlinks;
  EXPECT_EQ(t.gpu_count(), 32);
  EXPECT_EQ(t.node_count(), 4);
  EXPECT_EQ(count(t, VertexKind::switch_), 4 * 1 + rails + spines);  // NVSwitches, rail leaves, spines
  EXPECT_EQ(static_cast<int>(t.vertices().size()), 4 * 17 + rails + spines);
  EXPECT_EQ(count(t, LinkClass::nic), 4 * 8);
  EXPECT_EQ(count(t, LinkClass::fabric), rails * spines);
  EXPECT_EQ(static_cast<int>(t.links().size()), 4 * 16 + 4 * 8 + rails * spines);
}

TEST(Topology, RouteInsideANodeStaysInTheNode) {
  const Topology t = build(dgx(4, "rail_optimized", 4), h100());
  for (int node = 0; node < 4; ++node)
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b) {
        if (a == b) continue;
        for (const int v : path_vertices(t, node * 8 + a, node * 8 + b))
          EXPECT_EQ(t.vertices()[static_cast<std::size_t>(v)].node, node);
        EXPECT_EQ(t.route(node * 8 + a, node * 8 + b).size(), 2u);
      }
}

TEST(Topology, RailAlignedRouteCrossesOneRailSwitch) {
  const auto hw = h100();
  const auto cluster = dgx(4, "rail_optimized", 4);
  const Topology t = build(cluster, hw);
  const int from = 0 * 8 + 3, to = 2 * 8 + 3;  // local GPU 3 on nodes 0 and 2: rail 3
  const auto path = path_vertices(t, from, to);
  ASSERT_EQ(path.size(), 4u);  // NIC, rail switch, NIC, GPU
  int switches = 0;
  for (const int v : path) {
    const auto& vertex = t.vertices()[static_cast<std::size_t>(v)];
    if (vertex.kind == VertexKind::switch_) {
      ++switches;
      EXPECT_EQ(vertex.name, "rail3");
    }
  }
  EXPECT_EQ(switches, 1);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(from, to), hw.nic_bandwidth_bytes_per_s);
  // Two NIC links (each nic latency + half a switch traversal); the PCIe links carry no latency.
  EXPECT_DOUBLE_EQ(t.route_latency(from, to), 2 * hw.nic_latency_s + cluster.fabric.switch_latency_s);
}

TEST(Topology, CrossRailRouteGoesThroughASpine) {
  const Topology t = build(dgx(4, "rail_optimized", 4), h100());
  const auto path = path_vertices(t, 0, 8 + 1);  // local 0 -> local 1: rails 0 and 1
  ASSERT_EQ(path.size(), 6u);                    // NIC, rail0, spine, rail1, NIC, GPU
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[1])].name, "rail0");
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[2])].name.rfind("spine", 0), 0u);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[3])].name, "rail1");
}

TEST(Topology, RoutesNeverTransitAnotherGpu) {
  const Topology t = build(dgx(2, "fat_tree", 4), h100());
  for (int a = 0; a < t.gpu_count(); ++a)
    for (int b = 0; b < t.gpu_count(); ++b) {
      if (a == b) continue;
      const auto path = path_vertices(t, a, b);
      for (std::size_t i = 0; i + 1 < path.size(); ++i)
        EXPECT_NE(t.vertices()[static_cast<std::size_t>(path[i])].kind, VertexKind::gpu);
      EXPECT_EQ(path.back(), t.gpu_vertex(b));
    }
}

/// Sum of the bandwidths of the links from `leaf` to switches above it.
double uplink_capacity(const Topology& t, const std::string& leaf) {
  double total = 0.0;
  for (const auto& link : t.links()) {
    if (link.link_class != LinkClass::fabric) continue;
    if (t.vertices()[static_cast<std::size_t>(link.u)].name == leaf) total += link.bandwidth_bytes_per_s;
  }
  return total;
}

TEST(Topology, FatTreeOversubscriptionDividesLeafUplinkCapacity) {
  const auto hw = h100();
  for (const double oversubscription : {1.0, 2.0, 4.0}) {
    const Topology t = build(dgx(2, "fat_tree", 8, oversubscription), hw);
    // 16 NICs on leaves of 8: two leaves, each with uplinks summing to 8 * B / oversubscription.
    EXPECT_EQ(count(t, VertexKind::switch_), 2 + 2 + static_cast<int>(8 / oversubscription));
    EXPECT_DOUBLE_EQ(uplink_capacity(t, "leaf0"), 8 * hw.nic_bandwidth_bytes_per_s / oversubscription);
    EXPECT_DOUBLE_EQ(uplink_capacity(t, "leaf1"), 8 * hw.nic_bandwidth_bytes_per_s / oversubscription);
    // A single flow between leaves still runs at the NIC rate; the limit appears when all NICs send.
    EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 8), hw.nic_bandwidth_bytes_per_s);
  }
  // Fatter uplinks than NICs: fewer, wider links, same capacity.
  auto cluster = dgx(2, "fat_tree", 8, 2.0);
  cluster.fabric.uplink_bandwidth_bytes_per_s = 4 * hw.nic_bandwidth_bytes_per_s;
  const Topology t = build(cluster, hw);
  EXPECT_DOUBLE_EQ(uplink_capacity(t, "leaf0"), 4 * hw.nic_bandwidth_bytes_per_s);
  EXPECT_EQ(count(t, LinkClass::fabric), 2 * 1);
}

TEST(Topology, ThreeLevelFatTreeBeyondSpineRadix) {
  // leaf_downlinks 2: switches have 4 ports, so two levels hold 4 leaves. 2 nodes x 8 NICs = 8 leaves -> 4 pods of 2
  // leaves (the most core groups of 4 ports can join).
  const Topology t = build(dgx(2, "fat_tree", 2), h100());
  // NIC 0 of node 0 is on leaf 0 (pod 0), NIC 0 of node 1 on leaf 4 (pod 2): leaf, pod spine, core, pod spine, leaf.
  const auto path = path_vertices(t, 0, 8);
  ASSERT_EQ(path.size(), 8u);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[1])].name, "leaf0");
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[3])].name.rfind("core", 0), 0u);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[5])].name, "leaf4");
  // 3 nodes: 12 leaves, 6 pods > 4: beyond the stated limit.
  EXPECT_THROW((void)build(dgx(3, "fat_tree", 2), h100()), ModelError);
}

TEST(Topology, NoFabricRejectsSeveralNodes) {
  EXPECT_THROW((void)build(dgx(2, "none"), h100()), ModelError);
  EXPECT_THROW((void)build(dgx(1, "torus"), h100()), UnknownNameError);
}

TEST(Topology, EcmpIsDeterministicAndSpreadsOverSpines) {
  const auto cluster = dgx(4, "fat_tree", 4);
  const Topology a = build(cluster, h100());
  const Topology b = build(cluster, h100());
  // Ask b in the reverse order: the choice must not depend on the cache history.
  for (int x = b.gpu_count() - 1; x >= 0; --x)
    for (int y = b.gpu_count() - 1; y >= 0; --y) (void)b.route(x, y);
  std::set<std::string> spines;
  for (int x = 0; x < a.gpu_count(); ++x)
    for (int y = 0; y < a.gpu_count(); ++y) {
      const auto& ra = a.route(x, y);
      const auto& rb = b.route(x, y);
      ASSERT_EQ(ra.size(), rb.size());
      for (std::size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(ra[i].link, rb[i].link);
        EXPECT_EQ(ra[i].forward, rb[i].forward);
      }
      for (const int v : path_vertices(a, x, y))
        if (a.vertices()[static_cast<std::size_t>(v)].name.rfind("spine", 0) == 0)
          spines.insert(a.vertices()[static_cast<std::size_t>(v)].name);
    }
  EXPECT_EQ(spines.size(), 4u);  // every equal-cost spine carries some flows
}

TEST(Topology, AdaptiveRoutingJoinsEachLevelsUplinksIntoOneLink) {
  // Adaptive routing: a leaf's uplinks act as one link of their summed bandwidth to one logical spine, so the fabric
  // offers the same capacity as ECMP's but no choice of spine. Two levels: 4 nodes x 8 NICs on leaves of 4 = 8 leaves.
  const auto hw = h100();
  auto ecmp = dgx(4, "fat_tree", 4);
  auto adaptive = ecmp;
  adaptive.fabric.routing = FabricRouting::adaptive;
  const Topology e = build(ecmp, hw);
  const Topology a = build(adaptive, hw);
  EXPECT_EQ(count(e, LinkClass::fabric), 8 * 4);  // 8 leaves x 4 spines
  EXPECT_EQ(count(a, LinkClass::fabric), 8);      // 8 leaves x 1 logical spine
  EXPECT_DOUBLE_EQ(uplink_capacity(a, "leaf0"), uplink_capacity(e, "leaf0"));
  EXPECT_DOUBLE_EQ(uplink_capacity(a, "leaf0"), 4 * hw.nic_bandwidth_bytes_per_s);
  // A flow alone still runs at its NIC's rate; a route crosses leaf, spine, leaf as under ECMP.
  EXPECT_DOUBLE_EQ(a.route_bandwidth(0, 31), hw.nic_bandwidth_bytes_per_s);
  EXPECT_EQ(path_vertices(a, 0, 31).size(), path_vertices(e, 0, 31).size());
  // Three levels (leaves of 2: 2 nodes -> 8 leaves in 4 pods): one spine per pod, one core, the same capacities.
  auto ecmp3 = dgx(2, "fat_tree", 2);
  auto adaptive3 = ecmp3;
  adaptive3.fabric.routing = FabricRouting::adaptive;
  const Topology e3 = build(ecmp3, hw);
  const Topology a3 = build(adaptive3, hw);
  EXPECT_EQ(count(a3, VertexKind::switch_), 2 + 8 + 4 + 1);  // the nodes' NVSwitches, leaves, pod spines, core
  EXPECT_DOUBLE_EQ(uplink_capacity(a3, "leaf0"), uplink_capacity(e3, "leaf0"));
  double ecmp_core = 0.0, adaptive_core = 0.0;
  for (const auto& link : e3.links())
    if (e3.vertices()[static_cast<std::size_t>(link.v)].name.rfind("core", 0) == 0)
      ecmp_core += link.bandwidth_bytes_per_s;
  for (const auto& link : a3.links())
    if (a3.vertices()[static_cast<std::size_t>(link.v)].name.rfind("core", 0) == 0)
      adaptive_core += link.bandwidth_bytes_per_s;
  EXPECT_GT(adaptive_core, 0.0);
  EXPECT_DOUBLE_EQ(adaptive_core, ecmp_core);
  const auto path = path_vertices(a3, 0, 8);
  ASSERT_EQ(path.size(), 8u);
  EXPECT_EQ(a3.vertices()[static_cast<std::size_t>(path[3])].name, "core");
}

TEST(Topology, RoutesDoNotDependOnTheOrderTheyAreAskedIn) {
  // A route's search and its scratch state are shared across routes: 128 GPUs asked source-major and, on a second
  // topology, destination-major in reverse must give the same routes (hops, directions, ECMP choices).
  for (const char* fabric : {"fat_tree", "rail_optimized"}) {
    SCOPED_TRACE(fabric);
    const auto cluster = dgx(16, fabric, 4);
    const Topology a = build(cluster, h100());
    const Topology b = build(cluster, h100());
    const int n = a.gpu_count();
    ASSERT_EQ(n, 128);
    for (int to = n - 1; to >= 0; --to)
      for (int from = n - 1; from >= 0; --from) (void)b.route(from, to);
    for (int from = 0; from < n; ++from)
      for (int to = 0; to < n; ++to) {
        const auto& ra = a.route(from, to);
        const auto& rb = b.route(from, to);
        ASSERT_EQ(ra.size(), rb.size()) << from << " -> " << to;
        for (std::size_t h = 0; h < ra.size(); ++h) {
          EXPECT_EQ(ra[h].link, rb[h].link) << from << " -> " << to;
          EXPECT_EQ(ra[h].forward, rb[h].forward) << from << " -> " << to;
        }
      }
  }
}

/// Independent of the topology's search: hop distances to `target` over the whole graph by plain breadth-first search
/// (GPUs other than the target are reached but never passed through), and the widest bottleneck over shortest paths.
struct Oracle {
  std::vector<int> hops;
  std::vector<double> width;
};

Oracle oracle_to(const Topology& t, int target) {
  const std::size_t n = t.vertices().size();
  std::vector<std::vector<std::pair<int, double>>> adjacent(n);
  for (const TopologyLink& link : t.links()) {
    adjacent[static_cast<std::size_t>(link.u)].emplace_back(link.v, link.bandwidth_bytes_per_s);
    adjacent[static_cast<std::size_t>(link.v)].emplace_back(link.u, link.bandwidth_bytes_per_s);
  }
  Oracle o{std::vector<int>(n, -1), std::vector<double>(n, 0.0)};
  std::vector<int> order{target};
  o.hops[static_cast<std::size_t>(target)] = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int v = order[i];
    if (v != target && t.vertices()[static_cast<std::size_t>(v)].kind == VertexKind::gpu) continue;
    for (const auto& [w, bw] : adjacent[static_cast<std::size_t>(v)])
      if (o.hops[static_cast<std::size_t>(w)] < 0) {
        o.hops[static_cast<std::size_t>(w)] = o.hops[static_cast<std::size_t>(v)] + 1;
        order.push_back(w);
      }
  }
  o.width[static_cast<std::size_t>(target)] = std::numeric_limits<double>::infinity();
  for (std::size_t i = 1; i < order.size(); ++i) {
    const int v = order[i];
    for (const auto& [w, bw] : adjacent[static_cast<std::size_t>(v)]) {
      const bool through = w == target || t.vertices()[static_cast<std::size_t>(w)].kind != VertexKind::gpu;
      if (through && o.hops[static_cast<std::size_t>(w)] == o.hops[static_cast<std::size_t>(v)] - 1)
        o.width[static_cast<std::size_t>(v)] =
            std::max(o.width[static_cast<std::size_t>(v)], std::min(bw, o.width[static_cast<std::size_t>(w)]));
    }
  }
  return o;
}

TEST(Topology, RoutesAreShortestAndWidestAgainstAFullSearch) {
  // The topology finds a route by a search from both ends that stops where they meet; a full breadth-first search
  // from the destination over the whole graph must agree on the length and the bottleneck of every route, on
  // fabrics with two and three switch levels, oversubscription, shared NICs and PCIe detours.
  std::vector<std::pair<std::string, ClusterSpec>> clusters;
  clusters.emplace_back("rail_optimized", dgx(8, "rail_optimized", 4));
  clusters.emplace_back("fat_tree 2:1", dgx(4, "fat_tree", 4, 2.0));
  clusters.emplace_back("fat_tree, three levels", dgx(2, "fat_tree", 2));
  auto shared_nics = dgx(4, "fat_tree", 4);
  shared_nics.nics_per_node = 2;
  clusters.emplace_back("two shared NICs per node", shared_nics);
  auto pcie = dgx(2, "fat_tree", 4);
  pcie.node_topology = "pcie";
  pcie.nics_per_node = 2;
  clusters.emplace_back("pcie nodes", pcie);
  for (const auto& [label, cluster] : clusters) {
    SCOPED_TRACE(label);
    const Topology t = build(cluster, h100());
    for (int to = 0; to < t.gpu_count(); ++to) {
      const Oracle o = oracle_to(t, t.gpu_vertex(to));
      for (int from = 0; from < t.gpu_count(); ++from) {
        if (from == to) continue;
        const int hops = o.hops[static_cast<std::size_t>(t.gpu_vertex(from))];
        ASSERT_GT(hops, 0);
        EXPECT_EQ(static_cast<int>(t.route(from, to).size()), hops) << from << " -> " << to;
        EXPECT_EQ(t.route_bandwidth(from, to), o.width[static_cast<std::size_t>(t.gpu_vertex(from))])
            << from << " -> " << to;
        const auto path = path_vertices(t, from, to);
        ASSERT_FALSE(path.empty());
        EXPECT_EQ(path.back(), t.gpu_vertex(to));
      }
    }
  }
}

TEST(Topology, XgmiMeshJoinsEveryPairDirectly) {
  HardwareSpec mi300x;  // AMD Instinct MI300X data sheet: 7 x 64 GB/s xGMI links per GPU, 400 Gb/s NICs
  mi300x.name = "MI300X-test";
  mi300x.intra_node_link_bandwidth_bytes_per_s = 64 * kGB;
  mi300x.intra_node_links_per_gpu = 7;
  mi300x.intra_node_link_latency_s = 1e-6;
  mi300x.pcie_bandwidth_bytes_per_s = 64 * kGB;
  mi300x.nic_bandwidth_bytes_per_s = 50 * kGB;
  auto cluster = dgx(1, "none");
  cluster.node_topology = "xgmi_mesh";
  const Topology t = build(cluster, mi300x);
  EXPECT_EQ(count(t, LinkClass::xgmi), 8 * 7 / 2);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        EXPECT_EQ(t.route(a, b).size(), 1u);
        EXPECT_DOUBLE_EQ(t.route_bandwidth(a, b), 64 * kGB);
      }
}

TEST(Topology, Mi250NodeFollowsFrontierLayout) {
  HardwareSpec mi250x;  // OLCF Frontier user guide: 200 GB/s in package, 50-100 GB/s between packages, 36 GB/s CPU
  mi250x.name = "MI250X-test";
  mi250x.dies_per_package = 2;
  mi250x.in_package_link_bandwidth_bytes_per_s = 200 * kGB;
  mi250x.intra_node_link_bandwidth_bytes_per_s = 50 * kGB;
  mi250x.intra_node_links_per_gpu = 5;
  mi250x.intra_node_link_latency_s = 1e-6;
  mi250x.pcie_bandwidth_bytes_per_s = 36 * kGB;
  mi250x.nic_bandwidth_bytes_per_s = 25 * kGB;
  auto cluster = dgx(2, "rail_optimized");
  cluster.node_topology = "mi250_xgmi";
  cluster.nics_per_node = 4;
  const Topology t = build(cluster, mi250x);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 1), 200 * kGB);  // same package
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 6), 100 * kGB);  // dual link
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 2), 50 * kGB);   // single link
  // 1 and 7 share no link: through the CPU (two hops), never through another GCD.
  const auto path = path_vertices(t, 1, 7);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path[0])].name, "node0.cpu");
  // Each package owns one NIC: GCDs 2k and 2k+1 leave the node through NIC k.
  const auto out = path_vertices(t, 3, 8 + 3);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(out[0])].name, "node0.nic1");
  // Every GCD has three xGMI neighbours besides its package mate: 4 in-package + 8 cross links per node.
  EXPECT_EQ(count(t, LinkClass::xgmi), 2 * 12);
}

TEST(Topology, SharedNicsDoNotCarryIntraNodeTraffic) {
  auto cluster = dgx(2, "rail_optimized");
  cluster.nics_per_node = 4;  // GPUs 2k and 2k+1 share NIC k
  const Topology t = build(cluster, h100());
  // Both NVSwitch and the shared NIC give two-hop paths between GPUs 0 and 1; the wider NVSwitch path wins.
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 1), 450 * kGB);
  EXPECT_EQ(t.vertices()[static_cast<std::size_t>(path_vertices(t, 0, 1)[0])].name, "node0.nvswitch");
}

TEST(Topology, RejectsBadLinksAndNames) {
  Topology t;
  const int a = t.add_vertex({VertexKind::gpu, "a", 0, 0});
  const int b = t.add_vertex({VertexKind::gpu, "b", 1, 0});
  EXPECT_THROW(t.add_vertex({VertexKind::switch_, "a", -1, -1}), ModelError);
  EXPECT_THROW(t.add_link({a, b, 0.0, 0.0, LinkClass::fabric, "ab"}), ModelError);
  EXPECT_THROW(t.add_link({a, a, 1.0, 0.0, LinkClass::fabric, "aa"}), ModelError);
  EXPECT_THROW((void)t.route(0, 1), ModelError);  // not connected
  EXPECT_THROW((void)t.route(0, 7), ModelError);  // no such GPU
}

TEST(Topology, ALinkGivenByItsEndsIsNamedAfterThem) {
  Topology t;
  const int a = t.add_vertex({VertexKind::gpu, "node0.gpu0", 0, 0});
  const int s = t.add_vertex({VertexKind::switch_, "leaf0", -1, -1});
  const int link = t.add_link(a, s, 50 * kGB, 1e-6, LinkClass::nic);
  EXPECT_EQ(t.links()[static_cast<std::size_t>(link)].name, "node0.gpu0--leaf0");
  EXPECT_EQ(t.links()[static_cast<std::size_t>(link)].link_class, LinkClass::nic);
  EXPECT_THROW(t.add_link(a, s, 50 * kGB, 1e-6, LinkClass::nic), ModelError);  // the same name twice
  EXPECT_THROW(t.add_link(a, 5, 50 * kGB, 1e-6, LinkClass::nic), ModelError);  // no vertex 5
  // The built-in topologies name their links so: a DGX's NVSwitch link of GPU 0.
  const Topology dgx_node = build(dgx(1, "rail_optimized"), h100());
  const auto& links = dgx_node.links();
  EXPECT_TRUE(std::any_of(links.begin(), links.end(),
                          [](const TopologyLink& l) { return l.name == "node0.gpu0--node0.nvswitch"; }));
}

}  // namespace
}  // namespace chopsim
