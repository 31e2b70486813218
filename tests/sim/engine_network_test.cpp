// The engines' networks against physics they must reproduce: alpha-beta collective times (Thakur et al. 2005) on a
// uniform star and on the shipped node topologies, pipelined rings, max-min sharing of links among flows that start
// and end at different times, and a fat-tree's oversubscription.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(EngineNetwork);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

/// Time of one collective over all n ranks of a uniform star, from its start and end events on rank 0.
double collective_time(CollectiveKind kind, int n, double bytes, double bandwidth, double route_latency,
                       const CollectiveParams& params) {
  Program program;
  program.streams.push_back({"comm", {collective_op(kind, bytes)}});
  const Workload w = same_program_everywhere(n, program);
  const Topology t = uniform_star(n, bandwidth, route_latency);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl(params);
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  double latest = 0.0;  // every member ends at the same time on a uniform topology; take the last
  for (int rank = 0; rank < n; ++rank) {
    const OpEvent* end = r.observer.end_of(static_cast<std::uint32_t>(rank), 0, 0);
    EXPECT_NE(end, nullptr);
    if (end != nullptr) latest = std::max(latest, end->time_s - end->start_s);
  }
  return latest;
}

TEST_P(EngineNetwork, RingAllReduceMatchesAlphaBeta) {
  const double bw = 100 * kGB, route_latency = 3e-6, s = kGiB;
  for (const bool pipelined : {true, false}) {
    CollectiveParams params;
    params.pipelined_rings = pipelined;
    const double alpha = route_latency + params.step_latency_s;
    for (const int n : {8, 16}) {
      SCOPED_TRACE("n=" + std::to_string(n) + (pipelined ? " pipelined" : " stepped"));
      const double expected = 2.0 * (n - 1) / n * s / bw + 2 * (n - 1) * alpha;
      EXPECT_NEAR(collective_time(CollectiveKind::all_reduce, n, s, bw, route_latency, params), expected,
                  0.01 * expected);
    }
  }
}

TEST_P(EngineNetwork, AllGatherReduceScatterAndAllToAllMatchAlphaBeta) {
  const double bw = 100 * kGB, route_latency = 3e-6, s = kGiB;
  CollectiveParams params;
  const double alpha = route_latency + params.step_latency_s;
  for (const int n : {8, 16}) {
    SCOPED_TRACE(n);
    const double expected = (n - 1.0) / n * s / bw + (n - 1) * alpha;
    for (const CollectiveKind kind :
         {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_to_all})
      EXPECT_NEAR(collective_time(kind, n, s, bw, route_latency, params), expected, 0.01 * expected) << to_string(kind);
  }
}

/// Two-level cluster of 8-GPU nodes, hardware figures as in the data sheets named in the topology tests.
Topology cluster_of(const std::string& node_topology, int nodes) {
  HardwareSpec hw;
  hw.name = node_topology;
  hw.intra_node_link_latency_s = 1e-6;
  hw.pcie_bandwidth_bytes_per_s = 64 * kGB;
  hw.nic_bandwidth_bytes_per_s = 50 * kGB;
  hw.nic_latency_s = 2e-6;
  ClusterSpec cluster;
  cluster.nodes = nodes;
  cluster.node_topology = node_topology;
  cluster.fabric.kind = nodes > 1 ? "rail_optimized" : "none";
  cluster.fabric.switch_latency_s = 0.5e-6;
  if (node_topology == "nvswitch") {  // H100: 18 x 25 GB/s NVLink
    hw.intra_node_link_bandwidth_bytes_per_s = 25 * kGB;
    hw.intra_node_links_per_gpu = 18;
  } else if (node_topology == "xgmi_mesh") {  // MI300X: 7 x 64 GB/s xGMI
    hw.intra_node_link_bandwidth_bytes_per_s = 64 * kGB;
    hw.intra_node_links_per_gpu = 7;
  } else {  // MI250X: 200 GB/s in package, 50 GB/s xGMI links, 36 GB/s to the CPU, one 25 GB/s NIC per package
    hw.intra_node_link_bandwidth_bytes_per_s = 50 * kGB;
    hw.dies_per_package = 2;
    hw.in_package_link_bandwidth_bytes_per_s = 200 * kGB;
    hw.pcie_bandwidth_bytes_per_s = 36 * kGB;
    hw.nic_bandwidth_bytes_per_s = 25 * kGB;
    cluster.nics_per_node = 4;
  }
  NodeTopologyRegistry node_registry("node topology");
  register_builtin_node_topologies(node_registry);
  FabricTopologyRegistry fabric_registry("fabric");
  register_builtin_fabric_topologies(fabric_registry);
  return build_topology(cluster, hw, node_registry, fabric_registry);
}

