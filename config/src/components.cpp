// Decoding of the three component kinds (configs/hardware, configs/models, configs/clusters) and their
// own consistency checks. Units are converted to SI here and nowhere else: each reader names the file's
// unit (TFLOP/s, GB/s, Gbit/s, GiB, MHz, µs) and the factor to SI.

#include <cmath>
#include <cstddef>
#include <string>

#include "chopsim/common/units.hpp"
#include "chopsim/config/detail/decode.hpp"

namespace chopsim::config_detail {

namespace {

using units::kGiB;
using units::kGiga;
using units::kMega;
using units::kMiB;
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

/// The two keys of a deterministic attention backward's cost (in `kernels` for the attention class's default
/// kernel, in an attention_implementations entry for that kernel).
void read_deterministic_attention(Mapping& m, std::string_view slowdown_key, std::string_view workspace_key,
                                  DeterministicAttention& out) {
  m.read(slowdown_key, out.backward_slowdown, 1.0, kAtLeastOne, "");
  m.read(workspace_key, out.workspace_bytes_per_score, 1.0, kNonNegativeReal, "B");
}

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
    clocks.read("rated", hw.compute.rated_clock_hz, kMega, kPositiveReal, "MHz, the clock of peak_tflops");
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

  section(m, "power_model", need, "a mapping with 'dynamic_w', 'hbm_w' and 'voltage'", [&](Mapping& pm) {
    auto& p = hw.power;
    pm.read("dynamic_w", p.dynamic_w, 1.0, kNonNegativeReal, "W at activity 1 and the boost clock", need);
    pm.read("hbm_w", p.hbm_w, 1.0, kNonNegativeReal, "W at full HBM bandwidth", need);
    pm.read("busy_activity", p.busy_activity, 1.0, kNonNegativeReal, "");
    pm.read("tensor_activity", p.tensor_activity, 1.0, kNonNegativeReal, "");
    pm.read("vector_activity", p.vector_activity, 1.0, kNonNegativeReal, "");
    pm.read("communication_activity", p.communication_activity, 1.0, kNonNegativeReal, "");
    pm.read("communication_hbm", p.communication_hbm, 1.0, kFractionBelowOne, "");
    pm.read("leakage_w_per_k", p.leakage_w_per_k, 1.0, kNonNegativeReal, "W/K");
    pm.read("reference_c", p.reference_c, 1.0, RealRule{-50.0, false, 150.0, false, "a temperature in °C"}, "°C");
    section(pm, "voltage", need, "a mapping with 'knee_mhz', 'max_ratio' and 'exponent'", [&](Mapping& v) {
      v.read("knee_mhz", p.voltage.knee_hz, kMega, kNonNegativeReal, "MHz", need);
      v.read("max_ratio", p.voltage.max_ratio, 1.0, kAtLeastOne, "V(boost) / V(knee)", need);
      v.read("exponent", p.voltage.exponent, 1.0, kPositiveReal, "", need);
    });
  });

  section(m, "thermal", need, "a mapping with 'resistance_k_per_w', 'capacitance_j_per_k' and 'slowdown_c'",
          [&](Mapping& t) {
            t.read("resistance_k_per_w", hw.thermal.resistance_k_per_w, 1.0, kPositiveReal, "K/W", need);
            t.read("capacitance_j_per_k", hw.thermal.capacitance_j_per_k, 1.0, kPositiveReal, "J/K", need);
            t.read("slowdown_c", hw.thermal.slowdown_c, 1.0, RealRule{0.0, true, 200.0, false, "a temperature in °C"},
                   "°C", need);
          });

