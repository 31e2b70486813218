// Ring orders of a collective's members: see collective_rings.hpp and the file comment of collective.cpp.

#include "collective_rings.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim::collective_detail {

namespace {

/// Hamiltonian-cycle search on partial meshes is exhaustive; it is only tried on small single-node groups.
constexpr int kMaxSearchMembers = 16;
constexpr long kSearchBudget = 200000;

// ---------------------------------------------------------------------------------------------------------------
// Hamiltonian decompositions of the complete graph K_n.

/// Walecki's construction (Lucas, "Récréations mathématiques", 1892; see Alspach, "The wonderful Walecki
/// construction", 2008): for odd n = 2m+1, vertex 2m in the centre and 0..2m-1 on a circle; cycle i (0 <= i < m) is
/// 2m, i, i+1, i-1, i+2, i-2, ..., i+m (mod 2m). The m cycles are edge-disjoint and cover K_n.
std::vector<Order> walecki(int n) {
  const int m = (n - 1) / 2;
  const int circle = 2 * m;
  std::vector<Order> cycles;
  for (int i = 0; i < m; ++i) {
    Order cycle{circle};
    for (int k = 0; k < circle; ++k) {
      const int p = (k % 2 == 1) ? i + (k + 1) / 2 : i - k / 2;
      cycle.push_back(((p % circle) + circle) % circle);
    }
    cycles.push_back(std::move(cycle));
  }
  return cycles;
}

/// Edge-disjoint Hamiltonian cycles of K_n: (n-1)/2 for odd n (Walecki), (n-2)/2 for even n (Walecki on n-1 vertices,
/// then vertex n-1 spliced into one edge of each cycle; the spliced edges are chosen vertex-disjoint so the new edges
/// to n-1 are distinct; the edges left over form a perfect matching, the most any decomposition can leave).
std::vector<Order> hamiltonian_cycles(int n) {
  if (n < 2) return {};
  if (n == 2) return {Order{0, 1}};
  if (n % 2 == 1) return walecki(n);
  std::vector<Order> cycles = walecki(n - 1);
  const int extra = n - 1;
  const auto count = cycles.size();
  std::vector<std::size_t> choice(count, 0);  // position p: splice between cycle[p] and cycle[p+1]
  std::vector<bool> used(static_cast<std::size_t>(n), false);
  // Depth-first choice of one edge per cycle with no shared vertex.
  std::size_t c = 0;
  std::vector<std::size_t> next(count, 0);
  while (c < count) {
    const Order& cycle = cycles[c];
    bool placed = false;
    for (std::size_t p = next[c]; p < cycle.size(); ++p) {
      const auto a = static_cast<std::size_t>(cycle[p]);
      const auto b = static_cast<std::size_t>(cycle[(p + 1) % cycle.size()]);
      if (used[a] || used[b]) continue;
      used[a] = used[b] = true;
      choice[c] = p;
      next[c] = p + 1;
      placed = true;
      break;
    }
    if (placed) {
      ++c;
      if (c < count) next[c] = 0;
      continue;
    }
    if (c == 0)  // does not happen: the unit tests check every n up to kMaxSearchMembers
      throw ModelError("collective: no Hamiltonian decomposition found for " + std::to_string(n) + " members");
    --c;
    const Order& previous = cycles[c];
    used[static_cast<std::size_t>(previous[choice[c]])] = false;
    used[static_cast<std::size_t>(previous[(choice[c] + 1) % previous.size()])] = false;
  }
  for (std::size_t i = 0; i < count; ++i)
    cycles[i].insert(cycles[i].begin() + static_cast<std::ptrdiff_t>(choice[i] + 1), extra);
  return cycles;
}

/// A Hamiltonian cycle of the graph `adjacent` (n x n), by depth-first search from vertex 0 with neighbours in index
/// order; empty if none is found within the search budget.
Order find_hamiltonian_cycle(const std::vector<std::vector<bool>>& adjacent) {
  const int n = static_cast<int>(adjacent.size());
  Order path{0};
  std::vector<bool> visited(static_cast<std::size_t>(n), false);
  visited[0] = true;
  std::vector<int> next_candidate{0};
  long budget = kSearchBudget;
  while (!path.empty() && budget-- > 0) {
    const int v = path.back();
    if (static_cast<int>(path.size()) == n && adjacent[static_cast<std::size_t>(v)][0]) return path;
    int& candidate = next_candidate.back();
    bool advanced = false;
    while (candidate < n) {
      const int w = candidate++;
      if (!visited[static_cast<std::size_t>(w)] && adjacent[static_cast<std::size_t>(v)][static_cast<std::size_t>(w)]) {
        visited[static_cast<std::size_t>(w)] = true;
        path.push_back(w);
        next_candidate.push_back(0);
        advanced = true;
        break;
      }
    }
    if (!advanced) {
      visited[static_cast<std::size_t>(path.back())] = path.size() == 1;
      path.pop_back();
      next_candidate.pop_back();
    }
  }
  return {};
}

}  // namespace

