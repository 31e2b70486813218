#pragma once
// The cluster as a graph: GPUs, switches and NICs joined by links with bandwidth and latency.
// It is held in a Boost.Graph adjacency list (an implementation detail kept out of this header); the
// engine turns it into a SimGrid platform, and routes are computed here so that every engine routes alike.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/common/registry.hpp"
#include "chopsim/models/cluster.hpp"
#include "chopsim/models/hardware.hpp"

namespace chopsim {

enum class VertexKind : std::uint8_t { gpu, switch_, nic, router };
enum class LinkClass : std::uint8_t {
  nvlink,  ///< GPU <-> NVSwitch
  xgmi,    ///< AMD Infinity Fabric GPU <-> GPU (also in-package die-to-die)
  pcie,    ///< GPU <-> NIC or host
  nic,     ///< NIC <-> first fabric switch
  fabric,  ///< switch <-> switch
};
[[nodiscard]] std::string_view to_string(LinkClass link_class);

struct TopologyVertex {
  VertexKind kind = VertexKind::router;
  std::string name;  ///< unique, e.g. "node3.gpu5", "leaf2", "spine0"
  int gpu = -1;      ///< global GPU index (= rank) for kind == gpu
  int node = -1;     ///< node index, -1 for fabric switches
};

/// A full-duplex link: each direction has `bandwidth_bytes_per_s` of its own.
struct TopologyLink {
  int u = 0;
  int v = 0;
  double bandwidth_bytes_per_s = 0.0;  ///< one direction
  double latency_s = 0.0;
  LinkClass link_class = LinkClass::fabric;
  std::string name;  ///< unique
};

/// One hop of a route: a link and the direction it is crossed in.
struct RouteHop {
  int link = 0;
  bool forward = true;  ///< true: from link.u to link.v
};

class Topology {
 public:
  Topology();
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  int add_vertex(TopologyVertex vertex);
  int add_link(TopologyLink link);
  /// A link named after its ends ("<u's name>--<v's name>"), as the built-in node and fabric topologies name theirs.
  int add_link(int u, int v, double bandwidth_bytes_per_s, double latency_s, LinkClass link_class);

  [[nodiscard]] const std::vector<TopologyVertex>& vertices() const;
  [[nodiscard]] const std::vector<TopologyLink>& links() const;

  [[nodiscard]] int gpu_count() const;
  /// Vertex index of GPU `gpu`.
  [[nodiscard]] int gpu_vertex(int gpu) const;
  [[nodiscard]] int node_of_gpu(int gpu) const;
  [[nodiscard]] int node_count() const;

  /// The path from GPU `from` to GPU `to`: fewest hops, never through another GPU, with ties among
  /// equal-cost paths (ECMP over spines) broken by a hash of (from, to) so that every run picks the same.
  /// Cached; safe to call from one thread at a time.
  [[nodiscard]] const std::vector<RouteHop>& route(int from, int to) const;
  /// Smallest per-direction bandwidth along route(from, to), and the summed latency.
  [[nodiscard]] double route_bandwidth(int from, int to) const;
  [[nodiscard]] double route_latency(int from, int to) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Adds one node's GPUs (and NVSwitch/NICs) to a topology. Registered by node-topology name.
class NodeTopologyBuilder {
 public:
  virtual ~NodeTopologyBuilder() = default;
  /// Adds node `node` of `cluster`, whose GPUs are global ranks node*gpus_per_node ... +gpus_per_node-1.
  /// Returns the vertex of each of the node's NICs (nics_per_node of them), for the fabric to connect.
  virtual std::vector<int> add_node(Topology& topology, int node, const ClusterSpec& cluster,
                                    const HardwareSpec& hardware) const = 0;
};

/// Connects the nodes' NICs with switches. Registered by fabric name.
class FabricTopologyBuilder {
 public:
  virtual ~FabricTopologyBuilder() = default;
  /// `nics[node][i]` is the vertex of NIC i of node `node`.
  virtual void connect(Topology& topology, const std::vector<std::vector<int>>& nics, const ClusterSpec& cluster,
                       const HardwareSpec& hardware) const = 0;
};

using NodeTopologyRegistry = Registry<NodeTopologyBuilder>;
using FabricTopologyRegistry = Registry<FabricTopologyBuilder>;
void register_builtin_node_topologies(NodeTopologyRegistry& registry);
void register_builtin_fabric_topologies(FabricTopologyRegistry& registry);

/// Builds the whole cluster: every node with its builder, then the fabric.
[[nodiscard]] Topology build_topology(const ClusterSpec& cluster, const HardwareSpec& hardware,
                                      const NodeTopologyRegistry& nodes, const FabricTopologyRegistry& fabrics);

}  // namespace chopsim
