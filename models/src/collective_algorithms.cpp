#include "collective_algorithms.hpp"

#include <cmath>
#include <numeric>
#include <utility>

namespace chopsim::collective_detail {

namespace {

/// Channel numbers of the phases of a hierarchical collective start at multiples of this, so phases never share a
/// (peer, channel) pair even when they join the same two GPUs.
constexpr int kPhaseChannelStride = 1024;

/// NCCL's double binary tree (src/graph/trees.cc): tree 0 is the in-order binary tree rooted at 0, tree 1 its mirror
/// (even n) or its shift by one (odd n), so that most internal nodes of one tree are leaves of the other. Each tree
/// carries half the buffer; reduction up and broadcast down run as one pipelined step (NCCL pipelines chunks through
/// the tree), with latency 2 D alpha for depth D.
class DoubleBinaryTree {
 public:
  explicit DoubleBinaryTree(int n) : n_(n) {}

  static int btree_parent(int n, int rank) {
    if (rank == 0) return -1;
    int bit = 1;
    while (bit < n && (bit & rank) == 0) bit <<= 1;
    int up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    return up;
  }

  [[nodiscard]] int parent(int tree, int rank) const {
    if (tree == 0) return btree_parent(n_, rank);
    if (n_ % 2 == 1) {
      const int up = btree_parent(n_, (rank - 1 + n_) % n_);
      return up < 0 ? -1 : (up + 1) % n_;
    }
    const int up = btree_parent(n_, n_ - 1 - rank);
    return up < 0 ? -1 : n_ - 1 - up;
  }

  [[nodiscard]] std::vector<int> children(int tree, int rank) const {
    std::vector<int> out;
    for (int r = 0; r < n_; ++r)
      if (parent(tree, r) == rank) out.push_back(r);
    return out;
  }

  [[nodiscard]] int depth() const {
    int worst = 0;
    for (int tree = 0; tree < 2; ++tree)
      for (int r = 0; r < n_; ++r) {
        int d = 0;
        for (int v = r; parent(tree, v) >= 0; v = parent(tree, v)) ++d;
        worst = std::max(worst, d);
      }
    return worst;
  }

  /// Every edge (child, parent) of both trees, for latency and load computations.
  template <class F>
  void for_each_edge(F&& f) const {
    for (int tree = 0; tree < 2; ++tree)
      for (int r = 0; r < n_; ++r)
        if (const int p = parent(tree, r); p >= 0) f(tree, r, p);
  }