/// Members of `subset` grouped by node, nodes in order of first appearance, members in subset order.
std::vector<Order> by_node(const Context& ctx, const Order& subset) {
  std::vector<Order> nodes;
  std::unordered_map<int, std::size_t> index;
  for (const int member : subset) {
    const int node = ctx.topology.node_of_gpu(ctx.gpu(member));
    auto [it, inserted] = index.emplace(node, nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(member);
  }
  return nodes;
}

bool uniform(const std::vector<Order>& nodes) {
  return std::all_of(nodes.begin(), nodes.end(),
                     [&](const Order& node) { return node.size() == nodes.front().size(); });
}

namespace {

/// A ring over several nodes: node j contributes its members at the local positions `segment`, every odd node in
/// reverse, so that consecutive nodes meet at the same local position (a rail-aligned NIC pair) whatever the segment.
Order boustrophedon(const std::vector<Order>& nodes, const std::vector<std::size_t>& segment) {
  Order order;
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    const std::size_t start = order.size();
    for (const std::size_t position : segment) order.push_back(nodes[j][position]);
    if (j % 2 == 1) std::reverse(order.begin() + static_cast<std::ptrdiff_t>(start), order.end());
  }
  return order;
}

std::vector<Order> single_node_orders(const Context& ctx, const Order& subset);

/// Rings over several nodes with L members each. NVSwitch-like nodes (one intra-node ring): L rings whose segments
/// are the node's members rotated by k, so that over the rings every NIC carries one ring per direction. Mesh nodes:
/// one ring per intra-node ring of the mesh (rotated by k to spread the NICs), so that the rings' intra-node hops stay
/// on distinct links as in a single node.
std::vector<Order> multi_node_orders(const Context& ctx, const std::vector<Order>& nodes) {
  const std::size_t per_node = nodes.front().size();
  std::vector<std::vector<std::size_t>> segments;
  const std::vector<Order> intra = single_node_orders(ctx, nodes.front());
  if (intra.size() >= 2) {
    // Ring j starts its segment j * per_node / rings members into its intra-node ring, evenly spaced: a ring leaves
    // and enters a node at its segment's ends, and a partial mesh's one cycle and its reverse, rotated by 0 and
    // per_node / 2, then use every member's NIC (rotated by 0 and 1 they shared one).
    const std::size_t rings = intra.size();
    for (std::size_t j = 0; j < rings; ++j) {
      const Order& cycle = intra[j];
      const std::size_t k = j * per_node / rings;
      std::vector<std::size_t> segment;
      for (std::size_t i = 0; i < per_node; ++i) {
        const int member = cycle[(k + i) % per_node];
        segment.push_back(static_cast<std::size_t>(std::find(nodes.front().begin(), nodes.front().end(), member) -
                                                   nodes.front().begin()));
      }
      segments.push_back(std::move(segment));
    }
  } else {
    for (std::size_t k = 0; k < per_node; ++k) {
      std::vector<std::size_t> segment;
      for (std::size_t i = 0; i < per_node; ++i) segment.push_back((k + i) % per_node);
      segments.push_back(std::move(segment));
    }
  }
  std::vector<Order> orders;
  for (const auto& segment : segments) orders.push_back(boustrophedon(nodes, segment));
  return orders;
}

/// The ring of members that share one switch (NVSwitch): any order loads every GPU's port with one flow in and one out,
/// so the order is free. It alternates the members in the node's front half of slots with those in its rear half
/// (each in group order) when there are as many of each: the slots a front-to-back cooled node warms alike then sit
/// two ring steps apart, and moving every member two steps on keeps each kind among its own, which lets the fast
/// engine fold the peers of each kind (sim/src/symmetry.cpp). Otherwise the group order.
Order switch_ring(const Context& ctx, const Order& subset) {
  const int nodes = std::max(ctx.topology.node_count(), 1);
  const int per_node = ctx.topology.gpu_count() / nodes;
  Order front, rear;
  for (const int member : subset) {
    const int gpu = ctx.gpu(member);
    const int slot = gpu - ctx.topology.node_of_gpu(gpu) * per_node;
    (2 * slot < per_node ? front : rear).push_back(member);
  }
  if (front.empty() || front.size() != rear.size()) return subset;
  Order ring;
  for (std::size_t i = 0; i < front.size(); ++i) {
    ring.push_back(front[i]);
    ring.push_back(rear[i]);
  }
  return ring;
}

/// Rings over members of one node: Hamiltonian cycles of a (full or partial) direct-link mesh in both directions,
/// else one ring that alternates the node's front and rear slots (switch_ring).
std::vector<Order> single_node_orders(const Context& ctx, const Order& subset) {
  const int m = static_cast<int>(subset.size());
  if (m <= 2 || m > kMaxSearchMembers) return {subset};
  std::vector<std::vector<bool>> adjacent(static_cast<std::size_t>(m), std::vector<bool>(static_cast<std::size_t>(m)));
  bool complete = true;
  bool any = false;
  for (int a = 0; a < m; ++a)
    for (int b = 0; b < m; ++b) {
      if (a == b) continue;
      const bool direct =
          ctx.topology.route(ctx.gpu(subset[static_cast<std::size_t>(a)]), ctx.gpu(subset[static_cast<std::size_t>(b)]))
              .size() == 1;
      adjacent[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = direct;
      complete = complete && direct;
      any = any || direct;
    }
  std::vector<Order> cycles;
  if (complete) {
    cycles = hamiltonian_cycles(m);
  } else if (any) {
    Order cycle = find_hamiltonian_cycle(adjacent);
    if (!cycle.empty()) cycles.push_back(std::move(cycle));
  }
  if (cycles.empty()) return {switch_ring(ctx, subset)};
  std::vector<Order> orders;
  for (const Order& cycle : cycles) {
    Order forward;
    for (const int i : cycle) forward.push_back(subset[static_cast<std::size_t>(i)]);
    Order backward(forward.rbegin(), forward.rend());
    orders.push_back(std::move(forward));
    orders.push_back(std::move(backward));
  }
  const auto limit = ctx.params.mesh_channels > 0 ? static_cast<std::size_t>(ctx.params.mesh_channels) : orders.size();
  orders.resize(std::min(orders.size(), limit));
  return orders;
}

}  // namespace

/// The channels (rings) of a ring algorithm over `subset` (collective.cpp's file comment explains them).
std::vector<Order> ring_orders(const Context& ctx, const Order& subset) {
  if (subset.size() <= 2) return {subset};
  const std::vector<Order> nodes = by_node(ctx, subset);
  if (nodes.size() == 1) return single_node_orders(ctx, subset);
  if (!uniform(nodes) || nodes.front().size() == 1) {
    std::vector<std::size_t> in_order;
    for (std::size_t i = 0; i < nodes.front().size(); ++i) in_order.push_back(i);
    if (!uniform(nodes)) {  // uneven nodes: each node in group order, alternate nodes reversed
      Order order;
      for (std::size_t j = 0; j < nodes.size(); ++j) {
        const std::size_t start = order.size();
        order.insert(order.end(), nodes[j].begin(), nodes[j].end());
        if (j % 2 == 1) std::reverse(order.begin() + static_cast<std::ptrdiff_t>(start), order.end());
      }
      return {order};
    }
    return {boustrophedon(nodes, in_order)};
  }
  return multi_node_orders(ctx, nodes);
}

}  // namespace chopsim::collective_detail
