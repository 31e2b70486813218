// The cluster graph and its routing.
//
// Routing rule (docs/design.md, "Engine semantics"): a route between two GPUs is a shortest path in hops that
// never passes through a third GPU (GPUs do not forward traffic; NCCL/RCCL rings forward through GPU *memory*, which
// the collective algorithms model as separate transfers). Among the shortest paths the widest one wins (largest
// bottleneck bandwidth: an NVSwitch path beats a PCIe detour of the same length), and among those an equal-cost
// multipath (ECMP) choice is made per hop by hashing (from, to, hop), as switches hash flow headers. The hash makes
// the choice identical on every run and independent of the order in which routes are asked for.

#include "chopsim/models/topology.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "chopsim/common/error.hpp"

namespace chopsim {

std::string_view to_string(LinkClass link_class) {
  switch (link_class) {
    case LinkClass::nvlink:
      return "nvlink";
    case LinkClass::xgmi:
      return "xgmi";
    case LinkClass::pcie:
      return "pcie";
    case LinkClass::nic:
      return "nic";
    case LinkClass::fabric:
      return "fabric";
  }
  return "unknown";
}

namespace {

struct EdgeData {
  int link = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property, EdgeData>;

/// splitmix64 (Steele, Lea, Flood 2014): a fixed, well-mixed hash, so ECMP choices do not depend on the
/// standard library's std::hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t pair_key(int from, int to) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(from)) << 32) | static_cast<std::uint32_t>(to);
}

}  // namespace

struct Topology::Impl {
  Graph graph;
  std::vector<TopologyVertex> vertices;
  std::vector<TopologyLink> links;
  std::vector<int> gpu_vertices;  // by GPU index, -1 where missing
  std::unordered_set<std::string> names;
  int node_count = 0;

  /// Scratch state of one route search, reused across searches (entries count only where their stamp is the current
  /// epoch, so nothing is cleared between searches).
  struct RouteSearch {
    std::vector<int> hops_from_source;        ///< side A: hops from the source
    std::vector<int> hops_to_target;          ///< side B: hops to the target
    std::vector<std::uint32_t> stamp_source;  ///< hops_from_source valid
    std::vector<std::uint32_t> stamp_target;  ///< hops_to_target valid
    std::vector<std::uint32_t> stamp_dag;     ///< on a shortest source-target path; distance and width valid
    std::vector<int> distance;                ///< hops to the target, for vertices on a shortest path
    std::vector<double> width;                ///< widest bottleneck to the target over shortest paths
    std::vector<int> order_source, order_target, frontier, next, meeting;
    std::vector<std::vector<int>> by_distance;
    std::uint32_t epoch = 0;

    void prepare(std::size_t n) {
      if (hops_from_source.size() != n) {
        hops_from_source.assign(n, -1);
        hops_to_target.assign(n, -1);
        stamp_source.assign(n, 0);
        stamp_target.assign(n, 0);
        stamp_dag.assign(n, 0);
        distance.assign(n, -1);
        width.assign(n, 0.0);
        epoch = 0;
      }
      if (++epoch == 0) {  // the stamps wrapped around: clear them once
        std::fill(stamp_source.begin(), stamp_source.end(), 0u);
        std::fill(stamp_target.begin(), stamp_target.end(), 0u);
        std::fill(stamp_dag.begin(), stamp_dag.end(), 0u);
        epoch = 1;
      }
    }
    [[nodiscard]] bool on_path(int v) const { return stamp_dag[static_cast<std::size_t>(v)] == epoch; }
    void mark_on_path(int v, int hops_to_go) {
      stamp_dag[static_cast<std::size_t>(v)] = epoch;
      distance[static_cast<std::size_t>(v)] = hops_to_go;
    }
  };
  mutable RouteSearch search;
  /// A computed route with its summed latency and bottleneck bandwidth (collective plans ask for them per ring hop).
  struct CachedRoute {
    std::vector<RouteHop> hops;
    double latency_s = 0.0;
    double bandwidth_bytes_per_s = std::numeric_limits<double>::infinity();
  };
  mutable std::unordered_map<std::uint64_t, CachedRoute> routes;

  const CachedRoute& cached_route(int from, int to) const {
    const std::uint64_t key = pair_key(from, to);
    if (auto it = routes.find(key); it != routes.end()) return it->second;
    CachedRoute route{compute_route(from, to)};
    for (const RouteHop& hop : route.hops) {
      const TopologyLink& link = links[static_cast<std::size_t>(hop.link)];
      route.latency_s += link.latency_s;
      route.bandwidth_bytes_per_s = std::min(route.bandwidth_bytes_per_s, link.bandwidth_bytes_per_s);
    }
    return routes.emplace(key, std::move(route)).first->second;
  }

