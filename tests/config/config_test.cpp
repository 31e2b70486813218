// YAML configuration: every shipped file loads, SI conversion against datasheet values, the three ways of
// naming a component agree, overrides, and one test per error kind asserting file, line, key and fix.

#include "chopsim/config/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------- helpers

using test::input_error;

/// A fresh directory per test (dir_, write()), removed afterwards.
class ConfigTest : public test::TempDirTest {
 protected:
  /// Loads a run whose component names resolve in the shipped configs/ folder.
  RunSpec load(const fs::path& run_file) const {
    return load_run_config(run_file, ConfigSearchPath{{test::configs_dir()}}, registries_);
  }

  /// A run on one DGX H100 node (fabric none) with the given parallelism and training lines.
  std::string small_run(const std::string& model, const std::string& parallelism, const std::string& training,
                        const std::string& cluster = "{name: dgx-h100, nodes: 1, fabric: {kind: none}}") const {
    return "model: " + model + "\nhardware: H100-SXM5-80GB\ncluster: " + cluster + "\nparallelism:\n" + parallelism +
           "training:\n" + training;
  }

  /// A run of llama3-8b with DP 8 on one DGX H100 node whose H100 overrides `kernels` (a YAML flow mapping's body).
  static std::string h100_kernels_run(const std::string& kernels) {
    return "model: llama3-8b\nhardware: {name: H100-SXM5-80GB, kernels: {" + kernels +
           "}}\ncluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\nparallelism:\n  dp: 8\n"
           "training:\n  global_batch: 8\n";
  }

  ModelRegistries registries_ = ModelRegistries::with_builtins();
};

void expect_contains(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "missing '" << part << "' in:\n" << message;
}

