#pragma once
// The collective algorithms of the NCCL-like model (collective.cpp, whose file comment gives their cost model): for
// each, a plan part (append the point-to-point steps of one member) and a closed-form estimate part. Internal to the
// collective model.

#include <algorithm>
#include <map>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/collective.hpp"
#include "chopsim/models/topology.hpp"
#include "collective_rings.hpp"

namespace chopsim::collective_detail {

/// Bytes per (link, direction) of a set of concurrent flows; the phase takes max(bytes / bandwidth) plus its latency.
class LinkLoads {
 public:
  explicit LinkLoads(const Context& ctx) : ctx_(ctx) {}
  void add(int from_member, int to_member, double bytes) {
    for (const RouteHop& hop : ctx_.topology.route(ctx_.gpu(from_member), ctx_.gpu(to_member)))
      bytes_[2 * static_cast<long long>(hop.link) + (hop.forward ? 0 : 1)] += bytes;
  }
  [[nodiscard]] double time_s() const {
    double worst = 0.0;
    for (const auto& [key, bytes] : bytes_)
      worst = std::max(worst, bytes / ctx_.topology.links()[static_cast<std::size_t>(key / 2)].bandwidth_bytes_per_s);
    return worst;
  }

 private:
  const Context& ctx_;
  std::map<long long, double> bytes_;
};

/// A ring phase: `factor` = 1 (all-gather, reduce-scatter: n-1 steps) or 2 (all-reduce: 2(n-1) steps) over a buffer
/// of `bytes` (the full S of the phase), split over the channels.
struct RingPhase {
  std::vector<Order> orders;
  int factor = 1;
  double bytes = 0.0;
  int channel_base = 0;
  int sync_base = 0;  ///< added to the sub-ring's smallest member: sync ids stay distinct across phases
  /// Each channel's ring also runs backwards, half of the channel's bytes each way (rings over exactly two nodes,
  /// full_ring): the links carry what they did, and swapping the two nodes maps each channel onto itself.
  bool bidirectional = false;
  /// hop_latency once computed: every member's plan needs it, and it looks at every hop of every channel (without
  /// it, planning a group cost O(members^2 x channels) route lookups: 1.6 s of a 16,384-GPU run's symmetry check).
  mutable double hop_latency_s = -1.0;

  [[nodiscard]] int members() const { return static_cast<int>(orders.front().size()); }
  [[nodiscard]] int steps() const { return factor * (members() - 1); }
  [[nodiscard]] double chunk() const { return bytes / (members() * static_cast<double>(orders.size())); }

  /// The largest route latency of a ring hop.
  [[nodiscard]] double hop_latency(const Context& ctx) const {
    if (hop_latency_s >= 0.0) return hop_latency_s;
    double worst = 0.0;
    for (const Order& order : orders)
      for (std::size_t i = 0; i < order.size(); ++i)
        worst = std::max(worst, ctx.latency(order[i], order[(i + 1) % order.size()]));
    hop_latency_s = worst;
    return worst;
  }
  [[nodiscard]] double alpha(const Context& ctx) const { return hop_latency(ctx) + ctx.params.step_latency_s; }

  void append(const Context& ctx, int me, CollectivePlan& plan) const {
    if (members() <= 1) return;
    const auto m = orders.front().size();
    std::vector<int> next(orders.size());
    std::vector<int> prev(orders.size());
    for (std::size_t c = 0; c < orders.size(); ++c) {
      const Order& order = orders[c];
      const auto pos = static_cast<std::size_t>(std::find(order.begin(), order.end(), me) - order.begin());
      if (pos == m) throw ModelError("collective: member missing from its ring");
      next[c] = order[(pos + 1) % m];
      prev[c] = order[(pos + m - 1) % m];
    }
    auto step = [&](double bytes) {
      CollectiveStep s;
      for (std::size_t c = 0; c < orders.size(); ++c) {
        const int channel = channel_base + static_cast<int>(c);
        if (bidirectional) {
          s.sends.push_back(Transfer{next[c], bytes / 2, channel});
          s.sends.push_back(Transfer{prev[c], bytes / 2, channel});
          s.receives.push_back(Transfer{prev[c], bytes / 2, channel});
          s.receives.push_back(Transfer{next[c], bytes / 2, channel});
        } else {
          s.sends.push_back(Transfer{next[c], bytes, channel});
          s.receives.push_back(Transfer{prev[c], bytes, channel});
        }
      }
      return s;
    };
    if (ctx.params.pipelined_rings) {
      // All members of the ring end together (sync), after the slowest flow; that flow already paid one hop latency
      // (at most hop_latency), the rest of the k alpha term is the step's latency, equal for all members.
      CollectiveStep s = step(steps() * chunk());
      s.latency_s = steps() * alpha(ctx) - hop_latency(ctx);
      s.sync_members = members();
      s.sync_id = sync_base + *std::min_element(orders.front().begin(), orders.front().end());
      plan.steps.push_back(std::move(s));
    } else {
      for (int k = 0; k < steps(); ++k) {
        CollectiveStep s = step(chunk());
        s.latency_s = ctx.params.step_latency_s;
        plan.steps.push_back(std::move(s));
      }
    }
  }

