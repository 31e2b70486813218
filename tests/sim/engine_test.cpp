// The SimGrid engine against physics it must reproduce: alpha-beta collective times (Thakur et al. 2005), max-min
// link sharing, roofline kernel durations, the stated comm/compute slowdown, the 1F1B bubble (p-1)/(m+p-1)
// (Narayanan et al., SC'21), plus determinism, deadlock reports and process isolation.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(Engine);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

struct Result {
  SimulationStats stats;
  RecordingObserver observer;
};

Result simulate(const Workload& workload, const Topology& topology, const ComputeModel& compute,
                const CollectiveModel& collectives, int iterations = 1) {
  Result r;
  SimulationInput input;
  input.workload = &workload;
  input.topology = &topology;
  input.compute = &compute;
  input.collectives = &collectives;
  input.iterations = iterations;
  r.stats = engine_under_test()->run(input, r.observer);
  return r;
}

/// Time of one collective over all n ranks of a uniform star, from its start and end events on rank 0.
double collective_time(CollectiveKind kind, int n, double bytes, double bandwidth, double route_latency,
                       const CollectiveParams& params) {
  Program program;
  program.streams.push_back({"comm", {collective_op(kind, bytes)}});
  const Workload w = same_program_everywhere(n, program);
  const Topology t = uniform_star(n, bandwidth, route_latency);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl(params);
  const Result r = simulate(w, t, *compute, *model);
  double latest = 0.0;  // every member ends at the same time on a uniform topology; take the last
  for (int rank = 0; rank < n; ++rank) {
    const OpEvent* end = r.observer.end_of(static_cast<std::uint32_t>(rank), 0, 0);
    EXPECT_NE(end, nullptr);
    if (end != nullptr) latest = std::max(latest, end->time_s - end->start_s);
  }
  return latest;
}

TEST_P(Engine, RingAllReduceMatchesAlphaBeta) {
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

TEST_P(Engine, AllGatherReduceScatterAndAllToAllMatchAlphaBeta) {
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

TEST_P(Engine, SimulatedCollectivesEqualModelEstimates) {
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
          const Result r = simulate(w, t, *compute, *model);
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
  const Result r = simulate(same_program_everywhere(8, program), mesh, *compute, *model);
  EXPECT_LT(r.stats.makespan_s, 2.0 * 7 / 8 * kGiB / (5 * 64 * kGB));
}

TEST_P(Engine, PipelinedRingEndsTogetherAtTheSlowestLink) {
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
    const Result r = simulate(w, t, *compute, *model);
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

TEST_P(Engine, TwoFlowsSharingALinkEachGetHalf) {
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
  const Result r = simulate(w, t, *compute, *model);
  for (const std::uint16_t stream : {0, 1}) {
    const OpEvent* end = r.observer.end_of(2, stream, 0);
    ASSERT_NE(end, nullptr);
    EXPECT_NEAR(end->time_s, route_latency + s / (bw / 2), 1e-9);
  }
}

TEST_P(Engine, FlowsJoiningMidTransferTakeTheirMaxMinShareOfTheSharedLink) {
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
  const Result r = simulate(w, t, *compute, *model);
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

TEST_P(Engine, LargeTransferOverLongLinkGetsFullBandwidth) {
  // SimGrid's TCP window bound (network/TCP-gamma) would cap this flow at gamma / (2 latency) ~ 2 GB/s; the engine
  // disables it, so the transfer takes latency + S/B.
  const double bw = 100 * kGB, latency = 1e-3, s = kGiB;
  Topology t;
  const int a = t.add_vertex({VertexKind::gpu, "a", 0, 0});
  const int b = t.add_vertex({VertexKind::gpu, "b", 1, 1});
  t.add_link({a, b, bw, latency, LinkClass::fabric, "long"});
  ParallelismSpec p;
  p.pp = 2;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  Program sender, receiver;
  sender.streams.push_back({"send", {p2p_op(OpKind::send, 1, 0, s)}});
  receiver.streams.push_back({"recv", {p2p_op(OpKind::recv, -1, 0, s)}});
  w.programs = {sender, receiver};
  w.program_of_rank = {0, 1};
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model);
  EXPECT_NEAR(r.stats.makespan_s, latency + s / bw, 1e-6 * (latency + s / bw));
}

TEST_P(Engine, FatTreeOversubscriptionHalvesCrossLeafFlows) {
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
    const Result r = simulate(w, t, *compute, *model);
    const double share = flows == 1 ? hw.nic_bandwidth_bytes_per_s : hw.nic_bandwidth_bytes_per_s / 2;
    const double expected = t.route_latency(0, 4) + s / share;
    EXPECT_NEAR(r.stats.makespan_s, expected, 1e-9 * expected) << flows << " flows";
  }
}

TEST_P(Engine, ComputeOpTakesTheComputeModelsDuration) {
  ComputeParams params = test_compute_params();
  params.launch_overhead_s = 4e-6;
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.7, 0.8, 1e12};
  const auto compute = roofline(params);
  Program program;
  Op gemm = compute_op(0.0);
  gemm.flops = 3.3e13;
  gemm.bytes = 2e9;
  program.streams.push_back({"compute", {gemm}});
  const Workload w = same_program_everywhere(1, program);
  const Topology t = uniform_star(1, kGB, 0.0);
  const auto model = nccl();
  for (const double clock : {1e9, 0.6e9}) {
    Result r;
    SimulationInput input;
    input.workload = &w;
    input.topology = &t;
    input.compute = compute.get();
    input.collectives = model.get();
    input.clock_hz = clock;
    r.stats = engine_under_test()->run(input, r.observer);
    const OpEvent* end = r.observer.end_of(0, 0, 0);
    ASSERT_NE(end, nullptr);
    const double expected = compute->duration_s({KernelClass::gemm, Precision::bf16, gemm.flops, gemm.bytes}, clock);
    EXPECT_NEAR(end->time_s - end->start_s, expected, 1e-9 * expected);
  }
}

/// Rank programs: stream 0 a kernel of `kernel_s`, stream 1 an all-reduce of `bytes` over 2 ranks; both start at 0.
Result overlap(double kernel_s, double bytes, double slowdown) {
  Program program;
  program.streams.push_back({"compute", {compute_op(kernel_s)}});
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, bytes)}});
  const Workload w = same_program_everywhere(2, program);
  const Topology t = uniform_star(2, 50 * kGB, 2e-6);
  const auto compute = roofline(test_compute_params(slowdown));
  const auto model = nccl();
  return simulate(w, t, *compute, *model);
}

