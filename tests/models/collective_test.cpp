// Collective plans: peers match and make progress, bytes per member follow the algorithms' formulas, and the closed
// forms equal the alpha-beta expressions (Thakur et al. 2005; NCCL tuning model) on a uniform topology.

#include "chopsim/models/collective.hpp"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "chopsim/common/error.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim {
namespace {

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr CollectiveKind kAllKinds[] = {CollectiveKind::all_reduce,     CollectiveKind::all_gather,
                                        CollectiveKind::reduce_scatter, CollectiveKind::all_to_all,
                                        CollectiveKind::broadcast,      CollectiveKind::send_recv};

/// n GPUs, each with one link of bandwidth `bw` and latency alpha/2 to one switch: every route has bandwidth bw and
/// latency alpha, and each GPU's link direction is its own. `node_per_gpu` puts each GPU on its own node.
Topology uniform_star(int n, double bw, double alpha, bool node_per_gpu = false) {
  Topology t;
  const int sw = t.add_vertex({VertexKind::switch_, "switch", -1, -1});
  for (int i = 0; i < n; ++i) {
    const int g = t.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, node_per_gpu ? i : 0});
    t.add_link({g, sw, bw, alpha / 2, LinkClass::fabric, "link" + std::to_string(i)});
  }
  return t;
}

