// ingest_traces(): several formats into one store, the summary, and every kind of bad input (each an InputError
// naming the file, with no store and no temporary file left behind).
#include "chopsim/traces/ingest.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>

#include "byte_source.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

class Ingest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("chopsim_ingest_test_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    register_builtin_trace_formats(formats_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  IngestResult ingest(std::vector<std::filesystem::path> inputs) {
    IngestOptions options;
    options.inputs = std::move(inputs);
    options.output = dir_ / "store.h5";
    return ingest_traces(options, formats_);
  }

  /// Ingesting `inputs` fails with an InputError whose message names `file` and contains `needle`, and leaves
  /// the output directory empty.
  void expect_rejected(std::vector<std::filesystem::path> inputs, const std::string& file, const std::string& needle) {
    try {
      (void)ingest(std::move(inputs));
      FAIL() << "no error";
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(file), std::string::npos) << message;
      EXPECT_NE(message.find(needle), std::string::npos) << message;
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "partial output left in " << dir_;
  }

  std::filesystem::path write(const std::string& name, const std::string& content) {
    const auto path =
        dir_.parent_path() / (dir_.filename().string() + "_" + name);  // beside dir_, which must stay empty
    std::ofstream(path, std::ios::binary) << content;
    inputs_made_.push_back(path);
    return path;
  }

  std::filesystem::path dir_;
  TraceFormatRegistry formats_;
  std::vector<std::filesystem::path> inputs_made_;

 public:
  ~Ingest() override {
    for (const auto& p : inputs_made_) std::filesystem::remove(p);
  }
};

std::filesystem::path shared(const std::string& relative) { return test::shared_data_dir() / relative; }

TEST_F(Ingest, KinetoNsysRocprofAndTelemetryIntoOneStore) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_2rank_nccl.json.gz");
  const std::string power =
      "power/mi300x_rocm_smi_inference/gpu_power_Llama-3.1-8B_latency_bs8_in128_out128_float16_"
      "mem0.9_20250807_191332.csv";
  const auto result =
      ingest({shared("traces/kineto/hta_a100_2rank_nccl.json.gz"), shared(power), test::fixture("nvidia_smi.csv")});
  ASSERT_EQ(result.sources.size(), 3U);
  EXPECT_EQ(result.sources[0].kernel_count, 3774U);
  EXPECT_EQ(result.sources[1].telemetry_count, 2888U);
  EXPECT_EQ(result.sources[2].format, "nvidia-smi");
  EXPECT_EQ(result.sources[0].sha256.size(), 64U);
  // Summary: the NCCL all-reduce is the top kernel with 28.31 % of the GPU time (46762.159 / 165185.838 us).
  ASSERT_FALSE(result.summary.top_kernels.empty());
  EXPECT_TRUE(result.summary.top_kernels[0].name.starts_with("ncclKernel_AllReduce"));
  EXPECT_NEAR(result.summary.top_kernels[0].share, 46762.159 / 165185.838, 1e-9);
  EXPECT_EQ(result.summary.classes[0].kernel_class, KernelClass::communication);
  double shares = 0.0;
  for (const auto& c : result.summary.classes) shares += c.share;
  EXPECT_NEAR(shares, 1.0, 1e-12);
  ASSERT_EQ(result.summary.ranks.size(), 1U);
  EXPECT_EQ(result.summary.ranks[0].label, "rank 0");
  EXPECT_EQ(result.summary.stream_count, 2U);

  const KernelStore store = KernelStore::open(dir_ / "store.h5");
  EXPECT_EQ(store.kernel_count(), 3774U);
  EXPECT_EQ(store.telemetry().size(), 2888U + 6U);
  EXPECT_EQ(store.sources()[0].sha256, result.sources[0].sha256);
  std::ostringstream text;
  print_summary(text, result.summary);
  EXPECT_NE(text.str().find("communication"), std::string::npos);
  // Only the store is in the output directory: the temporary file was renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST_F(Ingest, TruncatedGzipAndTruncatedJson) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_2rank_nccl.json.gz");
  const auto source = shared("traces/kineto/hta_a100_2rank_nccl.json.gz");
  std::ifstream in(source, std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto cut_gz = write("cut.json.gz", gz.substr(0, gz.size() / 2));
  expect_rejected({cut_gz}, cut_gz.filename().string(), "truncated");
  // The same trace decompressed and cut in the middle of the traceEvents array.
  auto bytes = detail::ByteSource::open(source);
  std::string json(4 << 20, '\0');
  json.resize(bytes->read(json.data(), json.size()));
  const auto cut_json = write("cut.json", json);
  expect_rejected({cut_json}, cut_json.filename().string(), "truncated");
}