TEST_P(Engine, CommunicationSlowsAnOverlappedKernelByTheStatedFactor) {
  for (const double f : {0.1, 0.25, 0.6}) {
    SCOPED_TRACE(f);
    // Kernel entirely under the collective: it runs at (1 - f) of the GPU.
    const double kernel = 1e-3;
    const Result inside = overlap(kernel, kGiB, f);
    const OpEvent* k = inside.observer.end_of(0, 0, 0);
    ASSERT_NE(k, nullptr);
    EXPECT_NEAR(k->time_s - k->start_s, kernel / (1 - f), 1e-9);
    // Kernel longer than the collective c: during c it does c (1 - f) of its work, so it ends at kernel + c f.
    const double long_kernel = 50e-3;
    const Result partial = overlap(long_kernel, 64e6, f);
    const OpEvent* c = partial.observer.end_of(0, 1, 0);
    const OpEvent* k2 = partial.observer.end_of(0, 0, 0);
    ASSERT_TRUE(c != nullptr && k2 != nullptr);
    EXPECT_LT(c->time_s, k2->time_s);
    EXPECT_NEAR(k2->time_s, long_kernel + (c->time_s - c->start_s) * f, 1e-9);
  }
  // No slowdown configured: the kernel keeps its time.
  const Result none = overlap(1e-3, kGiB, 0.0);
  EXPECT_NEAR(none.observer.end_of(0, 0, 0)->time_s, 1e-3, 1e-12);
}

