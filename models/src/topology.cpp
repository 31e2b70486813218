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

/// Distance tables kept (each one int, one double and one stamp per vertex: 16 bytes x vertices, about 0.7 MB for a
/// 16,384-GPU cluster). Routes themselves stay cached; callers that ask for many routes ask destination by
/// destination (the fast engine sorts them so).
constexpr std::size_t kCachedDistanceTables = 64;

}  // namespace

struct Topology::Impl {
  Graph graph;
  std::vector<TopologyVertex> vertices;
  std::vector<TopologyLink> links;
  std::vector<int> gpu_vertices;  // by GPU index, -1 where missing
  std::unordered_set<std::string> names;
  int node_count = 0;

  // Per destination vertex: hop distance to it (-1 = not reached) and the widest bottleneck bandwidth over shortest
  // paths, of every vertex within `complete_level` hops: a route from a source needs only the vertices closer to the
  // destination than the source, so the search stops once the source's level is complete (inside a node that is
  // two hops, not the whole cluster). Entries are valid where their stamp is the table's epoch, so a table is reused
  // for another destination without clearing it.
  struct Distances {
    std::vector<int> hops;
    std::vector<double> width;
    std::vector<std::uint32_t> stamp;
    std::uint32_t epoch = 0;
    int target = -1;
    int complete_level = -1;  ///< every vertex within this many hops has its distance and width
    bool exhausted = false;   ///< the search reached every vertex it can
    std::uint64_t used = 0;   ///< for least-recently-used replacement

    [[nodiscard]] int hop(int v) const {
      const auto i = static_cast<std::size_t>(v);
      return stamp[i] == epoch ? hops[i] : -1;
    }
    [[nodiscard]] double width_of(int v) const { return width[static_cast<std::size_t>(v)]; }
    void set(int v, int h) {
      const auto i = static_cast<std::size_t>(v);
      stamp[i] = epoch;
      hops[i] = h;
    }
  };
  mutable std::vector<Distances> distances;  ///< at most kCachedDistanceTables, least recently used replaced
  mutable std::unordered_map<int, std::size_t> distance_of_target;  ///< destination vertex -> index in distances
  mutable std::uint64_t distance_uses = 0;
  mutable std::unordered_map<std::uint64_t, std::vector<RouteHop>> routes;

  void clear_caches() {
    distances.clear();
    distance_of_target.clear();
    routes.clear();
  }

  bool is_gpu(int v) const { return vertices[static_cast<std::size_t>(v)].kind == VertexKind::gpu; }