  void clear_caches() { routes.clear(); }

  bool is_gpu(int v) const { return vertices[static_cast<std::size_t>(v)].kind == VertexKind::gpu; }

  /// A vertex a route from `source` to `target` may enter: a switch, NIC or router, or one of the two ends.
  bool may_enter(int v, int source, int target) const { return v == source || v == target || !is_gpu(v); }

  /// Marks every vertex on a shortest source-target path that transits no third GPU, with its hop distance to the
  /// target and its widest bottleneck bandwidth to the target over shortest paths. A bidirectional breadth-first
  /// search, level by level from the end whose frontier is smaller, finds the distance D while looking only at the
  /// neighbourhoods of the two ends (two hops inside a node; the two ends' pods across a fat tree), not at the whole
  /// cluster. The vertices where the searches meet at distance D are then walked back to both ends: every vertex on
  /// a shortest path lies between an end and one of them. Returns false when no such path exists.
  bool mark_shortest_paths(int source, int target) const {
    RouteSearch& s = search;
    s.prepare(vertices.size());
    const auto at = [](int v) { return static_cast<std::size_t>(v); };
    s.order_source.assign(1, source);
    s.order_target.assign(1, target);
    s.stamp_source[at(source)] = s.epoch;
    s.hops_from_source[at(source)] = 0;
    s.stamp_target[at(target)] = s.epoch;
    s.hops_to_target[at(target)] = 0;
    s.meeting.clear();
    std::size_t level_begin_source = 0;
    std::size_t level_begin_target = 0;
    int shortest = std::numeric_limits<int>::max();
    // The two searched sets are disjoint until this loop ends, so a path of length a + b + 1 (a, b the two radii)
    // is found by the first level expansion that can find it, and the first level with a meeting gives D.
    while (shortest == std::numeric_limits<int>::max()) {
      const std::size_t frontier_source = s.order_source.size() - level_begin_source;
      const std::size_t frontier_target = s.order_target.size() - level_begin_target;
      if (frontier_source == 0 || frontier_target == 0) return false;
      const bool from_source = frontier_source <= frontier_target;
      std::vector<int>& order = from_source ? s.order_source : s.order_target;
      std::vector<int>& hops = from_source ? s.hops_from_source : s.hops_to_target;
      std::vector<std::uint32_t>& stamp = from_source ? s.stamp_source : s.stamp_target;
      const std::vector<std::uint32_t>& other_stamp = from_source ? s.stamp_target : s.stamp_source;
      std::size_t& level_begin = from_source ? level_begin_source : level_begin_target;
      const std::size_t level_end = order.size();
      for (std::size_t i = level_begin; i < level_end; ++i) {
        const int v = order[i];
        const int next_hops = hops[at(v)] + 1;
        for (auto [e, end] = boost::out_edges(at(v), graph); e != end; ++e) {
          const int w = static_cast<int>(boost::target(*e, graph));
          if (!may_enter(w, source, target) || stamp[at(w)] == s.epoch) continue;
          stamp[at(w)] = s.epoch;
          hops[at(w)] = next_hops;
          order.push_back(w);
          if (other_stamp[at(w)] == s.epoch) {
            shortest = std::min(shortest, s.hops_from_source[at(w)] + s.hops_to_target[at(w)]);
            s.meeting.push_back(w);
          }
        }
      }
      level_begin = level_end;
    }
    s.by_distance.resize(static_cast<std::size_t>(shortest) + 1);
    for (auto& bucket : s.by_distance) bucket.clear();
    const auto mark = [&](int v, int hops_to_go) {
      s.mark_on_path(v, hops_to_go);
      s.by_distance[at(hops_to_go)].push_back(v);
    };
    for (const int m : s.meeting)
      if (s.hops_from_source[at(m)] + s.hops_to_target[at(m)] == shortest && !s.on_path(m))
        mark(m, s.hops_to_target[at(m)]);
    // Walk back from the meeting vertices: on the source side to vertices one hop closer to the source, on the
    // target side to vertices one hop closer to the target. Reverse search order visits the farther levels first.
    const auto walk_back = [&](const std::vector<int>& order, const std::vector<int>& hops,
                               const std::vector<std::uint32_t>& stamp, bool source_side) {
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int u = *it;
        const int hops_u = hops[at(u)];
        if (!s.on_path(u) || hops_u == 0) continue;
        for (auto [e, end] = boost::out_edges(at(u), graph); e != end; ++e) {
          const int v = static_cast<int>(boost::target(*e, graph));
          if (stamp[at(v)] == s.epoch && hops[at(v)] == hops_u - 1 && !s.on_path(v))
            mark(v, source_side ? shortest - (hops_u - 1) : hops_u - 1);
        }
      }
    };
    walk_back(s.order_source, s.hops_from_source, s.stamp_source, true);
    walk_back(s.order_target, s.hops_to_target, s.stamp_target, false);
    // Widest shortest path, by increasing distance: width(v) = max over next hops w of min(bw(v,w), width(w)).
    s.width[at(target)] = std::numeric_limits<double>::infinity();
    for (std::size_t level = 1; level < s.by_distance.size(); ++level) {
      for (const int v : s.by_distance[level]) {
        double best = 0.0;
        for (auto [e, end] = boost::out_edges(at(v), graph); e != end; ++e) {
          const int w = static_cast<int>(boost::target(*e, graph));
          if (!is_next_hop(v, w)) continue;
          const double bw = links[at(graph[*e].link)].bandwidth_bytes_per_s;
          best = std::max(best, std::min(bw, s.width[at(w)]));
        }
        s.width[at(v)] = best;
      }
    }
    return true;
  }