TEST_P(Engine, APipelineTransferStartsWhenBothSidesArePosted) {
  // Rank 1 posts its receive at t = 0 (its own stream, no dependency) and runs a 10 ms kernel meanwhile; rank 0
  // computes 2 ms and then sends S. The receive starts when the data starts flowing, at 2 ms, and only the
  // transfer itself slows rank 1's kernel (by f): the wait is not communication.
  const double f = 0.5, bw = 50 * kGB, latency = 2e-6, s = 0.25 * kGiB, before = 2e-3, kernel = 10e-3;
  ParallelismSpec p;
  p.pp = 2;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  Program sender, receiver;
  sender.streams = {{"compute", {compute_op(before)}}, {"send", {p2p_op(OpKind::send, 1, 3, s)}}};
  depend(sender, 1, 0, 0, 0);
  receiver.streams = {{"compute", {compute_op(kernel)}}, {"recv", {p2p_op(OpKind::recv, -1, 3, s)}}};
  w.programs = {sender, receiver};
  w.program_of_rank = {0, 1};
  const Topology t = uniform_star(2, bw, latency);
  const auto compute = roofline(test_compute_params(f));
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model);
  const double transfer = latency + s / bw;
  const OpEvent* recv = r.observer.end_of(1, 1, 0);
  const OpEvent* send = r.observer.end_of(0, 1, 0);
  ASSERT_TRUE(recv != nullptr && send != nullptr);
  EXPECT_NEAR(recv->start_s, before, 1e-12);
  EXPECT_NEAR(send->start_s, before, 1e-12);
  EXPECT_NEAR(recv->time_s, before + transfer, 1e-9);
  // The kernel loses f of its speed during the transfer only: it ends at kernel + transfer * f.
  const OpEvent* k = r.observer.end_of(1, 0, 0);
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(k->time_s, kernel + transfer * f, 1e-9);
  // The start event is emitted at the match, in time order with the other events.
  for (std::size_t i = 1; i < r.observer.events.size(); ++i)
    EXPECT_LE(r.observer.events[i - 1].time_s, r.observer.events[i].time_s);
}

TEST_P(Engine, ASendPostedFirstWaitsForItsReceiverWithoutCommunicating) {
  // The mirror case: rank 0 posts its send at t = 0; rank 1 computes 3 ms before its receive (same stream).
  const double bw = 50 * kGB, latency = 2e-6, s = 64e6, before = 3e-3;
  ParallelismSpec p;
  p.pp = 2;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  Program sender, receiver;
  sender.streams = {{"compute", {compute_op(1e-3)}}, {"send", {p2p_op(OpKind::send, 1, 0, s)}}};
  receiver.streams = {{"compute", {compute_op(before), p2p_op(OpKind::recv, -1, 0, s)}}};
  w.programs = {sender, receiver};
  w.program_of_rank = {0, 1};
  const Topology t = uniform_star(2, bw, latency);
  const auto compute = roofline(test_compute_params(0.5));
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model);
  const OpEvent* send = r.observer.end_of(0, 1, 0);
  ASSERT_NE(send, nullptr);
  EXPECT_NEAR(send->start_s, before, 1e-12);
  EXPECT_NEAR(send->time_s, before + latency + s / bw, 1e-9);
  // Rank 0's 1 ms kernel ran while the send waited: not slowed.
  EXPECT_NEAR(r.observer.end_of(0, 0, 0)->time_s, 1e-3, 1e-12);
}

/// Stage s of a 1F1B pipeline (PipeDream-flush; Narayanan et al., SC'21): p - s - 1 warm-up forwards, then one
/// forward / one backward, then the remaining backwards. Activations go to the next stage on stream 1, gradients to
/// the previous on stream 2 (one stream per direction, as Megatron's separate send/recv calls); receives sit on the
/// compute stream because the kernel needs their data.
Program one_f_one_b(int p, int s, int m, double forward_s, double backward_s, double message_bytes) {
  Program program;
  program.streams = {{"compute", {}}, {"send_next", {}}, {"send_prev", {}}};
  auto& compute = program.streams[0].ops;
  auto forward = [&](int k) {
    if (s > 0) compute.push_back(p2p_op(OpKind::recv, -1, static_cast<std::uint32_t>(k), message_bytes));
    compute.push_back(compute_op(forward_s));
    if (s < p - 1) {
      program.streams[1].ops.push_back(p2p_op(OpKind::send, 1, static_cast<std::uint32_t>(k), message_bytes));
      depend(program, 1, program.streams[1].ops.size() - 1, 0, static_cast<std::uint32_t>(compute.size() - 1));
    }
  };
  auto backward = [&](int k) {
    if (s < p - 1) compute.push_back(p2p_op(OpKind::recv, 1, 1000u + static_cast<std::uint32_t>(k), message_bytes));
    compute.push_back(compute_op(backward_s));
    if (s > 0) {
      program.streams[2].ops.push_back(p2p_op(OpKind::send, -1, 1000u + static_cast<std::uint32_t>(k), message_bytes));
      depend(program, 2, program.streams[2].ops.size() - 1, 0, static_cast<std::uint32_t>(compute.size() - 1));
    }
  };
  const int warmup = std::min(p - s - 1, m);
  for (int k = 0; k < warmup; ++k) forward(k);
  for (int i = 0; i < m - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int i = m - warmup; i < m; ++i) backward(i);
  return program;
}

