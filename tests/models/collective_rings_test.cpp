// Collective plans over node and fabric topologies: pipelined and edge-disjoint rings, rail-aligned rings across
// nodes, NCCL's automatic choice of algorithm and its double binary tree.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "collective_support.hpp"

namespace chopsim {
namespace {

using namespace collective_test;

TEST(Collective, PipelinedRingCarriesTheWholeLatencyTerm) {
  // One step per member whose latency plus the route latency paid by the transfer equals 2(n-1) alpha.
  const double route_latency = 3e-6;
  CollectiveParams params;
  const auto model = nccl(params);
  const int n = 8;
  const Topology t = uniform_star(n, 100 * kGB, route_latency);
  for (const auto& plan : plans(*model, {CollectiveKind::all_reduce, kGiB, first(n)}, t)) {
    ASSERT_EQ(plan.steps.size(), 1u);
    EXPECT_NEAR(plan.steps[0].latency_s + route_latency, 2 * (n - 1) * (route_latency + params.step_latency_s), 1e-15);
  }
  params.pipelined_rings = false;
  const auto stepped = nccl(params);
  for (const auto& plan : plans(*stepped, {CollectiveKind::all_reduce, kGiB, first(n)}, t))
    EXPECT_EQ(plan.steps.size(), static_cast<std::size_t>(2 * (n - 1)));
}

TEST(Collective, FullMeshUsesEdgeDisjointRingsInBothDirections) {
  const Topology t = cluster("xgmi_mesh", 1);
  const auto model = nccl();
  for (int n = 2; n <= 8; ++n) {
    SCOPED_TRACE(n);
    const auto all = plans(*model, {CollectiveKind::all_gather, kGiB, first(n)}, t);
    std::set<int> channels;
    std::map<std::pair<int, int>, int> flows;  // ordered GPU pair -> channels using it
    for (int me = 0; me < n; ++me)
      for (const Transfer& tr : all[static_cast<std::size_t>(me)].steps.at(0).sends) {
        channels.insert(tr.channel);
        ++flows[{me, tr.peer}];
      }
    // Walecki: (n-1)/2 Hamiltonian cycles for odd n, (n-2)/2 for even n, each used in both directions.
    const int cycles = n == 2 ? 1 : (n % 2 == 1 ? (n - 1) / 2 : (n - 2) / 2);
    const int rings = n == 2 ? 1 : 2 * cycles;
    EXPECT_EQ(static_cast<int>(channels.size()), rings);
    for (const auto& [pair, count] : flows) EXPECT_EQ(count, 1) << pair.first << "->" << pair.second;
    EXPECT_EQ(static_cast<int>(flows.size()), rings * n);  // every ring uses n distinct directed links
  }
}

TEST(Collective, HamiltonianDecompositionOfCompleteMeshesUpTo16) {
  // Walecki: K_n splits into (n-1)/2 edge-disjoint Hamiltonian cycles for odd n, (n-2)/2 (plus a perfect matching)
  // for even n. Each cycle is used in both directions, so no directed link carries two rings.
  const auto model = nccl();
  for (int n = 3; n <= 16; ++n) {
    SCOPED_TRACE(n);
    Topology t;
    for (int i = 0; i < n; ++i) t.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, 0});
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b)
        t.add_link({a, b, 10 * kGB, 1e-6, LinkClass::xgmi, std::to_string(a) + "-" + std::to_string(b)});
    const auto all = plans(*model, {CollectiveKind::all_reduce, kGiB, first(n)}, t);
    std::map<std::pair<int, int>, int> uses;
    for (int me = 0; me < n; ++me)
      for (const Transfer& tr : all[static_cast<std::size_t>(me)].steps.at(0).sends) ++uses[{me, tr.peer}];
    const int cycles = n % 2 == 1 ? (n - 1) / 2 : (n - 2) / 2;
    EXPECT_EQ(all[0].steps.at(0).sends.size(), static_cast<std::size_t>(2 * cycles));
    EXPECT_EQ(static_cast<int>(uses.size()), 2 * cycles * n);
    for (const auto& [pair, count] : uses) EXPECT_EQ(count, 1) << pair.first << "->" << pair.second;
  }
}

