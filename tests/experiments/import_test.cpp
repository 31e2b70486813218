// `chopsim import` of NeMo configs (issue 18), on the CharLLM-PPT study's 386 NeMo configs
// (../shared/data/configs/charllm_ppt): every pre-training file maps to a run by one rule, except those whose settings
// Megatron itself rejects; LoRA jobs are refused as not pre-training.

#include "chopsim/experiments/import.hpp"

#include <gtest/gtest.h>

#include <map>

#include "chopsim/experiments/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

class Import : public test::TempDirTest {
 protected:
  static fs::path corpus() { return test::shared_data_dir() / "configs" / "charllm_ppt"; }
  /// Imports `job` for the GPU its study folder names and loads the result as chopsim run would.
  RunSpec import_and_load(const fs::path& job, ImportResult* out = nullptr) {
    const bool h100 = job.string().find("h100") != std::string::npos;
    ImportOptions options;
    options.hardware = h100 ? "H100-SXM5-80GB" : "H200-SXM-141GB";
    options.cluster = h100 ? "dgx-h100" : "dgx-h200";
    options.search = ConfigSearchPath{{test::configs_dir()}};
    const ImportResult result = import_nemo(job, options);
    if (out != nullptr) *out = result;
    const fs::path run = write(job.stem().string() + ".yaml", result.yaml);
    return load_run_config(run, options.search, registries_);
  }
  const ModelRegistries registries_ = ModelRegistries::with_builtins();
};

TEST_F(Import, ANemoConfigMapsKeyByKey) {
  CHOPSIM_REQUIRE_SHARED_DATA("configs/charllm_ppt");
  const fs::path job = corpus() / "microbatch-sweep-h200" / "llama3-70b" / "main" / "llama3-70b_1_mbs1.yaml";
  ASSERT_EQ(detect_job_format(job), "nemo");
  ImportResult result;
  const RunSpec run = import_and_load(job, &result);
  EXPECT_EQ(run.model.layers, 80);  // matched to the shipped llama3-70b by shape
  EXPECT_EQ(run.model.kv_heads, 8);
  EXPECT_EQ(run.hardware.name, "H200-SXM-141GB");
  EXPECT_EQ(run.cluster.gpu_count(), 32);  // trainer.num_nodes 4 x 8
  EXPECT_EQ(run.parallelism.tp, 8);
  EXPECT_EQ(run.parallelism.pp, 2);
  EXPECT_EQ(run.parallelism.dp, 2);  // what tp x pp leave of 32 GPUs
  EXPECT_TRUE(run.parallelism.sequence_parallel);
  EXPECT_EQ(run.parallelism.zero_stage, 1);  // distributed_fused_adam
  EXPECT_EQ(run.training.global_batch, 128);
  EXPECT_EQ(run.training.micro_batch, 1);
  EXPECT_EQ(run.training.seq_len, 8192);
  EXPECT_EQ(run.training.recompute, RecomputePolicy::full);  // granularity full, 40 of 40 layers per stage
  EXPECT_TRUE(result.notes.empty());
}

TEST_F(Import, EveryCharLlmPptPretrainingConfigImportsButThoseMegatronRejects) {
  CHOPSIM_REQUIRE_SHARED_DATA("configs/charllm_ppt");
  int imported = 0, total = 0;
  std::map<std::string, int> rejected;  // by the rule that rejects them
  for (const auto& entry : fs::recursive_directory_iterator(corpus())) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".yaml" || path.find("/lora/") != std::string::npos ||
        path.find("/inference/") != std::string::npos)
      continue;
    ++total;
    try {
      (void)import_and_load(entry.path());
      ++imported;
    } catch (const InputError& e) {
      ++rejected[e.key()];
    }
  }
  EXPECT_EQ(total, 188);
  EXPECT_EQ(imported, 183);
  // 80 layers on PP 32 (four optimization-sweep files), and a micro-batch of 8 that a global batch of 128 over 32
  // data ranks cannot give each rank.
  EXPECT_EQ(rejected, (std::map<std::string, int>{{"parallelism.pp", 4}, {"training.global_batch", 1}}));
}

TEST_F(Import, LoraJobsAndUnknownShapesAreRefused) {
  CHOPSIM_REQUIRE_SHARED_DATA("configs/charllm_ppt");
  const fs::path lora = corpus() / "lora" / "llama3-70b";
  fs::path job;
  for (const auto& entry : fs::recursive_directory_iterator(lora))
    if (entry.path().extension() == ".yaml") job = entry.path();
  ASSERT_FALSE(job.empty());
  EXPECT_NE(test::input_error([&] { (void)import_and_load(job); }).find("lora fine-tuning job"), std::string::npos);

  const fs::path odd = write("odd.yaml",
                             "trainer: {num_nodes: 1}\nmodel:\n  tensor_model_parallel_size: 1\n  num_layers: 7\n"
                             "  hidden_size: 1000\n  ffn_hidden_size: 4000\n  num_attention_heads: 10\n"
                             "  global_batch_size: 8\n  micro_batch_size: 1\n");
  EXPECT_NE(test::input_error([&] { (void)import_and_load(odd); }).find("give --model NAME"), std::string::npos);
}

}  // namespace
}  // namespace chopsim