Workload pipeline(int p, int m, double forward_s, double backward_s, double message_bytes) {
  ParallelismSpec spec;
  spec.pp = p;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x"};
  for (int s = 0; s < p; ++s) {
    w.programs.push_back(one_f_one_b(p, s, m, forward_s, backward_s, message_bytes));
    w.program_of_rank.push_back(static_cast<std::uint32_t>(s));
  }
  return w;
}

TEST_P(Engine, OneFOneBBubbleFractionIsPMinusOneOverMPlusPMinusOne) {
  const double t = 1e-3;
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {4, 16}, {8, 8}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    const Workload w = pipeline(p, m, t, t, 1.0);
    const Topology topo = uniform_star(p, 100 * kGB, 1e-9);
    const auto compute = roofline(test_compute_params());
    const auto model = nccl();
    const Result r = simulate(w, topo, *compute, *model);
    const double busy = m * 2 * t;  // per stage
    const double bubble = 1.0 - busy / r.stats.makespan_s;
    const double expected = (p - 1.0) / (m + p - 1.0);
    EXPECT_NEAR(bubble, expected, 0.01 * expected);
  }
}

TEST_P(Engine, IterationsRunBackToBackWithoutAGlobalBarrier) {
  // Rank 0 computes 3 ms per iteration, rank 1 1 ms; no communication, so rank 1 runs ahead.
  ParallelismSpec spec;
  spec.pp = 2;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x"};
  Program slow, fast;
  slow.streams.push_back({"compute", {compute_op(3e-3)}});
  slow.streams.push_back({"side", {compute_op(0.5e-3)}});
  fast.streams.push_back({"compute", {compute_op(1e-3)}});
  w.programs = {slow, fast};
  w.program_of_rank = {0, 1};
  const Topology t = uniform_star(2, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model, 3);
  ASSERT_EQ(r.stats.iteration_end_s.size(), 3u);
  // Two kernels on one GPU share it until the short one ends: 0.5 ms of each at half speed, then the rest.
  const double slow_iteration = 3e-3 + 0.5e-3;
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(r.stats.iteration_end_s[static_cast<std::size_t>(i)], (i + 1) * slow_iteration, 1e-12);
  EXPECT_NEAR(r.observer.end_of(1, 0, 0, 2)->time_s, 3e-3, 1e-12);  // rank 1 finished iteration 2 early
  // The side stream's iteration-1 op waits for the compute stream's iteration 0 (per-rank barrier).
  EXPECT_NEAR(r.observer.end_of(0, 1, 0, 1)->start_s, slow_iteration, 1e-12);
  EXPECT_EQ(r.stats.op_events, 2u * (2 * 3 + 3));
  EXPECT_EQ(r.observer.events.size(), r.stats.op_events);
  EXPECT_GT(r.stats.activities, 0u);
  EXPECT_DOUBLE_EQ(r.stats.makespan_s, r.stats.iteration_end_s.back());
}

TEST_P(Engine, DependenciesDelayOpsOnOtherStreams) {
  Program program;
  program.streams.push_back({"compute", {compute_op(2e-3), compute_op(1e-3)}});
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_gather, 1e6)}});
  depend(program, 1, 0, 0, 0);  // the all-gather waits for the first kernel
  const Workload w = same_program_everywhere(2, program);
  const Topology t = uniform_star(2, 100 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model);
  EXPECT_NEAR(r.observer.end_of(0, 1, 0)->start_s, 2e-3, 1e-12);
  // Events arrive in time order.
  for (std::size_t i = 1; i < r.observer.events.size(); ++i)
    EXPECT_LE(r.observer.events[i - 1].time_s, r.observer.events[i].time_s);
}