  section(m, "governor", need, "a mapping with 'window_ms', 'response_ms' and 'clock_step_mhz'", [&](Mapping& g) {
    auto& p = hw.governor;
    g.read("window_ms", p.window_s, units::kMillisecond, kPositiveReal, "ms", need);
    g.read("response_ms", p.response_s, units::kMillisecond, kNonNegativeReal, "ms", need);
    g.read("clock_step_mhz", p.clock_step_hz, kMega, kPositiveReal, "MHz", need);
    g.read("hold_band", p.hold_band, 1.0, kFractionBelowOne, "");
    g.read("thermal_hysteresis_k", p.thermal_hysteresis_k, 1.0, kNonNegativeReal, "K");
    g.read("control_period_ms", p.control_period_s, units::kMillisecond, kNonNegativeReal, "ms");
    if (p.control_period_s > 0.0 && p.control_period_s < 1e-5)
      g.fail("control_period_ms", "a control period below 0.01 ms would re-decide clocks within single kernels",
             "use 0 (a clock per load change) or a period of at least 0.01 ms");
  });

  section(m, "cooling", Need::optional, "", [&](Mapping& c) { apply_cooling(c, hw.cooling); });

  section(m, "intra_node_link", need, "a mapping with 'bandwidth_gb_s', 'links_per_gpu' and 'latency_us'",
          [&](Mapping& link) {
            link.read("bandwidth_gb_s", hw.intra_node_link_bandwidth_bytes_per_s, kGiga, kPositiveReal,
                      "GB/s per link per direction", need);
            link.read("efficiency", hw.intra_node_link_efficiency, 1.0, kFraction, "");
            link.read("links_per_gpu", hw.intra_node_links_per_gpu, kPositiveInt, need);
            link.read("latency_us", hw.intra_node_link_latency_s, kMicrosecond, kNonNegativeReal, "µs", need);
          });

  m.read("pcie_gb_s", hw.pcie_bandwidth_bytes_per_s, kGiga, kPositiveReal, "GB/s per direction", need);
  m.read("host_link_gb_s", hw.host_link_bandwidth_bytes_per_s, kGiga, kPositiveReal, "GB/s per direction");

  section(m, "nic", need, "a mapping with 'bandwidth_gbit_s' and 'latency_us'", [&](Mapping& nic) {
    nic.read("bandwidth_gbit_s", hw.nic_bandwidth_bytes_per_s, kGigabitPerSecond, kPositiveReal, "Gbit/s per direction",
             need);
    nic.read("latency_us", hw.nic_latency_s, kMicrosecond, kNonNegativeReal, "µs", need);
    nic.read("efficiency", hw.nic_efficiency, 1.0, kFraction, "");
  });

  section(m, "package", Need::optional, "", [&](Mapping& package) {
    package.read("dies", hw.dies_per_package, kPositiveInt);
    package.read("die_to_die_gb_s", hw.in_package_link_bandwidth_bytes_per_s, kGiga, kNonNegativeReal,
                 "GB/s per direction");
  });

  section(m, "memory", Need::optional, "", [&](Mapping& memory) {
    memory.read("reserved_gib", hw.memory_reserved_bytes, kGiB, kNonNegativeReal, "GiB");
    memory.read("fragmentation_fraction", hw.memory_fragmentation_fraction, 1.0, kFractionBelowOne, "");
    memory.read("cublas_workspace_mib", hw.cublas_workspace_bytes, kMiB, kNonNegativeReal, "MiB");
    memory.read("transformer_engine_workspace_mib", hw.transformer_engine_workspace_bytes, kMiB, kNonNegativeReal,
                "MiB");
  });

