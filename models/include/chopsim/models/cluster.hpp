#pragma once
// A cluster: nodes of GPUs with an intra-node interconnect, and a scale-out fabric between them
// (configs/clusters/*.yaml). Topology kinds are names in the topology registries.

#include <cstdint>
#include <string>

namespace chopsim {

/// How a switch picks among the equal-cost uplinks of a Clos fabric.
enum class FabricRouting : std::uint8_t {
  /// Per flow, by hashing its header (static ECMP, Ethernet's and OpenSM's default without AR): flows can collide on
  /// one uplink while another idles.
  ecmp,
  /// By the ports' load, per packet (InfiniBand adaptive routing, the default of NVIDIA Quantum switches and of
  /// OpenSM's ar_updn engine): the uplinks of a switch act as one link of their summed bandwidth.
  adaptive,
};

struct FabricSpec {
  /// Registered fabric name: "rail_optimized", "fat_tree" or "none" (single node).
  std::string kind = "rail_optimized";
  /// Leaf downlink : uplink bandwidth ratio (1 = non-blocking, 2 = 2:1 oversubscribed).
  double oversubscription = 1.0;
  /// NIC ports a leaf switch serves (e.g. 32 on a 64-port switch with half the ports going up).
  int leaf_downlinks = 32;
  double switch_latency_s = 0.0;  ///< per switch traversal
  double cable_latency_s = 0.0;   ///< per switch-to-switch link
  /// Bandwidth of one switch-to-switch link, one direction; 0 = same as one NIC.
  double uplink_bandwidth_bytes_per_s = 0.0;
  FabricRouting routing = FabricRouting::ecmp;
};

struct ClusterSpec {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 8;
  /// Registered node topology name: "nvswitch", "xgmi_mesh", "mi250_xgmi" or "pcie".
  std::string node_topology = "nvswitch";
  int nics_per_node = 8;  ///< scale-out NICs, one per GPU on DGX/MI300X nodes
  FabricSpec fabric;
  /// Host (CPU) time per kernel launch of Megatron-Core with Transformer Engine on this node type's CPU (s), fitted on
  /// Megatron-LM's host-bound functional tests (docs/calibration.md); what `chopsim import` gives Megatron-LM, NeMo and
  /// Megatron-Bridge jobs as TrainingSpec::host_launch_s. 0: not measured for this node type.
  double megatron_host_launch_s = 0.0;

  [[nodiscard]] int gpu_count() const { return nodes * gpus_per_node; }
};

}  // namespace chopsim