  /// After mark_shortest_paths: w is one hop closer to the target than v on a shortest path.
  bool is_next_hop(int v, int w) const {
    return search.on_path(w) &&
           search.distance[static_cast<std::size_t>(w)] == search.distance[static_cast<std::size_t>(v)] - 1;
  }

  std::vector<RouteHop> compute_route(int from_gpu, int to_gpu) const {
    const int source = gpu_vertices[static_cast<std::size_t>(from_gpu)];
    const int target = gpu_vertices[static_cast<std::size_t>(to_gpu)];
    std::vector<RouteHop> hops;
    if (source == target) return hops;
    if (!mark_shortest_paths(source, target))
      throw ModelError("topology: no route from GPU " + std::to_string(from_gpu) + " to GPU " + std::to_string(to_gpu) +
                       " that avoids other GPUs");
    const std::uint64_t flow = mix(pair_key(from_gpu, to_gpu));
    int v = source;
    std::vector<std::pair<int, int>> candidates;  // (link, next vertex)
    while (v != target) {
      candidates.clear();
      const double width = search.width[static_cast<std::size_t>(v)];
      for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(v), graph); e != end; ++e) {
        const int w = static_cast<int>(boost::target(*e, graph));
        if (!is_next_hop(v, w)) continue;
        const int link = graph[*e].link;
        const double bw = links[static_cast<std::size_t>(link)].bandwidth_bytes_per_s;
        if (std::min(bw, search.width[static_cast<std::size_t>(w)]) < width) continue;
        candidates.emplace_back(link, w);
      }
      if (candidates.empty())  // cannot happen after mark_shortest_paths; a bug, not bad input
        throw ModelError("topology: route search from GPU " + std::to_string(from_gpu) + " to GPU " +
                         std::to_string(to_gpu) + " lost its path (internal error)");
      // Out-edges come in insertion order; sorting by link index makes the candidate list independent of it.
      std::sort(candidates.begin(), candidates.end());
      const auto pick = static_cast<std::size_t>(mix(flow ^ static_cast<std::uint64_t>(hops.size())) %
                                                 static_cast<std::uint64_t>(candidates.size()));
      const auto [link, next] = candidates[pick];
      hops.push_back(RouteHop{link, links[static_cast<std::size_t>(link)].u == v});
      v = next;
    }
    return hops;
  }
};

Topology::Topology() : impl_(std::make_unique<Impl>()) {}
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

int Topology::add_vertex(TopologyVertex vertex) {
  if (vertex.name.empty()) throw ModelError("topology: a vertex needs a name");
  if (!impl_->names.insert(vertex.name).second) throw ModelError("topology: duplicate name '" + vertex.name + "'");
  const int index = static_cast<int>(impl_->vertices.size());
  if (vertex.kind == VertexKind::gpu) {
    if (vertex.gpu < 0) throw ModelError("topology: GPU vertex '" + vertex.name + "' has no GPU index");
    auto& gpus = impl_->gpu_vertices;
    if (static_cast<std::size_t>(vertex.gpu) >= gpus.size()) gpus.resize(static_cast<std::size_t>(vertex.gpu) + 1, -1);
    if (gpus[static_cast<std::size_t>(vertex.gpu)] >= 0)
      throw ModelError("topology: GPU " + std::to_string(vertex.gpu) + " added twice");
    gpus[static_cast<std::size_t>(vertex.gpu)] = index;
  }
  impl_->node_count = std::max(impl_->node_count, vertex.node + 1);
  impl_->vertices.push_back(std::move(vertex));
  boost::add_vertex(impl_->graph);
  impl_->clear_caches();
  return index;
}