TEST_P(EngineNetwork, SimulatedCollectivesEqualModelEstimates) {
  // The closed forms count the most loaded link of each phase; the engine must reproduce them on real node and
  // cluster topologies: multi-channel rail-aligned rings, Hamiltonian rings on meshes, heterogeneous MI250X rings
  // (whose members end together with the slowest link), trees and hierarchical phases.
  for (const std::string node : {"nvswitch", "xgmi_mesh", "mi250_xgmi"})
    for (const int nodes : {1, 2}) {
      const Topology t = cluster_of(node, nodes);
      const int n = 8 * nodes;
      std::vector<int> members(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) members[static_cast<std::size_t>(i)] = i;
      for (const std::string algorithm : {"ring", "tree", "hierarchical"})
        for (const CollectiveKind kind : {CollectiveKind::all_reduce, CollectiveKind::all_gather}) {
          if (kind != CollectiveKind::all_reduce && algorithm == "tree") continue;
          SCOPED_TRACE(node + " x" + std::to_string(nodes) + " " + algorithm + " " + std::string(to_string(kind)));
          CollectiveParams params;
          params.all_reduce = algorithm;
          if (algorithm != "tree") params.all_gather = algorithm;
          Program program;
          program.streams.push_back({"comm", {collective_op(kind, kGiB)}});
          const Workload w = same_program_everywhere(n, program);
          const auto compute = roofline(test_compute_params());
          const auto model = nccl(params);
          const RecordedRun r = run_recorded(w, t, *compute, *model);
          const double estimate = model->estimate_time_s({kind, kGiB, members}, t);
          EXPECT_NEAR(r.stats.makespan_s, estimate, 0.01 * estimate);
        }
    }
  // A mesh ring uses 3 Hamiltonian cycles in both directions: 6 links' worth of bandwidth, not one.
  const Topology mesh = cluster_of("xgmi_mesh", 1);
  Program program;
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, kGiB)}});
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(same_program_everywhere(8, program), mesh, *compute, *model);
  EXPECT_LT(r.stats.makespan_s, 2.0 * 7 / 8 * kGiB / (5 * 64 * kGB));
}

TEST_P(EngineNetwork, PipelinedRingEndsTogetherAtTheSlowestLink) {
  // Four GPUs on a switch, GPU 2's link at a quarter of the others: every chunk crosses it, so all members end at
  // 2(n-1)/n S / B_slow + 2(n-1) alpha, not just GPU 2's neighbours.
  const double fast = 100 * kGB, slow = 25 * kGB, route_latency = 2e-6, s = 256e6;
  Topology t;
  const int sw = t.add_vertex({VertexKind::switch_, "switch", -1, -1});
  for (int i = 0; i < 4; ++i) {
    const int g = t.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, 0});
    t.add_link({g, sw, i == 2 ? slow : fast, route_latency / 2, LinkClass::fabric, "link" + std::to_string(i)});
  }
  Program program;
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, s)}});
  const Workload w = same_program_everywhere(4, program);
  const auto compute = roofline(test_compute_params());
  for (const bool pipelined : {true, false}) {
    CollectiveParams params;
    params.pipelined_rings = pipelined;
    const auto model = nccl(params);
    const RecordedRun r = run_recorded(w, t, *compute, *model);
    const double alpha = route_latency + params.step_latency_s;
    const double expected = 2.0 * 3 / 4 * s / slow + 2 * 3 * alpha;
    double last = 0.0;
    for (std::uint32_t rank = 0; rank < 4; ++rank) {
      const OpEvent* end = r.observer.end_of(rank, 0, 0);
      ASSERT_NE(end, nullptr);
      last = std::max(last, end->time_s);
      if (pipelined)
        EXPECT_NEAR(end->time_s, expected, 1e-9) << "rank " << rank;
      else  // synchronised steps: a member far from the slow link may finish one (slow) step early
        EXPECT_GE(end->time_s, expected - (s / 4 / slow + alpha) - 1e-9) << "rank " << rank;
    }
    EXPECT_NEAR(last, expected, 1e-9);
  }
}

