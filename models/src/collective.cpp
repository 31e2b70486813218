// NCCL/RCCL-like collective algorithms, decomposed into point-to-point steps per member.
//
// Cost model: the alpha-beta model of the NCCL tuner (NCCL src/graph/tuning.cc) and of Thakur, Rabenseifner, Gropp,
// "Optimization of Collective Communication Operations in MPICH" (IJHPCA 2005). With n members, buffer S, per-step
// latency alpha (route latency + CollectiveParams::step_latency_s) and bandwidth B:
//   ring all-reduce        2(n-1)/n * S/B + 2(n-1) alpha     (reduce-scatter then all-gather, 2(n-1) steps of S/n)
//   ring all-gather / RS    (n-1)/n * S/B +  (n-1) alpha
//   double binary tree AR        2 * S/B + 2 D alpha       (D = tree depth; NCCL 2.4, src/graph/trees.cc)
//   pairwise all-to-all     (n-1)/n * S/B +  (n-1) alpha     (n-1 synchronised steps, one peer each)
//   grouped all-to-all      max over links of (bytes crossing it)/B + alpha   (every peer at once, NCCL's)
//   ring broadcast                  S/B +  (n-1) alpha     (pipelined chain from member 0)
//
// Channels. NCCL runs several rings at once ("channels") and splits the buffer over them; chopsim does the same where
// it changes the bandwidth:
// * Groups spanning several nodes with L > 1 members on each node: every node contributes the same segment (its
//   members in some order) to a ring, and every other node's segment is reversed ("boustrophedon"), so each ring
//   leaves and enters every node through GPUs with the same position in the node: rail-aligned NIC pairs, as NCCL's
//   ring search prefers. NVSwitch nodes: L rings whose segments start at the k-th member, so that every NIC carries one
//   ring per direction. Mesh nodes: one ring per intra-node ring of the mesh (below), so the intra-node hops of
//   different rings stay on different links, their segments starting evenly spaced around it so that the rings leave
//   and enter through every member's NIC. Over exactly two nodes each channel runs both ways (full_ring).
// * A node whose members are all directly linked (xGMI full mesh, MI300X): the complete graph is split into
//   edge-disjoint Hamiltonian cycles (Walecki's construction, see hamiltonian_cycles()), each used in both directions,
//   so nearly every link carries traffic, as RCCL's many channels do on MI300X. Partial meshes (MI250X): a Hamiltonian
//   cycle of the direct links and its reverse.
// * Otherwise (one NVSwitch: every GPU one non-blocking port) one ring that alternates the node's front and rear
//   slots (switch_ring: every order loads the ports alike; this one lets the fast engine fold peers by slot kind).
//
// Pipelined rings (CollectiveParams::pipelined_rings): the k = (n-1) or 2(n-1) synchronised steps of a ring become one
// step in which every member sends k*S/(n*C) to its successor on each channel; the flows then run concurrently as the
// chunks of NCCL's pipeline do. Every chunk crosses every hop, so the ring is as fast as its slowest flow: the members
// end the step together (CollectiveStep::sync_members) when the last flow ends, then wait the rest of the latency term
// k*alpha (the flows already paid one hop latency). The time equals the formula above with far fewer simulated
// events. The double binary tree and the broadcast chain are pipelined the same way.

#include "chopsim/models/collective.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/models/topology.hpp"
#include "collective_rings.hpp"