TEST(Collective, MultiNodeRingsAreRailAligned) {
  const Topology t = cluster("nvswitch", 4);
  CollectiveParams params;
  params.all_reduce = "ring";
  const auto model = nccl(params);
  const auto members = first(32);
  const auto all = plans(*model, {CollectiveKind::all_reduce, kGiB, members}, t);
  std::map<std::pair<int, bool>, int> nic_use;  // (GPU, outbound) -> inter-node flows
  std::set<int> channels;
  for (int me = 0; me < 32; ++me)
    for (const Transfer& tr : all[static_cast<std::size_t>(me)].steps.at(0).sends) {
      channels.insert(tr.channel);
      if (t.node_of_gpu(me) == t.node_of_gpu(tr.peer)) continue;
      EXPECT_EQ(me % 8, tr.peer % 8) << "inter-node hop " << me << "->" << tr.peer << " changes rail";
      ++nic_use[{me, true}];
      ++nic_use[{tr.peer, false}];
    }
  EXPECT_EQ(channels.size(), 8u);
  // With an even node count every NIC carries exactly one ring in each direction.
  EXPECT_EQ(nic_use.size(), 64u);
  for (const auto& [key, count] : nic_use) EXPECT_EQ(count, 1);
}

TEST(Collective, MultiNodeRingsOnMeshNodesKeepRingsOnDistinctLinks) {
  const Topology t = cluster("xgmi_mesh", 4);
  CollectiveParams params;
  params.all_reduce = "ring";
  const auto model = nccl(params);
  const auto all = plans(*model, {CollectiveKind::all_reduce, kGiB, first(32)}, t);
  std::map<std::pair<int, int>, int> uses;  // ordered GPU pair -> rings using it
  for (int me = 0; me < 32; ++me)
    for (const Transfer& tr : all[static_cast<std::size_t>(me)].steps.at(0).sends) {
      ++uses[{me, tr.peer}];
      if (t.node_of_gpu(me) != t.node_of_gpu(tr.peer)) {
        EXPECT_EQ(me % 8, tr.peer % 8) << me << "->" << tr.peer;
      }
    }
  for (const auto& [pair, count] : uses)
    if (t.node_of_gpu(pair.first) == t.node_of_gpu(pair.second)) {
      EXPECT_EQ(count, 1) << "xGMI link " << pair.first << "->" << pair.second << " shared by rings";
    }
  EXPECT_EQ(all[0].steps.at(0).sends.size(), 6u);  // the mesh's 3 Hamiltonian cycles in both directions
}

// Over exactly two nodes each channel's ring also runs backwards with half its bytes (full_ring): every directed
// link, inside a node or across, carries the bytes it carried one way before, and swapping the nodes maps each
// member's plan onto its image's, channel for channel.
TEST(Collective, RingsOverTwoNodesRunBothWaysWithTheSameLinkLoads) {
  for (const std::string node : {"nvswitch", "xgmi_mesh"}) {
    SCOPED_TRACE(node);
    const Topology t = cluster(node, 2);
    CollectiveParams params;
    params.all_gather = "ring";
    const auto model = nccl(params);
    const auto all = plans(*model, {CollectiveKind::all_gather, kGiB, first(16)}, t);
    std::map<std::pair<int, int>, double> bytes;  // ordered GPU pair -> bytes over every channel
    std::set<int> channels;
    for (int me = 0; me < 16; ++me) {
      const CollectiveStep& step = all[static_cast<std::size_t>(me)].steps.at(0);
      ASSERT_EQ(step.sends.size() % 2, 0u);
      for (const Transfer& tr : step.sends) {
        bytes[{me, tr.peer}] += tr.bytes;
        channels.insert(tr.channel);
      }
      // The member sends as much as a one-way ring would: (n-1)/n of the buffer.
      double sent = 0.0;
      for (const Transfer& tr : step.sends) sent += tr.bytes;
      EXPECT_NEAR(sent, 15.0 / 16.0 * kGiB, 1e-6 * kGiB);
    }
    // Both directions of every used pair carry the same bytes.
    for (const auto& [pair, b] : bytes) {
      const auto reverse = bytes.find({pair.second, pair.first});
      ASSERT_NE(reverse, bytes.end()) << pair.first << "->" << pair.second;
      EXPECT_NEAR(reverse->second, b, 1e-6 * b);
    }
    // The node swap (member i <-> i + 8) maps each member's transfers onto its image's on the same channel.
    for (int me = 0; me < 8; ++me) {
      std::multiset<std::tuple<int, double, int>> mapped, image;
      for (const Transfer& tr : all[static_cast<std::size_t>(me)].steps.at(0).sends)
        mapped.insert({(tr.peer + 8) % 16, tr.bytes, tr.channel});
      for (const Transfer& tr : all[static_cast<std::size_t>(me + 8)].steps.at(0).sends)
        image.insert({tr.peer, tr.bytes, tr.channel});
      EXPECT_EQ(mapped, image) << "member " << me;
    }
  }
}