  /// Distances to `target` complete up to the level of `source` (or of every vertex the search can reach).
  const Distances& distances_to(int target, int source) const {
    Distances* table = nullptr;
    if (const auto it = distance_of_target.find(target); it != distance_of_target.end()) table = &distances[it->second];
    if (table != nullptr) {
      const int h = table->hop(source);
      table->used = ++distance_uses;
      if (table->exhausted || (h >= 0 && h <= table->complete_level)) return *table;
    } else if (distances.size() < kCachedDistanceTables) {
      table = &distances.emplace_back();
      const std::size_t n = vertices.size();
      table->hops.assign(n, -1);
      table->width.assign(n, 0.0);
      table->stamp.assign(n, 0);
    } else {
      table = &*std::min_element(distances.begin(), distances.end(),
                                 [](const Distances& a, const Distances& b) { return a.used < b.used; });
      distance_of_target.erase(table->target);
    }
    Distances& d = *table;
    distance_of_target[target] = static_cast<std::size_t>(table - distances.data());
    d.used = ++distance_uses;
    d.target = target;
    d.exhausted = false;
    if (++d.epoch == 0) {  // the stamps wrapped around: clear them once
      std::fill(d.stamp.begin(), d.stamp.end(), 0u);
      d.epoch = 1;
    }
    // Breadth-first search from the destination, level by level; GPUs other than the destination are reached but
    // never expanded, so no shortest path transits a GPU. After expanding level L every vertex of level L + 1 is
    // known; the search stops when that level holds the source.
    std::vector<int>& order = order_scratch;
    order.assign(1, target);
    d.set(target, 0);
    d.complete_level = 0;
    std::size_t level_begin = 0;
    while (d.hop(source) < 0) {
      const std::size_t level_end = order.size();
      if (level_begin == level_end) {
        d.exhausted = true;
        break;
      }
      for (std::size_t i = level_begin; i < level_end; ++i) {
        const int v = order[i];
        if (v != target && is_gpu(v)) continue;
        for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(v), graph); e != end; ++e) {
          const int w = static_cast<int>(boost::target(*e, graph));
          if (d.hop(w) >= 0) continue;
          d.set(w, d.hop(v) + 1);
          order.push_back(w);
        }
      }
      level_begin = level_end;
      ++d.complete_level;
    }
    // Widest shortest path, by increasing distance: width(v) = max over next hops w of min(bw(v,w), width(w)).
    d.width[static_cast<std::size_t>(target)] = std::numeric_limits<double>::infinity();
    for (std::size_t i = 1; i < order.size(); ++i) {
      const int v = order[i];
      double best = 0.0;
      for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(v), graph); e != end; ++e) {
        const int w = static_cast<int>(boost::target(*e, graph));
        if (!next_hop_allowed(d, v, w, target)) continue;
        const double bw = links[static_cast<std::size_t>(graph[*e].link)].bandwidth_bytes_per_s;
        best = std::max(best, std::min(bw, d.width_of(w)));
      }
      d.width[static_cast<std::size_t>(v)] = best;
    }
    return d;
  }
  mutable std::vector<int> order_scratch;

  bool next_hop_allowed(const Distances& d, int v, int w, int target) const {
    const int hv = d.hop(v);
    const int hw = d.hop(w);
    return hw >= 0 && hw == hv - 1 && (w == target || !is_gpu(w));
  }

  std::vector<RouteHop> compute_route(int from_gpu, int to_gpu) const {
    const int source = gpu_vertices[static_cast<std::size_t>(from_gpu)];
    const int target = gpu_vertices[static_cast<std::size_t>(to_gpu)];
    std::vector<RouteHop> hops;
    if (source == target) return hops;
    const Distances& d = distances_to(target, source);
    if (d.hop(source) < 0)
      throw ModelError("topology: no route from GPU " + std::to_string(from_gpu) + " to GPU " + std::to_string(to_gpu) +
                       " that avoids other GPUs");
    const std::uint64_t flow = mix(pair_key(from_gpu, to_gpu));
    int v = source;
    std::vector<std::pair<int, int>> candidates;  // (link, next vertex)
    while (v != target) {
      candidates.clear();
      const double width = d.width_of(v);
      for (auto [e, end] = boost::out_edges(static_cast<std::size_t>(v), graph); e != end; ++e) {
        const int w = static_cast<int>(boost::target(*e, graph));
        if (!next_hop_allowed(d, v, w, target)) continue;
        const int link = graph[*e].link;
        const double bw = links[static_cast<std::size_t>(link)].bandwidth_bytes_per_s;
        if (std::min(bw, d.width_of(w)) < width) continue;
        candidates.emplace_back(link, w);
      }
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
  const std::uint64_t key = pair_key(from, to);
  if (auto it = impl_->routes.find(key); it != impl_->routes.end()) return it->second;
  static_cast<void>(gpu_vertex(from));  // validates both ends
  static_cast<void>(gpu_vertex(to));
  return impl_->routes.emplace(key, impl_->compute_route(from, to)).first->second;
}

double Topology::route_bandwidth(int from, int to) const {
  double bandwidth = std::numeric_limits<double>::infinity();
  for (const RouteHop& hop : route(from, to))
    bandwidth = std::min(bandwidth, impl_->links[static_cast<std::size_t>(hop.link)].bandwidth_bytes_per_s);
  return bandwidth;
}

double Topology::route_latency(int from, int to) const {
  double latency = 0.0;
  for (const RouteHop& hop : route(from, to)) latency += impl_->links[static_cast<std::size_t>(hop.link)].latency_s;
  return latency;
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
