// YAML configuration of hardware, clusters and models: values converted to SI units against datasheet values,
// attention implementations and their costs, power and host limits, and the published shapes of model and cluster
// files.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>

#include "chopsim/config/config.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "config_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::ConfigTest;
using test::expect_contains;
using test::idx;
using test::input_error;

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
  // CUBLAS_WORKSPACE_CONFIG as the environment variable writes it: SIZE KiB x COUNT, summed over the pairs.
  EXPECT_DOUBLE_EQ(load(run).training.cublas_workspace_bytes, 0.0);  // not set: the GPU's default
  const auto workspace = [&](const std::string& value) {
    return load(write("ws.yaml", small_run("llama3-8b", "  dp: 8\n",
                                           "  global_batch: 8\n  cublas_workspace_config: \"" + value + "\"\n")))
        .training.cublas_workspace_bytes;
  };
  EXPECT_DOUBLE_EQ(workspace(":4096:8"), 32.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(workspace(":4096:2:16:8"), 8.0 * 1024 * 1024 + 128.0 * 1024);
  for (const char* bad : {"4096:8", ":4096", ":4096:8:", ":0:8", ":40x6:8"}) {
    SCOPED_TRACE(bad);
    expect_contains(input_error([&] { (void)workspace(bad); }),
                    {"key 'training.cublas_workspace_config'", "CUBLAS_WORKSPACE_CONFIG", ":4096:8"});
  }
  EXPECT_DOUBLE_EQ(h100.cublas_workspace_bytes, 32.0 * 1024 * 1024);  // PyTorch's default on compute capability 9.0
  EXPECT_DOUBLE_EQ(h100.transformer_engine_workspace_bytes, 32.0 * 1024 * 1024 + 1024);
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
  EXPECT_DOUBLE_EQ(shipped("dgx-a100.yaml"), 113e-6);
  EXPECT_DOUBLE_EQ(shipped("mi300x.yaml"), 0.0);  // no Megatron-Core run measured on it
}

}  // namespace
}  // namespace chopsim
