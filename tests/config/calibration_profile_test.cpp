// Runs that name a calibration profile (run key `calibration:`, apply_calibration_profile()): the profile's sections
// override the hardware file's keys once, with the right precedence, and every bad profile is an InputError naming
// the profile file.

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "chopsim/calibration/profile.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::input_error;

class CalibrationProfileTest : public test::TempDirTest {
 protected:
  RunSpec load(const fs::path& run_file) const {
    return load_run_config(run_file, ConfigSearchPath{{test::configs_dir()}}, registries_);
  }
  /// A one-node H100 run (Llama-3-8B, TP 8) with `extra` lines appended.
  fs::path h100_run(const std::string& extra, const std::string& hardware = "H100-SXM5-80GB") const {
    return write("run.yaml", "model: llama3-8b\nhardware: " + hardware +
                                 "\ncluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                                 "parallelism: {tp: 8}\ntraining: {global_batch: 8, seq_len: 2048}\n" +
                                 extra);
  }
  static fs::path shipped(const std::string& name) { return test::source_dir() / "calibration" / "profiles" / name; }

  ModelRegistries registries_ = ModelRegistries::with_builtins();
};

/// The GPU <-> NVSwitch link of GPU 0 (one direction): links_per_gpu x the per-link bandwidth the run builds.
double nvswitch_link_bandwidth(const RunSpec& run, const ModelRegistries& registries) {
  const Topology topology =
      build_topology(run.cluster, run.hardware, registries.node_topology, registries.fabric_topology);
  for (const TopologyLink& link : topology.links())
    if (link.link_class == LinkClass::nvlink && (link.u == topology.gpu_vertex(0) || link.v == topology.gpu_vertex(0)))
      return link.bandwidth_bytes_per_s;
  ADD_FAILURE() << "no NVLink at GPU 0";
  return 0.0;
}

TEST_F(CalibrationProfileTest, ShippedProfileOverridesTheHardwareKeysItHolds) {
  const RunSpec plain = load(h100_run(""));
  const RunSpec calibrated = load(h100_run("calibration: calibration/profiles/h100.yaml\n"));
  const YAML::Node profile = YAML::LoadFile(shipped("h100.yaml").string());
  EXPECT_EQ(fs::canonical(calibrated.calibration), fs::canonical(shipped("h100.yaml")));
  const auto& gemm = calibrated.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)];
  EXPECT_EQ(gemm.compute, profile["kernels"]["efficiency"]["gemm"]["compute"].as<double>());
  EXPECT_EQ(gemm.half_efficiency_flops,
            profile["kernels"]["efficiency"]["gemm"]["half_efficiency_gflop"].as<double>() * 1e9);
  EXPECT_EQ(calibrated.hardware.compute.launch_overhead_s,
            profile["kernels"]["launch_overhead_us"].as<double>() * 1e-6);
  EXPECT_EQ(calibrated.hardware.intra_node_link_efficiency, profile["intra_node_link"]["efficiency"].as<double>());
  EXPECT_EQ(calibrated.hardware.nic_efficiency, profile["nic"]["efficiency"].as<double>());
  EXPECT_EQ(calibrated.collectives.step_latency_s, profile["collectives"]["step_latency_us"].as<double>() * 1e-6);
  // PyTorch's elementwise kernels by TensorIterator path: the profile's fits over the hardware file's figures.
  for (const ElementwisePath path : kPytorchElementwisePaths) {
    const auto i = static_cast<std::size_t>(path);
    EXPECT_EQ(calibrated.hardware.compute.elementwise_path_memory[i],
              profile["kernels"]["pytorch_elementwise_memory"][std::string(elementwise_path_name(path))].as<double>());
    EXPECT_GT(plain.hardware.compute.elementwise_path_memory[i], 0.0);
  }
  // Keys the profile does not hold keep the hardware file's values: the nominal link rate, the peaks, memory.
  EXPECT_EQ(calibrated.hardware.intra_node_link_bandwidth_bytes_per_s,
            plain.hardware.intra_node_link_bandwidth_bytes_per_s);
  EXPECT_EQ(calibrated.hardware.compute.peak_flops_per_s, plain.hardware.compute.peak_flops_per_s);
  EXPECT_EQ(calibrated.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::optimizer)].memory,
            plain.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::optimizer)].memory);
  EXPECT_TRUE(plain.calibration.empty());
}