std::vector<fs::path> yaml_files(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string indent(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Every decoded field except names and the source path, for "decodes the same" comparisons.
std::string describe(const RunSpec& run) {
  std::ostringstream out;
  out << std::setprecision(17);
  const auto& m = run.model;
  out << m.layers << ' ' << m.hidden << ' ' << m.ffn_hidden << ' ' << m.heads << ' ' << m.kv_heads << ' ' << m.vocab
      << ' ' << m.experts << ' ' << m.top_k << ' ' << static_cast<int>(m.mlp) << ' ' << static_cast<int>(m.norm) << ' '
      << m.tied_embeddings << ' ' << m.causal << ' ' << m.dropout << ' ' << m.linear_bias << ' '
      << static_cast<int>(m.position_embedding) << '\n';
  const auto& h = run.hardware;
  out << h.vendor << ' ';
  for (double peak : h.compute.peak_flops_per_s) out << peak << ' ';
  out << h.compute.hbm_bandwidth_bytes_per_s << ' ' << h.compute.boost_clock_hz << ' ' << h.compute.launch_overhead_s
      << ' ' << h.compute.comm_compute_slowdown << ' ' << h.compute.unaligned_gemm_slowdown << ' '
      << h.compute.deterministic_attention.backward_slowdown << ' '
      << h.compute.deterministic_attention.workspace_bytes_per_score << ' ' << h.compute.attention_dropout_slowdown
      << ' ' << h.compute.fp8_gemm_efficiency_ratio << ' ' << h.host_link_bandwidth_bytes_per_s << '\n';
  for (const double eta : h.compute.elementwise_path_memory) out << eta << ' ';
  out << h.attention_head_dim_64_ratio << '\n';
  for (const auto& e : h.compute.efficiency)
    out << e.compute << ' ' << e.memory << ' ' << e.half_efficiency_flops << ' ';
  out << '\n'
      << h.min_clock_hz << ' ' << h.hbm_capacity_bytes << ' ' << h.tdp_w << ' ' << h.idle_power_w << ' '
      << h.intra_node_link_bandwidth_bytes_per_s << ' ' << h.intra_node_links_per_gpu << ' '
      << h.intra_node_link_latency_s << ' ' << h.pcie_bandwidth_bytes_per_s << ' ' << h.nic_bandwidth_bytes_per_s << ' '
      << h.nic_latency_s << ' ' << h.dies_per_package << ' ' << h.in_package_link_bandwidth_bytes_per_s << ' '
      << h.memory_reserved_bytes << ' ' << h.memory_fragmentation_fraction << ' ' << h.intra_node_link_efficiency << ' '
      << h.nic_efficiency << '\n';
  for (const auto& [name, impl] : h.attention_implementations)
    out << name << ' ' << impl.efficiency.compute << ' ' << impl.efficiency.memory << ' '
        << impl.efficiency.half_efficiency_flops << ' ' << impl.deterministic.backward_slowdown << ' '
        << impl.deterministic.workspace_bytes_per_score << ' ' << impl.dropout_slowdown << ' ' << impl.head_dim_64_ratio
        << ' ';
  out << '\n';
  const auto& c = run.cluster;
  out << c.nodes << ' ' << c.gpus_per_node << ' ' << c.node_topology << ' ' << c.nics_per_node << ' ' << c.fabric.kind
      << ' ' << c.fabric.oversubscription << ' ' << c.fabric.leaf_downlinks << ' ' << c.fabric.switch_latency_s << ' '
      << c.fabric.cable_latency_s << ' ' << c.fabric.uplink_bandwidth_bytes_per_s << '\n';
  const auto& p = run.parallelism;
  out << p.dp << ' ' << p.tp << ' ' << p.pp << ' ' << p.cp << ' ' << p.ep << ' ' << p.sequence_parallel << ' '
      << static_cast<int>(p.pp_schedule) << ' ' << p.virtual_stages << ' ' << p.zero_stage << ' ' << p.shard_group_size
      << '\n';
  const auto& t = run.training;
  out << t.global_batch << ' ' << t.micro_batch << ' ' << t.seq_len << ' ' << static_cast<int>(t.precision) << ' '
      << static_cast<int>(t.recompute) << ' ' << t.overlap.dp << t.overlap.fsdp << t.overlap.tp << t.overlap.pp
      << t.overlap.cp << t.overlap.ep << ' ' << t.fsdp_prefetch << ' ' << t.dp_bucket_bytes << ' '
      << t.moe_capacity_factor.value_or(0.0) << t.moe_pad_to_capacity << ' ' << t.moe_load_imbalance << ' '
      << t.overlap.tp_backward << ' ' << t.attention << ' ' << t.gradient_accumulation_fusion << t.cross_entropy_fusion
      << t.grad_clip << t.log_num_zeros_in_grad << t.log_params_norm << t.fsdp_reduce_fp32 << t.deterministic
      << t.fill_uninitialized_memory << t.attention_mask_in_dataloader << t.check_for_nan_in_grad << ' '
      << t.host_launch_s << ' ' << to_string(t.moe_dispatcher) << ' ' << to_string(t.fp8_recipe) << ' ' << t.lora.rank
      << t.lora.qkv << t.lora.proj << t.lora.fc1 << t.lora.fc2 << ' ' << to_string(t.fsdp_runtime()) << '\n';
  out << run.compute_model << ' ' << run.collective_model << ' ' << run.collectives.all_reduce << ' '
      << run.collectives.all_gather << ' ' << run.collectives.reduce_scatter << ' ' << run.collectives.all_to_all << ' '
      << run.collectives.step_latency_s << ' ' << run.collectives.mesh_channels << ' '
      << run.collectives.pipelined_rings << ' ' << run.engine << ' ' << run.engine_options.network_model << ' '
      << run.engine_options.isolate_in_child_process << ' ' << run.iterations << '\n';
  return out.str();
}

std::size_t idx(Precision p) { return static_cast<std::size_t>(p); }
std::size_t idx(KernelClass k) { return static_cast<std::size_t>(k); }

// ---------------------------------------------------------------------------------- shipped configs

TEST_F(ConfigTest, EveryShippedComponentFileLoads) {
  const auto hardware = yaml_files(test::configs_dir() / "hardware");
  const auto models = yaml_files(test::configs_dir() / "models");
  const auto clusters = yaml_files(test::configs_dir() / "clusters");
  EXPECT_GE(hardware.size(), 7U);
  EXPECT_GE(models.size(), 12U);
  EXPECT_GE(clusters.size(), 8U);
  for (const auto& file : hardware) {
    SCOPED_TRACE(file.string());
    const HardwareSpec spec = load_hardware_config(file);
    EXPECT_EQ(spec.name, file.stem().string());
    EXPECT_GT(spec.compute.peak_flops_per_s[idx(Precision::bf16)], 0.0);
    for (const auto& e : spec.compute.efficiency) {
      EXPECT_GT(e.compute, 0.0);
      EXPECT_LE(e.compute, 1.0);
      EXPECT_LT(e.memory, 1.0) << "an efficiency of exactly 1 is the struct default: every class must be stated";
    }
  }
  for (const auto& file : models) {
    SCOPED_TRACE(file.string());
    const TransformerSpec spec = load_model_config(file);
    EXPECT_EQ(spec.hidden % spec.heads, 0);
  }
  for (const auto& file : clusters) {
    SCOPED_TRACE(file.string());
    const ClusterSpec spec = load_cluster_config(file);
    EXPECT_TRUE(registries_.node_topology.contains(spec.node_topology));
    EXPECT_TRUE(registries_.fabric_topology.contains(spec.fabric.kind));
  }
}

TEST_F(ConfigTest, EveryShippedRunLoadsWithTheDefaultSearchPath) {
  std::vector<fs::path> runs = yaml_files(test::configs_dir());
  const auto validation = yaml_files(test::configs_dir() / "validation");
  runs.insert(runs.end(), validation.begin(), validation.end());
  EXPECT_GE(runs.size(), 9U);
  for (const auto& file : runs) {
    SCOPED_TRACE(file.string());
    const ConfigSearchPath search = default_search_path(file);
    ASSERT_EQ(search.roots.size(), 1U);
    EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(test::configs_dir()));
    const RunSpec run = load_run_config(file, search, registries_);
    EXPECT_EQ(run.parallelism.world_size(), run.cluster.gpu_count());
    EXPECT_EQ(run.source, file);
    EXPECT_NO_THROW(validate_run(run, SourceLocation{file.string()}));
  }
}

TEST_F(ConfigTest, ARunListsEveryFileItRead) {
  // What a sweep point's cache key hashes: the run config, then its model, calibration profile, hardware and cluster
  // files, in that order; an inline component reads no file.
  const fs::path config = test::configs_dir() / "llama3-8b-fsdp.yaml";
  const auto listed = [&](const std::vector<ConfigOverride>& overrides) {
    std::vector<fs::path> files;
    for (const fs::path& f : load_run_config(config, default_search_path(config), registries_, overrides).input_files)
      files.push_back(fs::canonical(f));
    return files;
  };
  const fs::path configs = fs::canonical(test::configs_dir());
  EXPECT_EQ(listed({}),
            (std::vector<fs::path>{fs::canonical(config), configs / "models" / "llama3-8b.yaml",
                                   configs / "hardware" / "MI300X.yaml", configs / "clusters" / "mi300x.yaml"}));
  const fs::path profile = fs::canonical(test::source_dir() / "calibration" / "profiles" / "mi300x.yaml");
  EXPECT_EQ(listed({{"calibration", profile.string(), "test"}}),
            (std::vector<fs::path>{fs::canonical(config), configs / "models" / "llama3-8b.yaml", profile,
                                   configs / "hardware" / "MI300X.yaml", configs / "clusters" / "mi300x.yaml"}));
}

TEST_F(ConfigTest, ShippedRunsMirrorTheirSources) {
  const RunSpec fsdp = load(test::configs_dir() / "llama3-8b-fsdp.yaml");
  EXPECT_EQ(fsdp.hardware.name, "MI300X");
  EXPECT_EQ(fsdp.cluster.gpu_count(), 8);
  EXPECT_EQ(fsdp.parallelism.zero_stage, 3);  // fsdp: full_shard

  const RunSpec llama70 = load(test::configs_dir() / "llama3-70b-h100-3d.yaml");
  EXPECT_EQ(llama70.cluster.gpu_count(), 64);
  EXPECT_EQ(llama70.parallelism.tp, 8);
  EXPECT_EQ(llama70.parallelism.pp, 4);
  EXPECT_EQ(llama70.parallelism.dp, 2);
  EXPECT_TRUE(llama70.parallelism.sequence_parallel);
  EXPECT_EQ(llama70.training.dp_bucket_bytes, 125.0 * 1024 * 1024);  // NeMo bucket_cap_mb is MiB

  const RunSpec mixtral = load(test::configs_dir() / "mixtral-8x7b-h200-ep.yaml");
  EXPECT_EQ(mixtral.cluster.gpu_count(), 32);
  EXPECT_EQ(mixtral.parallelism.ep, 8);
  EXPECT_EQ(mixtral.model.experts, 8);

  // Megatron validation runs: interleaving with 1 layer per virtual stage; tp4 uses micro-batch 2 and no SP.
  const RunSpec pp4 = load(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp1-pp4.yaml");
  EXPECT_EQ(pp4.parallelism.pp_schedule, PipelineSchedule::interleaved);
  EXPECT_EQ(pp4.parallelism.virtual_stages, 8);
  EXPECT_EQ(pp4.model.layers / (pp4.parallelism.pp * pp4.parallelism.virtual_stages), 1);
  EXPECT_EQ(pp4.training.micro_batches(pp4.parallelism), 4);
  EXPECT_EQ(pp4.collectives.all_reduce, "ring");
  const RunSpec tp4 = load(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp4-pp1.yaml");
  EXPECT_EQ(tp4.parallelism.tp, 4);
  EXPECT_FALSE(tp4.parallelism.sequence_parallel);
  EXPECT_EQ(tp4.training.micro_batch, 2);
  EXPECT_EQ(tp4.model.ffn_hidden, 4 * tp4.model.hidden);  // no --swiglu, no --ffn-hidden-size: 4h GELU
  EXPECT_EQ(tp4.model.mlp, MlpKind::gelu);
  EXPECT_TRUE(tp4.model.linear_bias);                      // Megatron's default --add-bias-linear
  EXPECT_TRUE(tp4.training.attention_mask_in_dataloader);  // and --create-attention-mask-in-dataloader
  EXPECT_FALSE(load(test::configs_dir() / "validation" / "megatron-gpt-tiny-tp2-pp2.yaml")
                   .training.attention_mask_in_dataloader);  // the test named no_create_attention_mask_in_dataloader

  // The scale-out / scale-up pair trains the same model on the same tokens per step.
  const RunSpec out = load(test::configs_dir() / "llama3-70b-scaleout-h100.yaml");
  const RunSpec up = load(test::configs_dir() / "llama3-70b-scaleup-h200.yaml");
  EXPECT_EQ(out.model.name, up.model.name);
  EXPECT_EQ(out.training.tokens_per_iteration(), up.training.tokens_per_iteration());
  EXPECT_GT(out.cluster.gpu_count(), up.cluster.gpu_count());
}

// ------------------------------------------------------------------------------- SI unit conversion

TEST_F(ConfigTest, HardwareValuesAreConvertedToSiUnits) {
  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  // NVIDIA H100 whitepaper, SXM5, dense.
  EXPECT_DOUBLE_EQ(h100.compute.peak_flops_per_s[idx(Precision::bf16)], 989.4e12);
  EXPECT_DOUBLE_EQ(h100.compute.peak_flops_per_s[idx(Precision::fp8)], 1978.9e12);
  EXPECT_DOUBLE_EQ(h100.compute.peak_flops_per_s[idx(Precision::tf32)], 494.7e12);
  EXPECT_DOUBLE_EQ(h100.compute.peak_flops_per_s[idx(Precision::fp32)], 66.9e12);
  EXPECT_DOUBLE_EQ(h100.compute.hbm_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.hbm_capacity_bytes, 80.0 * 1024 * 1024 * 1024);  // GiB, not GB
  EXPECT_DOUBLE_EQ(h100.compute.boost_clock_hz, 1.98e9);
  EXPECT_DOUBLE_EQ(h100.tdp_w, 700.0);
  // NVLink 4: 18 links x 25 GB/s per direction = 450 GB/s per direction.
  EXPECT_DOUBLE_EQ(h100.intra_node_link_bandwidth_bytes_per_s * h100.intra_node_links_per_gpu, 450e9);
  EXPECT_DOUBLE_EQ(h100.nic_bandwidth_bytes_per_s, 50e9);  // 400 Gb/s
  // What NCCL achieves of them (Vidur's measured all_reduce and send_recv).
  EXPECT_DOUBLE_EQ(h100.intra_node_link_efficiency, 0.75);
  EXPECT_DOUBLE_EQ(h100.nic_efficiency, 0.71);
  // Named attention kernels (FlashAttention-3 paper's H100 measurements); the class default is cuDNN's.
  ASSERT_EQ(h100.attention_implementations.count("flash2"), 1u);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash2").efficiency.compute, 0.339);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash2").efficiency.half_efficiency_flops, 36.6e9);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash2").efficiency.memory,
                   h100.compute.efficiency[idx(KernelClass::attention)].memory);  // inherited from the class
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("cudnn").efficiency.compute,
                   h100.compute.efficiency[idx(KernelClass::attention)].compute);
  EXPECT_LT(h100.attention_implementations.at("flash1_triton").efficiency.compute,
            h100.attention_implementations.at("flash2").efficiency.compute);
  EXPECT_DOUBLE_EQ(h100.pcie_bandwidth_bytes_per_s, 64e9);
  EXPECT_DOUBLE_EQ(h100.compute.launch_overhead_s, 2e-6);
  EXPECT_DOUBLE_EQ(h100.compute.efficiency[idx(KernelClass::gemm)].half_efficiency_flops, 8e9);
  // PyTorch's elementwise kernels by TensorIterator path (TraceLens' H100 trace); the fused entry is never read.
  EXPECT_DOUBLE_EQ(h100.compute.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::vectorized)], 0.86);
  EXPECT_DOUBLE_EQ(h100.compute.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::strided)], 0.45);
  EXPECT_DOUBLE_EQ(h100.compute.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::fused)], 0.0);
  EXPECT_EQ(h100.vendor, "nvidia");

  const HardwareSpec mi300x = load_hardware_config(test::configs_dir() / "hardware" / "MI300X.yaml");
  EXPECT_DOUBLE_EQ(mi300x.compute.peak_flops_per_s[idx(Precision::bf16)], 1307.4e12);
  EXPECT_DOUBLE_EQ(mi300x.compute.peak_flops_per_s[idx(Precision::fp8)], 2614.9e12);
  EXPECT_DOUBLE_EQ(mi300x.hbm_capacity_bytes, 192.0 * 1024 * 1024 * 1024);
  // rocm-smi's vram_total_bytes in ../shared/data/power/mi300x_rocm_smi_inference agrees to 0.01 %.
  EXPECT_NEAR(mi300x.hbm_capacity_bytes / 206141652992.0, 1.0, 1e-4);
  EXPECT_DOUBLE_EQ(mi300x.compute.hbm_bandwidth_bytes_per_s, 5.3e12);
  EXPECT_DOUBLE_EQ(mi300x.intra_node_link_bandwidth_bytes_per_s, 64e9);  // 128 GB/s bidirectional per link
  EXPECT_EQ(mi300x.intra_node_links_per_gpu, 7);
  EXPECT_DOUBLE_EQ(mi300x.compute.boost_clock_hz, 2.1e9);
  EXPECT_DOUBLE_EQ(mi300x.tdp_w, 750.0);
  EXPECT_EQ(mi300x.vendor, "amd");

  // MI325X: MI300X's die with 256 GB of HBM3E at 6 TB/s and a 1000 W limit; MI350X / MI355X: CDNA 4, 256 CUs x 4096
  // BF16 FLOP per clock at 2.2 / 2.4 GHz, 288 GB at 8 TB/s, 1000 / 1400 W, Infinity Fabric 153.6 GB/s per link.
  const HardwareSpec mi325x = load_hardware_config(test::configs_dir() / "hardware" / "MI325X.yaml");
  EXPECT_DOUBLE_EQ(mi325x.compute.peak_flops_per_s[idx(Precision::bf16)],
                   mi300x.compute.peak_flops_per_s[idx(Precision::bf16)]);
  EXPECT_DOUBLE_EQ(mi325x.hbm_capacity_bytes, 256.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(mi325x.compute.hbm_bandwidth_bytes_per_s, 6e12);
  EXPECT_DOUBLE_EQ(mi325x.tdp_w, 1000.0);
  for (const auto& [file, clock_hz, tdp_w] :
       {std::tuple{"MI350X.yaml", 2.2e9, 1000.0}, {"MI355X.yaml", 2.4e9, 1400.0}}) {
    SCOPED_TRACE(file);
    const HardwareSpec cdna4 = load_hardware_config(test::configs_dir() / "hardware" / file);
    EXPECT_NEAR(cdna4.compute.peak_flops_per_s[idx(Precision::bf16)], 256.0 * 4096 * clock_hz, 0.1e12);
    EXPECT_NEAR(cdna4.compute.peak_flops_per_s[idx(Precision::fp8)], 2.0 * 256.0 * 4096 * clock_hz, 0.1e12);
    EXPECT_DOUBLE_EQ(cdna4.compute.boost_clock_hz, clock_hz);
    EXPECT_DOUBLE_EQ(cdna4.hbm_capacity_bytes, 288.0 * 1024 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(cdna4.compute.hbm_bandwidth_bytes_per_s, 8e12);
    EXPECT_DOUBLE_EQ(cdna4.tdp_w, tdp_w);
    EXPECT_DOUBLE_EQ(cdna4.intra_node_link_bandwidth_bytes_per_s * 2 * cdna4.intra_node_links_per_gpu, 1075.2e9);
    EXPECT_DOUBLE_EQ(cdna4.compute.peak_flops_per_s[idx(Precision::tf32)], 0.0);  // not read from the data sheet
  }

  const HardwareSpec mi250x = load_hardware_config(test::configs_dir() / "hardware" / "MI250X.yaml");
  EXPECT_EQ(mi250x.dies_per_package, 2);
  EXPECT_DOUBLE_EQ(mi250x.in_package_link_bandwidth_bytes_per_s, 200e9);
  EXPECT_DOUBLE_EQ(mi250x.compute.peak_flops_per_s[idx(Precision::bf16)], 191.5e12);  // 383 per package / 2
  EXPECT_DOUBLE_EQ(mi250x.nic_bandwidth_bytes_per_s, 25e9);                           // Slingshot 200 Gb/s

  const HardwareSpec a100 = load_hardware_config(test::configs_dir() / "hardware" / "A100-SXM4-80GB.yaml");
  EXPECT_DOUBLE_EQ(a100.compute.peak_flops_per_s[idx(Precision::bf16)], 312e12);
  EXPECT_DOUBLE_EQ(a100.compute.peak_flops_per_s[idx(Precision::fp8)], 0.0);  // no FP8 units
  EXPECT_DOUBLE_EQ(a100.compute.hbm_bandwidth_bytes_per_s, 2.039e12);
  EXPECT_DOUBLE_EQ(a100.intra_node_link_bandwidth_bytes_per_s * a100.intra_node_links_per_gpu, 300e9);

  const HardwareSpec h200 = load_hardware_config(test::configs_dir() / "hardware" / "H200-SXM-141GB.yaml");
  EXPECT_DOUBLE_EQ(h200.compute.hbm_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.compute.peak_flops_per_s[idx(Precision::bf16)], 989.4e12);
  const HardwareSpec b200 = load_hardware_config(test::configs_dir() / "hardware" / "B200.yaml");
  EXPECT_DOUBLE_EQ(b200.compute.peak_flops_per_s[idx(Precision::bf16)], 2250e12);
  EXPECT_DOUBLE_EQ(b200.tdp_w, 1000.0);
  EXPECT_DOUBLE_EQ(b200.intra_node_link_bandwidth_bytes_per_s * b200.intra_node_links_per_gpu, 900e9);
  // GB200 NVL72 per superchip (2 GPUs): BF16 10 PFLOPS sparse, 372 GB HBM3e at 16 TB/s, NVLink 3.6 TB/s.
  const HardwareSpec gb200 = load_hardware_config(test::configs_dir() / "hardware" / "GB200.yaml");
  EXPECT_DOUBLE_EQ(gb200.compute.peak_flops_per_s[idx(Precision::bf16)] * 2 * 2, 10e15);
  EXPECT_DOUBLE_EQ(gb200.compute.hbm_bandwidth_bytes_per_s * 2, 16e12);
  EXPECT_NEAR(gb200.hbm_capacity_bytes * 2, 372e9, 0.01 * 372e9);
  EXPECT_DOUBLE_EQ(gb200.intra_node_link_bandwidth_bytes_per_s * gb200.intra_node_links_per_gpu * 2, 1.8e12);
  EXPECT_GT(gb200.tdp_w, b200.tdp_w);  // the same silicon at a higher limit
  // Host copies: over PCIe, or NVLink-C2C (900 GB/s bidirectional) to Grace.
  EXPECT_DOUBLE_EQ(compute_params_for(h100, "").host_to_device_bytes_per_s, h100.pcie_bandwidth_bytes_per_s);
  EXPECT_DOUBLE_EQ(compute_params_for(gb200, "").host_to_device_bytes_per_s * 2, 900e9);
  HardwareSpec slower_pcie = h100;  // an override of pcie_gb_s alone moves host copies with it
  slower_pcie.pcie_bandwidth_bytes_per_s = 32e9;
  EXPECT_DOUBLE_EQ(compute_params_for(slower_pcie, "").host_to_device_bytes_per_s, 32e9);
}

TEST_F(ConfigTest, AttentionImplementationMustBeOneTheHardwareDefines) {
  const fs::path good =
      write("good.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  attention: flash2\n"));
  const RunSpec run = load(good);
  EXPECT_EQ(run.training.attention, "flash2");
  const ComputeParams params = compute_params_for(run.hardware, run.training.attention);
  EXPECT_DOUBLE_EQ(params.efficiency[idx(KernelClass::attention)].compute, 0.339);
  EXPECT_DOUBLE_EQ(params.efficiency[idx(KernelClass::gemm)].compute,
                   run.hardware.compute.efficiency[idx(KernelClass::gemm)].compute);  // only attention changes
  EXPECT_DOUBLE_EQ(compute_params_for(run.hardware, "").efficiency[idx(KernelClass::attention)].compute,
                   run.hardware.compute.efficiency[idx(KernelClass::attention)].compute);
  // Dropout inside the kernel: measured for cuDNN's ([TE3312]), the class default on H100; none given for flash2.
  EXPECT_DOUBLE_EQ(params.attention_dropout_slowdown, 1.0);
  EXPECT_DOUBLE_EQ(compute_params_for(run.hardware, "cudnn").attention_dropout_slowdown, 1.034);
  EXPECT_DOUBLE_EQ(compute_params_for(run.hardware, "").attention_dropout_slowdown, 1.034);
  std::string no_host_link = h100_kernels_run("");
  no_host_link.replace(no_host_link.find("kernels: {}"), 11, "host_link_gb_s: 0");
  expect_contains(input_error([&] { (void)load(write("no_host_link.yaml", no_host_link)); }),
                  {"no_host_link.yaml:2:", "host_link_gb_s"});
  const fs::path faster = write("faster.yaml", h100_kernels_run("attention_dropout_slowdown: 0.9"));
  expect_contains(input_error([&] { (void)load(faster); }), {"attention_dropout_slowdown"});
  expect_contains(input_error([&] {
                    (void)load(write("faster_impl.yaml",
                                     h100_kernels_run("attention_implementations: {cudnn: {dropout_slowdown: 0.5}}")));
                  }),
                  {"attention_implementations.cudnn.dropout_slowdown"});
  const fs::path bad =
      write("bad.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  attention: flash4\n"));
  expect_contains(input_error([&] { (void)load(bad); }),
                  {"bad.yaml:8:14: key 'training.attention'", "no attention implementation 'flash4'",
                   "cudnn, flash1_triton, flash2, flash3", "Fix: did you mean 'flash2'?"});
  // A new hardware entry needs its compute efficiency.
  const fs::path inline_hw = write("inline.yaml", h100_kernels_run("attention_implementations: {mine: {memory: 0.5}}"));
  expect_contains(input_error([&] { (void)load(inline_hw); }), {"compute"});
  // 'eager' is not a hardware entry: PyTorch's unfused attention, GEMM and elementwise kernels.
  const fs::path eager =
      write("eager.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  attention: eager\n"));
  EXPECT_EQ(load(eager).training.attention, kEagerAttention);
  const fs::path typo =
      write("typo.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  attention: eagr\n"));
  expect_contains(input_error([&] { (void)load(typo); }), {"Fix: did you mean 'eager'?"});
  const fs::path named_eager =
      write("named_eager.yaml", h100_kernels_run("attention_implementations: {eager: {compute: 0.5}}"));
  expect_contains(input_error([&] { (void)load(named_eager); }),
                  {"key 'hardware.kernels.attention_implementations.eager'", "not a kernel efficiency"});
  const fs::path eager_cp =
      write("eager_cp.yaml", small_run("llama3-8b", "  dp: 4\n  cp: 2\n", "  global_batch: 8\n  attention: eager\n"));
  expect_contains(input_error([&] { (void)load(eager_cp); }),
                  {"eager_cp.yaml:9:14: key 'training.attention'", "not modelled with context parallelism"});
  // Megatron's fused scale-mask-softmax is eager attention's: with a fused kernel it is refused, naming the fix.
  const fs::path fused = write("fused.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                       "  global_batch: 8\n  attention: eager\n"
                                                       "  masked_softmax_fusion: true\n"));
  EXPECT_TRUE(load(fused).training.masked_softmax_fusion);
  const fs::path unfusable = write(
      "unfusable.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  masked_softmax_fusion: true\n"));
  expect_contains(
      input_error([&] { (void)load(unfusable); }),
      {"key 'training.masked_softmax_fusion'", "Fix: remove masked_softmax_fusion, or set training.attention: eager"});
}