 private:
  int n_;
};

double tree_hop_latency(const Context& ctx, const DoubleBinaryTree& tree) {
  double worst = 0.0;
  tree.for_each_edge([&](int, int child, int parent) {
    worst = std::max({worst, ctx.latency(child, parent), ctx.latency(parent, child)});
  });
  return worst;
}

double tree_alpha(const Context& ctx, const DoubleBinaryTree& tree) {
  return tree_hop_latency(ctx, tree) + ctx.params.step_latency_s;
}

/// NCCL's all-to-all: one ncclGroupStart/ncclGroupEnd around an ncclSend and an ncclRecv per peer (the NCCL user
/// guide's all-to-all example; Megatron-Core's all-to-all token dispatcher calls torch.distributed.all_to_all_single,
/// which NCCL runs that way). The group's operations progress together over NCCL's point-to-point channels, so every
/// member sends its part to every other member at once and the flows share the links max-min: a member's n-1 parts
/// leave through its NVLink ports and its NIC concurrently, and an all-to-all across two nodes takes the time of the
/// half that crosses the NIC (plus one latency) rather than n-1 synchronised rounds each as slow as its slowest
/// (inter-node) pair, as the pairwise exchange would.
///
/// Between nodes the parts travel rail-aligned, as NCCL's PXN sends them (NCCL 2.12+, on by default): the parts from
/// one node to another cross the fabric between the two GPUs with the same position in their nodes, one NVLink hop
/// away from their sender or receiver. chopsim sends them as one transfer per pair of nodes and position (the parts
/// a member has for the whole other node), which loads every NIC and rail link as PXN does and keeps the flows per
/// member at (members per node - 1) + (nodes - 1) instead of n - 1. Groups whose nodes hold different numbers of
/// members send every part on its own.
///
/// The parts start together once every member has arrived (a first step without transfers that all members end
/// together): a member's all-to-all ends when its slowest part, through its own NIC, has arrived, and the last member
/// to arrive still has all of its parts to send, so the collective ends one transfer time after the last arrival
/// either way. Starting the parts together also makes equal parts end at the same instant, which keeps the number of
/// max-min re-solves per all-to-all at a handful instead of one per part.
///
/// A token dispatch (CollectiveCall::routing, the flex dispatcher's DeepEP or HybridEP) moves each token once per
/// destination instead of once per routed copy: a member's part for another member is its tokens times the
/// probability that one of the other's experts is among a token's top_k, and its transfer to another node carries
/// its tokens times the probability that the node holds one of them (DeepEP's normal kernels send a token to each
/// destination node once, over RDMA to the GPU of the same position, which forwards it over NVLink). The forwarded
/// copies are NVLink flows of the same step (DeepEP pipelines the two): a member sends each member of its own node its
/// own part and one part on behalf of each other node's member of its position. NCCL's plain all-to-all is not
/// given such NVLink hops (above).
std::vector<Transfer> grouped_transfers(const Context& ctx, const Hierarchy& h, int me) {
  const int n = static_cast<int>(ctx.call.members.size());
  const TokenRouting& routing = ctx.call.routing;
  const bool dispatch = routing.experts > 0;
  // A token dispatch's bytes count every routed copy: the member's distinct tokens are 1/top_k of them.
  const double token_bytes = dispatch ? ctx.call.bytes / routing.top_k : 0.0;
  const auto reached = [&](int members) {  // bytes of distinct tokens bound for `members` members
    return token_bytes * token_reach_probability(routing.experts, routing.top_k, routing.experts / n * members);
  };
  const double part = dispatch ? reached(1) : ctx.call.bytes / n;
  std::vector<Transfer> transfers;
  if (h.nodes.size() <= 1 || !uniform(h.nodes)) {
    for (int k = 1; k < n; ++k) transfers.push_back(Transfer{(me + k) % n, part, 0});
    return transfers;
  }
  // Peers in cyclic order from `me` (its node's next members, then the next nodes), so that a rotation of the
  // members that maps nodes onto nodes maps plans onto plans (the symmetry classes compare them in order).
  const auto node_of = static_cast<std::size_t>(
      std::find_if(h.nodes.begin(), h.nodes.end(),
                   [&](const Order& node) { return std::find(node.begin(), node.end(), me) != node.end(); }) -
      h.nodes.begin());
  const Order& own = h.nodes[node_of];
  const auto position = static_cast<std::size_t>(std::find(own.begin(), own.end(), me) - own.begin());
  const double in_node_part = dispatch ? part * static_cast<double>(h.nodes.size()) : part;  // own + forwarded
  for (std::size_t j = 1; j < own.size(); ++j)
    transfers.push_back(Transfer{own[(position + j) % own.size()], in_node_part, 0});
  for (std::size_t j = 1; j < h.nodes.size(); ++j) {
    const Order& node = h.nodes[(node_of + j) % h.nodes.size()];
    const double to_node = dispatch ? reached(static_cast<int>(node.size())) : part * static_cast<double>(node.size());
    transfers.push_back(Transfer{node[position], to_node, 0});
  }
  return transfers;
}

/// Ring broadcast from member 0 (NCCL's broadcast is a pipelined ring): every ring is rotated to start at the root;
/// each member receives from its predecessor and forwards to its successor, except the last.
std::vector<Order> broadcast_orders(const Context& ctx) {
  Order all(ctx.call.members.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<Order> orders = ring_orders(ctx, all);
  for (Order& order : orders) std::rotate(order.begin(), std::find(order.begin(), order.end(), 0), order.end());
  return orders;
}

double broadcast_hop_latency(const Context& ctx, const std::vector<Order>& orders) {
  double worst = 0.0;
  for (const Order& order : orders)
    for (std::size_t i = 0; i + 1 < order.size(); ++i) worst = std::max(worst, ctx.latency(order[i], order[i + 1]));
  return worst;
}

double broadcast_alpha(const Context& ctx, const std::vector<Order>& orders) {
  return broadcast_hop_latency(ctx, orders) + ctx.params.step_latency_s;
}

}  // namespace

void append_tree(const Context& ctx, int me, CollectivePlan& plan) {
  const int n = static_cast<int>(ctx.call.members.size());
  const DoubleBinaryTree tree(n);
  const double half = ctx.call.bytes / 2;
  CollectiveStep step;
  for (int t = 0; t < 2; ++t) {
    const int parent = tree.parent(t, me);
    const auto children = tree.children(t, me);
    // Reduction towards the root, then broadcast back; the order inside the step is fixed so peers match.
    if (parent >= 0) step.sends.push_back(Transfer{parent, half, t});
    for (const int child : children) step.receives.push_back(Transfer{child, half, t});
    if (parent >= 0) step.receives.push_back(Transfer{parent, half, t});
    for (const int child : children) step.sends.push_back(Transfer{child, half, t});
  }
  // Chunks are pipelined through both trees: every member ends with the slowest edge (sync), then the rest of the
  // 2 D alpha latency term.
  step.latency_s = 2 * tree.depth() * tree_alpha(ctx, tree) - tree_hop_latency(ctx, tree);
  step.sync_members = n;
  step.sync_id = 0;
  plan.steps.push_back(std::move(step));
}

double estimate_tree(const Context& ctx) {
  const int n = static_cast<int>(ctx.call.members.size());
  const DoubleBinaryTree tree(n);
  LinkLoads loads(ctx);
  tree.for_each_edge([&](int, int child, int parent) {
    loads.add(child, parent, ctx.call.bytes / 2);
    loads.add(parent, child, ctx.call.bytes / 2);
  });
  return loads.time_s() + 2 * tree.depth() * tree_alpha(ctx, tree);
}

std::vector<RingPhase> hierarchical_phases(const Context& ctx, const Hierarchy& h, int me) {
  const double bytes = ctx.call.bytes;
  const double per_rail = bytes / h.per_node();
  const auto intra = ring_orders(ctx, h.intra(me));
  const auto inter = ring_orders(ctx, h.inter(me));
  const int n = static_cast<int>(ctx.call.members.size());
  switch (ctx.call.kind) {
    case CollectiveKind::reduce_scatter:
      return {RingPhase{intra, 1, bytes, 0, 0}, RingPhase{inter, 1, per_rail, kPhaseChannelStride, n}};
    case CollectiveKind::all_gather:
      return {RingPhase{inter, 1, per_rail, 0, 0}, RingPhase{intra, 1, bytes, kPhaseChannelStride, n}};
    default:
      return {RingPhase{intra, 1, bytes, 0, 0}, RingPhase{inter, 2, per_rail, kPhaseChannelStride, n},
              RingPhase{intra, 1, bytes, 2 * kPhaseChannelStride, 2 * n}};
  }
}

double estimate_hierarchical(const Context& ctx, const Hierarchy& h) {
  double total = 0.0;
  const int phases = ctx.call.kind == CollectiveKind::all_reduce ? 3 : 2;
  for (int p = 0; p < phases; ++p) {
    LinkLoads loads(ctx);
    double alpha_term = 0.0;
    std::vector<bool> seen(ctx.call.members.size(), false);
    for (std::size_t me = 0; me < ctx.call.members.size(); ++me) {
      if (seen[me]) continue;
      const RingPhase phase = hierarchical_phases(ctx, h, static_cast<int>(me))[static_cast<std::size_t>(p)];
      for (const int member : phase.orders.front()) seen[static_cast<std::size_t>(member)] = true;
      if (phase.members() <= 1) continue;
      for (const Order& order : phase.orders)
        for (std::size_t i = 0; i < order.size(); ++i)
          loads.add(order[i], order[(i + 1) % order.size()], phase.steps() * phase.chunk());
      alpha_term = std::max(alpha_term, phase.steps() * phase.alpha(ctx));
    }
    total += loads.time_s() + alpha_term;
  }
  return total;
}

void append_pairwise(const Context& ctx, int me, CollectivePlan& plan) {
  const int n = static_cast<int>(ctx.call.members.size());
  const double part = ctx.call.bytes / n;
  for (int k = 1; k < n; ++k) {
    CollectiveStep step;
    step.sends.push_back(Transfer{(me + k) % n, part, 0});
    step.receives.push_back(Transfer{(me - k + n) % n, part, 0});
    step.latency_s = ctx.params.step_latency_s;
    plan.steps.push_back(std::move(step));
  }
}

double estimate_pairwise(const Context& ctx) {
  const int n = static_cast<int>(ctx.call.members.size());
  double total = 0.0;
  for (int k = 1; k < n; ++k) {
    LinkLoads loads(ctx);
    double latency = 0.0;
    for (int i = 0; i < n; ++i) {
      loads.add(i, (i + k) % n, ctx.call.bytes / n);
      latency = std::max(latency, ctx.latency(i, (i + k) % n));
    }
    total += loads.time_s() + latency + ctx.params.step_latency_s;
  }
  return total;
}

void append_grouped(const Context& ctx, const Hierarchy& h, int me, CollectivePlan& plan) {
  CollectiveStep barrier;
  barrier.sync_members = static_cast<int>(ctx.call.members.size());
  plan.steps.push_back(barrier);
  CollectiveStep step;
  step.sends = grouped_transfers(ctx, h, me);
  step.receives = step.sends;  // the same peers and sizes both ways (equal parts, equal nodes)
  step.latency_s = ctx.params.step_latency_s;
  plan.steps.push_back(std::move(step));
}

double estimate_grouped(const Context& ctx, const Hierarchy& h) {
  const int n = static_cast<int>(ctx.call.members.size());
  LinkLoads loads(ctx);
  double latency = 0.0;
  for (int i = 0; i < n; ++i)
    for (const Transfer& t : grouped_transfers(ctx, h, i)) {
      loads.add(i, t.peer, t.bytes);
      latency = std::max(latency, ctx.latency(i, t.peer));
    }
  return loads.time_s() + latency + ctx.params.step_latency_s;
}

void append_broadcast(const Context& ctx, int me, CollectivePlan& plan) {
  const auto orders = broadcast_orders(ctx);
  const auto n = orders.front().size();
  const double bytes = ctx.call.bytes / static_cast<double>(orders.size());
  CollectiveStep step;
  for (std::size_t c = 0; c < orders.size(); ++c) {
    const Order& order = orders[c];
    const auto pos = static_cast<std::size_t>(std::find(order.begin(), order.end(), me) - order.begin());
    if (pos > 0) step.receives.push_back(Transfer{order[pos - 1], bytes, static_cast<int>(c)});
    if (pos + 1 < n) step.sends.push_back(Transfer{order[pos + 1], bytes, static_cast<int>(c)});
  }
  // A pipelined chain: everyone ends with the slowest hop (sync), then the rest of the (n-1) alpha term.
  step.latency_s = static_cast<double>(n - 1) * broadcast_alpha(ctx, orders) - broadcast_hop_latency(ctx, orders);
  step.sync_members = static_cast<int>(n);
  step.sync_id = 0;
  plan.steps.push_back(std::move(step));
}

double estimate_broadcast(const Context& ctx) {
  const auto orders = broadcast_orders(ctx);
  LinkLoads loads(ctx);
  for (const Order& order : orders)
    for (std::size_t i = 0; i + 1 < order.size(); ++i)
      loads.add(order[i], order[i + 1], ctx.call.bytes / static_cast<double>(orders.size()));
  return loads.time_s() + static_cast<double>(orders.front().size() - 1) * broadcast_alpha(ctx, orders);
}

void append_shift(const Context& ctx, int me, CollectivePlan& plan) {
  const int n = static_cast<int>(ctx.call.members.size());
  CollectiveStep step;
  step.sends.push_back(Transfer{(me + 1) % n, ctx.call.bytes, 0});
  step.receives.push_back(Transfer{(me - 1 + n) % n, ctx.call.bytes, 0});
  step.latency_s = ctx.params.step_latency_s;
  plan.steps.push_back(std::move(step));
}

double estimate_shift(const Context& ctx) {
  const int n = static_cast<int>(ctx.call.members.size());
  LinkLoads loads(ctx);
  double latency = 0.0;
  for (int i = 0; i < n; ++i) {
    loads.add(i, (i + 1) % n, ctx.call.bytes);
    latency = std::max(latency, ctx.latency(i, (i + 1) % n));
  }
  return loads.time_s() + latency + ctx.params.step_latency_s;
}

RingPhase full_ring(const Context& ctx, int factor) {
  Order all(ctx.call.members.size());
  std::iota(all.begin(), all.end(), 0);
  RingPhase ring{ring_orders(ctx, all), factor, ctx.call.bytes, 0, 0};
  // Over exactly two nodes with several members on each, a rail-aligned ring runs through the second node backwards
  // (ring_orders), so swapping the nodes maps it onto its reverse: running each channel both ways makes every channel
  // its own image (the fast engine then folds the two nodes' ranks, sim/src/symmetry.cpp) and loads each link
  // direction as the one-way rings did.
  const std::vector<Order> nodes = by_node(ctx, all);
  ring.bidirectional = nodes.size() == 2 && uniform(nodes) && nodes.front().size() > 1 && ring.members() > 2;
  return ring;
}

int ring_factor(CollectiveKind kind) { return kind == CollectiveKind::all_reduce ? 2 : 1; }

}  // namespace chopsim::collective_detail