HardwareSpec h100() {
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

Topology cluster(const std::string& node_topology, int nodes, int nics_per_node = 8) {
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

std::unique_ptr<CollectiveModel> nccl(const CollectiveParams& params = {}) {
  CollectiveModelRegistry registry("collective model");
  register_builtin_collective_models(registry);
  return registry.create("nccl", params);
}

std::vector<CollectivePlan> plans(const CollectiveModel& model, const CollectiveCall& call, const Topology& t) {
  std::vector<CollectivePlan> out;
  for (int me = 0; me < static_cast<int>(call.members.size()); ++me) out.push_back(model.plan(call, me, t));
  return out;
}

/// Every send has its receive (same peer pair, channel, order and size), and executing the steps with rendezvous
/// semantics (a transfer happens when both ends are in the step that holds it) finishes every member.
void expect_consistent(const std::vector<CollectivePlan>& plans, const std::string& what) {
  SCOPED_TRACE(what);
  const int n = static_cast<int>(plans.size());
  for (const auto& plan : plans) EXPECT_EQ(plan.algorithm, plans.front().algorithm);
  using Key = std::tuple<int, int, int>;  // from, to, channel
  std::map<Key, std::vector<double>> sent, received;
  // (from, to, channel, occurrence) -> step of the sender / receiver
  std::map<std::tuple<int, int, int, int>, std::pair<int, int>> where;
  for (int i = 0; i < n; ++i) {
    for (int s = 0; s < static_cast<int>(plans[static_cast<std::size_t>(i)].steps.size()); ++s) {
      const auto& step = plans[static_cast<std::size_t>(i)].steps[static_cast<std::size_t>(s)];
      EXPECT_GE(step.latency_s, 0.0);
      for (const Transfer& t : step.sends) {
        ASSERT_TRUE(t.peer >= 0 && t.peer < n && t.peer != i) << "bad peer " << t.peer;
        auto& list = sent[{i, t.peer, t.channel}];
        where[{i, t.peer, t.channel, static_cast<int>(list.size())}].first = s;
        list.push_back(t.bytes);
      }
      for (const Transfer& t : step.receives) {
        ASSERT_TRUE(t.peer >= 0 && t.peer < n && t.peer != i) << "bad peer " << t.peer;
        auto& list = received[{t.peer, i, t.channel}];
        where[{t.peer, i, t.channel, static_cast<int>(list.size())}].second = s;
        list.push_back(t.bytes);
      }
    }
  }
  EXPECT_EQ(sent, received);
  if (sent != received) return;
  // Synchronised steps: (sync id, occurrence) -> the members and their step; all must agree on the count.
  std::map<std::pair<int, int>, std::map<int, int>> syncs;
  for (int i = 0; i < n; ++i) {
    std::map<int, int> seen;
    const auto& steps = plans[static_cast<std::size_t>(i)].steps;
    for (int st = 0; st < static_cast<int>(steps.size()); ++st) {
      const CollectiveStep& step = steps[static_cast<std::size_t>(st)];
      if (step.sync_members == 0) continue;
      syncs[{step.sync_id, seen[step.sync_id]++}][i] = st;
    }
  }
  for (const auto& [key, members] : syncs)
    for (const auto& [member, st] : members)
      EXPECT_EQ(plans[static_cast<std::size_t>(member)].steps[static_cast<std::size_t>(st)].sync_members,
                static_cast<int>(members.size()))
          << "sync " << key.first << " of member " << member;
  std::map<std::pair<int, int>, std::pair<int, int>> sync_of;  // (member, step) -> sync key
  for (const auto& [key, members] : syncs)
    for (const auto& [member, st] : members) sync_of[{member, st}] = key;

  // Rendezvous execution: sweep until nothing moves. A member whose step's transfers are all done advances, unless the
  // step is synchronised: then all its members advance together once each has its transfers done.
  using Id = std::tuple<int, int, int, int>;
  std::vector<std::vector<std::vector<Id>>> by_step(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    by_step[static_cast<std::size_t>(i)].resize(plans[static_cast<std::size_t>(i)].steps.size());
  for (const auto& [transfer, steps] : where) {
    by_step[static_cast<std::size_t>(std::get<0>(transfer))][static_cast<std::size_t>(steps.first)].push_back(transfer);
    by_step[static_cast<std::size_t>(std::get<1>(transfer))][static_cast<std::size_t>(steps.second)].push_back(
        transfer);
  }
  std::vector<int> at(static_cast<std::size_t>(n), 0);
  std::set<Id> done;
  auto transfers_done = [&](int i) {
    const int s = at[static_cast<std::size_t>(i)];
    if (s >= static_cast<int>(by_step[static_cast<std::size_t>(i)].size())) return false;
    bool complete = true;
    for (const Id& transfer : by_step[static_cast<std::size_t>(i)][static_cast<std::size_t>(s)]) {
      if (done.count(transfer)) continue;
      const auto& steps = where.at(transfer);
      if (at[static_cast<std::size_t>(std::get<0>(transfer))] == steps.first &&
          at[static_cast<std::size_t>(std::get<1>(transfer))] == steps.second) {
        done.insert(transfer);
      } else {
        complete = false;
      }
    }
    return complete;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int i = 0; i < n; ++i) {
      if (!transfers_done(i)) continue;
      const int s = at[static_cast<std::size_t>(i)];
      const auto sync = sync_of.find({i, s});
      if (sync == sync_of.end()) {
        ++at[static_cast<std::size_t>(i)];
        progress = true;
        continue;
      }
      const auto& members = syncs.at(sync->second);
      bool all = true;
      for (const auto& [member, st] : members)
        all = all && at[static_cast<std::size_t>(member)] == st && (member == i || transfers_done(member));
      if (!all) continue;
      for (const auto& [member, st] : members) at[static_cast<std::size_t>(member)] = st + 1;
      progress = true;
    }
  }
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(at[static_cast<std::size_t>(i)], static_cast<int>(plans[static_cast<std::size_t>(i)].steps.size()))
        << "member " << i << " is stuck";
}

double bytes_sent(const CollectivePlan& plan) {
  double total = 0.0;
  for (const auto& step : plan.steps)
    for (const Transfer& t : step.sends) total += t.bytes;
  return total;
}

std::vector<int> first(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<CollectiveParams> parameter_variants() {
  std::vector<CollectiveParams> out(6);
  out[1].pipelined_rings = false;
  out[2].all_reduce = "ring";
  out[3].all_reduce = "tree";
  out[4].all_reduce = out[4].all_gather = out[4].reduce_scatter = "hierarchical";
  out[4].pipelined_rings = false;
  out[5].mesh_channels = 2;
  return out;
}

TEST(Collective, PlansMatchForEveryKindAndSize) {
  struct Case {
    std::string name;
    Topology topology;
  };
  std::vector<Case> cases;
  cases.push_back({"uniform", uniform_star(16, 100 * kGB, 1e-6)});
  cases.push_back({"node per GPU", uniform_star(16, 100 * kGB, 1e-6, true)});
  cases.push_back({"2 DGX nodes", cluster("nvswitch", 2)});
  cases.push_back({"2 MI300X nodes", cluster("xgmi_mesh", 2)});
  cases.push_back({"2 MI250X nodes", cluster("mi250_xgmi", 2, 4)});
  for (const auto& params : parameter_variants()) {
    const auto model = nccl(params);
    for (const auto& c : cases)
      for (int n = 2; n <= 16; ++n) {
        std::vector<std::vector<int>> groups{first(n)};
        if (n <= 8) {  // strided groups: across nodes, one or two GPUs per node
          std::vector<int> strided;
          for (int i = 0; i < n; ++i) strided.push_back((i * 2) % 16 + (i * 2) / 16);
          groups.push_back(strided);
        }
        for (const auto& members : groups)
          for (const CollectiveKind kind : kAllKinds) {
            const CollectiveCall call{kind, 3.0 * kGiB, members};
            expect_consistent(plans(*model, call, c.topology),
                              c.name + " n=" + std::to_string(n) + " " + std::string(to_string(kind)) +
                                  " first=" + std::to_string(members.front()) +
                                  " stride=" + std::to_string(members[1] - members[0]));
          }
      }
  }
}

TEST(Collective, BytesSentFollowTheFormulas) {
  const double s = 1.0 * kGiB;
  std::vector<std::pair<std::string, Topology>> topologies;
  topologies.emplace_back("uniform", uniform_star(16, 100 * kGB, 1e-6));
  topologies.emplace_back("2 DGX nodes", cluster("nvswitch", 2));
  topologies.emplace_back("MI300X node", cluster("xgmi_mesh", 1));
  for (const bool pipelined : {true, false}) {
    CollectiveParams params;
    params.pipelined_rings = pipelined;
    params.all_reduce = params.all_gather = params.reduce_scatter = "ring";
    const auto model = nccl(params);
    for (const auto& [name, t] : topologies)
      for (int n = 2; n <= t.gpu_count(); ++n) {
        SCOPED_TRACE(name + " n=" + std::to_string(n));
        const auto members = first(n);
        const double f = (n - 1.0) / n;
        for (const auto& plan : plans(*model, {CollectiveKind::all_reduce, s, members}, t))
          EXPECT_NEAR(bytes_sent(plan), 2 * f * s, 1e-9 * s);
        for (const auto& plan : plans(*model, {CollectiveKind::all_gather, s, members}, t))
          EXPECT_NEAR(bytes_sent(plan), f * s, 1e-9 * s);
        for (const auto& plan : plans(*model, {CollectiveKind::reduce_scatter, s, members}, t))
          EXPECT_NEAR(bytes_sent(plan), f * s, 1e-9 * s);
        for (const auto& plan : plans(*model, {CollectiveKind::all_to_all, s, members}, t))
          EXPECT_NEAR(bytes_sent(plan), f * s, 1e-9 * s);
      }
  }
}

TEST(Collective, HierarchicalBytesAreIntraPlusInterNode) {
  CollectiveParams params;
  params.all_reduce = "hierarchical";
  const auto model = nccl(params);
  const Topology t = cluster("nvswitch", 2);
  const double s = 1.0 * kGiB;
  const double local = 8, nodes = 2;
  for (const auto& plan : plans(*model, {CollectiveKind::all_reduce, s, first(16)}, t)) {
    EXPECT_EQ(plan.algorithm, "hierarchical");
    // intra reduce-scatter + intra all-gather of S over 8 GPUs, inter ring all-reduce of S/8 over 2 nodes
    EXPECT_NEAR(bytes_sent(plan), 2 * (local - 1) / local * s + 2 * (nodes - 1) / nodes * s / local, 1e-9 * s);
  }
}

TEST(Collective, EstimateEqualsAlphaBetaOnUniformTopology) {
  const double bw = 100 * kGB, route_latency = 3e-6, s = 1.0 * kGiB;
  CollectiveParams params;
  params.step_latency_s = 2e-6;
  const double alpha = route_latency + params.step_latency_s;
  const auto model = nccl(params);
  for (const int n : {2, 3, 8, 13, 16}) {
    SCOPED_TRACE(n);
    const Topology t = uniform_star(n, bw, route_latency);
    const auto members = first(n);
    const double f = (n - 1.0) / n;
    EXPECT_NEAR(model->estimate_time_s({CollectiveKind::all_reduce, s, members}, t),
                2 * f * s / bw + 2 * (n - 1) * alpha, 1e-12);
    EXPECT_NEAR(model->estimate_time_s({CollectiveKind::all_gather, s, members}, t), f * s / bw + (n - 1) * alpha,
                1e-12);
    EXPECT_NEAR(model->estimate_time_s({CollectiveKind::reduce_scatter, s, members}, t), f * s / bw + (n - 1) * alpha,
                1e-12);
    // Grouped (NCCL): every part at once through the member's one link, one latency.
    EXPECT_NEAR(model->estimate_time_s({CollectiveKind::all_to_all, s, members}, t), f * s / bw + alpha, 1e-12);
    EXPECT_NEAR(model->estimate_time_s({CollectiveKind::broadcast, s, members}, t), s / bw + (n - 1) * alpha, 1e-12);
  }
  params.all_to_all = "pairwise";
  const auto pairwise = nccl(params);
  for (const int n : {2, 3, 8, 13, 16}) {
    SCOPED_TRACE(n);
    const Topology t = uniform_star(n, bw, route_latency);
    const double f = (n - 1.0) / n;
    EXPECT_NEAR(pairwise->estimate_time_s({CollectiveKind::all_to_all, s, first(n)}, t), f * s / bw + (n - 1) * alpha,
                1e-12);
  }
}

TEST(Collective, GroupedAllToAllAcrossTwoNodesTakesTheNicTime) {
  // 16 GPUs on two DGX-like nodes: each member sends S/16 to each of the 15 others, 8 of those parts (S/2) through
  // its 50 GB/s NIC and 7 over NVLink (18 x 25 GB/s) at the same time, so the NIC bounds the time: S/2 / 50 GB/s plus
  // one latency. The pairwise exchange pays 15 rounds, each at least as slow as its inter-node pairs (S/16 / 50 GB/s;
  // more where cross-rail pairs of a round share a spine link).
  const Topology t = cluster("nvswitch", 2);
  const double s = 1.0 * kGiB, nic = 50 * kGB;
  const auto members = first(16);
  const double grouped = nccl()->estimate_time_s({CollectiveKind::all_to_all, s, members}, t);
  EXPECT_NEAR(grouped, 0.5 * s / nic, 0.01 * 0.5 * s / nic);
  for (const auto& plan : plans(*nccl(), {CollectiveKind::all_to_all, s, members}, t)) {
    EXPECT_EQ(plan.algorithm, "grouped");
    ASSERT_EQ(plan.steps.size(), 2u);  // every member arrives, then all parts at once
    EXPECT_EQ(plan.steps[0].sync_members, 16);
    EXPECT_TRUE(plan.steps[0].sends.empty());
    // 7 parts to the node's other members, and the 8 parts for the other node as one rail-aligned transfer (PXN).
    ASSERT_EQ(plan.steps[1].sends.size(), 8u);
    EXPECT_EQ(plan.steps[1].receives.size(), 8u);
    EXPECT_DOUBLE_EQ(plan.steps[1].sends.back().bytes, 8 * s / 16);
  }
  CollectiveParams params;
  params.all_to_all = "pairwise";
  const double pairwise = nccl(params)->estimate_time_s({CollectiveKind::all_to_all, s, members}, t);
  EXPECT_GE(pairwise, 0.999 * 15 * (s / 16) / nic);
  EXPECT_GT(pairwise, 1.8 * grouped);
}

TEST(Collective, TokenReachProbabilityIsHypergeometric) {
  // 1 - C(E - h, k) / C(E, k): one expert of two with top-1 is hit half the time; holding every expert, always.
  EXPECT_DOUBLE_EQ(token_reach_probability(2, 1, 1), 0.5);
  EXPECT_DOUBLE_EQ(token_reach_probability(8, 2, 8), 1.0);
  EXPECT_DOUBLE_EQ(token_reach_probability(8, 2, 0), 0.0);
  // Two of eight experts, top-2: C(6,2)/C(8,2) = 15/28 of the tokens miss both.
  EXPECT_NEAR(token_reach_probability(8, 2, 2), 13.0 / 28.0, 1e-15);
  // Fewer experts left than top_k: every token hits (C(E - h, k) = 0).
  EXPECT_DOUBLE_EQ(token_reach_probability(8, 4, 6), 1.0);
  // Qwen3-30B-A3B (128 experts, top-8) on 8 GPUs (16 each): 1 - prod_{i<8} (112 - i) / (128 - i).
  double miss = 1.0;
  for (int i = 0; i < 8; ++i) miss *= (112.0 - i) / (128.0 - i);
  EXPECT_NEAR(token_reach_probability(128, 8, 16), 1.0 - miss, 1e-15);
  // The union bound: a token reaches at most k of the members' shares (h/E each).
  for (const int held : {1, 4, 16, 64}) EXPECT_LE(token_reach_probability(128, 8, held), 8.0 * held / 128.0);
}

TEST(Collective, TokenDispatchWithOneExpertPerMemberAndTopOneIsThePlainAllToAll) {
  // Top-1 routing to one expert per member: every token has one destination, so deduplication changes nothing inside
  // a node; the plan equals NCCL's grouped all-to-all part for part.
  const Topology t = cluster("nvswitch", 1);
  const double s = 1.0 * kGiB;
  const auto members = first(8);
  CollectiveCall dispatch{CollectiveKind::all_to_all, s, members, TokenRouting{.experts = 8, .top_k = 1}};
  const auto deduplicated = plans(*nccl(), dispatch, t);
  const auto plain = plans(*nccl(), {CollectiveKind::all_to_all, s, members}, t);
  ASSERT_EQ(deduplicated.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(deduplicated[i].algorithm, "token_dispatch");
    ASSERT_EQ(deduplicated[i].steps.size(), plain[i].steps.size());
    for (std::size_t k = 0; k < plain[i].steps.size(); ++k) {
      ASSERT_EQ(deduplicated[i].steps[k].sends.size(), plain[i].steps[k].sends.size());
      for (std::size_t j = 0; j < plain[i].steps[k].sends.size(); ++j) {
        EXPECT_EQ(deduplicated[i].steps[k].sends[j].peer, plain[i].steps[k].sends[j].peer);
        EXPECT_DOUBLE_EQ(deduplicated[i].steps[k].sends[j].bytes, plain[i].steps[k].sends[j].bytes);
      }
    }
  }
}

TEST(Collective, TokenDispatchAcrossTwoNodesSendsEachTokenOncePerNode) {
  // Qwen3-30B-A3B's routing (128 experts, top-8) over ep 16 on two DGX-like nodes, as DeepEP sends it: each member's
  // T tokens (bytes s / 8 without the copies) reach each other member with p_gpu (8 experts of 128) and the other node
  // with p_node (64 of 128, nearly always), one rail-aligned transfer per node; in its own node each member sends
  // its own part and forwards one part per other node. NCCL's plain all-to-all sends every copy: s / 2 through the
  // NIC. The NIC bounds the time: tokens x p_node / 50 GB/s.
  const Topology t = cluster("nvswitch", 2);
  const double s = 1.0 * kGiB, nic = 50 * kGB;
  const auto members = first(16);
  const TokenRouting routing{.experts = 128, .top_k = 8};
  const double tokens = s / 8;
  const double p_gpu = token_reach_probability(128, 8, 8), p_node = token_reach_probability(128, 8, 64);
  EXPECT_GT(p_node, 0.99);
  const CollectiveCall dispatch{CollectiveKind::all_to_all, s, members, routing};
  for (const auto& plan : plans(*nccl(), dispatch, t)) {
    ASSERT_EQ(plan.steps.size(), 2u);
    EXPECT_EQ(plan.steps[0].sync_members, 16);
    ASSERT_EQ(plan.steps[1].sends.size(), 8u);  // 7 node peers, one transfer to the other node
    for (std::size_t j = 0; j + 1 < plan.steps[1].sends.size(); ++j)
      EXPECT_NEAR(plan.steps[1].sends[j].bytes, 2 * tokens * p_gpu, 1e-9 * s);
    EXPECT_NEAR(plan.steps[1].sends.back().bytes, tokens * p_node, 1e-9 * s);
    EXPECT_LT(plan.steps[1].sends.back().bytes, 0.26 * (s / 2));  // about a quarter of the copies NCCL sends
  }
  expect_consistent(plans(*nccl(), dispatch, t), "token dispatch over two nodes");
  const double time = nccl()->estimate_time_s(dispatch, t);
  EXPECT_NEAR(time, tokens * p_node / nic, 0.01 * tokens * p_node / nic);
  EXPECT_LT(time, 0.3 * nccl()->estimate_time_s({CollectiveKind::all_to_all, s, members}, t));
}

TEST(Collective, TokenDispatchRejectsRoutingThatDoesNotSplitOverTheGroup) {
  const Topology t = cluster("nvswitch", 1);
  const auto members = first(8);
  EXPECT_THROW((void)nccl()->estimate_time_s(
                   {CollectiveKind::all_to_all, 1e6, members, TokenRouting{.experts = 12, .top_k = 2}}, t),
               ModelError);
  EXPECT_THROW((void)nccl()->estimate_time_s(
                   {CollectiveKind::all_reduce, 1e6, members, TokenRouting{.experts = 16, .top_k = 2}}, t),
               ModelError);
}

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