// Attention kernels reach less of their peak at head dim 64 than at the 128 their figures are measured at (the
// FlashAttention-3 paper's head-dim panels on H100: cuDNN 0.79, FA2 0.90, FA3 0.82 of the head-dim-128 rate over a
// training step); compute_params_for() applies the run's kernel's ratio for the model's head dimension.
TEST_F(ConfigTest, AttentionEfficiencyDependsOnTheHeadDimension) {
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 64), 0.8);
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 32), 0.8);
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 96), 0.9);  // linear in between
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 128), 1.0);
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 192), 1.0);  // DeepSeek-V3's MLA query/key heads
  EXPECT_DOUBLE_EQ(attention_head_dim_factor(0.8, 0), 1.0);    // not known: as measured

  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const auto attention_compute = [&](std::string_view kernel, double head_dim) {
    return compute_params_for(h100, kernel, head_dim).efficiency[idx(KernelClass::attention)].compute;
  };
  EXPECT_DOUBLE_EQ(attention_compute("", 128), h100.compute.efficiency[idx(KernelClass::attention)].compute);
  EXPECT_DOUBLE_EQ(attention_compute("", 64), 0.79 * attention_compute("", 128));
  EXPECT_DOUBLE_EQ(attention_compute("cudnn", 64), 0.79 * attention_compute("cudnn", 128));
  EXPECT_DOUBLE_EQ(attention_compute("flash2", 64), 0.90 * attention_compute("flash2", 128));
  EXPECT_DOUBLE_EQ(attention_compute("flash3", 64), 0.82 * attention_compute("flash3", 128));
  // The other classes and the memory side are untouched.
  EXPECT_EQ(compute_params_for(h100, "", 64).efficiency[idx(KernelClass::gemm)].compute,
            h100.compute.efficiency[idx(KernelClass::gemm)].compute);
  EXPECT_EQ(compute_params_for(h100, "", 64).efficiency[idx(KernelClass::attention)].memory,
            h100.compute.efficiency[idx(KernelClass::attention)].memory);
  // No measurement for MI300X: no factor.
  const HardwareSpec mi300x = load_hardware_config(test::configs_dir() / "hardware" / "MI300X.yaml");
  EXPECT_DOUBLE_EQ(compute_params_for(mi300x, "", 64).efficiency[idx(KernelClass::attention)].compute,
                   mi300x.compute.efficiency[idx(KernelClass::attention)].compute);
}

TEST_F(ConfigTest, DeterministicAttentionCostsComeFromTheHardwareFile) {
  const HardwareSpec h100 = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  // The default kernel is cuDNN's: the same cost as the named entry (estimate) and its b*h*s^2*2-byte workspace.
  EXPECT_DOUBLE_EQ(h100.compute.deterministic_attention.backward_slowdown, 1.41);
  EXPECT_DOUBLE_EQ(h100.compute.deterministic_attention.workspace_bytes_per_score, 2.0);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("cudnn").deterministic.backward_slowdown, 1.41);
  // flash-attn's measured factors (PR #1893 with the FlashAttention-3 paper), no extra workspace.
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash2").deterministic.backward_slowdown, 1.92);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash2").deterministic.workspace_bytes_per_score, 0.0);
  EXPECT_DOUBLE_EQ(h100.attention_implementations.at("flash3").deterministic.backward_slowdown, 1.21);
  EXPECT_DOUBLE_EQ(compute_params_for(h100, "flash2").deterministic_attention.backward_slowdown, 1.92);
  EXPECT_DOUBLE_EQ(compute_params_for(h100, "").deterministic_attention.backward_slowdown, 1.41);
  // No measurement for MI300X: no cost.
  const HardwareSpec mi300x = load_hardware_config(test::configs_dir() / "hardware" / "MI300X.yaml");
  EXPECT_DOUBLE_EQ(mi300x.compute.deterministic_attention.backward_slowdown, 1.0);

  const fs::path run =
      write("det.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  deterministic: true\n"));
  EXPECT_TRUE(load(run).training.deterministic);
  EXPECT_TRUE(load(run).training.fill_uninitialized_memory);  // PyTorch's default
  const fs::path no_fill = write("no_fill.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  deterministic: true\n"
                                                           "  fill_uninitialized_memory: false\n"));
  EXPECT_FALSE(load(no_fill).training.fill_uninitialized_memory);
  const fs::path bad_fill = write(
      "bad_fill.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  fill_uninitialized_memory: 0\n"));
  expect_contains(input_error([&] { (void)load(bad_fill); }), {"key 'training.fill_uninitialized_memory'"});
  const fs::path faster = write("faster.yaml", h100_kernels_run("deterministic_attention_backward_slowdown: 0.5"));
  expect_contains(input_error([&] { (void)load(faster); }),
                  {"key 'hardware.kernels.deterministic_attention_backward_slowdown'", "0.5"});
  const fs::path negative =
      write("negative.yaml",
            h100_kernels_run("attention_implementations: {flash2: {deterministic_workspace_bytes_per_score: -2}}"));
  expect_contains(input_error([&] { (void)load(negative); }),
                  {"key 'hardware.kernels.attention_implementations.flash2.deterministic_workspace_bytes_per_score'"});
  // An override of one key keeps the entry's efficiency.
  const fs::path override_one = write(
      "override.yaml", h100_kernels_run("attention_implementations: {flash2: {deterministic_backward_slowdown: 1.5}}"));
  const RunSpec overridden = load(override_one);
  EXPECT_DOUBLE_EQ(overridden.hardware.attention_implementations.at("flash2").deterministic.backward_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(overridden.hardware.attention_implementations.at("flash2").efficiency.compute, 0.339);
}