TEST_F(Ingest, UnknownFormatListsTheFormats) {
  const auto text = write("notes.txt", "these are my notes, not a trace\n");
  expect_rejected({text}, text.filename().string(), "kineto");
  expect_rejected({text}, text.filename().string(), "nsys-sqlite");
  const auto empty = write("empty.json", "");
  expect_rejected({empty}, empty.filename().string(), "empty");
  const auto chakra = write("et.json", R"({"schema": "1.0.2-chakra.0.0.4", "nodes": [{"id": 1}]})");
  expect_rejected({chakra}, chakra.filename().string(), "no format chopsim reads");
}

TEST_F(Ingest, WrongSchemaAndEmptyTrace) {
  expect_rejected({test::fixture("kineto_no_trace_events.json")}, "kineto_no_trace_events.json", "traceEvents");
  expect_rejected({test::fixture("not_nsys.sqlite")}, "not_nsys.sqlite", "CUPTI_ACTIVITY_KIND");
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_no_distributed_info.json.gz");
  expect_rejected({shared("traces/kineto/hta_no_distributed_info.json.gz")}, "hta_no_distributed_info.json.gz",
                  "no GPU kernels");
  const auto no_events = write("no_events.json", R"({"schemaVersion": 1, "traceEvents": []})");
  expect_rejected({no_events}, no_events.filename().string(), "no GPU kernels");
}

TEST_F(Ingest, AmbiguousRanksAreRejected) {
  CHOPSIM_REQUIRE_SHARED_DATA("traces/kineto/hta_a100_rank0of16.json.gz");
  // Two single-GPU traces without distributedInfo: which rank is which?
  expect_rejected({shared("traces/kineto/tracelens_h100_qwen05b.json.gz"),
                   shared("traces/kineto/tracelens_mi300x_qwen05b.json.gz")},
                  "tracelens_h100_qwen05b.json.gz", "does not say which rank");
  // Both rank 0 (of 2 and of 16): two runs mixed.
  expect_rejected(
      {shared("traces/kineto/hta_a100_2rank_nccl.json.gz"), shared("traces/kineto/hta_a100_rank0of16.json.gz")},
      "hta_a100_rank0of16.json.gz", "rank 0 is also the rank of");
  // Rank 3 of 8 next to rank 0 of 16: different world sizes.
  expect_rejected(
      {shared("traces/kineto/hta_a100_rank0of16.json.gz"), shared("traces/kineto/hta_a100_rank3of8_dlrm.json.gz")},
      "hta_a100_rank3of8_dlrm.json.gz", "world size");
  // The same file twice.
  expect_rejected(
      {shared("traces/kineto/hta_a100_2rank_nccl.json.gz"), shared("traces/kineto/hta_a100_2rank_nccl.json.gz")},
      "hta_a100_2rank_nccl.json.gz", "same content");
  // A kernel trace with telemetry is not ambiguous.
  EXPECT_NO_THROW(
      (void)ingest({shared("traces/kineto/tracelens_h100_qwen05b.json.gz"), test::fixture("nvidia_smi.csv")}));
}

TEST_F(Ingest, MissingInputAndForcedFormat) {
  expect_rejected({dir_ / "does_not_exist.json"}, "does_not_exist.json", "no such file");
  IngestOptions options;
  options.inputs = {test::fixture("nvidia_smi.csv")};
  options.format = "no-such-format";
  EXPECT_THROW((void)ingest_traces(options, formats_), UnknownNameError);
  options.format = "nvidia-smi";
  const auto result = ingest_traces(options, formats_);  // no output: summary only
  EXPECT_EQ(result.sources[0].telemetry_count, 6U);
  EXPECT_EQ(result.summary.telemetry.size(), 2U);
}

}  // namespace
}  // namespace chopsim
