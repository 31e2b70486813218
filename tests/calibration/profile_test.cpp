// The profile: its keys are the hardware file's keys (so that a config hook can apply it as an override), its
// values are the fits' values, the same inputs give the same bytes, and a failed calibration writes nothing.

#include "chopsim/calibration/profile.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "calibration_test_support.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

/// Synthetic measurements that exercise every section: GEMMs, elementwise, gaps, collectives, telemetry.
MeasurementSet synthetic_set() {
  MeasurementSet set;
  set.inputs.push_back({"synthetic.csv", "test", std::string(64, '0'), {}, 0, 0, 0, 0});
  for (const double m : {64.0, 512.0, 4096.0, 16384.0}) {
    KernelSample s;
    s.kernel_class = KernelClass::gemm;
    s.dtype = "bf16";
    s.flops = 2.0 * m * 8192 * 8192;
    s.bytes = 2.0 * (m * 8192 * 2 + 8192.0 * 8192);
    const double eta = 0.7 * s.flops / (s.flops + 5e9);
    s.duration_s = std::max(s.flops / (989.4e12 * eta), s.bytes / (3.35e12 * 0.85));
    set.kernels.push_back(s);
  }
  for (const double bytes : {50e6, 200e6}) {
    KernelSample s;
    s.kernel_class = KernelClass::elementwise;
    s.bytes = bytes;
    s.duration_s = bytes / (3.35e12 * 0.9);
    set.kernels.push_back(s);
  }
  set.gaps.push_back({0, "stream 7", {1e-6, 2e-6, 3e-6}});
  for (double bytes = 4096; bytes < 1e8; bytes *= 4) {
    set.collectives.push_back(
        {CollectiveKind::all_reduce, 8, LinkScope::intra_node, bytes, 14 * 2e-6 + 1.75 * bytes / 350e9, 0});
    set.collectives.push_back({CollectiveKind::send_recv, 2, LinkScope::inter_node, bytes, 20e-6 + bytes / 40e9, 0});
  }
  // Twelve GEMMs of 100 µs alone that run 125 µs under an NCCL kernel: 1.25x, comm_compute_slowdown 0.2.
  for (int g = 0; g < 12; ++g)
    set.overlaps.push_back(
        {0, KernelClass::gemm, "gemm " + std::to_string(g), {100e-6, 100e-6, 100e-6}, {125e-6, 125e-6}});
  for (int i = 0; i < 60; ++i)
    set.telemetry.push_back({0, "card0", 1.0 * i, i < 30 ? 100.0 : 600.0, i < 30 ? 0.0 : 1.0, NAN, NAN,
                             30.0 + (i < 30 ? 5.0 : 30.0 - 25.0 * std::exp(-(i - 30) / 8.0))});
  return set;
}

CalibrationResult synthetic_result() {
  const HardwareReference hw = load_hardware_reference("H100-SXM5-80GB", test::configs_dir());
  KernelFitOptions options;
  options.min_duration_s = 0.0;
  return calibrate(synthetic_set(), hw, options, NodeLinks::nvswitch);
}

/// Every key path (a.b.c) of the mappings in `node`.
void key_paths(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& entry : node) {
    const std::string path =
        prefix.empty() ? entry.first.as<std::string>() : prefix + "." + entry.first.as<std::string>();
    if (entry.second.IsMap())
      key_paths(entry.second, path, out);
    else
      out.push_back(path);
  }
}

bool has_path(const YAML::Node& root, const std::string& path) {
  YAML::Node node = root;
  std::stringstream stream(path);
  for (std::string key; std::getline(stream, key, '.');) {
    if (!node.IsMap() || !node[key]) return false;
    node.reset(node[key]);
  }
  return true;
}