TEST_F(CalibrationProfileTest, FittedLinkBandwidthIsAppliedExactlyOnce) {
  // Round trip: NCCL all-reduces timed at 20 GB/s per NVLink (chopsim's ring formula on 18 links) -> chopsim's
  // calibrator -> profile -> run -> the topology's GPU-switch link. The hardware file's own efficiency (0.75) must not
  // derate the fitted bandwidth again: 18 x 20 GB/s, not 18 x 15 GB/s.
  const double link_bw = 20e9, step = 1.5e-6, latency = 0.6e-6;
  MeasurementSet set;
  set.inputs.push_back({"synthetic.csv", "test", std::string(64, '0'), {}, 0, 0, 0, 0});
  for (const int n : {2, 4, 8})
    for (double bytes = 1 << 12; bytes < 1e9; bytes *= 4)
      set.collectives.push_back({CollectiveKind::all_reduce, n, LinkScope::intra_node, bytes,
                                 2.0 * (n - 1) * (latency + step) + 2.0 * (n - 1) / n * bytes / (18 * link_bw), 0});
  for (double bytes = 1 << 20; bytes < 1e9; bytes *= 4)
    set.collectives.push_back({CollectiveKind::send_recv, 2, LinkScope::inter_node, bytes, 10e-6 + bytes / 35e9, 0});
  const HardwareReference hw = load_hardware_reference("H100-SXM5-80GB", test::configs_dir());
  ASSERT_EQ(hw.intra_node_link_latency_s, latency);
  const CalibrationResult result = calibrate(set, hw, KernelFitOptions{}, NodeLinks::nvswitch);
  const fs::path profile = write("fitted.yaml", render_profile_yaml(result));

  RunSpec run = load(h100_run(""));
  const double before = nvswitch_link_bandwidth(run, registries_);
  EXPECT_NEAR(before, 18 * 25e9 * 0.75, 1.0);  // the hardware file: nominal x its own efficiency
  apply_calibration_profile(run, profile);
  // 4 significant digits in the profile: within 0.05 %.
  EXPECT_NEAR(nvswitch_link_bandwidth(run, registries_), 18 * link_bw, 5e-4 * 18 * link_bw);
  EXPECT_NEAR(run.hardware.nic_bandwidth_bytes_per_s * run.hardware.nic_efficiency, 35e9, 5e-4 * 35e9);
  EXPECT_NEAR(run.collectives.step_latency_s, step, 5e-4 * step);
  // The same through the run key.
  const RunSpec keyed = load(h100_run("calibration: " + profile.string() + "\n"));
  EXPECT_EQ(nvswitch_link_bandwidth(keyed, registries_), nvswitch_link_bandwidth(run, registries_));
}

TEST_F(CalibrationProfileTest, RunKeysWinOverTheProfile) {
  const RunSpec run = load(write("run.yaml",
                                 "model: llama3-8b\n"
                                 "hardware: {name: H100-SXM5-80GB, kernels: {efficiency: {gemm: {compute: 0.5}}}}\n"
                                 "calibration: calibration/profiles/h100.yaml\n"
                                 "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                                 "parallelism: {tp: 8}\ntraining: {global_batch: 8, seq_len: 2048}\n"
                                 "collectives: {step_latency_us: 3}\n"));
  const YAML::Node profile = YAML::LoadFile(shipped("h100.yaml").string());
  EXPECT_EQ(run.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)].compute, 0.5);
  // The profile's other gemm keys still apply.
  EXPECT_EQ(run.hardware.compute.efficiency[static_cast<std::size_t>(KernelClass::gemm)].memory,
            profile["kernels"]["efficiency"]["gemm"]["memory"].as<double>());
  EXPECT_EQ(run.collectives.step_latency_s, 3e-6);
}

TEST_F(CalibrationProfileTest, ProfileForAnotherGpuIsRejected) {
  const std::string message =
      input_error([&] { (void)load(h100_run("calibration: calibration/profiles/mi300x.yaml\n")); });
  EXPECT_NE(message.find("mi300x.yaml"), std::string::npos) << message;
  EXPECT_NE(message.find("fitted on MI300X"), std::string::npos) << message;
  EXPECT_NE(message.find("H100-SXM5-80GB"), std::string::npos) << message;
  RunSpec run = load(h100_run(""));
  EXPECT_NE(input_error([&] { apply_calibration_profile(run, shipped("mi300x.yaml")); }).find("fitted on MI300X"),
            std::string::npos);
  EXPECT_EQ(calibration_profile_hardware(shipped("mi300x.yaml")), "MI300X");
}

TEST_F(CalibrationProfileTest, MissingProfileSaysWhereItLooked) {
  const std::string message = input_error([&] { (void)load(h100_run("calibration: profiles/nope.yaml\n")); });
  EXPECT_NE(message.find("key 'calibration'"), std::string::npos) << message;
  EXPECT_NE(message.find("not found: looked at"), std::string::npos) << message;
  EXPECT_NE(message.find("nope.yaml"), std::string::npos) << message;
}

