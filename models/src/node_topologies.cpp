// Node builders: the GPUs of one node, their intra-node interconnect and their scale-out NICs.
//
// Conventions shared by every builder:
// * Names are "node<n>.gpu<i>", "node<n>.nic<j>", "node<n>.<switch>"; GPU i of node n is global rank
//   n * gpus_per_node + i (Megatron rank order puts tensor-parallel groups inside a node).
// * HardwareSpec::intra_node_link_latency_s is the GPU-to-GPU latency. Where the path has two hops (through an
//   NVSwitch or a PCIe switch) each hop gets half of it, so the end-to-end latency is the stated one.
// * NICs: with one NIC per GPU (DGX H100/H200, MI300X platforms) each GPU has its own NIC behind a PCIe link of
//   HardwareSpec::pcie_bandwidth_bytes_per_s. With fewer NICs than GPUs, GPU g shares NIC
//   floor(g * nics / gpus) (consecutive blocks: on Frontier each MI250X package, i.e. GCDs 2k and 2k+1, owns one
//   Slingshot NIC); each GPU still has its own PCIe link to it. With more NICs than GPUs, NIC j hangs off GPU
//   floor(j * gpus / nics). The PCIe link carries no latency of its own: HardwareSpec::nic_latency_s covers the
//   NIC and its first hop and is put on the NIC's fabric link.

#include <algorithm>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim {
namespace {

std::string node_name(int node) { return "node" + std::to_string(node); }

std::vector<int> add_gpus(Topology& topology, int node, const ClusterSpec& cluster) {
  std::vector<int> gpus;
  gpus.reserve(static_cast<std::size_t>(cluster.gpus_per_node));
  for (int i = 0; i < cluster.gpus_per_node; ++i) {
    TopologyVertex vertex;
    vertex.kind = VertexKind::gpu;
    vertex.name = node_name(node) + ".gpu" + std::to_string(i);
    vertex.gpu = node * cluster.gpus_per_node + i;
    vertex.node = node;
    gpus.push_back(topology.add_vertex(std::move(vertex)));
  }
  return gpus;
}

int add_node_vertex(Topology& topology, int node, VertexKind kind, const std::string& local_name) {
  TopologyVertex vertex;
  vertex.kind = kind;
  vertex.name = node_name(node) + "." + local_name;
  vertex.node = node;
  return topology.add_vertex(std::move(vertex));
}

void require_positive(double value, const char* what, const ClusterSpec& cluster, const HardwareSpec& hardware) {
  if (!(value > 0.0))
    throw ModelError("topology: node topology '" + cluster.node_topology + "' needs a positive " + what +
                     " in hardware '" + hardware.name + "'");
}

/// The PCIe link to a NIC; 0 in the hardware file means PCIe is not modelled as a limit (the NIC's rate is used).
double pcie_bandwidth(const HardwareSpec& hardware) {
  return hardware.pcie_bandwidth_bytes_per_s > 0.0 ? hardware.pcie_bandwidth_bytes_per_s
                                                   : std::max(hardware.nic_bandwidth_bytes_per_s, 1.0);
}

/// NICs attached to GPUs by the mapping in the file comment. Returns the NIC vertices.
std::vector<int> add_gpu_nics(Topology& topology, int node, const ClusterSpec& cluster, const HardwareSpec& hardware,
                              const std::vector<int>& gpus) {
  const int nic_count = cluster.nics_per_node;
  const int gpu_count = static_cast<int>(gpus.size());
  std::vector<int> nics;
  for (int j = 0; j < nic_count; ++j)
    nics.push_back(add_node_vertex(topology, node, VertexKind::nic, "nic" + std::to_string(j)));
  if (nic_count == 0) return nics;
  const double bandwidth = pcie_bandwidth(hardware);
  if (nic_count >= gpu_count) {
    for (int j = 0; j < nic_count; ++j)
      topology.add_link(gpus[static_cast<std::size_t>(j * gpu_count / nic_count)], nics[static_cast<std::size_t>(j)],
                        bandwidth, 0.0, LinkClass::pcie);
  } else {
    for (int g = 0; g < gpu_count; ++g)
      topology.add_link(gpus[static_cast<std::size_t>(g)], nics[static_cast<std::size_t>(g * nic_count / gpu_count)],
                        bandwidth, 0.0, LinkClass::pcie);
  }
  return nics;
}

/// NVIDIA HGX/DGX: every GPU has links_per_gpu NVLinks into the NVSwitch fabric (H100: 18 x 25 GB/s per direction =
/// 450 GB/s; NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022). The NVSwitch chips are non-blocking
/// (the whitepaper's "full NVLink bandwidth between any pair of GPUs"), so they are one switch vertex here.
class NvSwitchNode final : public NodeTopologyBuilder {
 public:
  std::vector<int> add_node(Topology& topology, int node, const ClusterSpec& cluster,
                            const HardwareSpec& hardware) const override {
    const auto gpus = add_gpus(topology, node, cluster);
    if (cluster.gpus_per_node > 1) {
      require_positive(hardware.intra_node_link_bandwidth_bytes_per_s, "intra_node_link_bandwidth", cluster, hardware);
      const int links = std::max(hardware.intra_node_links_per_gpu, 1);
      const int nvswitch = add_node_vertex(topology, node, VertexKind::switch_, "nvswitch");
      for (const int gpu : gpus)
        topology.add_link(gpu, nvswitch, links * hardware.intra_node_link_bandwidth_bytes_per_s,
                          hardware.intra_node_link_latency_s / 2, LinkClass::nvlink);
    }
    return add_gpu_nics(topology, node, cluster, hardware, gpus);
  }
};

/// AMD MI300X platform: eight OAMs in a full xGMI mesh, one link of 64 GB/s per direction between each pair
/// (AMD Instinct MI300X data sheet: 7 links x 64 GB/s per GPU). With links_per_gpu >= 2 (gpus - 1) pairs get
/// links_per_gpu / (gpus - 1) links.
class XgmiMeshNode final : public NodeTopologyBuilder {
 public:
  std::vector<int> add_node(Topology& topology, int node, const ClusterSpec& cluster,
                            const HardwareSpec& hardware) const override {
    const auto gpus = add_gpus(topology, node, cluster);
    const int n = cluster.gpus_per_node;
    if (n > 1) {
      require_positive(hardware.intra_node_link_bandwidth_bytes_per_s, "intra_node_link_bandwidth", cluster, hardware);
      const int per_pair = std::max(1, hardware.intra_node_links_per_gpu / (n - 1));
      for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b)
          topology.add_link(gpus[static_cast<std::size_t>(a)], gpus[static_cast<std::size_t>(b)],
                            per_pair * hardware.intra_node_link_bandwidth_bytes_per_s,
                            hardware.intra_node_link_latency_s, LinkClass::xgmi);
    }
    return add_gpu_nics(topology, node, cluster, hardware, gpus);
  }
};