TEST_P(EngineNetwork, TwoFlowsSharingALinkEachGetHalf) {
  // Stages 0 and 1 both send S to stage 2: the two flows share GPU 2's inbound link (max-min: B/2 each).
  const double bw = 50 * kGB, route_latency = 2e-6, s = 0.5 * kGiB;
  ParallelismSpec p;
  p.pp = 3;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  Program stage0, stage1, stage2;
  stage0.streams.push_back({"send", {p2p_op(OpKind::send, 2, 7, s)}});
  stage1.streams.push_back({"send", {p2p_op(OpKind::send, 1, 7, s)}});
  stage2.streams.push_back({"from0", {p2p_op(OpKind::recv, -2, 7, s)}});
  stage2.streams.push_back({"from1", {p2p_op(OpKind::recv, -1, 7, s)}});
  w.programs = {stage0, stage1, stage2};
  w.program_of_rank = {0, 1, 2};
  const Topology t = uniform_star(3, bw, route_latency);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  for (const std::uint16_t stream : {0, 1}) {
    const OpEvent* end = r.observer.end_of(2, stream, 0);
    ASSERT_NE(end, nullptr);
    EXPECT_NEAR(end->time_s, route_latency + s / (bw / 2), 1e-9);
  }
}

TEST_P(EngineNetwork, FlowsJoiningMidTransferTakeTheirMaxMinShareOfTheSharedLink) {
  // B sends S to A from the start. C runs two kernels of d each at once (they share the GPU and end together at
  // 2 d), then sends S to A and S to D: C's outbound link gives each of its flows B/2, and on A's inbound link B's
  // flow keeps the other half (max-min). Until then it had the whole link: it ends at L + j + 2 (S - B j) / B, the
  // joining flows at j + L + 2 S / B (j: when they join). SimGrid 3.32's lazy network update (network/optim:Lazy,
  // its default) left B's flow at the full rate here, ending at L + S / B; the engine runs it with optim:Full.
  const double bw = 50 * kGB, route_latency = 2e-6, s = 0.5 * kGiB, d = 2e-3;
  ParallelismSpec p;
  p.pp = 4;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  Program a, b, c, dst;
  a.streams.push_back({"from_b", {p2p_op(OpKind::recv, 1, 7, s)}});
  a.streams.push_back({"from_c", {p2p_op(OpKind::recv, 2, 8, s)}});
  b.streams.push_back({"to_a", {p2p_op(OpKind::send, -1, 7, s)}});
  c.streams.push_back({"to_a", {compute_op(d), p2p_op(OpKind::send, -2, 8, s)}});
  c.streams.push_back({"to_d", {compute_op(d), p2p_op(OpKind::send, 1, 9, s)}});
  dst.streams.push_back({"from_c", {p2p_op(OpKind::recv, -1, 9, s)}});
  w.programs = {a, b, c, dst};
  w.program_of_rank = {0, 1, 2, 3};
  const Topology t = uniform_star(4, bw, route_latency);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  const OpEvent* kernel = r.observer.end_of(2, 0, 0);
  ASSERT_NE(kernel, nullptr);
  const double joined = kernel->time_s;
  EXPECT_NEAR(joined, 2.0 * d, 1e-9);
  const OpEvent* from_b = r.observer.end_of(0, 0, 0);
  const OpEvent* from_c = r.observer.end_of(0, 1, 0);
  ASSERT_NE(from_b, nullptr);
  ASSERT_NE(from_c, nullptr);
  EXPECT_NEAR(from_b->time_s, route_latency + joined + 2.0 * (s - bw * joined) / bw, 1e-9);
  EXPECT_NEAR(from_c->time_s, joined + route_latency + 2.0 * s / bw, 1e-9);
}

