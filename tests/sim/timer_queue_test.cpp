// The fast engine's timer queue: one-shot timers and re-armable slots fire in one (time, sequence) order, which is
// what keeps the engine's results identical whether a domain's timer is a slot or a stream of one-shot entries.

#include "timer_queue.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace chopsim::sim_detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(TimerQueue, FiresByTimeThenByTheOrderArmed) {
  TimerQueue q(3);
  q.push(2.0, 0, 10, 0);
  q.arm(1, 1.0, 1);
  q.push(1.0, 0, 11, 0);  // same time as slot 1, armed after it
  q.arm(0, 0.5, 1);
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().target);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 11, 10}));
}

TEST(TimerQueue, RearmingReplacesAndInfinityDisarms) {
  TimerQueue q(5);
  q.arm(4, 3.0, 1);
  q.arm(4, 1.0, 1);  // moved earlier: one entry, not two
  q.arm(2, 2.0, 1);
  q.arm(2, kInf, 1);  // disarmed
  EXPECT_EQ(q.next_time_s(), 1.0);
  const TimerEntry e = q.pop();
  EXPECT_EQ(e.target, 4u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next_time_s(), kInf);
}

/// Against the plain alternative the engine used before: every re-arm a new heap entry with a version, stale ones
/// skipped when popped. Random pushes and re-arms; the live timers must come out in the same order.
TEST(TimerQueue, SameOrderAsVersionedOneShotTimers) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> time(0.0, 10.0);
  std::uniform_int_distribution<int> key(0, 6), action(0, 3);
  TimerQueue slots(7);
  TimerQueue versioned(0);
  std::vector<std::uint32_t> version(7, 0);
  for (int i = 0; i < 2000; ++i) {
    const double t = std::floor(time(rng) * 4.0) / 4.0;  // coarse times: many ties
    if (action(rng) == 0) {
      slots.push(t, 0, 100, 0);
      versioned.push(t, 0, 100, 0);
    } else {
      const int k = key(rng);
      const double armed = action(rng) == 1 ? kInf : t;
      slots.arm(static_cast<std::size_t>(k), armed, 1);
      ++version[static_cast<std::size_t>(k)];
      if (armed < kInf) versioned.push(armed, 1, static_cast<std::uint32_t>(k), version[static_cast<std::size_t>(k)]);
    }
  }
  std::vector<std::pair<double, std::uint32_t>> a, b;
  while (!slots.empty()) {
    const TimerEntry e = slots.pop();
    a.emplace_back(e.time_s, e.target);
  }
  while (!versioned.empty()) {
    const TimerEntry e = versioned.pop();
    if (e.kind == 1 && e.version != version[e.target]) continue;  // stale
    b.emplace_back(e.time_s, e.target);
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 200u);
}

}  // namespace
}  // namespace chopsim::sim_detail