TEST_F(CalibrationProfileTest, FittedPowerModelAndIdlePowerApply) {
  // The shipped H200 profile holds the dynamic power fitted from the probe's trace and telemetry (issue 20).
  const std::string run =
      "model: llama3.2-1b\nhardware: H200-SXM-141GB\n"
      "cluster: {name: dgx-h200, nodes: 1, gpus_per_node: 1, fabric: {kind: none}}\n"
      "training: {global_batch: 4, micro_batch: 4, seq_len: 4096}\n";
  const RunSpec plain = load(write("plain.yaml", run));
  const RunSpec calibrated = load(write("calibrated.yaml", run + "calibration: calibration/profiles/h200.yaml\n"));
  const YAML::Node profile = YAML::LoadFile(shipped("h200.yaml").string());
  EXPECT_EQ(calibrated.hardware.power.dynamic_w, profile["power_model"]["dynamic_w"].as<double>());
  EXPECT_EQ(calibrated.hardware.idle_power_w, profile["power_w"]["idle"].as<double>());
  EXPECT_NE(calibrated.hardware.idle_power_w, plain.hardware.idle_power_w);  // measured 78.3 W, file 75 W
  // The knee, the busy and tensor weights and the governor's period fitted to the probe's runs (--power-runs).
  EXPECT_EQ(calibrated.hardware.power.voltage.knee_hz,
            profile["power_model"]["voltage"]["knee_mhz"].as<double>() * 1e6);
  EXPECT_EQ(calibrated.hardware.power.tensor_activity, profile["power_model"]["tensor_activity"].as<double>());
  EXPECT_EQ(calibrated.hardware.governor.control_period_s,
            profile["governor"]["control_period_ms"].as<double>() * 1e-3);
  // The rest of the power model and governor and the TDP stay the hardware file's.
  EXPECT_EQ(calibrated.hardware.power.hbm_w, plain.hardware.power.hbm_w);
  EXPECT_EQ(calibrated.hardware.power.voltage.max_ratio, plain.hardware.power.voltage.max_ratio);
  EXPECT_EQ(calibrated.hardware.power.vector_activity, plain.hardware.power.vector_activity);
  EXPECT_EQ(calibrated.hardware.governor.window_s, plain.hardware.governor.window_s);
  EXPECT_EQ(calibrated.hardware.tdp_w, plain.hardware.tdp_w);
}

TEST_F(CalibrationProfileTest, BadProfilesNameTheFileAndKey) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::string head = "profile_version: 1\nhardware: H100-SXM5-80GB\n";
  const Case cases[] = {
      {head + "peak_tflops: {bf16: 2000}\n", "unknown key 'peak_tflops' in a calibration profile"},
      {head + "kernels: {efficiency: {gemm: {compute: 1.5}}}\n", "kernels.efficiency.gemm.compute"},
      {head + "kernels: {efficency: {}}\n", "unknown key 'efficency'"},
      {head + "intra_node_link: {efficiency: 0}\n", "intra_node_link.efficiency"},
      {head + "kernels: {pytorch_elementwise_memory: {fused: 0.5}}\n",
       "unknown key 'fused' in 'kernels.pytorch_elementwise_memory'; valid keys: vectorized, unrolled, strided"},
      {head + "kernels: {pytorch_elementwise_memory: {strided: 1.3}}\n", "kernels.pytorch_elementwise_memory.strided"},
      {head + "kernels: {attention_head_dim_64_ratio: 0}\n", "kernels.attention_head_dim_64_ratio"},
      {head + "collectives: {step_latency: 1}\n", "unknown key 'step_latency'"},
      {head + "telemetry_fit: {idle_power: 70}\n", "unknown key 'idle_power'"},
      {head + "power_w: {tdp: 900}\n", "may not change the TDP"},
      {head + "power_model: {dynamic_w: -5}\n", "power_model.dynamic_w"},
      {"profile_version: 2\nhardware: H100-SXM5-80GB\n", "profile_version 2 is not supported"},
      {"hardware: H100-SXM5-80GB\n", "required key 'profile_version'"},
      {"profile_version: 1\n", "required key 'hardware'"},
  };
  for (const Case& c : cases) {
    const fs::path profile = write("bad.yaml", c.text);
    const std::string message = input_error([&] { (void)load(h100_run("calibration: " + profile.string() + "\n")); });
    EXPECT_NE(message.find("bad.yaml"), std::string::npos) << c.text << " -> " << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << " -> " << message;
  }
}

TEST_F(CalibrationProfileTest, ShippedProfilesDeclareTheVersionThisChopsimReads) {
  for (const char* name : {"h100.yaml", "mi300x.yaml", "h200.yaml"}) {
    const YAML::Node profile = YAML::LoadFile(shipped(name).string());
    EXPECT_EQ(profile["profile_version"].as<int>(), kCalibrationProfileVersion) << name;
    // No bandwidth keys: fitted rates are efficiencies of the nominal ones (no double derating).
    EXPECT_FALSE(profile["intra_node_link"] && profile["intra_node_link"]["bandwidth_gb_s"]) << name;
    EXPECT_FALSE(profile["nic"] && profile["nic"]["bandwidth_gbit_s"]) << name;
    EXPECT_NO_THROW((void)calibration_profile_hardware(shipped(name))) << name;
  }
}

}  // namespace
}  // namespace chopsim