namespace chopsim {

double token_reach_probability(int experts, int top_k, int held) {
  if (held >= experts) return 1.0;
  if (held <= 0) return 0.0;
  // C(experts - held, top_k) / C(experts, top_k) as a product, exact for the small integers involved.
  double none = 1.0;
  for (int i = 0; i < top_k; ++i) none *= static_cast<double>(experts - held - i) / static_cast<double>(experts - i);
  return 1.0 - std::max(none, 0.0);
}

std::string_view to_string(CollectiveKind kind) { return collective_kind_name(kind); }

namespace {

using collective_detail::by_node;
using collective_detail::Context;
using collective_detail::Order;
using collective_detail::ring_orders;
using collective_detail::uniform;

/// Channel numbers of the phases of a hierarchical collective start at multiples of this, so phases never share a
/// (peer, channel) pair even when they join the same two GPUs.
constexpr int kPhaseChannelStride = 1024;

// ---------------------------------------------------------------------------------------------------------------
// Link loads for the closed-form estimates.

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

// ---------------------------------------------------------------------------------------------------------------
// Algorithms. Each has a plan part (append the steps of one member) and an estimate part.

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

/// The phases of a hierarchical collective as seen by `me`. Reduce-scatter: intra RS of S, inter RS of S/L.
/// All-gather: inter AG of S/L, intra AG of S. All-reduce: intra RS of S, inter AR of S/L, intra AG of S.
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

/// Phases run one after the other; every node's (every rail's) rings run concurrently, so each phase takes its
/// slowest instance: estimated from the union of all instances' flows.
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

/// Pairwise exchange (the classic MPI_Alltoall; NCCL issues the n-1 peer send/recv pairs of a grouped all-to-all):
/// in step k member i sends its part for (i+k) mod n and receives from (i-k) mod n.
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

/// send_recv over a group: a ring shift in group order (member i sends the message to i+1 and receives from i-1), the
/// pattern of context-parallel ring attention; with two members, an exchange.
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

// ---------------------------------------------------------------------------------------------------------------

class NcclModel final : public CollectiveModel {
 public:
  explicit NcclModel(const CollectiveParams& params) : params_(params) {
    check("all_reduce", params_.all_reduce, {"auto", "ring", "tree", "hierarchical"});
    check("all_gather", params_.all_gather, {"auto", "ring", "hierarchical"});
    check("reduce_scatter", params_.reduce_scatter, {"auto", "ring", "hierarchical"});
    check("all_to_all", params_.all_to_all, {"grouped", "pairwise"});
    if (!(params_.step_latency_s >= 0.0)) throw ModelError("collectives: step_latency_s must be >= 0");
    if (params_.mesh_channels < 0) throw ModelError("collectives: mesh_channels must be >= 0");
  }

  CollectivePlan plan(const CollectiveCall& call, int me, const Topology& topology) const override {
    validate(call);
    const int n = static_cast<int>(call.members.size());
    if (me < 0 || me >= n) throw ModelError("collective: member index " + std::to_string(me) + " outside the group");
    std::vector<CollectivePlan> plans = plans_of(call, topology, me, me + 1);
    return std::move(plans.front());
  }

  std::vector<CollectivePlan> plan_all(const CollectiveCall& call, const Topology& topology) const override {
    validate(call);
    return plans_of(call, topology, 0, static_cast<int>(call.members.size()));
  }

  double estimate_time_s(const CollectiveCall& call, const Topology& topology) const override {
    validate(call);
    const Context ctx{call, topology, params_};
    return estimate(ctx, algorithm(ctx));
  }

  const CollectiveParams& params() const override { return params_; }

 private:
  static void check(const char* kind, const std::string& value, std::initializer_list<const char*> valid) {
    for (const char* name : valid)
      if (value == name) return;
    throw ModelError(std::string("collectives: unknown ") + kind + " algorithm '" + value + "' (valid: " + join(valid) +
                     ")");
  }

  static void validate(const CollectiveCall& call) {
    if (call.members.empty()) throw ModelError("collective: empty group");
    if (!(call.bytes >= 0.0)) throw ModelError("collective: negative or NaN size");
    if (call.routing.experts > 0) {
      const auto n = static_cast<int>(call.members.size());
      if (call.kind != CollectiveKind::all_to_all) throw ModelError("collective: only an all_to_all dispatches tokens");
      if (call.routing.experts % n != 0 || call.routing.top_k < 1 || call.routing.top_k > call.routing.experts)
        throw ModelError("collective: a token dispatch needs experts divisible by its " + std::to_string(n) +
                         " members and 1 <= top_k <= experts (got " + std::to_string(call.routing.experts) +
                         " experts, top_k " + std::to_string(call.routing.top_k) + ")");
    }
  }

