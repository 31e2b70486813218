// The fast engine's flow solver against max-min allocations computed by hand, and against the definition of
// (weighted) max-min fairness on random networks: no constraint above its capacity, and every flow has a bottleneck,
// a saturated constraint on which no other flow gets more per unit weight (Bertsekas & Gallager, Data Networks,
// 2nd ed., section 6.5.2).

#include "flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace chopsim::sim_detail {
namespace {

using Ids = std::vector<std::uint32_t>;

std::vector<FlowNetwork::FlowId> solve(FlowNetwork& network, double now = 0.0) {
  std::vector<FlowNetwork::FlowId> changed;
  network.solve(now, changed);
  return changed;
}

TEST(FlowNetwork, TwoFlowsSharingALinkGetHalfEach) {
  FlowNetwork network({10.0});
  const auto a = network.add(Ids{0}, 1.0, 100.0, 0.0);
  const auto b = network.add(Ids{0}, 1.0, 100.0, 0.0);
  EXPECT_EQ(solve(network).size(), 2u);
  EXPECT_DOUBLE_EQ(network.rate(a), 5.0);
  EXPECT_DOUBLE_EQ(network.rate(b), 5.0);
  EXPECT_DOUBLE_EQ(network.end_s(a), 20.0);
}

TEST(FlowNetwork, ABottleneckChainGivesTheRestToTheUnconstrainedFlow) {
  // A (10) and B (4): flow 1 crosses both, flow 2 only A, flow 3 only B. B saturates first at 2 per flow; flow 2
  // gets what flow 1 leaves of A: 10 - 2 = 8.
  FlowNetwork network({10.0, 4.0});
  const auto f1 = network.add(Ids{0, 1}, 1.0, 1.0, 0.0);
  const auto f2 = network.add(Ids{0}, 1.0, 1.0, 0.0);
  const auto f3 = network.add(Ids{1}, 1.0, 1.0, 0.0);
  solve(network);
  EXPECT_DOUBLE_EQ(network.rate(f1), 2.0);
  EXPECT_DOUBLE_EQ(network.rate(f2), 8.0);
  EXPECT_DOUBLE_EQ(network.rate(f3), 2.0);
  EXPECT_DOUBLE_EQ(network.load(0), 10.0);
  EXPECT_DOUBLE_EQ(network.load(1), 4.0);
}

TEST(FlowNetwork, SharesFollowTheWeights) {
  // CM02 with weight-S = 0: a flow's share is inversely proportional to its route latency (weight = 1 / latency).
  FlowNetwork network({8.0});
  const auto fast = network.add(Ids{0}, 1.0 / 1e-6, 1.0, 0.0);
  const auto slow = network.add(Ids{0}, 1.0 / 3e-6, 1.0, 0.0);
  solve(network);
  EXPECT_NEAR(network.rate(fast), 6.0, 1e-12);
  EXPECT_NEAR(network.rate(slow), 2.0, 1e-12);
}

TEST(FlowNetwork, AFlowLeavingMidTransferHandsItsShareOn) {
  // Cap 10: 10 and 30 bytes at 5 each; the first ends at t = 2, the second has 20 left and then gets all 10: t = 4.
  FlowNetwork network({10.0});
  const auto a = network.add(Ids{0}, 1.0, 10.0, 0.0);
  const auto b = network.add(Ids{0}, 1.0, 30.0, 0.0);
  solve(network);
  EXPECT_DOUBLE_EQ(network.end_s(a), 2.0);
  network.remove(a);
  EXPECT_TRUE(network.dirty());
  EXPECT_EQ(solve(network, 2.0), std::vector<FlowNetwork::FlowId>{b});
  EXPECT_DOUBLE_EQ(network.rate(b), 10.0);
  EXPECT_DOUBLE_EQ(network.remaining_bytes(b, 2.0), 20.0);
  EXPECT_DOUBLE_EQ(network.end_s(b), 4.0);
}

TEST(FlowNetwork, OnlyTheTouchedComponentIsResolved) {
  FlowNetwork network({10.0, 10.0});
  const auto left = network.add(Ids{0}, 1.0, 100.0, 0.0);
  solve(network);
  const auto right = network.add(Ids{1}, 1.0, 100.0, 1.0);
  const auto changed = solve(network, 1.0);
  EXPECT_EQ(changed, std::vector<FlowNetwork::FlowId>{right});  // the other component is not re-solved
  EXPECT_DOUBLE_EQ(network.rate(left), 10.0);
  EXPECT_DOUBLE_EQ(network.remaining_bytes(left, 1.0), 90.0);
}

TEST(FlowNetwork, AFlowWithoutLinksIsUnlimited) {
  FlowNetwork network({1.0});
  const auto f = network.add(Ids{}, 1.0, 5.0, 3.0);
  EXPECT_EQ(network.rate(f), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(network.end_s(f), 3.0);
}

TEST(FlowNetwork, RandomNetworksAreMaxMinFair) {
  struct Flow {
    FlowNetwork::FlowId id;
    Ids route;
    double weight;
  };
  std::mt19937 random(12345);
  std::uniform_real_distribution<double> capacity(1.0, 100.0), weight(0.2, 5.0);
  for (int trial = 0; trial < 200; ++trial) {
    const int constraints = 1 + static_cast<int>(random() % 12);
    std::vector<double> caps(static_cast<std::size_t>(constraints));
    for (double& c : caps) c = capacity(random);
    FlowNetwork network(caps);
    std::vector<Flow> flows;
    const int count = 1 + static_cast<int>(random() % 25);
    for (int f = 0; f < count; ++f) {
      Ids route;
      for (std::uint32_t c = 0; c < static_cast<std::uint32_t>(constraints); ++c)
        if (random() % 3 == 0) route.push_back(c);
      if (route.empty()) route.push_back(static_cast<std::uint32_t>(random() % static_cast<unsigned>(constraints)));
      const double w = weight(random);
      flows.push_back({network.add(route, w, 1.0, 0.0), route, w});
    }
    // Remove some and add them back after a solve: the incremental solve must still be max-min fair.
    solve(network);
    for (std::size_t i = 0; i < flows.size(); i += 3) {
      network.remove(flows[i].id);
      flows[i].id = network.add(flows[i].route, flows[i].weight, 1.0, 0.0);
    }
    solve(network);
    for (int c = 0; c < constraints; ++c)
      EXPECT_LE(network.load(static_cast<std::uint32_t>(c)), caps[static_cast<std::size_t>(c)] * (1 + 1e-12));
    // Every flow has a bottleneck: a saturated constraint of its route on which no flow gets more per unit weight.
    for (const Flow& f : flows) {
      const double mine = network.rate(f.id) / f.weight;
      bool has_bottleneck = false;
      for (const std::uint32_t c : f.route) {
        if (network.load(c) < caps[c] * (1 - 1e-9)) continue;
        bool largest = true;
        for (const Flow& g : flows)
          if (std::find(g.route.begin(), g.route.end(), c) != g.route.end() &&
              network.rate(g.id) / g.weight > mine * (1 + 1e-9))
            largest = false;
        has_bottleneck = has_bottleneck || largest;
      }
      EXPECT_TRUE(has_bottleneck) << "trial " << trial << ": flow " << f.id << " could grow";
    }
  }
}

}  // namespace
}  // namespace chopsim::sim_detail
