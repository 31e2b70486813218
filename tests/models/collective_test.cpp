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
#include "collective_support.hpp"

namespace chopsim {
namespace {

using namespace collective_test;

constexpr CollectiveKind kAllKinds[] = {CollectiveKind::all_reduce,     CollectiveKind::all_gather,
                                        CollectiveKind::reduce_scatter, CollectiveKind::all_to_all,
                                        CollectiveKind::broadcast,      CollectiveKind::send_recv};

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

}  // namespace
}  // namespace chopsim