TEST_P(EngineNetwork, LargeTransferOverLongLinkGetsFullBandwidth) {
  // SimGrid's TCP window bound (network/TCP-gamma) would cap this flow at gamma / (2 latency) ~ 2 GB/s; the engine
  // disables it, so the transfer takes latency + S/B.
  const double bw = 100 * kGB, latency = 1e-3, s = kGiB;
  Topology t;
  const int a = t.add_vertex({VertexKind::gpu, "a", 0, 0});
  const int b = t.add_vertex({VertexKind::gpu, "b", 1, 1});
  t.add_link({a, b, bw, latency, LinkClass::fabric, "long"});
  Program sender, receiver;
  sender.streams.push_back({"send", {p2p_op(OpKind::send, 1, 0, s)}});
  receiver.streams.push_back({"recv", {p2p_op(OpKind::recv, -1, 0, s)}});
  const Workload w = two_stages(sender, receiver);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  EXPECT_NEAR(r.stats.makespan_s, latency + s / bw, 1e-6 * (latency + s / bw));
}

TEST_P(EngineNetwork, FatTreeOversubscriptionHalvesCrossLeafFlows) {
  // 2 nodes x 4 GPUs, one NIC each, leaves of 4 NICs, oversubscription 2 with uplinks twice a NIC: one spine link of
  // 2 B per leaf. Four simultaneous cross-leaf flows get 2 B / 4 = B / oversubscription each.
  HardwareSpec hw;
  hw.name = "test";
  hw.intra_node_link_bandwidth_bytes_per_s = 1000 * kGB;
  hw.intra_node_links_per_gpu = 1;
  hw.pcie_bandwidth_bytes_per_s = 1000 * kGB;
  hw.nic_bandwidth_bytes_per_s = 50 * kGB;
  hw.nic_latency_s = 1e-6;
  ClusterSpec cluster;
  cluster.nodes = 2;
  cluster.gpus_per_node = 4;
  cluster.nics_per_node = 4;
  cluster.node_topology = "nvswitch";
  cluster.fabric.kind = "fat_tree";
  cluster.fabric.leaf_downlinks = 4;
  cluster.fabric.oversubscription = 2.0;
  cluster.fabric.uplink_bandwidth_bytes_per_s = 2 * hw.nic_bandwidth_bytes_per_s;
  NodeTopologyRegistry nodes("node topology");
  register_builtin_node_topologies(nodes);
  FabricTopologyRegistry fabrics("fabric");
  register_builtin_fabric_topologies(fabrics);
  const Topology t = build_topology(cluster, hw, nodes, fabrics);
  const double s = 0.25 * kGiB;
  for (const int flows : {1, 4}) {
    ParallelismSpec p;
    p.tp = 4;
    p.pp = 2;
    Workload w;
    w.layout = RankLayout(p);
    w.names = {"x"};
    Program sender, receiver, idle;
    sender.streams.push_back({"send", {p2p_op(OpKind::send, 1, 0, s)}});
    receiver.streams.push_back({"recv", {p2p_op(OpKind::recv, -1, 0, s)}});
    w.programs = {sender, receiver, idle};
    w.program_of_rank.assign(8, 2);
    for (int i = 0; i < flows; ++i) {
      w.program_of_rank[static_cast<std::size_t>(i)] = 0;
      w.program_of_rank[static_cast<std::size_t>(4 + i)] = 1;
    }
    const auto compute = roofline(test_compute_params());
    const auto model = nccl();
    const RecordedRun r = run_recorded(w, t, *compute, *model);
    const double share = flows == 1 ? hw.nic_bandwidth_bytes_per_s : hw.nic_bandwidth_bytes_per_s / 2;
    const double expected = t.route_latency(0, 4) + s / share;
    EXPECT_NEAR(r.stats.makespan_s, expected, 1e-9 * expected) << flows << " flows";
  }
}

}  // namespace
}  // namespace chopsim::test