TEST(Collective, AutoPicksRingInANodeAndTreeForSmallMultiNodeAllReduce) {
  const auto model = nccl();
  const Topology node = uniform_star(8, 100 * kGB, 5e-6);
  EXPECT_EQ(model->plan({CollectiveKind::all_reduce, 1e6, first(8)}, 0, node).algorithm, "ring");
  // One GPU per node, 16 nodes, alpha = 5 us + 2 us step, 50 GB/s: tree below a few tens of MB, ring above.
  const Topology nodes = uniform_star(16, 50 * kGB, 5e-6, true);
  EXPECT_EQ(model->plan({CollectiveKind::all_reduce, 1e6, first(16)}, 0, nodes).algorithm, "tree");
  EXPECT_EQ(model->plan({CollectiveKind::all_reduce, kGiB, first(16)}, 0, nodes).algorithm, "ring");
  EXPECT_EQ(model->plan({CollectiveKind::all_gather, 1e6, first(16)}, 0, nodes).algorithm, "ring");
}

// NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel) prices only Ring for all-gather and reduce-scatter (NVLS and
// CollNet where NVLink SHARP or an in-network reduction plugin serve them), and Ring or Tree for an all-reduce: a
// two-level ring is not one of its algorithms, so "auto" never picks chopsim's hierarchical, however many ranks.
TEST(Collective, AutoNeverPicksHierarchicalAsNcclHasNone) {
  const auto model = nccl();
  const Topology t = cluster("nvswitch", 16);
  for (const double bytes : {1e6, 1e8, 1e9}) {
    SCOPED_TRACE(bytes);
    EXPECT_EQ(model->plan({CollectiveKind::all_gather, bytes, first(128)}, 0, t).algorithm, "ring");
    EXPECT_EQ(model->plan({CollectiveKind::reduce_scatter, bytes, first(128)}, 0, t).algorithm, "ring");
    EXPECT_NE(model->plan({CollectiveKind::all_reduce, bytes, first(128)}, 0, t).algorithm, "hierarchical");
  }
  // A ring of 128 ranks pays 127 step latencies (NCCL: (nRanks - 1) steps for all-gather), each at least the
  // step latency: a 1 MB gather over 16 nodes takes longer than 127 x 2 us.
  const CollectivePlan plan = model->plan({CollectiveKind::all_gather, 1e6, first(128)}, 0, t);
  double latency = 0.0;
  for (const auto& step : plan.steps) latency += step.latency_s;
  EXPECT_GT(latency, 127 * 2e-6);
}

TEST(Collective, TreeIsNcclDoubleBinaryTree) {
  CollectiveParams params;
  params.all_reduce = "tree";
  const auto model = nccl(params);
  for (const int n : {2, 5, 8, 13, 16}) {
    SCOPED_TRACE(n);
    const Topology t = uniform_star(n, 100 * kGB, 1e-6, true);
    const auto all = plans(*model, {CollectiveKind::all_reduce, kGiB, first(n)}, t);
    // Each tree carries S/2; a member sends S/2 per tree edge it has (parent + children), at most 3 per tree.
    double total = 0.0;
    for (const auto& plan : all) {
      EXPECT_EQ(plan.algorithm, "tree");
      EXPECT_LE(bytes_sent(plan), 3 * kGiB);
      total += bytes_sent(plan);
    }
    // Both trees span all n members: n-1 edges each, every edge carries S/2 up and S/2 down.
    EXPECT_NEAR(total, 2 * (n - 1) * kGiB, 1e-6);
  }
}

TEST(Collective, RejectsUnknownAlgorithmsAndBadMembers) {
  CollectiveParams params;
  params.all_reduce = "butterfly";
  EXPECT_THROW((void)nccl(params), ModelError);
  const auto model = nccl();
  const Topology t = uniform_star(4, kGB, 0.0);
  const auto members = first(4);
  EXPECT_THROW((void)model->plan({CollectiveKind::all_reduce, 1.0, members}, 4, t), ModelError);
  const CollectivePlan single = model->plan({CollectiveKind::all_reduce, 1.0, std::vector<int>{2}}, 0, t);
  EXPECT_TRUE(single.steps.empty());
}

}  // namespace
}  // namespace chopsim