  [[nodiscard]] double estimate(const Context& ctx) const {
    if (members() <= 1) return 0.0;
    LinkLoads loads(ctx);
    const double share = bidirectional ? 0.5 : 1.0;
    for (const Order& order : orders)
      for (std::size_t i = 0; i < order.size(); ++i) {
        loads.add(order[i], order[(i + 1) % order.size()], share * steps() * chunk());
        if (bidirectional) loads.add(order[(i + 1) % order.size()], order[i], share * steps() * chunk());
      }
    return loads.time_s() + steps() * alpha(ctx);
  }
};

/// Hierarchical (NCCL's intra-node / inter-node split; also the "2D" algorithms of Megatron and of
/// Jia et al. 2018): the members on each node and, across nodes, the members with the same position in their node.
struct Hierarchy {
  std::vector<Order> nodes;
  [[nodiscard]] bool applies() const { return nodes.size() > 1 && uniform(nodes) && nodes.front().size() > 1; }
  [[nodiscard]] Order intra(int me) const {
    for (const Order& node : nodes)
      if (std::find(node.begin(), node.end(), me) != node.end()) return node;
    return {};
  }
  [[nodiscard]] Order inter(int me) const {
    const Order node = intra(me);
    const auto position = static_cast<std::size_t>(std::find(node.begin(), node.end(), me) - node.begin());
    Order rail;
    for (const Order& other : nodes) rail.push_back(other[position]);
    return rail;
  }
  [[nodiscard]] int per_node() const { return static_cast<int>(nodes.front().size()); }
};

/// NCCL's double binary tree all-reduce (collective_algorithms.cpp, DoubleBinaryTree).
void append_tree(const Context& ctx, int me, CollectivePlan& plan);

double estimate_tree(const Context& ctx);

/// The phases of a hierarchical collective as seen by `me`. Reduce-scatter: intra RS of S, inter RS of S/L.
/// All-gather: inter AG of S/L, intra AG of S. All-reduce: intra RS of S, inter AR of S/L, intra AG of S.
std::vector<RingPhase> hierarchical_phases(const Context& ctx, const Hierarchy& h, int me);

/// Phases run one after the other; every node's (every rail's) rings run concurrently, so each phase takes its
/// slowest instance: estimated from the union of all instances' flows.
double estimate_hierarchical(const Context& ctx, const Hierarchy& h);

/// Pairwise exchange (the classic MPI_Alltoall; NCCL issues the n-1 peer send/recv pairs of a grouped all-to-all):
/// in step k member i sends its part for (i+k) mod n and receives from (i-k) mod n.
void append_pairwise(const Context& ctx, int me, CollectivePlan& plan);

double estimate_pairwise(const Context& ctx);

/// NCCL's grouped all-to-all and the flex dispatcher's token dispatch (collective_algorithms.cpp, grouped_transfers).
void append_grouped(const Context& ctx, const Hierarchy& h, int me, CollectivePlan& plan);

double estimate_grouped(const Context& ctx, const Hierarchy& h);

/// NCCL's pipelined ring broadcast from member 0.
void append_broadcast(const Context& ctx, int me, CollectivePlan& plan);

double estimate_broadcast(const Context& ctx);

/// send_recv over a group: a ring shift in group order (member i sends the message to i+1 and receives from i-1), the
/// pattern of context-parallel ring attention; with two members, an exchange.
void append_shift(const Context& ctx, int me, CollectivePlan& plan);

double estimate_shift(const Context& ctx);

/// The ring over all members: ring_orders' channels, each running both ways over exactly two nodes.
RingPhase full_ring(const Context& ctx, int factor);

/// The rounds of a ring phase: 2 for an all-reduce (reduce-scatter then all-gather), else 1.
int ring_factor(CollectiveKind kind);

}  // namespace chopsim::collective_detail