/// AMD MI250/MI250X nodes (HPE Cray EX235a: Frontier, LUMI-G). Each package holds two GCDs, seen as two GPUs,
/// joined in-package by HardwareSpec::in_package_link_bandwidth (200 GB/s per direction on MI250X). With 8 GCDs the
/// inter-package xGMI links follow the Frontier node diagram (OLCF Frontier User Guide, "Node architecture"; the
/// link tiers are measured in Pearson, "Interconnect Bandwidth Heterogeneity on AMD MI250x and Infinity Fabric",
/// 2023): every GCD has two off-package neighbours, giving the cube-like graph
///   0-2, 0-6, 1-3, 1-5, 2-4, 3-7, 4-6, 5-7,
/// of which 0-6 and 2-4 are dual links (2 x 50 GB/s) and the others single links (50 GB/s); each package thus
/// uses five external links, as AMD's MI250X data sheet states. The pairs without a direct link (e.g. 1-7) talk
/// through the host CPU: every GCD also has an Infinity Fabric CPU link of HardwareSpec::pcie_bandwidth (36 GB/s per
/// direction on Frontier) to a "cpu" router vertex. Other GCD counts: packages form a ring (die 1 of package p to
/// die 0 of package p+1) with single links. The NICs follow the shared mapping (four NICs: one per package).
class Mi250XgmiNode final : public NodeTopologyBuilder {
 public:
  std::vector<int> add_node(Topology& topology, int node, const ClusterSpec& cluster,
                            const HardwareSpec& hardware) const override {
    const int n = cluster.gpus_per_node;
    if (hardware.dies_per_package != 2 || n % 2 != 0)
      throw ModelError(
          "topology: node topology 'mi250_xgmi' needs two dies per package and an even GPU count (hardware '" +
          hardware.name + "', " + std::to_string(n) + " GPUs per node)");
    const auto gpus = add_gpus(topology, node, cluster);
    require_positive(hardware.in_package_link_bandwidth_bytes_per_s, "in_package_link_bandwidth", cluster, hardware);
    require_positive(hardware.intra_node_link_bandwidth_bytes_per_s, "intra_node_link_bandwidth", cluster, hardware);
    const double single = hardware.intra_node_link_bandwidth_bytes_per_s;
    const double latency = hardware.intra_node_link_latency_s;
    auto gpu = [&](int i) { return gpus[static_cast<std::size_t>(i)]; };
    for (int p = 0; p < n / 2; ++p)
      topology.add_link(gpu(2 * p), gpu(2 * p + 1), hardware.in_package_link_bandwidth_bytes_per_s, latency,
                        LinkClass::xgmi);
    if (n == 8) {
      struct Pair {
        int a, b, links;
      };
      constexpr Pair kFrontier[] = {{0, 2, 1}, {0, 6, 2}, {1, 3, 1}, {1, 5, 1},
                                    {2, 4, 2}, {3, 7, 1}, {4, 6, 1}, {5, 7, 1}};
      for (const Pair& pair : kFrontier)
        topology.add_link(gpu(pair.a), gpu(pair.b), pair.links * single, latency, LinkClass::xgmi);
    } else if (n > 2) {
      const int packages = n / 2;
      for (int p = 0; p < packages; ++p) {
        const int next = (p + 1) % packages;
        if (packages == 2 && p == 1) break;  // two packages: one link, not two parallel ones
        topology.add_link(gpu(2 * p + 1), gpu(2 * next), single, latency, LinkClass::xgmi);
      }
    }
    const int cpu = add_node_vertex(topology, node, VertexKind::router, "cpu");
    for (int i = 0; i < n; ++i) topology.add_link(gpu(i), cpu, pcie_bandwidth(hardware), latency, LinkClass::pcie);
    return add_gpu_nics(topology, node, cluster, hardware, gpus);
  }
};