TEST_F(ConfigTest, UnevenPipelineSplitRules) {
  const fs::path good = write(
      "good.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [9, 8, 8, 7]\n", "  global_batch: 8\n"));
  EXPECT_EQ(load(good).parallelism.stage_layers, (std::vector<int>{9, 8, 8, 7}));
  const fs::path count = write(
      "count.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [16, 16]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(count); }),
                  {"count.yaml:7:17: key 'parallelism.stage_layers': has 2 entries, but pp is 4",
                   "Fix: give one layer count per pipeline stage (4 entries)"});
  const fs::path sum = write(
      "sum.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [8, 8, 8, 7]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(sum); }),
                  {"key 'parallelism.stage_layers': the stages hold 31 layers, but model.layers is 32",
                   "Fix: make the entries sum to 32"});
  const fs::path zero = write(
      "zero.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [9, 8, 15, 0]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(zero); }),
                  {"zero.yaml:7:", "key 'parallelism.stage_layers': entry 4: expected a positive integer, found '0'"});
  const fs::path empty =
      write("empty.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: []\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(empty); }),
                  {"empty.yaml:7:17: key 'parallelism.stage_layers': expected a list, each entry a positive integer, "
                   "found an empty list"});
  const fs::path scalar =
      write("scalar.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(scalar); }),
                  {"scalar.yaml:7:17: key 'parallelism.stage_layers': expected a list, each entry a positive integer, "
                   "found '8'",
                   "Fix: write a list, each entry a positive integer, e.g. stage_layers: [6, 6, 7, 5]"});
  const fs::path interleaved =
      write("interleaved.yaml", small_run("llama3-8b",
                                          "  pp: 4\n  dp: 2\n  pp_schedule: interleaved\n  virtual_stages: 2\n"
                                          "  stage_layers: [9, 8, 8, 7]\n",
                                          "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(interleaved); }),
                  {"key 'parallelism.stage_layers': has 4 entries, but pp x virtual_stages is 4 x 2 = 8",
                   "give one layer count per virtual stage (8 entries"});
  // Interleaved: one entry per virtual stage (Megatron's pipeline layout), e.g. a short last chunk beside the loss.
  const fs::path layout =
      write("layout.yaml", small_run("llama3-8b",
                                     "  pp: 4\n  dp: 2\n  pp_schedule: interleaved\n  virtual_stages: 2\n"
                                     "  stage_layers: [4, 4, 4, 4, 4, 4, 5, 3]\n",
                                     "  global_batch: 8\n"));
  EXPECT_EQ(load(layout).parallelism.layers_of_stage(32, 2), 4 + 5);
  EXPECT_EQ(load(layout).parallelism.layers_of_stage(32, 3), 4 + 3);
}

TEST_F(ConfigTest, TrainingFeatureKeysDecode) {
  const fs::path run = write(
      "run.yaml", small_run("llama3-8b", "  dp: 8\n",
                            "  global_batch: 8\n  gradient_accumulation_fusion: false\n  cross_entropy_fusion: false\n"
                            "  grad_clip: false\n  log_num_zeros_in_grad: true\n  log_params_norm: true\n"
                            "  fsdp_reduce_dtype: fp32\n  overlap: {tp_backward: false}\n  attention: flash2\n"
                            "  unpad_attention: true\n"));
  const RunSpec spec = load(run);
  EXPECT_TRUE(spec.training.unpad_attention);
  const fs::path unpad_cp = write(
      "unpad_cp.yaml", small_run("llama3-8b", "  dp: 4\n  cp: 2\n", "  global_batch: 8\n  unpad_attention: true\n"));
  expect_contains(input_error([&] { (void)load(unpad_cp); }),
                  {"unpad_cp.yaml:", "key 'training.unpad_attention'", "but the run has cp 2",
                   "Fix: remove unpad_attention, or set parallelism.cp: 1"});
  EXPECT_FALSE(spec.training.gradient_accumulation_fusion);
  EXPECT_FALSE(spec.training.cross_entropy_fusion);
  EXPECT_FALSE(spec.training.grad_clip);
  EXPECT_TRUE(spec.training.log_num_zeros_in_grad);
  EXPECT_TRUE(spec.training.log_params_norm);
  EXPECT_TRUE(spec.training.fsdp_reduce_fp32);
  EXPECT_FALSE(spec.training.overlap.tp_backward);
  const fs::path dtype =
      write("dtype.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  fsdp_reduce_dtype: fp16\n"));
  expect_contains(input_error([&] { (void)load(dtype); }),
                  {"key 'training.fsdp_reduce_dtype': expected one of bf16, fp32"});
  // The model's position embedding.
  const fs::path model = write("model.yaml",
                               "model: {name: llama3-8b, position_embedding: alibi}\nhardware: H100-SXM5-80GB\n"
                               "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                               "parallelism:\n  dp: 8\ntraining:\n  global_batch: 8\n");
  expect_contains(input_error([&] { (void)load(model); }),
                  {"key 'model.position_embedding': expected one of rope, learned, none, found 'alibi'"});
}

TEST_F(ConfigTest, LoraDecodesItsRankAndTargets) {
  const RunSpec all =
      load(write("all.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 32}\n")));
  EXPECT_EQ(all.training.lora.rank, 32);
  EXPECT_TRUE(all.training.lora.qkv && all.training.lora.proj && all.training.lora.fc1 && all.training.lora.fc2);
  const RunSpec some =
      load(write("some.yaml",
                 small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 16, targets: [qkv, fc2]}\n")));
  EXPECT_TRUE(some.training.lora.qkv && some.training.lora.fc2);
  EXPECT_FALSE(some.training.lora.proj || some.training.lora.fc1);
  EXPECT_FALSE(
      load(write("none.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.lora.enabled());
  const fs::path unknown =
      write("unknown.yaml",
            small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 16, targets: [lm_head]}\n"));
  expect_contains(input_error([&] { (void)load(unknown); }),
                  {"training.lora.targets", "'lm_head' is not a linear chopsim adapts", "qkv, proj, fc1, fc2"});
  const fs::path rankless =
      write("rankless.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {targets: [qkv]}\n"));
  expect_contains(input_error([&] { (void)load(rankless); }), {"training.lora.rank"});
}

TEST_F(ConfigTest, MoeDispatcherNamesMegatronsTokenDispatcher) {
  EXPECT_EQ(
      load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.moe_dispatcher,
      MoeDispatcher::alltoall);
  const RunSpec flex =
      load(write("flex.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  moe_dispatcher: flex\n")));
  EXPECT_EQ(flex.training.moe_dispatcher, MoeDispatcher::flex);
  EXPECT_EQ(to_string(flex.training.moe_dispatcher), "flex");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  moe_dispatcher: deepep\n")));
                  }),
                  {"bad.yaml:", "training.moe_dispatcher", "expected one of alltoall, flex, found 'deepep'"});
}

TEST_F(ConfigTest, MoeLoadImbalanceIsTheBusiestRanksLoadOfADroplessRun) {
  // Mixtral: 8 experts, top 2. Unset: balanced and dropless.
  const auto run_with = [&](const std::string& file, const std::string& parallelism, const std::string& training) {
    return write(file, small_run("mixtral-8x7b", parallelism, "  global_batch: 8\n" + training));
  };
  const RunSpec balanced = load(run_with("balanced.yaml", "  dp: 8\n  ep: 8\n", ""));
  EXPECT_EQ(balanced.training.moe_load_imbalance, 1.0);
  EXPECT_FALSE(balanced.training.moe_capacity_factor.has_value());
  EXPECT_EQ(balanced.training.moe_busiest_rank_load(8), 1.0);
  const RunSpec skewed = load(run_with("skewed.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 1.4\n"));
  EXPECT_EQ(skewed.training.moe_load_imbalance, 1.4);
  EXPECT_EQ(skewed.training.moe_busiest_rank_load(8), 1.4);
  const RunSpec capped = load(run_with("capped.yaml", "  dp: 8\n  ep: 8\n", "  moe_capacity_factor: 1.25\n"));
  EXPECT_EQ(capped.training.moe_busiest_rank_load(8), 1.25);  // padded to capacity

  expect_contains(
      input_error([&] { (void)load(run_with("below.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 0.9\n")); }),
      {"below.yaml:", "training.moe_load_imbalance", "a number >= 1"});
  // At most min(ep, experts / top_k) = min(8, 8 / 2) = 4 times the mean: a token reaches a rank at most once per
  // expert there, and goes to 2 distinct experts.
  expect_contains(
      input_error([&] { (void)load(run_with("above.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 4.5\n")); }),
      {"above.yaml:", "key 'training.moe_load_imbalance'", "takes at most 4 times the mean", "found 4.5",
       "Fix: use the measured max / mean"});
  expect_contains(
      input_error([&] { (void)load(run_with("one_rank.yaml", "  dp: 8\n", "  moe_load_imbalance: 1.2\n")); }),
      {"one_rank.yaml:", "needs a mixture of experts split over ep > 1 (ep is 1)",
       "Fix: remove moe_load_imbalance, or set parallelism.ep > 1"});
  expect_contains(input_error([&] {
                    (void)load(write("dense.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                             "  global_batch: 8\n  moe_load_imbalance: 1.2\n")));
                  }),
                  {"dense.yaml:", "model 'llama3-8b' has none"});
  expect_contains(input_error([&] {
                    (void)load(run_with("both.yaml", "  dp: 8\n  ep: 8\n",
                                        "  moe_capacity_factor: 1.0\n  moe_load_imbalance: 1.2\n"));
                  }),
                  {"both.yaml:", "with moe_capacity_factor and moe_pad_to_capacity every expert takes its capacity",
                   "Fix: remove moe_load_imbalance; or set moe_pad_to_capacity: false"});
  // Not padded: an expert takes what is routed to it up to its capacity, the tokens above it dropped.
  const RunSpec dropping =
      load(run_with("dropping.yaml", "  dp: 8\n  ep: 8\n",
                    "  moe_capacity_factor: 1.25\n  moe_pad_to_capacity: false\n  moe_load_imbalance: 1.4\n"));
  EXPECT_EQ(dropping.training.moe_busiest_rank_load(8), 1.25);
  expect_contains(
      input_error([&] { (void)load(run_with("pad.yaml", "  dp: 8\n  ep: 8\n", "  moe_pad_to_capacity: false\n")); }),
      {"pad.yaml:", "key 'training.moe_pad_to_capacity'", "moe_capacity_factor is not set",
       "Fix: remove moe_pad_to_capacity, or set moe_capacity_factor"});
}

TEST_F(ConfigTest, Fp8RecipeNamesTransformerEnginesScaling) {
  EXPECT_EQ(load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  precision: fp8\n")))
                .training.fp8_recipe,
            Fp8Recipe::delayed);
  const RunSpec current =
      load(write("current.yaml",
                 small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  precision: fp8\n  fp8_recipe: current\n")));
  EXPECT_EQ(current.training.fp8_recipe, Fp8Recipe::current);
  EXPECT_EQ(to_string(current.training.fp8_recipe), "current");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  fp8_recipe: tensorwise\n")));
                  }),
                  {"bad.yaml:", "training.fp8_recipe", "expected one of delayed, current, mxfp8, found 'tensorwise'"});
}

TEST_F(ConfigTest, FsdpImplementationNamesTheShardingRuntime) {
  const RunSpec unset =
      load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n  fsdp: full_shard\n", "  global_batch: 8\n")));
  EXPECT_FALSE(unset.training.fsdp_implementation.has_value());
  EXPECT_EQ(unset.training.fsdp_runtime(), FsdpImplementation::megatron);
  const RunSpec fsdp1 = load(write("fsdp1.yaml", small_run("llama3-8b", "  dp: 8\n  fsdp: full_shard\n",
                                                           "  global_batch: 8\n  fsdp_implementation: fsdp1\n")));
  EXPECT_EQ(fsdp1.training.fsdp_runtime(), FsdpImplementation::fsdp1);
  EXPECT_EQ(to_string(fsdp1.training.fsdp_runtime()), "fsdp1");
  expect_contains(
      input_error([&] {
        (void)load(write("bad.yaml",
                         small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  fsdp_implementation: deepspeed\n")));
      }),
      {"bad.yaml:", "training.fsdp_implementation", "expected one of megatron, fsdp1, fsdp2, found 'deepspeed'"});
}

TEST_F(ConfigTest, OptimizerAndTrainMetricsNameWhatTheTrainingLoopRuns) {
  const RunSpec unset = load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n")));
  EXPECT_EQ(unset.training.optimizer, Optimizer::fused_adamw);
  EXPECT_TRUE(unset.training.train_metrics.empty());
  const RunSpec composer = load(write(
      "composer.yaml", small_run("llama3-8b", "  dp: 8\n",
                                 "  global_batch: 8\n  optimizer: decoupled_adamw\n"
                                 "  train_metrics: [language_cross_entropy, language_perplexity, token_accuracy]\n")));
  EXPECT_EQ(to_string(composer.training.optimizer), "decoupled_adamw");
  ASSERT_EQ(composer.training.train_metrics.size(), 3u);
  EXPECT_EQ(to_string(composer.training.train_metrics[1]), "language_perplexity");
  expect_contains(
      input_error([&] {
        (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  optimizer: lion\n")));
      }),
      {"bad.yaml:", "training.optimizer", "expected one of fused_adamw, decoupled_adamw, found 'lion'"});
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  train_metrics: [accuracy]\n")));
                  }),
                  {"bad.yaml:", "training.train_metrics", "'accuracy' is not a metric", "token_accuracy"});
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  train_metrics: "
                                                           "[token_accuracy, token_accuracy]\n")));
                  }),
                  {"training.train_metrics", "listed twice"});
}

