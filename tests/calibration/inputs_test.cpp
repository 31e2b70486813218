// Input reading: every supported table kind on small files with known contents, kernel-name element types, the
// hardware file reader, and the errors for inputs calibration cannot use.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "chopsim/calibration/hardware_reference.hpp"
#include "chopsim/calibration/measurements.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("chopsim-calibration-inputs-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
    return path_ / name;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The InputError message of loading `paths`, or "" if it loads.
std::string load_error(const std::vector<std::filesystem::path>& paths) {
  try {
    (void)load_measurements(paths);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// A store whose records carry their launch calls: one CPU thread launching five kernels. Launch intervals count
// where the GPU waited for the launch (HostLaunches): the kernel started within 15 µs of its call's end and the
// kernel launched before had ended by then.
TEST(Stores, HostLaunchIntervalsWhereTheGpuWaited) {
  const TempDir dir;
  const auto path = dir.path() / "launches.h5";
  {
    KernelStoreWriter writer(path);
    writer.begin_source(0);
    // (launch call start, end, kernel start, duration), seconds.
    const double calls[][4] = {
        {0.0, 5e-6, 10e-6, 20e-6},        // first: no interval
        {40e-6, 45e-6, 50e-6, 10e-6},     // waited (kernel 5 µs after the call; previous ended at 30 µs): 40 µs
        {70e-6, 75e-6, 200e-6, 10e-6},    // the GPU was busy elsewhere: started 125 µs after the call
        {100e-6, 105e-6, 210e-6, 10e-6},  // previous kernel (200-210 µs) had not ended by 105 µs
        {300e-6, 302e-6, 310e-6, 10e-6},  // waited: 200 µs
    };
    for (const auto& c : calls) {
      KernelRecord r;
      r.device = 0;
      r.stream = 7;
      r.name = writer.intern("k");
      r.start_s = c[2];
      r.duration_s = c[3];
      r.launch_start_s = c[0];
      r.launch_end_s = c[1];
      r.launch_thread = 42;
      writer.add_kernel(r);
    }
    KernelRecord unlaunched;  // a record without its launch call (other tools): not counted
    unlaunched.device = 0;
    unlaunched.name = writer.intern("k");
    unlaunched.start_s = 1e-3;
    unlaunched.duration_s = 1e-6;
    writer.add_kernel(unlaunched);
    SourceInfo source;
    source.path = "synthetic.json";
    source.format = "kineto";
    source.kernel_count = 6;
    writer.finish({source});
  }
  const MeasurementSet set = load_measurements({path});
  ASSERT_EQ(set.host_launches.size(), 1u);
  const HostLaunches& h = set.host_launches.front();
  EXPECT_EQ(h.thread, "thread 42");
  EXPECT_EQ(h.launches, 5u);
  ASSERT_EQ(h.waited_intervals_s.size(), 2u);
  EXPECT_NEAR(h.waited_intervals_s[0], 40e-6, 1e-15);
  EXPECT_NEAR(h.waited_intervals_s[1], 200e-6, 1e-15);
}

constexpr const char* kGemmHeader =
    "name,param: M,param: N,param: K,GFLOPS_first,Data Moved (MB)_first,Compute Spec,Kernel Time (\xC2\xB5s)_median\n";

TEST(Tables, TraceLensGemmAndElementwise) {
  TempDir dir;
  const auto gemm = dir.write("GEMM.csv", std::string(kGemmHeader) +
                                              "aten::mm,8944,1024,1024,18.756927488,36.9375,matrix_bf16,32.4\n"
                                              "aten::bmm,1,32,559,3.5776e-05,0.07,matrix_fp32,3.5\n");
  const auto binary = dir.write("Binary.csv",
                                "name,param: shape_in1,Data Moved (MB)_first,\"Kernel Time (\xC2\xB5s)_median\"\n"
                                "aten::add,\"(16, 559, 1024)\",52.40625,17.86\n");
  const MeasurementSet set = load_measurements({gemm, binary});
  ASSERT_EQ(set.inputs.size(), 2u);
  EXPECT_EQ(set.inputs[0].kind, "tracelens-gemm");
  EXPECT_EQ(set.inputs[1].kind, "tracelens-elementwise");
  EXPECT_EQ(set.inputs[0].sha256.size(), 64u);
  ASSERT_EQ(set.kernels.size(), 3u);
  EXPECT_EQ(set.kernels[0].kernel_class, KernelClass::gemm);
  EXPECT_EQ(set.kernels[0].dtype, "bf16");
  EXPECT_DOUBLE_EQ(set.kernels[0].flops, 18.756927488e9);
  EXPECT_DOUBLE_EQ(set.kernels[0].bytes, 36.9375 * 1024 * 1024);  // TraceLens "MB" are MiB
  EXPECT_DOUBLE_EQ(set.kernels[0].duration_s, 32.4e-6);
  EXPECT_EQ(set.kernels[0].label, "aten::mm 8944x1024x1024");
  EXPECT_EQ(set.kernels[1].dtype, "fp32");
  EXPECT_EQ(set.kernels[2].kernel_class, KernelClass::elementwise);
  EXPECT_DOUBLE_EQ(set.kernels[2].flops, 0.0);
}

TEST(Tables, VidurOpProfileShapes) {
  TempDir dir;
  // Llama-2-70B shapes, 512 tokens, TP 2; times in ms.
  const auto mlp = dir.write(
      "mlp.csv",
      ",time_stats.attn_pre_proj.median,time_stats.attn_post_proj.median,time_stats.mlp_up_proj.median,"
      "time_stats.mlp_down_proj.median,time_stats.mlp_act.median,time_stats.add.median,time_stats.attn_rope.median,"
      "time_stats.input_layernorm.median,time_stats.post_attention_layernorm.median,n_head,n_kv_head,n_embd,"
      "n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n"
      "0,0.1,0.1,0.4,0.2,0.02,0.01,0.005,0.01,0.01,64,8,8192,28672,32768,True,512,2\n");
  const MeasurementSet set = load_measurements({mlp});
  ASSERT_EQ(set.kernels.size(), 9u);
  const double t = 512, h = 8192, ffn = 28672, hd = 128, tp = 2;
  const KernelSample& qkv = set.kernels[0];
  EXPECT_EQ(qkv.kernel_class, KernelClass::gemm);
  EXPECT_EQ(qkv.dtype, "fp16");
  EXPECT_DOUBLE_EQ(qkv.flops, 2 * t * h * (64 + 16) * hd / tp);
  const KernelSample& up = set.kernels[2];
  EXPECT_DOUBLE_EQ(up.flops, 2 * t * h * 2 * ffn / tp);
  EXPECT_DOUBLE_EQ(up.bytes, 2 * (t * h + h * 2 * ffn / tp + t * 2 * ffn / tp));
  EXPECT_DOUBLE_EQ(up.duration_s, 0.4e-3);
  const KernelSample& act = set.kernels[4];
  EXPECT_EQ(act.kernel_class, KernelClass::elementwise);
  EXPECT_DOUBLE_EQ(act.bytes, 2 * 3 * t * ffn / tp);
  EXPECT_EQ(set.kernels[7].kernel_class, KernelClass::norm);
  EXPECT_DOUBLE_EQ(set.kernels[7].bytes, 2 * (2 * t * h + h));
}

TEST(Tables, CollectiveTables) {
  TempDir dir;
  const auto vidur = dir.write("all_reduce.csv",
                               ",time_stats.send_recv.median,rank,num_workers,size,collective,devices_per_node\n"
                               "0,0.017,0,2,2048,send_recv,1\n1,0.005,0,2,2048,send_recv,2\n");
  const auto rccl =
      dir.write("nccl_summary_implicit_sync.csv",
                "Collective name,dtype,In msg nelems,Process Group Name,Group size,comm_latency_median\n"
                "_allgather_base,BFloat16,106956800,0,8,6065.4\n_reduce_scatter_base,Float,855654400,0,8,11667.5\n");
  const MeasurementSet set = load_measurements({vidur, rccl});
  ASSERT_EQ(set.collectives.size(), 4u);
  EXPECT_EQ(set.collectives[0].scope, LinkScope::inter_node);
  EXPECT_EQ(set.collectives[1].scope, LinkScope::intra_node);
  EXPECT_DOUBLE_EQ(set.collectives[0].bytes, 2048);
  EXPECT_DOUBLE_EQ(set.collectives[0].duration_s, 17e-6);
  EXPECT_EQ(set.collectives[2].kind, CollectiveKind::all_gather);
  EXPECT_DOUBLE_EQ(set.collectives[2].bytes, 106956800.0 * 2 * 8);  // the gathered output
  EXPECT_EQ(set.collectives[3].kind, CollectiveKind::reduce_scatter);
  EXPECT_DOUBLE_EQ(set.collectives[3].bytes, 855654400.0 * 4);  // the input
  EXPECT_DOUBLE_EQ(set.collectives[3].duration_s, 11667.5e-6);
}

TEST(Tables, BadInputsNameTheFileAndTheProblem) {
  TempDir dir;
  const auto unknown = dir.write("notes.csv", "a,b,c\n1,2,3\n");
  std::string message = load_error({unknown});
  EXPECT_NE(message.find("notes.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("tracelens-gemm"), std::string::npos) << message;  // lists the supported kinds
  EXPECT_NE(message.find("kineto"), std::string::npos) << message;

  const auto header_only = dir.write("GEMM.csv", kGemmHeader);
  message = load_error({header_only});
  EXPECT_NE(message.find("no rows"), std::string::npos) << message;

  const auto bad_number = dir.write("GEMM2.csv", std::string(kGemmHeader) +
                                                     "aten::mm,1,1,1,18.7,36.9,matrix_bf16,32.4\n"
                                                     "aten::mm,1,1,1,18.7,36.9,matrix_bf16,fast\n");
  message = load_error({bad_number});
  EXPECT_NE(message.find("GEMM2.csv:3"), std::string::npos) << message;
  EXPECT_NE(message.find("fast"), std::string::npos) << message;

  const auto empty = dir.write("empty.csv", "");
  EXPECT_NE(load_error({empty}).find("empty"), std::string::npos);
  EXPECT_NE(load_error({dir.path() / "missing.csv"}).find("not found"), std::string::npos);
  const auto good = dir.write("GEMM3.csv", std::string(kGemmHeader) + "aten::mm,1,1,1,18.7,36.9,matrix_bf16,32.4\n");
  EXPECT_NE(load_error({good, good}).find("twice"), std::string::npos);
  EXPECT_NE(load_error({}).find("no input"), std::string::npos);
}

TEST(HardwareReference, ReadsTheShippedH100File) {
  const HardwareReference hw = load_hardware_reference("H100-SXM5-80GB", test::configs_dir());
  EXPECT_EQ(hw.vendor, "nvidia");
  EXPECT_DOUBLE_EQ(hw.peak_for("bf16"), 989.4e12);
  EXPECT_DOUBLE_EQ(hw.peak_for("fp32"), 66.9e12);
  EXPECT_DOUBLE_EQ(hw.hbm_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(hw.rated_clock_hz, 1830e6);
  EXPECT_EQ(hw.intra_node_links_per_gpu, 18);
  EXPECT_EQ(hw.default_node_links(), NodeLinks::nvswitch);
  EXPECT_GT(hw.efficiency[static_cast<std::size_t>(KernelClass::gemm)].half_efficiency_flops, 0.0);
  const HardwareReference amd = load_hardware_reference("MI300X", test::configs_dir());
  EXPECT_EQ(amd.default_node_links(), NodeLinks::xgmi_mesh);
  EXPECT_DOUBLE_EQ(amd.rated_clock_hz, amd.boost_clock_hz);  // no `rated`: the boost clock
}

TEST(HardwareReference, Errors) {
  try {
    (void)load_hardware_reference("H101", test::configs_dir());
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("H100-SXM5-80GB"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)load_hardware_reference("", test::configs_dir()), InputError);
  TempDir dir;
  const auto partial =
      dir.write("gpu.yaml", "vendor: nvidia\npeak_tflops: {bf16: 100, fp32: 10}\nclocks_mhz: {boost: 1000}\n");
  try {
    (void)load_hardware_reference(partial.string(), test::configs_dir());
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.key(), "hbm.bandwidth_tb_s");
  }
}

}  // namespace
}  // namespace chopsim