/// GPUs without a GPU interconnect (PCIe cards): every GPU and every NIC hangs off one PCIe switch with a link of
/// HardwareSpec::pcie_bandwidth, so GPU-to-GPU and GPU-to-NIC traffic share the GPU's PCIe link.
class PcieNode final : public NodeTopologyBuilder {
 public:
  std::vector<int> add_node(Topology& topology, int node, const ClusterSpec& cluster,
                            const HardwareSpec& hardware) const override {
    require_positive(hardware.pcie_bandwidth_bytes_per_s, "pcie_bandwidth", cluster, hardware);
    const auto gpus = add_gpus(topology, node, cluster);
    const int pcie_switch = add_node_vertex(topology, node, VertexKind::switch_, "pcie_switch");
    const double bandwidth = hardware.pcie_bandwidth_bytes_per_s;
    const double latency = hardware.intra_node_link_latency_s / 2;
    for (const int gpu : gpus) topology.add_link(gpu, pcie_switch, bandwidth, latency, LinkClass::pcie);
    std::vector<int> nics;
    for (int j = 0; j < cluster.nics_per_node; ++j) {
      nics.push_back(add_node_vertex(topology, node, VertexKind::nic, "nic" + std::to_string(j)));
      topology.add_link(nics.back(), pcie_switch, bandwidth, 0.0, LinkClass::pcie);
    }
    return nics;
  }
};

template <class Builder>
NodeTopologyRegistry::Factory factory() {
  return []() -> std::unique_ptr<NodeTopologyBuilder> { return std::make_unique<Builder>(); };
}

}  // namespace

void register_builtin_node_topologies(NodeTopologyRegistry& registry) {
  registry.add("nvswitch", "GPUs on a non-blocking NVSwitch (HGX/DGX), one NIC per GPU or shared",
               factory<NvSwitchNode>());
  registry.add("xgmi_mesh", "GPUs in a full xGMI mesh, one link per pair (MI300X platform)", factory<XgmiMeshNode>());
  registry.add("mi250_xgmi", "MI250/MI250X: two GCDs per package, Frontier xGMI layout, CPU path for the rest",
               factory<Mi250XgmiNode>());
  registry.add("pcie", "GPUs and NICs on one PCIe switch", factory<PcieNode>());
}

}  // namespace chopsim