  section(m, "kernels", need, "a mapping with 'launch_overhead_us', 'comm_compute_slowdown' and 'efficiency'",
          [&](Mapping& kernels) {
            kernels.read("launch_overhead_us", hw.compute.launch_overhead_s, kMicrosecond, kNonNegativeReal, "µs",
                         need);
            kernels.read("comm_compute_slowdown", hw.compute.comm_compute_slowdown, 1.0, kFractionBelowOne, "", need);
            kernels.read("unaligned_gemm_slowdown", hw.compute.unaligned_gemm_slowdown, 1.0, kAtLeastOne, "");
            kernels.read("fp8_gemm_efficiency_ratio", hw.compute.fp8_gemm_efficiency_ratio, 1.0, kFraction, "");
            read_deterministic_attention(kernels, "deterministic_attention_backward_slowdown",
                                         "deterministic_attention_workspace_bytes_per_score",
                                         hw.compute.deterministic_attention);
            kernels.read("attention_dropout_slowdown", hw.compute.attention_dropout_slowdown, 1.0, kAtLeastOne, "");
            kernels.read("attention_head_dim_64_ratio", hw.attention_head_dim_64_ratio, 1.0, kFraction, "");
            // PyTorch's own elementwise kernels by TensorIterator path (ElementwisePath): HBM fractions.
            section(kernels, "pytorch_elementwise_memory", Need::optional, "", [&](Mapping& paths) {
              for (const ElementwisePath path : kPytorchElementwisePaths)
                paths.read(std::string(elementwise_path_name(path)),
                           hw.compute.elementwise_path_memory[static_cast<std::size_t>(path)], 1.0, kFraction, "");
            });
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
            // Named attention kernels: each entry is a full efficiency (compute required; memory and
            // half_efficiency_gflop default to the attention class's).
            if (kernels.has("attention_implementations")) {
              const YAML::Node node = kernels.value("attention_implementations");
              Mapping implementations = kernels.child("attention_implementations");
              for (const auto& entry : node) {
                const std::string name = entry.first.as<std::string>();
                if (name == kEagerAttention)
                  implementations.fail(name,
                                       "'eager' is chopsim's unfused attention (training.attention: eager), not a "
                                       "kernel efficiency",
                                       "give the implementation another name");
                // A new implementation starts from the attention class's efficiency and no deterministic cost.
                const bool known = hw.attention_implementations.count(name) > 0;
                AttentionImplementation impl_spec =
                    known ? hw.attention_implementations.at(name)
                          : AttentionImplementation{
                                hw.compute.efficiency[static_cast<std::size_t>(KernelClass::attention)], {}, 1.0, 1.0};
                KernelEfficiency& e = impl_spec.efficiency;
                section(implementations, name, Need::optional, "", [&](Mapping& impl) {
                  impl.read("compute", e.compute, 1.0, kFraction, "", known ? Need::optional : Need::required);
                  impl.read("memory", e.memory, 1.0, kFraction, "");
                  impl.read("half_efficiency_gflop", e.half_efficiency_flops, kGiga, kNonNegativeReal, "GFLOP");
                  read_deterministic_attention(impl, "deterministic_backward_slowdown",
                                               "deterministic_workspace_bytes_per_score", impl_spec.deterministic);
                  impl.read("dropout_slowdown", impl_spec.dropout_slowdown, 1.0, kAtLeastOne, "");
                  impl.read("head_dim_64_ratio", impl_spec.head_dim_64_ratio, 1.0, kFraction, "");
                });
                hw.attention_implementations[name] = impl_spec;
              }
              implementations.finish();
            }
          });
}

void apply_cooling(Mapping& c, CoolingSpec& cooling) {
  c.read("ambient_c", cooling.ambient_c, 1.0, RealRule{-20.0, false, 80.0, false, "a temperature in °C"}, "°C");
  c.read_choice<CoolingSpec::Profile>("profile", cooling.profile,
                                      {{"uniform", CoolingSpec::Profile::uniform},
                                       {"front_to_back", CoolingSpec::Profile::front_to_back},
                                       {"per_slot", CoolingSpec::Profile::per_slot}});
  c.read("rear_rise_k", cooling.rear_rise_k, 1.0, kNonNegativeReal, "K");
  if (c.has("slot_offsets_k")) {
    const YAML::Node list = c.value("slot_offsets_k");
    const std::string fix = "write a list of numbers (K), one per GPU slot of a node, e.g. [0, 0, 0, 0, 8, 8, 8, 8]";
    if (!list.IsSequence() || list.size() == 0)
      c.fail("slot_offsets_k", "expected a list of temperature offsets in K, found " + describe_value(list), fix);
    cooling.slot_offsets_k.clear();
    for (const auto& item : list) {
      double value = 0.0;
      try {
        value = item.as<double>();
      } catch (const YAML::Exception&) {
        c.fail("slot_offsets_k", "expected numbers (K), found " + describe_value(item), fix);
      }
      if (!std::isfinite(value) || value < -50.0 || value > 80.0)
        c.fail("slot_offsets_k", "offset " + describe_value(item) + " is outside -50..80 K", fix);
      cooling.slot_offsets_k.push_back(value);
    }
  }
}

void check_hardware(const HardwareSpec& hw, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (hw.compute.rated_clock_hz > hw.compute.boost_clock_hz)
    fail_at(locate, p + "clocks_mhz.rated",
            "the rated clock (" + std::to_string(hw.compute.rated_clock_hz / kMega) +
                " MHz) is above the boost clock (" + std::to_string(hw.compute.boost_clock_hz / kMega) + " MHz)",
            "set clocks_mhz.rated to the clock the datasheet's peak_tflops are quoted at, <= boost");
  if (hw.compute.rated_clock_hz > 0.0 && hw.compute.rated_clock_hz < hw.min_clock_hz)
    fail_at(locate, p + "clocks_mhz.rated", "the rated clock is below the minimum clock",
            "set clocks_mhz.rated between clocks_mhz.min and clocks_mhz.boost");
  if (hw.power.voltage.knee_hz > hw.compute.boost_clock_hz)
    fail_at(locate, p + "power_model.voltage.knee_mhz",
            "the voltage knee (" + std::to_string(hw.power.voltage.knee_hz / kMega) +
                " MHz) is above the boost clock (" + std::to_string(hw.compute.boost_clock_hz / kMega) + " MHz)",
            "set knee_mhz between clocks_mhz.min and clocks_mhz.boost");
  if (hw.idle_power_w >= hw.tdp_w)
    fail_at(locate, p + "power_w.idle", "the idle power is not below the TDP",
            "power_w.idle is the board power with nothing running; it must be below power_w.tdp");
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
  m.read("head_dim", model.head_dim_override, kPositiveInt);
  m.read("make_vocab_size_divisible_by", model.make_vocab_size_divisible_by,
         IntRule{1, 65536, "an integer from 1 to 65536"});
  m.read("experts", model.experts, kPositiveInt);
  m.read("top_k", model.top_k, kPositiveInt);
  m.read("dense_layers", model.dense_layers, kNonNegativeInt);
  m.read("dense_ffn_hidden", model.dense_ffn_hidden, kPositiveInt);
  m.read("shared_expert_ffn_hidden", model.shared_expert_ffn_hidden, kPositiveInt);
  m.read("kv_lora_rank", model.kv_lora_rank, kPositiveInt);
  m.read("q_lora_rank", model.q_lora_rank, kPositiveInt);
  m.read("qk_rope_head_dim", model.qk_rope_head_dim, kPositiveInt);
  m.read("v_head_dim", model.v_head_dim, kPositiveInt);
  m.read("sliding_window", model.sliding_window, kPositiveInt);
  m.read("full_attention_every", model.full_attention_every, kPositiveInt);
  m.read("mtp_layers", model.mtp_layers, IntRule{0, 8, "an integer from 0 to 8 (DeepSeek-V3: 1)"});
  m.read_choice<MlpKind>(
      "mlp", model.mlp, {{"swiglu", MlpKind::swiglu}, {"gelu", MlpKind::gelu}, {"squared_relu", MlpKind::squared_relu}},
      need);
  m.read("hybrid_pattern", model.hybrid_pattern);
  if (m.has("mamba")) {
    Mapping mamba = m.child("mamba");
    mamba.read("heads", model.mamba_heads, kPositiveInt, Need::required);
    mamba.read("head_dim", model.mamba_head_dim, kPositiveInt);
    mamba.read("state_dim", model.mamba_state_dim, kPositiveInt);
    mamba.read("groups", model.mamba_groups, kPositiveInt);
    mamba.read("conv_kernel", model.mamba_conv_kernel, IntRule{1, 64, "an integer from 1 to 64 (Mamba-2: 4)"});
    mamba.read("chunk_size", model.mamba_chunk_size, kPositiveInt);
    mamba.finish();
  }
  m.read_choice<NormKind>("norm", model.norm, {{"rmsnorm", NormKind::rmsnorm}, {"layernorm", NormKind::layernorm}},
                          need);
  m.read("tied_embeddings", model.tied_embeddings, need);
  m.read("causal", model.causal);
  m.read("dropout", model.dropout);
  m.read("linear_bias", model.linear_bias);
  m.read("qk_norm", model.qk_norm);
  m.read_choice<PositionEmbedding>(
      "position_embedding", model.position_embedding,
      {{"rope", PositionEmbedding::rope}, {"learned", PositionEmbedding::learned}, {"none", PositionEmbedding::none}});
}

void check_model(const TransformerSpec& model, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (model.head_dim_override == 0 && model.hidden % model.heads != 0)
    fail_at(locate, p + "heads",
            "hidden (" + std::to_string(model.hidden) + ") is not divisible by heads (" + std::to_string(model.heads) +
                "), so the head dimension is not an integer",
            "use a head count that divides hidden, or give head_dim (the width of one head)");
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
  for (const auto& [key, set] : {std::pair<const char*, bool>{"dense_layers", model.dense_layers > 0},
                                 {"dense_ffn_hidden", model.dense_ffn_hidden > 0},
                                 {"shared_expert_ffn_hidden", model.shared_expert_ffn_hidden > 0}})
    if (set && !model.is_moe())
      fail_at(locate, p + key, std::string(key) + " describes a mixture-of-experts model, but experts is 1",
              "remove it, or set experts > 1");
  if (model.is_mla() && (model.qk_rope_head_dim == 0 || model.v_head_dim == 0))
    fail_at(locate, p + "kv_lora_rank", "multi-latent attention (kv_lora_rank) needs qk_rope_head_dim and v_head_dim",
            "give both (DeepSeek-V3: 64 and 128), and head_dim as the unrotated query/key part (128)");
  if (model.is_mla() && model.kv_heads != model.heads)
    fail_at(locate, p + "kv_heads", "multi-latent attention gives every head its own key and value: kv_heads = heads",
            "set kv_heads: " + std::to_string(model.heads));
  for (const auto& [key, set] : {std::pair<const char*, bool>{"q_lora_rank", model.q_lora_rank > 0},
                                 {"qk_rope_head_dim", model.qk_rope_head_dim > 0},
                                 {"v_head_dim", model.v_head_dim > 0}})
    if (set && !model.is_mla())
      fail_at(locate, p + key, std::string(key) + " describes multi-latent attention, which needs kv_lora_rank",
              "add kv_lora_rank, or remove it");
  if (model.full_attention_every > 0 && model.sliding_window == 0)
    fail_at(locate, p + "full_attention_every",
            "full_attention_every says which layers keep full attention beside "
            "sliding-window ones, but the model has no sliding_window",
            "set sliding_window (tokens), or remove full_attention_every");
  if (model.sliding_window > 0 && !model.causal)
    fail_at(locate, p + "sliding_window", "a sliding window is modelled for causal attention only",
            "remove sliding_window, or set causal: true");
  if (model.is_hybrid()) {
    const std::size_t bad = model.hybrid_pattern.find_first_not_of("M*-E");
    if (bad != std::string::npos)
      fail_at(locate, p + "hybrid_pattern",
              "symbol '" + model.hybrid_pattern.substr(bad, 1) + "' at position " + std::to_string(bad + 1) +
                  " is not a layer kind",
              "use M (Mamba-2), * (attention), - (dense MLP) and E (mixture of experts), one per layer");
    if (static_cast<int>(model.hybrid_pattern.size()) != model.layers)
      fail_at(locate, p + "hybrid_pattern",
              "the pattern has " + std::to_string(model.hybrid_pattern.size()) + " symbols but layers is " +
                  std::to_string(model.layers),
              "give one symbol per layer (layers: " + std::to_string(model.hybrid_pattern.size()) + ")");
    const bool has_mamba = model.hybrid_pattern.find('M') != std::string::npos;
    if (has_mamba && model.mamba_heads == 0)
      fail_at(locate, p + "mamba", "the pattern has Mamba layers (M) but no mamba: {heads: ...}",
              "add mamba: {heads, head_dim, state_dim, groups} (Nemotron 3 Nano: 64, 64, 128, 8)");
    if (has_mamba && model.mamba_heads % model.mamba_groups != 0)
      fail_at(locate, p + "mamba.groups",
              "mamba heads (" + std::to_string(model.mamba_heads) + ") is not a multiple of groups (" +
                  std::to_string(model.mamba_groups) + ")",
              "use a group count that divides the heads");
    if ((model.hybrid_pattern.find('E') != std::string::npos) != model.is_moe())
      fail_at(locate, p + "hybrid_pattern",
              model.is_moe() ? "experts > 1 but the pattern has no mixture-of-experts layer (E)"
                             : "the pattern has mixture-of-experts layers (E) but experts is 1",
              model.is_moe() ? "add E layers, or set experts: 1" : "set experts and top_k");
    for (const auto& [key, set] :
         {std::pair<const char*, bool>{"dense_layers", model.dense_layers > 0}, {"mtp_layers", model.mtp_layers > 0}})
      if (set)
        fail_at(locate, p + key, std::string(key) + " is not modelled for a hybrid model (hybrid_pattern)",
                "remove it: the pattern says which layers are dense (-)");
  } else if (model.mamba_heads > 0) {
    fail_at(locate, p + "mamba", "mamba describes the Mamba-2 layers of a hybrid model, but there is no hybrid_pattern",
            "add hybrid_pattern (M for each Mamba layer), or remove mamba");
  }
  if (model.dense_layers >= model.layers && model.is_moe())
    fail_at(locate, p + "dense_layers",
            "dense_layers (" + std::to_string(model.dense_layers) + ") leaves no MoE layer of " +
                std::to_string(model.layers),
            "set dense_layers below layers, or make the model dense (experts: 1)");
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
  m.read("megatron_host_launch_us", cluster.megatron_host_launch_s, kMicrosecond, kNonNegativeReal, "µs");
  section(m, "fabric", need, "a mapping with at least 'kind'", [&](Mapping& fabric) {
    auto& f = cluster.fabric;
    fabric.read("kind", f.kind, need);
    fabric.read("oversubscription", f.oversubscription, 1.0, kAtLeastOne, "downlink:uplink ratio");
    fabric.read("leaf_downlinks", f.leaf_downlinks, kPositiveInt);
    fabric.read("switch_latency_us", f.switch_latency_s, kMicrosecond, kNonNegativeReal, "µs");
    fabric.read("cable_latency_us", f.cable_latency_s, kMicrosecond, kNonNegativeReal, "µs");
    fabric.read("uplink_gbit_s", f.uplink_bandwidth_bytes_per_s, kGigabitPerSecond, kNonNegativeReal,
                "Gbit/s per direction, 0 = NIC speed");
    fabric.read_choice<FabricRouting>("routing", f.routing,
                                      {{"ecmp", FabricRouting::ecmp}, {"adaptive", FabricRouting::adaptive}});
  });
}

void check_cluster(const ClusterSpec& cluster, const Locator& locate, std::string_view prefix) {
  const std::string p(prefix);
  if (cluster.fabric.kind != "none" && cluster.nics_per_node < 1)
    fail_at(locate, p + "nics_per_node",
            "fabric '" + cluster.fabric.kind + "' connects nodes through their NICs, but nics_per_node is 0",
            "set nics_per_node >= 1, or use fabric kind 'none' for a single node");
  // The bound of training.host_launch_us, which this becomes in imported Megatron jobs.
  if (!(cluster.megatron_host_launch_s < 0.01))
    fail_at(locate, p + "megatron_host_launch_us",
            "must be below 10000 µs, found " + std::to_string(std::lround(cluster.megatron_host_launch_s * 1e6)),
            "give the host time per kernel launch in microseconds (DGX H100: 65)");
}

}  // namespace chopsim::config_detail