  static Order all_members(int n) {
    Order all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  [[nodiscard]] double estimate(const Context& ctx, const std::string& algorithm) const {
    const int n = static_cast<int>(ctx.call.members.size());
    if (n <= 1) return 0.0;
    if (algorithm == "ring") return full_ring(ctx, ring_factor(ctx.call.kind)).estimate(ctx);
    if (algorithm == "tree") return estimate_tree(ctx);
    if (algorithm == "hierarchical") return estimate_hierarchical(ctx, Hierarchy{by_node(ctx, all_members(n))});
    if (algorithm == "pairwise") return estimate_pairwise(ctx);
    if (algorithm == "grouped" || algorithm == "token_dispatch")
      return estimate_grouped(ctx, Hierarchy{by_node(ctx, all_members(n))});
    if (algorithm == "ring_broadcast") return estimate_broadcast(ctx);
    return estimate_shift(ctx);
  }

  /// The algorithm every member of the call uses (depends only on the call, never on the member).
  /// "auto" follows NCCL's tuner, which takes the algorithm with the lowest predicted time (src/graph/tuning.cc):
  /// inside one node always the ring (NCCL's intra-node tree is a chain and never wins there); across nodes the
  /// lower closed-form estimate of ring and double binary tree for an all-reduce, ties to the ring, and the ring for
  /// all-gather and reduce-scatter, the only algorithms NCCL's tuner prices for them without NVLink SHARP or an
  /// in-network reduction (NVLS, CollNet). chopsim's hierarchical form is not one of NCCL's algorithms and runs only
  /// when asked (it took all-gathers over hundreds of ranks at a sixth of a ring's step latencies). With the estimates
  /// above the tree wins for small all-reduces over many nodes: below S = n(n-1-D) alpha B for one member per node
  /// (about 44 MB for 16 nodes at alpha = 5 us, B = 50 GB/s).
  /// The plans of members [first, last): the algorithm, the ring and the node hierarchy are worked out once.
  std::vector<CollectivePlan> plans_of(const CollectiveCall& call, const Topology& topology, int first,
                                       int last) const {
    const int n = static_cast<int>(call.members.size());
    const Context ctx{call, topology, params_};
    std::vector<CollectivePlan> plans(static_cast<std::size_t>(last - first));
    const std::string chosen = algorithm(ctx);
    for (CollectivePlan& plan : plans) plan.algorithm = chosen;
    if (n == 1) return plans;
    if (chosen == "ring") {
      const auto ring = full_ring(ctx, ring_factor(call.kind));
      for (int me = first; me < last; ++me) ring.append(ctx, me, plans[static_cast<std::size_t>(me - first)]);
    } else if (chosen == "hierarchical") {
      const Hierarchy h{by_node(ctx, all_members(n))};
      for (int me = first; me < last; ++me)
        for (const RingPhase& phase : hierarchical_phases(ctx, h, me))
          phase.append(ctx, me, plans[static_cast<std::size_t>(me - first)]);
    } else if (chosen == "grouped" || chosen == "token_dispatch") {
      const Hierarchy h{by_node(ctx, all_members(n))};
      for (int me = first; me < last; ++me) append_grouped(ctx, h, me, plans[static_cast<std::size_t>(me - first)]);
    } else {
      for (int me = first; me < last; ++me) {
        CollectivePlan& plan = plans[static_cast<std::size_t>(me - first)];
        if (chosen == "tree")
          append_tree(ctx, me, plan);
        else if (chosen == "pairwise")
          append_pairwise(ctx, me, plan);
        else if (chosen == "ring_broadcast")
          append_broadcast(ctx, me, plan);
        else
          append_shift(ctx, me, plan);
      }
    }
    return plans;
  }

  [[nodiscard]] std::string algorithm(const Context& ctx) const {
    const CollectiveKind kind = ctx.call.kind;
    // A token dispatch is the dispatcher's own exchange (DeepEP, HybridEP), not NCCL's all-to-all.
    if (kind == CollectiveKind::all_to_all) return ctx.call.routing.experts > 0 ? "token_dispatch" : params_.all_to_all;
    if (kind == CollectiveKind::broadcast) return "ring_broadcast";
    if (kind == CollectiveKind::send_recv) return "shift";
    const int n = static_cast<int>(ctx.call.members.size());
    const std::string& wanted = kind == CollectiveKind::all_reduce   ? params_.all_reduce
                                : kind == CollectiveKind::all_gather ? params_.all_gather
                                                                     : params_.reduce_scatter;
    const Hierarchy h{by_node(ctx, all_members(n))};
    if (wanted == "hierarchical") return h.applies() ? "hierarchical" : "ring";
    if (wanted != "auto") return wanted;
    if (h.nodes.size() <= 1) return "ring";
    std::string best = "ring";
    double best_time = estimate(ctx, "ring");
    auto consider = [&](const char* name) {
      const double t = estimate(ctx, name);
      if (t < best_time) {
        best_time = t;
        best = name;
      }
    };
    if (kind == CollectiveKind::all_reduce) consider("tree");
    return best;
  }

  CollectiveParams params_;
};

}  // namespace

void register_builtin_collective_models(CollectiveModelRegistry& registry) {
  registry.add("nccl",
               "NCCL/RCCL-like: rings (multi-channel, rail-aligned), double binary tree, hierarchical, grouped or "
               "pairwise all-to-all",
               [](const CollectiveParams& params) -> std::unique_ptr<CollectiveModel> {
                 return std::make_unique<NcclModel>(params);
               });
}

}  // namespace chopsim