TEST(Profile, OverrideKeysAreHardwareFileKeys) {
  const CalibrationResult result = synthetic_result();
  const YAML::Node profile = YAML::Load(render_profile_yaml(result));
  EXPECT_EQ(profile["profile_version"].as<int>(), kCalibrationProfileVersion);
  EXPECT_EQ(profile["hardware"].as<std::string>(), "H100-SXM5-80GB");
  const YAML::Node hardware = YAML::LoadFile((test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml").string());
  std::vector<std::string> paths;
  for (const char* section : {"kernels", "intra_node_link", "nic"}) {
    ASSERT_TRUE(profile[section]) << section;
    key_paths(profile[section], section, paths);
  }
  EXPECT_GE(paths.size(), 7u);
  for (const auto& path : paths) EXPECT_TRUE(has_path(hardware, path)) << path << " is not a hardware-file key";
  // `collectives.step_latency_us` is a run key (docs/configs.md, `collectives` table).
  EXPECT_TRUE(profile["collectives"]["step_latency_us"]);
  std::ifstream configs_doc(test::source_dir() / "docs" / "configs.md");
  std::stringstream doc;
  doc << configs_doc.rdbuf();
  EXPECT_NE(doc.str().find("`step_latency_us`"), std::string::npos);
  // Only the top-level sections docs/calibration.md lists.
  for (const auto& entry : profile) {
    const std::string key = entry.first.as<std::string>();
    EXPECT_TRUE(key == "profile_version" || key == "hardware" || key == "kernels" || key == "intra_node_link" ||
                key == "nic" || key == "collectives" || key == "telemetry_fit")
        << key;
  }
}

TEST(Profile, ValuesAreTheFittedValuesInFileUnits) {
  const CalibrationResult result = synthetic_result();
  const YAML::Node profile = YAML::Load(render_profile_yaml(result));
  const KernelClassFit* gemm = nullptr;
  for (const auto& fit : result.kernels)
    if (fit.kernel_class == KernelClass::gemm && fit.in_profile) gemm = &fit;
  ASSERT_NE(gemm, nullptr);
  const YAML::Node g = profile["kernels"]["efficiency"]["gemm"];
  EXPECT_NEAR(g["compute"].as<double>(), gemm->compute, 5e-4 * gemm->compute);
  EXPECT_NEAR(g["compute"].as<double>(), 0.7, 1e-3);
  EXPECT_NEAR(g["half_efficiency_gflop"].as<double>(), 5.0, 5e-3);
  EXPECT_NEAR(g["memory"].as<double>(), 0.85, 1e-3);
  EXPECT_NEAR(profile["kernels"]["efficiency"]["elementwise"]["memory"].as<double>(), 0.9, 1e-3);
  EXPECT_FALSE(profile["kernels"]["efficiency"]["elementwise"]["compute"]);  // not fitted, not written
  EXPECT_NEAR(profile["kernels"]["launch_overhead_us"].as<double>(), 2.0, 1e-9);
  EXPECT_NEAR(profile["kernels"]["comm_compute_slowdown"].as<double>(), 0.2, 1e-9);
  EXPECT_NEAR(profile["collectives"]["step_latency_us"].as<double>(), 2.0 - 0.6, 1e-3);
  // Link and NIC rates as efficiencies of the hardware file's nominal 25 GB/s per NVLink and 400 Gbit/s: runs build
  // links with nominal x efficiency, so a bandwidth key here would be derated a second time.
  EXPECT_NEAR(profile["intra_node_link"]["efficiency"].as<double>(), 350.0 / 18 / 25.0, 5e-4);
  EXPECT_NEAR(profile["nic"]["efficiency"].as<double>(), 320.0 / 400.0, 5e-4);
  EXPECT_FALSE(profile["intra_node_link"]["bandwidth_gb_s"]);
  EXPECT_FALSE(profile["nic"]["bandwidth_gbit_s"]);
  EXPECT_NEAR(profile["telemetry_fit"]["idle_power_w"].as<double>(), 100.0, 1e-9);
  EXPECT_NEAR(profile["telemetry_fit"]["load_power_w"].as<double>(), 600.0, 1e-9);
  EXPECT_EQ(profile["telemetry_fit"]["thermal_sensor"].as<std::string>(), "junction");
}

TEST(Profile, SameResultSameBytes) {
  EXPECT_EQ(render_profile_yaml(synthetic_result()), render_profile_yaml(synthetic_result()));
  EXPECT_EQ(render_fit_report(synthetic_result()), render_fit_report(synthetic_result()));
}

class RunCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("chopsim-calibration-run-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "GEMM.csv")
        << "name,param: M,param: N,param: K,GFLOPS_first,Data Moved (MB)_first,Compute Spec,Kernel Time (µs)_median\n"
           "aten::mm,8944,2816,1024,51.581550592,71.0078125,matrix_bf16,84.46\n"
           "aten::mm,8944,1024,1024,18.756927488,36.9375,matrix_bf16,32.4\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CalibrateOptions options(const std::string& name) const {
    CalibrateOptions o;
    o.inputs = {dir_ / "GEMM.csv"};
    o.hardware = "H100-SXM5-80GB";
    o.configs_dir = test::configs_dir();
    o.output = dir_ / (name + ".yaml");
    o.report = dir_ / (name + ".md");
    return o;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
  }
  std::filesystem::path dir_;
};

TEST_F(RunCalibration, DeterministicBytes) {
  (void)run_calibration(options("a"));
  (void)run_calibration(options("a2"));
  // The headers name their own report; everything else is identical.
  auto strip_first = [](std::string text) { return text.substr(text.find('\n')); };
  EXPECT_EQ(strip_first(read(dir_ / "a.yaml")), strip_first(read(dir_ / "a2.yaml")));
  EXPECT_EQ(read(dir_ / "a.md"), read(dir_ / "a2.md"));
  CalibrateOptions same = options("a");
  (void)run_calibration(same);
  const std::string first = read(dir_ / "a.yaml");
  (void)run_calibration(same);
  EXPECT_EQ(read(dir_ / "a.yaml"), first);
  EXPECT_NE(first.find("half_efficiency_gflop"), std::string::npos);
}

TEST_F(RunCalibration, BadInputWritesNothing) {
  std::ofstream(dir_ / "notes.csv") << "a,b\n1,2\n";
  CalibrateOptions bad = options("bad");
  bad.inputs.push_back(dir_ / "notes.csv");
  EXPECT_THROW((void)run_calibration(bad), InputError);
  CalibrateOptions no_hardware = options("bad");
  no_hardware.hardware.clear();
  EXPECT_THROW((void)run_calibration(no_hardware), InputError);
  CalibrateOptions no_folder = options("bad");
  no_folder.output = dir_ / "missing" / "p.yaml";
  EXPECT_THROW((void)run_calibration(no_folder), InputError);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"GEMM.csv", "notes.csv"}));
}

}  // namespace
}  // namespace chopsim