TEST_P(Engine, IdenticalInputsGiveIdenticalEventStreams) {
  const Workload w = pipeline(4, 6, 1e-3, 2e-3, 8e6);
  const Topology t = uniform_star(4, 25 * kGB, 2e-6);
  const auto compute = roofline(test_compute_params(0.1));
  const auto model = nccl();
  const Result a = simulate(w, t, *compute, *model, 2);
  const Result b = simulate(w, t, *compute, *model, 2);
  ASSERT_EQ(a.observer.events.size(), b.observer.events.size());
  EXPECT_TRUE(same_events(a.observer.events, b.observer.events));
  EXPECT_EQ(a.stats.activities, b.stats.activities);
  EXPECT_EQ(a.stats.iteration_end_s, b.stats.iteration_end_s);
}

/// Two pipeline stages that both receive before they send: a deadlock. With `side_streams`, each stage has a second
/// stream that finishes its op and then waits at the iteration barrier for the stuck one.
Workload receive_first_pipeline(bool side_streams) {
  ParallelismSpec spec;
  spec.pp = 2;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x", "wait_for_activation", "wait_for_gradient"};
  Program first, second;
  first.streams.push_back({"compute", {p2p_op(OpKind::recv, 1, 1, 1e6), p2p_op(OpKind::send, 1, 2, 1e6)}});
  first.streams[0].ops[0].name = 2;
  second.streams.push_back({"compute", {p2p_op(OpKind::recv, -1, 2, 1e6), p2p_op(OpKind::send, -1, 1, 1e6)}});
  second.streams[0].ops[0].name = 1;
  if (side_streams)
    for (Program* program : {&first, &second}) program->streams.push_back({"side", {compute_op(1e-3)}});
  w.programs = {first, second};
  w.program_of_rank = {0, 1};
  return w;
}

TEST_P(Engine, DeadlockIsReportedWithTheStuckOps) {
  const Workload w = receive_first_pipeline(false);
  const Topology t = uniform_star(2, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  try {
    (void)simulate(w, t, *compute, *model);
    FAIL() << "expected a deadlock";
  } catch (const EngineError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 stream 0 'compute' op 0 'wait_for_gradient' (recv"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1 stream 0 'compute' op 0 'wait_for_activation' (recv"), std::string::npos) << message;
    EXPECT_NE(message.find("waiting for rank 1 to send"), std::string::npos) << message;
  }
}

TEST(EngineDeadlock, BothEnginesReportItInTheSameWords) {
  // Both engines share the report (sim/src/deadlock_report.cpp), so that a workload's error reads the same whichever
  // found it: a stuck receive and streams waiting at the iteration barrier for it.
  const Workload w = receive_first_pipeline(true);
  const Topology t = uniform_star(2, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  std::vector<std::string> messages;
  for (const std::string& name : kEngines) {
    SimulationInput input;
    input.workload = &w;
    input.topology = &t;
    input.compute = compute.get();
    input.collectives = model.get();
    RecordingObserver observer;
    try {
      (void)engine_named(name)->run(input, observer);
      ADD_FAILURE() << name << ": expected a deadlock";
    } catch (const EngineError& e) {
      messages.emplace_back(e.what());
    }
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("4 of 4 streams never finished"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("at the iteration barrier, waiting for stream 0 'compute'"), std::string::npos)
      << messages[0];
}

TEST_P(Engine, CyclicDependencyIsReportedAsDeadlock) {
  Program program;
  program.streams.push_back({"a", {compute_op(1e-3)}});
  program.streams.push_back({"b", {compute_op(1e-3)}});
  depend(program, 0, 0, 1, 0);
  depend(program, 1, 0, 0, 0);
  const Workload w = same_program_everywhere(1, program);
  const Topology t = uniform_star(1, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  try {
    (void)simulate(w, t, *compute, *model);
    FAIL() << "expected a deadlock";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for op 0 of stream 1 'b'"), std::string::npos) << e.what();
  }
}

TEST_P(Engine, InvalidInputIsAnEngineError) {
  Program program;
  program.streams.push_back({"a", {compute_op(1e-3)}});
  program.streams[0].ops[0].dependency_count = 1;  // points past the (empty) dependency list
  const Workload w = same_program_everywhere(4, program);
  const Topology small = uniform_star(2, kGB, 0.0);  // and too few GPUs
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  EXPECT_THROW((void)simulate(w, small, *compute, *model), EngineError);
  const Topology enough = uniform_star(4, kGB, 0.0);
  EXPECT_THROW((void)simulate(w, enough, *compute, *model), EngineError);
}

TEST(SimGridEngine, UnknownNetworkModelIsRejectedBeforeSimGridStarts) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.network_model = "Constant";  // SimGrid's constant model has no links
  EXPECT_THROW((void)registry.create("simgrid", options), EngineError);
  options.network_model = "LV08";
  EXPECT_NO_THROW((void)registry.create("simgrid", options));
}

class ThrowingObserver final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent&) override {
    if (++seen == 3) throw std::runtime_error("observer failed");
  }
  int seen = 0;
};