TEST_F(ConfigTest, FrameworkNamesTheKernelInventory) {
  EXPECT_EQ(load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.framework,
            Framework::megatron_te);
  const RunSpec eager =
      load(write("eager.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  framework: pytorch-eager\n")));
  EXPECT_EQ(eager.training.framework, Framework::pytorch_eager);
  EXPECT_EQ(to_string(eager.training.framework), "pytorch-eager");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  framework: deepspeed\n")));
                  }),
                  {"bad.yaml:", "training.framework", "expected one of megatron-te, pytorch-eager, found 'deepspeed'"});
  expect_contains(input_error([&] {
                    (void)load(write("tp.yaml", small_run("llama3-8b", "  tp: 2\n  dp: 4\n",
                                                          "  global_batch: 8\n  framework: pytorch-eager\n")));
                  }),
                  {"tp.yaml", "training.framework", "model parallelism", "Fix:"});
}

// 62 layers over pp 8 x vp 4 (as Llama 3.1 405B's 126 over pp 8 x vp 8): rejected as is, with Megatron's split flags
// as the fix; accepted with them, two slots per virtual stage.
TEST_F(ConfigTest, TheEmbeddingAndTheLossMayCountAsPipelineLayers) {
  const std::string model =
      "model: {name: llama3-8b, layers: 62}\nhardware: H100-SXM5-80GB\n"
      "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n";
  const std::string training = "training:\n  global_batch: 8\n";
  const auto pipeline = [&](const std::string& extra) {
    return model + "parallelism:\n  pp: 8\n  pp_schedule: interleaved\n  virtual_stages: 4\n" + extra + training;
  };
  expect_contains(input_error([&] { (void)load(write("plain.yaml", pipeline(""))); }),
                  {"parallelism.pp", "model.layers (62) is not divisible by", "account_for_embedding_in_split"});
  const RunSpec run = load(
      write("split.yaml", pipeline("  account_for_embedding_in_split: true\n  account_for_loss_in_split: true\n")));
  const std::vector<int> split = run.parallelism.virtual_stage_layers(62);
  ASSERT_EQ(split.size(), 32u);
  EXPECT_EQ(split.front(), 1);
  EXPECT_EQ(split[1], 2);
  EXPECT_EQ(split.back(), 1);
  EXPECT_EQ(run.parallelism.layers_of_stage(62, 0), 7);  // virtual stages 0, 8, 16, 24: 1 + 2 + 2 + 2
  EXPECT_EQ(run.parallelism.layers_of_stage(62, 7), 7);
  // One slot per virtual stage leaves the first one no layer: rejected.
  expect_contains(input_error([&] {
                    (void)load(write("thin.yaml",
                                     "model: {name: llama3-8b, layers: 30}\nhardware: H100-SXM5-80GB\n"
                                     "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                                     "parallelism:\n  pp: 8\n  pp_schedule: interleaved\n  "
                                     "virtual_stages: 4\n  account_for_embedding_in_split: true\n  "
                                     "account_for_loss_in_split: true\n" +
                                         training));
                  }),
                  {"thin.yaml", "would hold no transformer layer"});
}

// Issue 16: a power cap of 1e308 W gave a summary of 3.3e306 W and 6.75e306 °C; a clock step of 1e-9 MHz hung the
// governor's search. Both are refused with the field and the fix.
TEST_F(ConfigTest, PowerCapAndClockStepAreBounded) {
  const auto run_with = [&](const std::string& name, const std::string& extra) {
    return write(name, small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + extra);
  };
  expect_contains(input_error([&] { (void)load(run_with("cap.yaml", "power: {cap_w: 1e308}\n")); }),
                  {"cap.yaml", "power.cap_w", "more than ten times the TDP", "Fix:"});
  const fs::path step = write("step.yaml",
                              "model: llama3-8b\nhardware: {name: H100-SXM5-80GB, governor: {clock_step_mhz: 1e-9}}\n"
                              "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\nparallelism:\n  dp: 8\n"
                              "training:\n  global_batch: 8\n");
  expect_contains(input_error([&] { (void)load(step); }), {"step.yaml", "clock_step_mhz", "below 0.1 MHz"});
}

TEST_F(ConfigTest, HostLaunchTimeIsMicrosecondsAndBounded) {
  const auto run_with = [&](const std::string& name, const std::string& value) {
    return write(name, small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  host_launch_us: " + value + "\n"));
  };
  EXPECT_DOUBLE_EQ(load(run_with("fast.yaml", "12.5")).training.host_launch_s, 12.5e-6);
  EXPECT_DOUBLE_EQ(load(run_with("graphs.yaml", "0")).training.host_launch_s, 0.0);
  // The default: eager PyTorch's measured launch interval while the GPU waits (TrainingSpec::host_launch_s).
  EXPECT_DOUBLE_EQ(
      load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.host_launch_s,
      43e-6);
  expect_contains(input_error([&] { (void)load(run_with("negative.yaml", "-1")); }),
                  {"negative.yaml:", "training.host_launch_us"});
  expect_contains(input_error([&] { (void)load(run_with("slow.yaml", "20000")); }),
                  {"training.host_launch_us", "must be below 10000 µs, found 20000", "Fix:"});
}

TEST_F(ConfigTest, ModelAndClusterFilesHoldThePublishedShapes) {
  const TransformerSpec llama8 = load_model_config(test::configs_dir() / "models" / "llama3-8b.yaml");
  EXPECT_EQ(llama8.layers, 32);
  EXPECT_EQ(llama8.hidden, 4096);
  EXPECT_EQ(llama8.ffn_hidden, 14336);
  EXPECT_EQ(llama8.kv_heads, 8);
  EXPECT_EQ(llama8.vocab, 128256);
  EXPECT_FALSE(llama8.tied_embeddings);
  EXPECT_FALSE(llama8.linear_bias);
  const TransformerSpec mixtral = load_model_config(test::configs_dir() / "models" / "mixtral-8x22b.yaml");
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.top_k, 2);
  EXPECT_TRUE(mixtral.is_moe());
  const TransformerSpec mpt = load_model_config(test::configs_dir() / "models" / "mpt-13b.yaml");
  EXPECT_EQ(mpt.head_dim(), 128);
  EXPECT_TRUE(mpt.tied_embeddings);
  EXPECT_EQ(mpt.mlp, MlpKind::gelu);
  EXPECT_EQ(mpt.make_vocab_size_divisible_by, 1);  // 50368 is already a multiple of 64
  const TransformerSpec gpt3 = load_model_config(test::configs_dir() / "models" / "gpt3-175b.yaml");
  EXPECT_EQ(gpt3.vocab_per_tp_rank(8), 6400);  // NeMo's make_vocab_size_divisible_by 128: 51200 / 8
  EXPECT_FALSE(mpt.linear_bias);               // MPT: no_bias
  EXPECT_DOUBLE_EQ(
      load_hardware_config(test::configs_dir() / "hardware" / "A100-SXM4-80GB.yaml").compute.unaligned_gemm_slowdown,
      3.0);

  const ClusterSpec h100 = load_cluster_config(test::configs_dir() / "clusters" / "dgx-h100.yaml");
  EXPECT_EQ(h100.nodes, 1);  // the node count comes from the run
  EXPECT_EQ(h100.node_topology, "nvswitch");
  EXPECT_EQ(h100.fabric.kind, "rail_optimized");
  EXPECT_DOUBLE_EQ(h100.fabric.switch_latency_s, 0.2e-6);
  EXPECT_DOUBLE_EQ(h100.fabric.uplink_bandwidth_bytes_per_s, 50e9);
  const ClusterSpec fat = load_cluster_config(test::configs_dir() / "clusters" / "dgx-h100-fat-tree.yaml");
  EXPECT_EQ(fat.fabric.kind, "fat_tree");
  EXPECT_DOUBLE_EQ(fat.fabric.oversubscription, 2.0);
  const ClusterSpec mi250x = load_cluster_config(test::configs_dir() / "clusters" / "mi250x.yaml");
  EXPECT_EQ(mi250x.node_topology, "mi250_xgmi");
  EXPECT_EQ(mi250x.nics_per_node, 4);
  // InfiniBand fabrics route adaptively (their switches' default); the RoCE and Slingshot files keep static ECMP.
  EXPECT_EQ(h100.fabric.routing, FabricRouting::adaptive);
  EXPECT_EQ(fat.fabric.routing, FabricRouting::adaptive);
  EXPECT_EQ(mi250x.fabric.routing, FabricRouting::ecmp);
  EXPECT_EQ(load_cluster_config(test::configs_dir() / "clusters" / "mi300x.yaml").fabric.routing, FabricRouting::ecmp);
}

TEST_F(ConfigTest, FabricRoutingIsEcmpOrAdaptive) {
  const std::string cluster =
      "gpus_per_node: 8\nnode_topology: nvswitch\nnics_per_node: 8\nfabric:\n  kind: rail_optimized\n";
  EXPECT_EQ(load_cluster_config(write("default.yaml", cluster)).fabric.routing, FabricRouting::ecmp);
  EXPECT_EQ(load_cluster_config(write("ar.yaml", cluster + "  routing: adaptive\n")).fabric.routing,
            FabricRouting::adaptive);
  const std::string message =
      input_error([&] { (void)load_cluster_config(write("bad.yaml", cluster + "  routing: spray\n")); });
  expect_contains(message, {"bad.yaml", "routing", "spray", "adaptive", "ecmp"});
}

// A cluster's Megatron-Core host time per launch: microseconds in the file, seconds in ClusterSpec, 0 when not
// measured, bounded as training.host_launch_us is; the DGX files carry the fitted values (megatron_host_test.cpp).
TEST_F(ConfigTest, ClusterMegatronHostLaunchTimeIsMicrosecondsAndBounded) {
  const std::string cluster = "gpus_per_node: 8\nnode_topology: nvswitch\nnics_per_node: 8\nfabric: {kind: none}\n";
  EXPECT_DOUBLE_EQ(load_cluster_config(write("none.yaml", cluster)).megatron_host_launch_s, 0.0);
  EXPECT_DOUBLE_EQ(
      load_cluster_config(write("set.yaml", cluster + "megatron_host_launch_us: 65\n")).megatron_host_launch_s, 65e-6);
  expect_contains(
      input_error([&] { (void)load_cluster_config(write("slow.yaml", cluster + "megatron_host_launch_us: 20000\n")); }),
      {"slow.yaml", "megatron_host_launch_us", "must be below 10000 µs", "Fix:"});
  expect_contains(input_error([&] {
                    (void)load_cluster_config(write("negative.yaml", cluster + "megatron_host_launch_us: -3\n"));
                  }),
                  {"negative.yaml", "megatron_host_launch_us"});
  const auto shipped = [](const char* name) {
    return load_cluster_config(test::configs_dir() / "clusters" / name).megatron_host_launch_s;
  };
  EXPECT_DOUBLE_EQ(shipped("dgx-h100.yaml"), 65e-6);
  EXPECT_DOUBLE_EQ(shipped("dgx-b200.yaml"), shipped("dgx-h100.yaml"));  // assumed: no host-bound run on DGX B200
  EXPECT_DOUBLE_EQ(shipped("dgx-a100.yaml"), 125e-6);
  EXPECT_DOUBLE_EQ(shipped("mi300x.yaml"), 0.0);  // no Megatron-Core run measured on it
}

