// Ring orders of a collective's members (the channels of NCCL/RCCL's ring algorithms): the layout of the group over
// nodes, rail-aligned multi-node rings, edge-disjoint Hamiltonian cycles of a full mesh, rings over one switch.
// Internal to the collective model (collective.cpp); the file comment there explains the channel choices.
#pragma once

#include <vector>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim::collective_detail {

using Order = std::vector<int>;  // member indices in ring order

/// One collective call on a topology: members are indices into call.members.
struct Context {
  const CollectiveCall& call;
  const Topology& topology;
  const CollectiveParams& params;

  [[nodiscard]] int gpu(int member) const { return call.members[static_cast<std::size_t>(member)]; }
  [[nodiscard]] double latency(int a, int b) const { return topology.route_latency(gpu(a), gpu(b)); }
};

/// Members of `subset` grouped by node, nodes in order of first appearance, members in subset order.
std::vector<Order> by_node(const Context& ctx, const Order& subset);

/// Whether every node holds the same number of members.
bool uniform(const std::vector<Order>& nodes);

/// The channels (rings) of a ring algorithm over `subset`.
std::vector<Order> ring_orders(const Context& ctx, const Order& subset);

}  // namespace chopsim::collective_detail