int Topology::add_link(TopologyLink link) {
  const int n = static_cast<int>(impl_->vertices.size());
  if (link.u < 0 || link.u >= n || link.v < 0 || link.v >= n || link.u == link.v)
    throw ModelError("topology: link '" + link.name + "' joins invalid vertices");
  if (!(link.bandwidth_bytes_per_s > 0.0) || !(link.latency_s >= 0.0))
    throw ModelError("topology: link '" + link.name + "' needs positive bandwidth and non-negative latency");
  if (link.name.empty()) throw ModelError("topology: a link needs a name");
  if (!impl_->names.insert(link.name).second) throw ModelError("topology: duplicate name '" + link.name + "'");
  const int index = static_cast<int>(impl_->links.size());
  boost::add_edge(static_cast<std::size_t>(link.u), static_cast<std::size_t>(link.v), EdgeData{index}, impl_->graph);
  impl_->links.push_back(std::move(link));
  impl_->clear_caches();
  return index;
}

int Topology::add_link(int u, int v, double bandwidth_bytes_per_s, double latency_s, LinkClass link_class) {
  const int n = static_cast<int>(impl_->vertices.size());
  if (u < 0 || u >= n || v < 0 || v >= n)
    throw ModelError("topology: a link joins vertices " + std::to_string(u) + " and " + std::to_string(v) + " of " +
                     std::to_string(n));
  std::string name =
      impl_->vertices[static_cast<std::size_t>(u)].name + "--" + impl_->vertices[static_cast<std::size_t>(v)].name;
  return add_link(TopologyLink{u, v, bandwidth_bytes_per_s, latency_s, link_class, std::move(name)});
}

const std::vector<TopologyVertex>& Topology::vertices() const { return impl_->vertices; }
const std::vector<TopologyLink>& Topology::links() const { return impl_->links; }

int Topology::gpu_count() const { return static_cast<int>(impl_->gpu_vertices.size()); }

int Topology::gpu_vertex(int gpu) const {
  if (gpu < 0 || gpu >= gpu_count() || impl_->gpu_vertices[static_cast<std::size_t>(gpu)] < 0)
    throw ModelError("topology: no GPU " + std::to_string(gpu) + " (the topology has " + std::to_string(gpu_count()) +
                     ")");
  return impl_->gpu_vertices[static_cast<std::size_t>(gpu)];
}

int Topology::node_of_gpu(int gpu) const { return impl_->vertices[static_cast<std::size_t>(gpu_vertex(gpu))].node; }

int Topology::node_count() const { return impl_->node_count; }

const std::vector<RouteHop>& Topology::route(int from, int to) const {
  static_cast<void>(gpu_vertex(from));  // validates both ends
  static_cast<void>(gpu_vertex(to));
  return impl_->cached_route(from, to).hops;
}

double Topology::route_bandwidth(int from, int to) const {
  static_cast<void>(gpu_vertex(from));
  static_cast<void>(gpu_vertex(to));
  return impl_->cached_route(from, to).bandwidth_bytes_per_s;
}

double Topology::route_latency(int from, int to) const {
  static_cast<void>(gpu_vertex(from));
  static_cast<void>(gpu_vertex(to));
  return impl_->cached_route(from, to).latency_s;
}

Topology build_topology(const ClusterSpec& cluster, const HardwareSpec& hardware, const NodeTopologyRegistry& nodes,
                        const FabricTopologyRegistry& fabrics) {
  if (cluster.nodes < 1 || cluster.gpus_per_node < 1)
    throw ModelError("topology: cluster '" + cluster.name + "' needs at least one node and one GPU per node");
  if (cluster.nics_per_node < 0) throw ModelError("topology: nics_per_node must not be negative");
  if (!(hardware.intra_node_link_efficiency > 0.0 && hardware.intra_node_link_efficiency <= 1.0) ||
      !(hardware.nic_efficiency > 0.0 && hardware.nic_efficiency <= 1.0))
    throw ModelError("topology: link efficiencies of hardware '" + hardware.name + "' must be in (0, 1]");
  const auto node_builder = nodes.create(cluster.node_topology);
  const auto fabric_builder = fabrics.create(cluster.fabric.kind);
  // The intra-node links carry what the collective library achieves: nominal bandwidth times efficiency. (NIC
  // links get nic_efficiency in the fabric builders, which size the switches from the nominal NIC rate.)
  HardwareSpec effective = hardware;
  effective.intra_node_link_bandwidth_bytes_per_s *= hardware.intra_node_link_efficiency;
  Topology topology;
  std::vector<std::vector<int>> nics;
  nics.reserve(static_cast<std::size_t>(cluster.nodes));
  for (int node = 0; node < cluster.nodes; ++node)
    nics.push_back(node_builder->add_node(topology, node, cluster, effective));
  fabric_builder->connect(topology, nics, cluster, effective);
  return topology;
}

}  // namespace chopsim