// A hybrid model file: the layer pattern and the Mamba-2 mixer decode; a pattern that does not describe every layer, a
// symbol that is no layer kind, Mamba layers without a mixer, and a tp that splits the Mamba heads unevenly are
// rejected at their keys.
TEST_F(ConfigTest, HybridModelFileDecodesAndItsMistakesAreNamed) {
  const TransformerSpec nano = load_model_config(test::configs_dir() / "models" / "nemotron-3-nano.yaml");
  EXPECT_EQ(nano.hybrid_pattern.size(), 52U);
  EXPECT_EQ(nano.mamba_heads, 64);
  EXPECT_EQ(nano.mamba_groups, 8);
  EXPECT_EQ(nano.mlp, MlpKind::squared_relu);
  EXPECT_EQ(nano.moe_layers(), 23);
  const std::string mixer = ", mamba: {heads: 8, head_dim: 16, state_dim: 16, groups: 2}";
  const auto model = [&](const std::string& pattern, int layers, const std::string& rest) {
    return "{name: llama3-8b, layers: " + std::to_string(layers) + ", hybrid_pattern: '" + pattern + "'" + rest + "}";
  };
  const auto run = [&](const std::string& file, const std::string& pattern, int layers, const std::string& rest,
                       const std::string& parallelism) {
    return write(file, small_run(model(pattern, layers, rest), parallelism, "  global_batch: 8\n"));
  };
  const fs::path short_pattern = run("short.yaml", "M*M", 4, mixer, "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(short_pattern); }),
                  {"short.yaml:1:", "key 'model.hybrid_pattern': the pattern has 3 symbols but layers is 4"});
  const fs::path bad_symbol = run("symbol.yaml", "M*X*", 4, mixer, "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(bad_symbol); }), {"symbol 'X' at position 3 is not a layer kind"});
  const fs::path no_mixer = run("nomixer.yaml", "M*M*", 4, "", "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(no_mixer); }), {"key 'model.mamba'", "no mamba: {heads: ...}"});
  const fs::path uneven = run("uneven.yaml", "M*M*", 4, mixer, "  tp: 4\n  dp: 2\n");
  expect_contains(input_error([&] { (void)load(uneven); }),
                  {"key 'parallelism.tp'", "Mamba-2 heads (8) and groups (2)"});
  const fs::path ok = run("ok.yaml", "M*M*", 4, mixer, "  tp: 2\n  dp: 4\n");
  EXPECT_TRUE(load(ok).model.layer_kind(2).mamba);
}

// Megatron's --recompute-modules decode by name; an unknown name and a list without selective recomputation are
// rejected at the key.
TEST_F(ConfigTest, RecomputeModulesDecodeAndNeedSelectiveRecomputation) {
  const fs::path ok = write("modules.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                      "  global_batch: 8\n  recompute: selective\n"
                                                      "  recompute_modules: [core_attn, layernorm, moe_act]\n"));
  const RecomputeModules modules = load(ok).training.recompute_modules;
  EXPECT_TRUE(modules.core_attn && modules.layernorm && modules.moe_act);
  EXPECT_FALSE(modules.moe || modules.mlp || modules.shared_experts);
  const fs::path unknown =
      write("unknown.yaml", small_run("llama3-8b", "  dp: 8\n",
                                      "  global_batch: 8\n  recompute: selective\n  recompute_modules: [mla_up]\n"));
  expect_contains(input_error([&] { (void)load(unknown); }),
                  {"key 'training.recompute_modules'", "'mla_up' is not a module chopsim recomputes"});
  const fs::path full = write("full.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                     "  global_batch: 8\n  recompute: full\n"
                                                     "  recompute_modules: [moe_act]\n"));
  expect_contains(input_error([&] { (void)load(full); }), {"key 'training.recompute_modules'", "recompute is full"});
  // mla_up_proj needs multi-latent attention to recompute.
  const fs::path no_mla = write("no-mla.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                         "  global_batch: 8\n  recompute: selective\n"
                                                         "  recompute_modules: [mla_up_proj]\n"));
  expect_contains(input_error([&] { (void)load(no_mla); }),
                  {"key 'training.recompute_modules'", "model 'llama3-8b' has no latent attention"});
}

// --------------------------------------------------------------------- ways of naming a component