TEST_P(Engine, ObserverExceptionReachesTheCaller) {
  const Workload w = pipeline(2, 4, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  SimulationInput input{&w, &t, compute.get(), model.get(), 1, 0.0};
  ThrowingObserver observer;
  EXPECT_THROW((void)engine_under_test()->run(input, observer), std::runtime_error);
  EXPECT_EQ(observer.seen, 3);
}

TEST(SimGridEngine, ManySimulationsInOneProcess) {
  const Workload w = pipeline(2, 3, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result first = simulate(w, t, *compute, *model);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(simulate(w, t, *compute, *model).stats.makespan_s, first.stats.makespan_s);
  // From several threads at once (each simulation is its own child process).
  std::vector<double> makespans(4, 0.0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < makespans.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 5; ++k) makespans[i] = simulate(w, t, *compute, *model).stats.makespan_s;
    });
  for (auto& thread : threads) thread.join();
  for (const double m : makespans) EXPECT_EQ(m, first.stats.makespan_s);
}

TEST(SimGridEngine, RunsMoreActorsThanStackGuardPagesAllow) {
  // 5,000 GPUs of 8 streams: 40,000 actors. With a guard page per stack SimGrid needs two memory mappings per actor,
  // over Linux's 65,530 (vm.max_map_count), and aborts ("Failed to protect stack"); the engine drops the guards at
  // this size.
  constexpr int kRanks = 5000;
  Program program;
  for (int s = 0; s < 8; ++s) program.streams.push_back({"s" + std::to_string(s), {compute_op(1e-6)}});
  const Workload w = same_program_everywhere(kRanks, program);
  const Topology t = uniform_star(kRanks, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result r = simulate(w, t, *compute, *model);
  EXPECT_NEAR(r.stats.makespan_s, 8e-6, 1e-12);  // eight 1 us kernels share each GPU
  EXPECT_EQ(r.observer.events.size(), std::size_t{kRanks} * 8 * 2);
}

TEST(FastEngine, ManyEnginesRunAtOnceInOneProcess) {
  // No global state: simulations in several threads of one process, each with its own engine, give the events of a
  // simulation run alone, bit for bit (tests/sim is also run under ThreadSanitizer).
  const Workload w = pipeline(4, 6, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(4, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params(0.2));
  const auto model = nccl();
  const SimulationInput input{&w, &t, compute.get(), model.get(), 2, 0.0};
  RecordingObserver alone;
  (void)engine_named("fast")->run(input, alone);
  std::vector<RecordingObserver> observers(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < observers.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        observers[i].events.clear();
        (void)engine_named("fast")->run(input, observers[i]);
      }
    });
  for (auto& thread : threads) thread.join();
  for (const RecordingObserver& o : observers) EXPECT_TRUE(same_events(o.events, alone.events));
}

TEST(FastEngine, RefusesNetworkModelsOtherThanCM02) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.network_model = "LV08";
  EXPECT_THROW((void)registry.create("fast", options), EngineError);
}

/// In-process run (meant for a process of its own): 0 if it reproduces `expected` and a second run is refused.
int in_process_check(const SimulationInput& input, const Result& expected) {
  RecordingObserver observer;
  const SimulationStats stats = simgrid(false)->run(input, observer);
  const bool same =
      stats.makespan_s == expected.stats.makespan_s && same_events(observer.events, expected.observer.events);
  bool refused = false;
  try {
    RecordingObserver again;
    (void)simgrid(false)->run(input, again);
  } catch (const EngineError&) {
    refused = true;
  }
  return same && refused ? 0 : 1;
}

TEST(SimGridEngineDeathTest, InProcessRunsOnceAndMatchesTheChild) {
  const Workload w = pipeline(2, 3, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const Result child = simulate(w, t, *compute, *model);
  const SimulationInput input{&w, &t, compute.get(), model.get(), 1, 0.0};
  // In a process of its own: SimGrid keeps its engine for the rest of the process.
  EXPECT_EXIT(std::exit(in_process_check(input, child)), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace chopsim::test
