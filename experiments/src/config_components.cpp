// Decoding of the three component kinds (configs/hardware, configs/models, configs/clusters) and their
// own consistency checks. Units are converted to SI here and nowhere else: each reader names the file's
// unit (TFLOP/s, GB/s, Gbit/s, GiB, MHz, µs) and the factor to SI.

#include <cstddef>
#include <string>

#include "chopsim/common/units.hpp"
#include "config_internal.hpp"

namespace chopsim::config_detail {

namespace {

using units::kGiB;
using units::kGiga;
using units::kMega;
using units::kMicrosecond;
using units::kTera;

/// Decimal gigabit per second -> bytes per second (network units: 400 Gb/s = 50 GB/s).
constexpr double kGigabitPerSecond = kGiga / 8.0;

/// Reads an optional or required sub-mapping with `decode(child)` and rejects its unknown keys.
template <class Decode>
void section(Mapping& m, std::string_view key, Need need, std::string_view expected, Decode&& decode) {
  if (m.has(key)) {
    Mapping child = m.child(key);
    decode(child);
    child.finish();
  } else if (need == Need::required) {
    m.require(key, expected);
  }
}

std::size_t index(Precision precision) { return static_cast<std::size_t>(precision); }

[[noreturn]] void fail_at(const Locator& locate, const std::string& key, const std::string& problem,
                          const std::string& fix) {
  throw InputError(locate(key), key, problem, fix);
}

}  // namespace

// ------------------------------------------------------------------------------------------- hardware

void apply_hardware(Mapping& m, HardwareSpec& hw, Need need) {
  m.read_choice<std::string>("vendor", hw.vendor, {{"nvidia", "nvidia"}, {"amd", "amd"}}, need);

  section(m, "peak_tflops", need, "a mapping of dense peak TFLOP/s per precision", [&](Mapping& peak) {
    auto& rate = hw.compute.peak_flops_per_s;
    peak.read("fp32", rate[index(Precision::fp32)], kTera, kPositiveReal, "TFLOP/s", need);
    peak.read("tf32", rate[index(Precision::tf32)], kTera, kNonNegativeReal, "TFLOP/s, 0 = no such unit");
    peak.read("bf16", rate[index(Precision::bf16)], kTera, kPositiveReal, "TFLOP/s", need);
    peak.read("fp16", rate[index(Precision::fp16)], kTera, kNonNegativeReal, "TFLOP/s, 0 = no such unit");
    peak.read("fp8", rate[index(Precision::fp8)], kTera, kNonNegativeReal, "TFLOP/s, 0 = no such unit");
  });

  section(m, "clocks_mhz", need, "a mapping with 'boost' and 'min' in MHz", [&](Mapping& clocks) {
    clocks.read("boost", hw.compute.boost_clock_hz, kMega, kPositiveReal, "MHz", need);
    clocks.read("min", hw.min_clock_hz, kMega, kPositiveReal, "MHz", need);
  });

  section(m, "hbm", need, "a mapping with 'capacity_gib' and 'bandwidth_tb_s'", [&](Mapping& hbm) {
    hbm.read("capacity_gib", hw.hbm_capacity_bytes, kGiB, kPositiveReal, "GiB", need);
    hbm.read("bandwidth_tb_s", hw.compute.hbm_bandwidth_bytes_per_s, kTera, kPositiveReal, "TB/s", need);
  });

  section(m, "power_w", need, "a mapping with 'tdp' and 'idle' in watts", [&](Mapping& power) {
    power.read("tdp", hw.tdp_w, 1.0, kPositiveReal, "W", need);
    power.read("idle", hw.idle_power_w, 1.0, kNonNegativeReal, "W", need);
  });

  section(m, "intra_node_link", need, "a mapping with 'bandwidth_gb_s', 'links_per_gpu' and 'latency_us'",
          [&](Mapping& link) {
            link.read("bandwidth_gb_s", hw.intra_node_link_bandwidth_bytes_per_s, kGiga, kPositiveReal,
                      "GB/s per link per direction", need);
            link.read("links_per_gpu", hw.intra_node_links_per_gpu, kPositiveInt, need);
            link.read("latency_us", hw.intra_node_link_latency_s, kMicrosecond, kNonNegativeReal, "µs", need);
          });

  m.read("pcie_gb_s", hw.pcie_bandwidth_bytes_per_s, kGiga, kPositiveReal, "GB/s per direction", need);

  section(m, "nic", need, "a mapping with 'bandwidth_gbit_s' and 'latency_us'", [&](Mapping& nic) {
    nic.read("bandwidth_gbit_s", hw.nic_bandwidth_bytes_per_s, kGigabitPerSecond, kPositiveReal, "Gbit/s per direction",
             need);
    nic.read("latency_us", hw.nic_latency_s, kMicrosecond, kNonNegativeReal, "µs", need);
  });

  section(m, "package", Need::optional, "", [&](Mapping& package) {
    package.read("dies", hw.dies_per_package, kPositiveInt);
    package.read("die_to_die_gb_s", hw.in_package_link_bandwidth_bytes_per_s, kGiga, kNonNegativeReal,
                 "GB/s per direction");
  });

  section(m, "memory", Need::optional, "", [&](Mapping& memory) {
    memory.read("reserved_gib", hw.memory_reserved_bytes, kGiB, kNonNegativeReal, "GiB");
    memory.read("fragmentation_fraction", hw.memory_fragmentation_fraction, 1.0, kFractionBelowOne, "");
  });

  section(m, "kernels", need, "a mapping with 'launch_overhead_us', 'comm_compute_slowdown' and 'efficiency'",
          [&](Mapping& kernels) {
            kernels.read("launch_overhead_us", hw.compute.launch_overhead_s, kMicrosecond, kNonNegativeReal, "µs",
                         need);
            kernels.read("comm_compute_slowdown", hw.compute.comm_compute_slowdown, 1.0, kFractionBelowOne, "", need);
            section(kernels, "efficiency", need, "a mapping with one entry per kernel class", [&](Mapping& eff) {
              for (std::size_t i = 0; i < kKernelClassCount; ++i) {
                const auto kernel_class = static_cast<KernelClass>(i);
                auto& e = hw.compute.efficiency[i];
                section(eff, to_string(kernel_class), need, "a mapping with 'compute' and 'memory' fractions",
                        [&](Mapping& cls) {
                          cls.read("compute", e.compute, 1.0, kFraction, "", need);
                          cls.read("memory", e.memory, 1.0, kFraction, "", need);
                          cls.read("half_efficiency_gflop", e.half_efficiency_flops, kGiga, kNonNegativeReal, "GFLOP");
                        });
              }
            });
          });
}

void check_hardware(const HardwareSpec& hw, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (hw.min_clock_hz > hw.compute.boost_clock_hz)
    fail_at(locate, p + "clocks_mhz.min",
            "the minimum clock (" + std::to_string(hw.min_clock_hz / kMega) + " MHz) is above the boost clock (" +
                std::to_string(hw.compute.boost_clock_hz / kMega) + " MHz)",
            "set clocks_mhz.min <= clocks_mhz.boost");
  if (hw.dies_per_package > 1 && hw.in_package_link_bandwidth_bytes_per_s <= 0.0)
    fail_at(locate, p + "package.die_to_die_gb_s",
            "package.dies is " + std::to_string(hw.dies_per_package) + " but the die-to-die bandwidth is 0",
            "set package.die_to_die_gb_s to the in-package link bandwidth (GB/s per direction)");
  if (hw.dies_per_package == 1 && hw.in_package_link_bandwidth_bytes_per_s > 0.0)
    fail_at(locate, p + "package.die_to_die_gb_s", "a die-to-die bandwidth is given for a single-die package",
            "remove package.die_to_die_gb_s or set package.dies > 1");
}

// ---------------------------------------------------------------------------------------------- model

void apply_model(Mapping& m, TransformerSpec& model, Need need) {
  m.read("layers", model.layers, kPositiveInt, need);
  m.read("hidden", model.hidden, kPositiveInt, need);
  m.read("ffn_hidden", model.ffn_hidden, kPositiveInt, need);
  m.read("heads", model.heads, kPositiveInt, need);
  m.read("kv_heads", model.kv_heads, kPositiveInt, need);
  m.read("vocab", model.vocab, kPositiveInt, need);
  m.read("experts", model.experts, kPositiveInt);
  m.read("top_k", model.top_k, kPositiveInt);
  m.read_choice<MlpKind>("mlp", model.mlp, {{"swiglu", MlpKind::swiglu}, {"gelu", MlpKind::gelu}}, need);
  m.read_choice<NormKind>("norm", model.norm, {{"rmsnorm", NormKind::rmsnorm}, {"layernorm", NormKind::layernorm}},
                          need);
  m.read("tied_embeddings", model.tied_embeddings, need);
  m.read("causal", model.causal);
  m.read("dropout", model.dropout);
}

void check_model(const TransformerSpec& model, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (model.hidden % model.heads != 0)
    fail_at(locate, p + "heads",
            "hidden (" + std::to_string(model.hidden) + ") is not divisible by heads (" + std::to_string(model.heads) +
                "), so the head dimension is not an integer",
            "use a head count that divides hidden");
  if (model.kv_heads > model.heads || model.heads % model.kv_heads != 0)
    fail_at(locate, p + "kv_heads",
            "kv_heads (" + std::to_string(model.kv_heads) + ") must divide heads (" + std::to_string(model.heads) +
                ") (grouped-query attention shares each KV head among heads/kv_heads query heads)",
            "use kv_heads = heads for multi-head attention, or a divisor of heads");
  if (model.top_k > model.experts)
    fail_at(locate, p + "top_k",
            "top_k (" + std::to_string(model.top_k) + ") exceeds the number of experts (" +
                std::to_string(model.experts) + ")",
            model.experts == 1 ? "set top_k: 1 for a dense model, or set experts > 1" : "set top_k <= experts");
}

// -------------------------------------------------------------------------------------------- cluster

void apply_cluster(Mapping& m, ClusterSpec& cluster, Need need, bool in_run) {
  if (in_run) {
    m.read("nodes", cluster.nodes, kPositiveInt);
  } else if (m.contains("nodes")) {
    m.fail("nodes", "a cluster file describes the node type and fabric, not the node count",
           "remove 'nodes' here and give it in the run: cluster: {name: NAME, nodes: N}");
  }
  m.read("gpus_per_node", cluster.gpus_per_node, kPositiveInt, need);
  m.read("node_topology", cluster.node_topology, need);
  m.read("nics_per_node", cluster.nics_per_node, kNonNegativeInt, need);
  section(m, "fabric", need, "a mapping with at least 'kind'", [&](Mapping& fabric) {
    auto& f = cluster.fabric;
    fabric.read("kind", f.kind, need);
    fabric.read("oversubscription", f.oversubscription, 1.0, kAtLeastOne, "downlink:uplink ratio");
    fabric.read("leaf_downlinks", f.leaf_downlinks, kPositiveInt);
    fabric.read("switch_latency_us", f.switch_latency_s, kMicrosecond, kNonNegativeReal, "µs");
    fabric.read("cable_latency_us", f.cable_latency_s, kMicrosecond, kNonNegativeReal, "µs");
    fabric.read("uplink_gbit_s", f.uplink_bandwidth_bytes_per_s, kGigabitPerSecond, kNonNegativeReal,
                "Gbit/s per direction, 0 = NIC speed");
  });
}

void check_cluster(const ClusterSpec& cluster, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (cluster.fabric.kind != "none" && cluster.nics_per_node < 1)
    fail_at(locate, p + "nics_per_node",
            "fabric '" + cluster.fabric.kind + "' connects nodes through their NICs, but nics_per_node is 0",
            "set nics_per_node >= 1, or use fabric kind 'none' for a single node");
}

}  // namespace chopsim::config_detail