TEST_F(ConfigTest, ByNameByPathAndInlineDecodeTheSame) {
  const std::string rest =
      "parallelism: {tp: 2, sequence_parallel: true, dp: 4}\n"
      "training: {global_batch: 32, micro_batch: 1, seq_len: 4096}\n";
  const fs::path by_name = write("by-name.yaml",
                                 "model: llama3-8b\nhardware: H100-SXM5-80GB\n"
                                 "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n" +
                                     rest);
  const std::string configs = fs::absolute(test::configs_dir()).string();
  const fs::path by_path =
      write("by-path.yaml", "model: " + configs + "/models/llama3-8b.yaml\n" + "hardware: {path: " + configs +
                                "/hardware/H100-SXM5-80GB.yaml}\n" + "cluster: {path: " + configs +
                                "/clusters/dgx-h100.yaml, nodes: 1, fabric: {kind: none}}\n" + rest);
  // Relative paths are relative to the run file's folder.
  write("components/llama.yaml", read_text(test::configs_dir() / "models" / "llama3-8b.yaml"));
  const fs::path relative = write("relative.yaml",
                                  "model: components/llama.yaml\nhardware: H100-SXM5-80GB\n"
                                  "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n" +
                                      rest);
  std::string cluster_text = read_text(test::configs_dir() / "clusters" / "dgx-h100.yaml");
  cluster_text.replace(cluster_text.find("kind: rail_optimized"), std::string("kind: rail_optimized").size(),
                       "kind: none");
  const fs::path inline_file =
      write("inline.yaml", "model:\n" + indent(read_text(test::configs_dir() / "models" / "llama3-8b.yaml"), "  ") +
                               "hardware:\n" +
                               indent(read_text(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml"), "  ") +
                               "cluster:\n  nodes: 1\n" + indent(cluster_text, "  ") + rest);

  const RunSpec a = load(by_name);
  const RunSpec b = load(by_path);
  const RunSpec c = load(relative);
  const RunSpec d = load(inline_file);
  EXPECT_EQ(describe(a), describe(b));
  EXPECT_EQ(describe(a), describe(c));
  EXPECT_EQ(describe(a), describe(d));
  EXPECT_EQ(a.model.name, "llama3-8b");
  EXPECT_EQ(b.hardware.name, "H100-SXM5-80GB");
  EXPECT_EQ(c.model.name, "llama");  // a file's name is its stem
  EXPECT_EQ(d.model.name, "inline model");
  EXPECT_EQ(a.name, "by-name");  // the run's name defaults to its file's stem
}

TEST_F(ConfigTest, RunOverridesChangeOnlyTheKeysGiven) {
  const fs::path run = write("override.yaml",
                             "model: {name: llama3-8b, layers: 16}\n"
                             "hardware:\n"
                             "  name: H100-SXM5-80GB\n"
                             "  kernels: {efficiency: {gemm: {compute: 0.5}}}\n"
                             "  nic: {bandwidth_gbit_s: 200}\n"
                             "cluster: {name: dgx-h100, nodes: 2}\n"
                             "parallelism: {dp: 16}\n"
                             "training: {global_batch: 16, dp_bucket_mb: 25}\n"
                             "collectives: {step_latency_us: 5, all_reduce: tree}\n"
                             "simulation: {network_model: LV08, isolate_in_child_process: false}\n");
  const RunSpec spec = load(run);
  const HardwareSpec base = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  EXPECT_EQ(spec.model.layers, 16);
  EXPECT_EQ(spec.model.hidden, 4096);
  const auto& gemm = spec.hardware.compute.efficiency[idx(KernelClass::gemm)];
  EXPECT_DOUBLE_EQ(gemm.compute, 0.5);
  EXPECT_DOUBLE_EQ(gemm.memory, base.compute.efficiency[idx(KernelClass::gemm)].memory);
  EXPECT_DOUBLE_EQ(gemm.half_efficiency_flops, 8e9);
  EXPECT_DOUBLE_EQ(spec.hardware.compute.efficiency[idx(KernelClass::attention)].compute,
                   base.compute.efficiency[idx(KernelClass::attention)].compute);
  EXPECT_DOUBLE_EQ(spec.hardware.nic_bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(spec.hardware.nic_latency_s, base.nic_latency_s);
  EXPECT_EQ(spec.cluster.nodes, 2);
  EXPECT_EQ(spec.cluster.fabric.kind, "rail_optimized");
  EXPECT_DOUBLE_EQ(spec.training.dp_bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(spec.collectives.step_latency_s, 5e-6);
  EXPECT_EQ(spec.collectives.all_reduce, "tree");
  EXPECT_EQ(spec.collectives.all_gather, "auto");  // unset keys keep the struct defaults
  EXPECT_EQ(spec.engine_options.network_model, "LV08");
  EXPECT_FALSE(spec.engine_options.isolate_in_child_process);
  EXPECT_EQ(spec.training.seq_len, TrainingSpec{}.seq_len);
}

TEST_F(ConfigTest, FsdpNamesAreAliasesOfZeroStages) {
  auto stage = [&](const std::string& lines) {
    return load(write("fsdp.yaml", small_run("llama3-8b", lines, "  global_batch: 8\n"))).parallelism;
  };
  EXPECT_EQ(stage("  dp: 8\n  fsdp: full_shard\n").zero_stage, 3);
  EXPECT_EQ(stage("  dp: 8\n  fsdp: shard_grad_op\n").zero_stage, 2);
  EXPECT_EQ(stage("  dp: 8\n  fsdp: no_shard\n").zero_stage, 0);
  const auto hybrid = stage("  dp: 8\n  fsdp: hybrid_shard\n  shard_group_size: 4\n");
  EXPECT_EQ(hybrid.zero_stage, 3);
  EXPECT_EQ(hybrid.shard_group_size, 4);
  EXPECT_EQ(stage("  dp: 8\n  zero_stage: 3\n  fsdp: full_shard\n").zero_stage, 3);

  const std::string conflict = input_error([&] { stage("  dp: 8\n  zero_stage: 1\n  fsdp: full_shard\n"); });
  expect_contains(conflict, {"fsdp.yaml:7:9:", "key 'parallelism.fsdp'", "means zero_stage 3, but zero_stage is 1",
                             "Fix: give only one"});
  const std::string hybrid_size = input_error([&] { stage("  dp: 8\n  fsdp: hybrid_shard\n"); });
  expect_contains(hybrid_size, {"key 'parallelism.fsdp'", "shard_group_size is not set", "Fix: add 'shard_group_size"});
}

TEST_F(ConfigTest, DefaultSearchPathFindsTheConfigsFolder) {
  const auto search = default_search_path(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp1-pp4.yaml");
  ASSERT_EQ(search.roots.size(), 1U);
  EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(test::configs_dir()));

  // Outside any configs folder the shipped configs are the root: a run file copied anywhere finds names (issue 18:
  // it failed with "no configs folder was found" unless --configs was given).
  const fs::path run = write("lonely.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"));
  const ConfigSearchPath outside = default_search_path(run);
  ASSERT_EQ(outside.roots.size(), 1U) << "a 'hardware' folder above " << dir_;
  EXPECT_EQ(fs::canonical(outside.roots[0]), fs::canonical(test::configs_dir()));
  EXPECT_EQ(load_run_config(run, outside, registries_).model.layers, 32);
  // With no root at all, names cannot be looked up.
  const std::string message = input_error([&] { (void)load_run_config(run, ConfigSearchPath{}, registries_); });
  expect_contains(message, {"lonely.yaml:1:8: key 'model': no model named 'llama3-8b': no configs folder was found",
                            "Fix: give a path to the file instead"});
}

TEST_F(ConfigTest, ARunFileInASubfolderFindsTheConfigsFolderAboveIt) {
  // A user's copy of the configs with an edited hardware file, and a run file two folders below it: the run takes the
  // copy's hardware, not the shipped file of the same name (the walk up once stopped at the run file's own folder, so
  // an edited copy was silently ignored).
  const fs::path root = dir_ / "my-configs";
  std::string text;
  {
    std::ifstream in(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string shipped_tdp = "power_w:\n  tdp: 700";
  const auto tdp = text.find(shipped_tdp);
  ASSERT_NE(tdp, std::string::npos) << "the shipped H100 file's TDP line moved";
  text.replace(tdp, shipped_tdp.size(), "power_w:\n  tdp: 600");
  write("my-configs/hardware/H100-SXM5-80GB.yaml", text);
  const fs::path run =
      write("my-configs/runs/h100/run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"));

  const ConfigSearchPath search = default_search_path(run);
  ASSERT_FALSE(search.roots.empty());
  EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(root));
  EXPECT_DOUBLE_EQ(load_run_config(run, search, registries_).hardware.tdp_w, 600.0);
  // Names the copy does not hold still come from the shipped configs (the model and the cluster here).
  EXPECT_EQ(load_run_config(run, search, registries_).model.layers, 32);
}

TEST_F(ConfigTest, FilesMustHoldOneMapping) {
  const fs::path empty = write("empty.yaml", "# nothing but a comment\n");
  expect_contains(input_error([&] { (void)load(empty); }), {"empty.yaml: the run config is empty", "Fix: write"});
  const fs::path list = write("list.yaml", "- model: llama3-8b\n");
  expect_contains(input_error([&] { (void)load(list); }),
                  {"list.yaml:1:1: expected a mapping of 'key: value' lines at the top of the file, found a list"});
  const fs::path two = write("two.yaml", "model: llama3-8b\n---\nmodel: llama3-70b\n");
  expect_contains(input_error([&] { (void)load(two); }),
                  {"two.yaml:2:1: the run config holds more than one YAML document: a second one starts here",
                   "Fix: keep one document per file"});
  const fs::path section =
      write("section.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "collectives: ring\n");
  expect_contains(input_error([&] { (void)load(section); }),
                  {"section.yaml:8:14: key 'collectives': expected a mapping of 'key: value' lines, found 'ring'"});
}

// ----------------------------------------------------------------------------- one test per error kind

TEST_F(ConfigTest, YamlSyntaxErrorGivesItsPosition) {
  const fs::path run = write("syntax.yaml", "model: llama3-8b\nparallelism:\n  tp: [1, 2\n  dp: 4\n");
  InputError error({}, "", "", "");
  const std::string message = input_error([&] { (void)load(run); }, &error);
  expect_contains(message, {"syntax.yaml:", "YAML syntax error", "Fix: correct the YAML"});
  EXPECT_GE(error.where().line, 3);
  EXPECT_GT(error.where().column, 0);
}

TEST_F(ConfigTest, MissingRunFileSaysWhereItLooked) {
  const fs::path missing = dir_ / "nope" / "run.yaml";
  const std::string message = input_error([&] { (void)load(missing); });
  expect_contains(message, {"run.yaml", "run config not found: looked at " + missing.lexically_normal().string(),
                            "Fix: check the path"});
}

TEST_F(ConfigTest, MissingComponentFileSaysWhereItLooked) {
  const fs::path run = write("run.yaml", "model: models/nope.yaml\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message, {"run.yaml:1:8: key 'model': model file not found: looked at " +
                                (dir_ / "models" / "nope.yaml").lexically_normal().string(),
                            "Fix: paths are relative to the run file's folder"});
}

TEST_F(ConfigTest, UnknownComponentNameListsTheValidNames) {
  const fs::path run = write("run.yaml", "model: llama9-8b\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message,
                  {"run.yaml:1:8: key 'model': no model named 'llama9-8b'", "looked for ",
                   "models/llama9-8b.yaml; available model names",
                   "Fix: did you mean 'llama3-8b'? Or give a path to a file (e.g. model: ./my-model.yaml)",
                   "available model names: deepseek-v3, gpt-oss-120b, gpt3-175b, llama3-405b, llama3-70b, llama3-8b",
                   "mixtral-8x7b", "mpt-13b", "Fix: did you mean 'llama3-8b'?"});

  const fs::path hw = write("hw.yaml", "model: llama3-8b\nhardware: {name: H100}\ncluster: dgx-h100\n");
  expect_contains(input_error([&] { (void)load(hw); }), {"hw.yaml:2:18: key 'hardware.name': no hardware named 'H100'",
                                                         "H100-SXM5-80GB, H200-SXM-141GB", "MI300X"});
}

// A configs folder on the search path twice (chopsim run --configs configs beside the shipped configs it finds
// anyway, once relative and once absolute) is named once in the message.
TEST_F(ConfigTest, UnknownComponentNameNamesEachFolderOnce) {
  const fs::path run = write("run.yaml", "model: llama9-8b\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const fs::path configs = test::configs_dir();
  const ConfigSearchPath twice{{configs, fs::absolute(configs) / "." / ".." / configs.filename()}};
  const std::string message = input_error([&] { (void)load_run_config(run, twice, registries_); });
  const std::string file = "llama9-8b.yaml";
  const auto first = message.find(file);
  ASSERT_NE(first, std::string::npos) << message;
  EXPECT_EQ(message.find(file, first + file.size()), std::string::npos) << message;
}

TEST_F(ConfigTest, UnknownKeyListsTheValidKeys) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  tpp: 2\n", "  global_batch: 8\n"));
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message,
                  {"run.yaml:6:3: key 'parallelism.tpp': unknown key 'tpp' in 'parallelism'; valid keys: dp, tp, "
                   "sequence_parallel, pp, pp_schedule, virtual_stages, stage_layers, account_for_embedding_in_split, "
                   "account_for_loss_in_split, cp, ep, etp, zero_stage, fsdp, shard_group_size",
                   "Fix: did you mean 'tp'?"});

  const fs::path top = write("top.yaml", "modle: llama3-8b\nmodel: llama3-8b\nhardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(top); }),
                  {"top.yaml:1:1: key 'modle': unknown key 'modle' at the top of the file; valid keys: name, "
                   "description, model, calibration, hardware, cluster, parallelism, training, iterations, models, "
                   "collectives, simulation",
                   "Fix: did you mean 'model'?"});
}

TEST_F(ConfigTest, WrongTypeShowsTheValueFound) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  tp: four\n", "  global_batch: 8\n"));
  const std::string message = input_error([&] { (void)load(run); });
  ASSERT_NE(message.find("run.yaml"), std::string::npos);
  EXPECT_EQ(message.substr(message.find("run.yaml")),
            "run.yaml:6:7: key 'parallelism.tp': expected a positive integer, found 'four'. Fix: write a positive "
            "integer, e.g. 'tp: 1'");

  const fs::path flag =
      write("flag.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  overlap: {dp: maybe}\n"));
  expect_contains(input_error([&] { (void)load(flag); }),
                  {"flag.yaml:8:17: key 'training.overlap.dp': expected true or false, found 'maybe'",
                   "Fix: write 'dp: true' or 'dp: false'"});
  const fs::path list = write("list.yaml", small_run("llama3-8b", "  dp: [8]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(list); }),
                  {"list.yaml:5:7: key 'parallelism.dp': expected a positive integer, found a list"});
}

TEST_F(ConfigTest, OutOfRangeValuesAreRejected) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: 0\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:8:16: key 'training.micro_batch': expected a positive integer, found '0'",
                   "Fix: write a positive integer"});
  // A whole number beyond 32 bits says so, in a key and in a list entry; a negative one does not.
  const fs::path huge =
      write("huge.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  seq_len: 3000000000\n"));
  expect_contains(input_error([&] { (void)load(huge); }),
                  {"key 'training.seq_len': expected a positive integer, found '3000000000', above the largest "
                   "allowed value 2147483647. Fix:"});
  const fs::path huge_entry = write(
      "huge_entry.yaml",
      small_run("llama3-8b", "  pp: 2\n  dp: 4\n  stage_layers: [16, 99999999999999999999]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(huge_entry); }),
                  {"entry 2: expected a positive integer, found '99999999999999999999', above the largest allowed"});
  const fs::path negative =
      write("negative.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: -2\n"));
  const std::string negative_message = input_error([&] { (void)load(negative); });
  EXPECT_EQ(negative_message.find("above the largest"), std::string::npos) << negative_message;
  const fs::path eff = write("eff.yaml", h100_kernels_run("efficiency: {gemm: {compute: 1.5}}"));
  expect_contains(input_error([&] { (void)load(eff); }),
                  {"eff.yaml:2:",
                   "key 'hardware.kernels.efficiency.gemm.compute': expected a fraction in (0, 1], "
                   "found '1.5'",
                   "Fix: write a fraction in (0, 1] for 'hardware.kernels.efficiency.gemm.compute'"});
  const fs::path slow = write("slow.yaml",
                              "model: {name: llama3-8b, make_vocab_size_divisible_by: 0}\n"
                              "hardware: {name: H100-SXM5-80GB, kernels: {unaligned_gemm_slowdown: 0.5}}\n"
                              "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                              "parallelism: {dp: 8}\ntraining: {global_batch: 8}\n");
  expect_contains(
      input_error([&] { (void)load(slow); }),
      {"slow.yaml:1:", "key 'model.make_vocab_size_divisible_by': expected an integer from 1 to 65536, found '0'"});
  const fs::path faster = write("faster.yaml", h100_kernels_run("unaligned_gemm_slowdown: 0.5"));
  expect_contains(
      input_error([&] { (void)load(faster); }),
      {"faster.yaml:2:", "key 'hardware.kernels.unaligned_gemm_slowdown': expected a number >= 1, found '0.5'"});
  const fs::path fp8 = write("fp8.yaml", h100_kernels_run("fp8_gemm_efficiency_ratio: 1.13"));
  expect_contains(
      input_error([&] { (void)load(fp8); }),
      {"fp8.yaml:2:", "key 'hardware.kernels.fp8_gemm_efficiency_ratio': expected a fraction in (0, 1], found '1.13'"});
  const fs::path zero = write("zero.yaml", small_run("llama3-8b", "  dp: 8\n  zero_stage: 4\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(zero); }),
                  {"zero.yaml:6:15: key 'parallelism.zero_stage': expected an integer from 0 to 3, found '4'"});
}

TEST_F(ConfigTest, MissingRequiredKeysAreNamed) {
  const fs::path run = write("run.yaml", "hardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:1:1: key 'model': required key 'model' is missing", "Fix: add 'model: ...'"});

  // An inline model must be complete.
  const fs::path partial = write("partial.yaml",
                                 "model:\n  layers: 2\n  hidden: 64\n  ffn_hidden: 256\n  kv_heads: 1\n  vocab: 100\n"
                                 "  mlp: gelu\n  norm: layernorm\n  tied_embeddings: true\n"
                                 "hardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(partial); }),
                  {"partial.yaml:2:3: key 'model.heads': required key 'heads' is missing in 'model'",
                   "Fix: add 'heads: ...' with a positive integer"});

  // A component file without a required key; the message names that file.
  const fs::path model = write("models/short.yaml",
                               "layers: 2\nhidden: 64\nffn_hiden: 256\nheads: 4\nkv_heads: 4\n"
                               "vocab: 100\nmlp: gelu\nnorm: layernorm\ntied_embeddings: true\n");
  expect_contains(input_error([&] { (void)load_model_config(model); }),
                  {(dir_ / "models" / "short.yaml").string() + ":1:1: key 'ffn_hidden': required key 'ffn_hidden' is "
                                                               "missing ('ffn_hiden' is present: a misspelling?)"});
}

TEST_F(ConfigTest, UnknownChoiceListsTheChoices) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  recompute: partial\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:8:14: key 'training.recompute': expected one of none, selective, full, found 'partial'",
                   "Fix: use one of: none, selective, full"});
  const fs::path schedule =
      write("schedule.yaml", small_run("llama3-8b", "  dp: 8\n  pp_schedule: 1F1B\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(schedule); }),
                  {"key 'parallelism.pp_schedule': expected one of 1f1b, interleaved, found '1F1B'"});
}

TEST_F(ConfigTest, UnknownRegistryNamesListTheRegisteredOnes) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n",
                                                   "{name: dgx-h100, nodes: 1, node_topology: nvlink, "
                                                   "fabric: {kind: none}}"));
  const std::string message = input_error([&] { (void)load(run); });
  const std::string names = join(registries_.node_topology.names());
  expect_contains(
      message,
      {"run.yaml:3:52: key 'cluster.node_topology': unknown node topology 'nvlink'; valid names: " + names, "Fix: "});

  const fs::path engine =
      write("engine.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "simulation: {engine: ns3}\n");
  expect_contains(input_error([&] { (void)load(engine); }),
                  {"engine.yaml:8:22: key 'simulation.engine': unknown engine 'ns3'; valid names: fast, simgrid"});
  const fs::path compute = write(
      "compute.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "models: {compute: rooflin}\n");
  expect_contains(input_error([&] { (void)load(compute); }),
                  {"key 'models.compute': unknown compute model 'rooflin'", "Fix: did you mean 'roofline'?"});

  // A name inside an included cluster file is reported at that file's line.
  write("clusters/odd.yaml", "gpus_per_node: 8\nnode_topology: nvlink\nnics_per_node: 8\nfabric: {kind: none}\n");
  const fs::path odd =
      write("odd.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n", "{path: clusters/odd.yaml}"));
  expect_contains(input_error([&] { (void)load(odd); }),
                  {(dir_ / "clusters" / "odd.yaml").string() + ":2:16: key 'cluster.node_topology': unknown node "
                                                               "topology 'nvlink'"});
}

TEST_F(ConfigTest, ErrorsInsideAnIncludedFileNameThatFile) {
  std::string text = read_text(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const std::string from = "bf16: 989.4";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "bf16: fast");
  const fs::path hardware = write("hw/broken.yaml", text);
  const fs::path run = write("run.yaml", "model: llama3-8b\nhardware: hw/broken.yaml\ncluster: dgx-h100\n");

  // The line of "bf16:" in the hardware file, counted independently.
  int line = 1;
  for (std::size_t i = 0; i < at; ++i) line += text[i] == '\n' ? 1 : 0;
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message, {hardware.lexically_normal().string() + ":" + std::to_string(line) + ":",
                            "key 'peak_tflops.bf16': expected a number > 0 (TFLOP/s), found 'fast'",
                            "Fix: write a number > 0 (TFLOP/s)"});
  EXPECT_EQ(message.find("run.yaml"), std::string::npos) << "the error is in the hardware file, not the run";
}

TEST_F(ConfigTest, DuplicateKeysAreRejected) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  dp: 4\n", "  global_batch: 8\n"));
  expect_contains(
      input_error([&] { (void)load(run); }),
      {"run.yaml:6:3: key 'parallelism.dp': key 'dp' appears twice (first on line 5)", "Fix: keep one of them"});
}

TEST_F(ConfigTest, ClusterFilesMayNotSetTheNodeCount) {
  const fs::path cluster = write("c.yaml",
                                 "nodes: 4\ngpus_per_node: 8\nnode_topology: nvswitch\nnics_per_node: 8\n"
                                 "fabric: {kind: rail_optimized}\n");
  expect_contains(input_error([&] { (void)load_cluster_config(cluster); }),
                  {"c.yaml:1:8: key 'nodes': a cluster file describes the node type and fabric",
                   "Fix: remove 'nodes' here and give it in the run: cluster: {name: NAME, nodes: N}"});
}

// ------------------------------------------------------------------------------ cross-field rules

TEST_F(ConfigTest, GpuCountMustMatchTheParallelLayout) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 4\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:5:7: key 'parallelism.dp': tp*pp*dp*cp = 1*1*4*1 = 4 does not match the cluster's 8 GPUs "
                   "(cluster.nodes 1 x cluster.gpus_per_node 8)",
                   "Fix: set parallelism.dp: 8 (= 8 GPUs / (tp*pp*cp = 1)), or change cluster.nodes"});
  const fs::path none_fits = write("three.yaml", small_run("llama3-8b", "  pp: 3\n", "  global_batch: 8\n"));
  expect_contains(
      input_error([&] { (void)load(none_fits); }),
      {"key 'parallelism.dp': tp*pp*dp*cp = 1*3*1*1 = 3", "Fix: no dp fits: 8 GPUs is not a multiple of tp*pp*cp = 3"});
}

TEST_F(ConfigTest, HeadsAndKvHeadsMustDivideByTp) {
  const fs::path heads = write("heads.yaml", small_run("mpt-760m", "  tp: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(heads); }),
                  {"heads.yaml:5:7: key 'parallelism.tp': model.heads (12) is not divisible by parallelism.tp (8)",
                   "Fix: use a tp that divides both heads and kv_heads: 1, 2, 3, 4, 6, 12"});
  const fs::path kv =
      write("kv.yaml", small_run("llama3-8b", "  tp: 16\n", "  global_batch: 8\n", "{name: dgx-h100, nodes: 2}"));
  expect_contains(input_error([&] { (void)load(kv); }),
                  {"kv.yaml:5:7: key 'parallelism.tp': model.kv_heads (8) is not divisible by parallelism.tp (16)",
                   "Fix: use a tp that divides kv_heads: 1, 2, 4, 8"});
}

TEST_F(ConfigTest, LayersMustDivideByPipelineChunks) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  virtual_stages: 3\n  dp: 2\n",
                                  "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:5:7: key 'parallelism.pp': model.layers (32) is not divisible by parallelism.pp x "
                   "virtual_stages (4 x 3 = 12)",
                   "Fix: use pp x virtual_stages among the divisors of 32: 1, 2, 4, 8, 16, 32"});
}

TEST_F(ConfigTest, PipelineScheduleRules) {
  const fs::path one =
      write("one.yaml", small_run("llama3-8b", "  pp: 4\n  virtual_stages: 2\n  dp: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(one); }),
                  {"one.yaml:6:19: key 'parallelism.virtual_stages': pp_schedule 1f1b runs one model chunk per stage, "
                   "but virtual_stages is 2",
                   "Fix: set pp_schedule: interleaved, or virtual_stages: 1"});
  const fs::path single = write(
      "single.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  dp: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(single); }),
                  {"key 'parallelism.virtual_stages': pp_schedule interleaved needs virtual_stages > 1",
                   "Fix: set virtual_stages >= 2"});
  const fs::path batches = write(
      "batches.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  virtual_stages: 2\n  dp: 2\n",
                                "  global_batch: 6\n"));
  expect_contains(input_error([&] { (void)load(batches); }),
                  {"batches.yaml:10:17: key 'training.global_batch': the interleaved schedule needs the number of "
                   "micro-batches (global_batch / (dp x micro_batch) = 3) to be a multiple of pp (4)",
                   "Fix: use a global_batch that is a multiple of dp x micro_batch x pp = 8"});
}

TEST_F(ConfigTest, GlobalBatchMustDivideIntoMicroBatches) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 20\n  micro_batch: 2\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:7:17: key 'training.global_batch': training.global_batch (20) is not divisible by dp x "
                   "micro_batch (8 x 2 = 16)",
                   "Fix: use a multiple of 16, e.g. 16 or 32"});
  const fs::path small =
      write("small.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: 2\n"));
  expect_contains(input_error([&] { (void)load(small); }),
                  {"key 'training.global_batch': training.global_batch (8) is smaller than dp x micro_batch (8 x 2 = "
                   "16): each data-parallel rank needs at least one micro-batch"});
}

TEST_F(ConfigTest, ExpertParallelismRules) {
  const fs::path experts = write("experts.yaml", small_run("mixtral-8x7b", "  dp: 16\n  ep: 16\n",
                                                           "  global_batch: 16\n", "{name: dgx-h100, nodes: 2}"));
  expect_contains(input_error([&] { (void)load(experts); }),
                  {"experts.yaml:6:7: key 'parallelism.ep': model.experts (8) is not divisible by parallelism.ep (16)",
                   "Fix: use an ep that divides the expert count: 1, 2, 4, 8"});
  const fs::path data =
      write("data.yaml", small_run("mixtral-8x7b", "  tp: 2\n  dp: 4\n  ep: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(data); }),
                  {"data.yaml:7:7: key 'parallelism.ep': dp x cp (4 x 1 = 4) is not divisible by parallelism.ep (8)",
                   "Fix: use an ep that divides 4: 1, 2, 4, or set etp: 1"});
  // MoE parallel folding: with etp 1 the same ep 8 spans tp 2 x dp 4 (and needs sequence parallelism).
  const fs::path folded = write("folded.yaml", small_run("mixtral-8x7b",
                                                         "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 1\n"
                                                         "  sequence_parallel: true\n",
                                                         "  global_batch: 8\n"));
  const RunSpec run = load(folded);
  EXPECT_EQ(run.parallelism.etp, 1);
  EXPECT_EQ(run.parallelism.expert_tp(), 1);
  const fs::path no_sp =
      write("no_sp.yaml", small_run("mixtral-8x7b", "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 1\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(no_sp); }),
                  {"key 'parallelism.etp': etp (1) differs from tp (2) without sequence parallelism",
                   "Fix: set parallelism.sequence_parallel: true, or remove etp"});
  const fs::path too_many = write("too_many.yaml", small_run("mixtral-8x7b",
                                                             "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 4\n"
                                                             "  sequence_parallel: true\n",
                                                             "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(too_many); }),
                  {"key 'parallelism.etp': etp x ep (4 x 8) does not divide tp x cp x dp (8)"});
  const fs::path dense = write("dense.yaml", small_run("llama3-8b", "  dp: 8\n  ep: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(dense); }),
                  {"dense.yaml:6:7: key 'parallelism.ep': parallelism.ep is 2 but model 'llama3-8b' has no experts",
                   "Fix: set ep: 1, or use a mixture-of-experts model"});
}

TEST_F(ConfigTest, ContextParallelismMustDivideTheSequence) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  dp: 2\n  cp: 4\n", "  global_batch: 8\n  seq_len: 8190\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:6:7: key 'parallelism.cp': training.seq_len (8190) is not divisible by parallelism.cp (4)",
                   "Fix: use a cp that divides seq_len"});
}

TEST_F(ConfigTest, ShardingAndTopologyRules) {
  const fs::path group =
      write("group.yaml",
            small_run("llama3-8b", "  dp: 8\n  fsdp: hybrid_shard\n  shard_group_size: 3\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(group); }),
                  {"group.yaml:7:21: key 'parallelism.shard_group_size': shard_group_size (3) does not divide dp x cp "
                   "(8 x 1 = 8)",
                   "Fix: use a divisor of 8: 1, 2, 4, 8"});
  const fs::path nodes = write("nodes.yaml", small_run("llama3-8b", "  dp: 16\n", "  global_batch: 16\n",
                                                       "{name: dgx-h100, nodes: 2, fabric: {kind: none}}"));
  expect_contains(input_error([&] { (void)load(nodes); }),
                  {"nodes.yaml:3:34: key 'cluster.nodes': cluster.fabric.kind 'none' connects no nodes, but "
                   "cluster.nodes is 2",
                   "Fix: set cluster.nodes: 1"});
  const fs::path sp =
      write("sp.yaml", small_run("llama3-8b", "  dp: 8\n  sequence_parallel: true\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(sp); }),
                  {"key 'parallelism.sequence_parallel': sequence_parallel splits activations across the TP group, but "
                   "tp is 1"});
  const fs::path fp8 = write("fp8.yaml",
                             "model: llama3-8b\nhardware: A100-SXM4-80GB\n"
                             "cluster: {name: dgx-a100, nodes: 1, fabric: {kind: none}}\n"
                             "parallelism: {dp: 8}\ntraining: {global_batch: 8, precision: fp8}\n");
  expect_contains(input_error([&] { (void)load(fp8); }),
                  {"fp8.yaml:5:40: key 'training.precision': hardware 'A100-SXM4-80GB' has no fp8 units"});
}

TEST_F(ConfigTest, ValidateRunChecksRunsBuiltInCode) {
  RunSpec run = load(test::configs_dir() / "llama3-70b-h100-3d.yaml");
  EXPECT_NO_THROW(validate_run(run, SourceLocation{"sweep"}));
  run.parallelism.dp = 4;  // 8*4*4 = 128 GPUs on a 64-GPU cluster
  const std::string message = input_error([&] { validate_run(run, SourceLocation{"sweep"}); });
  EXPECT_EQ(message,
            "sweep: key 'parallelism.dp': tp*pp*dp*cp = 8*4*4*1 = 128 does not match the cluster's 64 GPUs "
            "(cluster.nodes 8 x cluster.gpus_per_node 8). Fix: set parallelism.dp: 2 (= 64 GPUs / (tp*pp*cp = 32)), "
            "or change cluster.nodes");
  run.parallelism.dp = 2;
  run.training.micro_batch = 0;
  expect_contains(input_error([&] { validate_run(run, SourceLocation{"sweep"}); }),
                  {"sweep: key 'training.micro_batch': must be a positive integer, found 0"});
}

}  // namespace
}  // namespace chopsim
