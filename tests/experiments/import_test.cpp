// `chopsim import` of NeMo configs (issue 18), on the CharLLM-PPT study's 386 NeMo configs
// (../shared/data/configs/charllm_ppt): every pre-training file maps to a run by one rule, except those whose settings
// Megatron itself rejects; LoRA jobs are refused as not pre-training. And Megatron-LM's argument files and test
// configs. The other import tests: import_hf_test.cpp (Hugging Face configs), import_frameworks_test.cpp
// (llm-foundry, torchtitan, Megatron-Bridge).

#include "chopsim/experiments/import.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "import_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::dgx_h100;
using test::Import;

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
  // The one note lists what the mapping did not read (fusion flags, dropout, ...), not the timeless settings (data,
  // tokenizer, learning rate, logging).
  ASSERT_EQ(result.notes.size(), 1u);
  const std::string& unread = result.notes.front();
  EXPECT_EQ(unread.rfind("not imported: ", 0), 0u) << unread;
  EXPECT_NE(unread.find("model.bias_activation_fusion"), std::string::npos) << unread;
  for (const char* timeless :
       {"model.data", "model.tokenizer", "model.optim.lr", "trainer.max_steps", "trainer.devices"})
    EXPECT_EQ(unread.find(timeless), std::string::npos) << timeless;
  for (const char* read : {"model.num_layers", "model.tensor_model_parallel_size", "model.optim.name"})
    EXPECT_EQ(unread.find(std::string(read) + ","), std::string::npos) << read;
  EXPECT_NE(result.yaml.find("# Not imported"), std::string::npos);
}

TEST_F(Import, ANemoMixtureOfExpertsKeepsItsPaddedCapacity) {
  CHOPSIM_REQUIRE_SHARED_DATA("configs/charllm_ppt");
  // CharLLM-PPT's Mixtral jobs pad every expert to capacity 1.0 (moe_expert_capacity_factor 1.0,
  // moe_pad_expert_input_to_capacity true), as the shipped configs/mixtral-8x7b-h200-ep.yaml states.
  const fs::path job = corpus() / "optimization-sweep-h200" / "mixtral-8x7b" / "main" / "mixtral-8x7b_1_00000.yaml";
  ImportResult result;
  const RunSpec run = import_and_load(job, &result);
  EXPECT_EQ(run.training.moe_capacity_factor.value_or(0.0), 1.0);
  for (const std::string& note : result.notes) {
    EXPECT_EQ(note.find("moe_expert_capacity_factor"), std::string::npos) << note;
    EXPECT_EQ(note.find("moe_pad_expert_input_to_capacity"), std::string::npos) << note;
  }
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

TEST_F(Import, NemoLoraJobsImportAndOtherPeftSchemesAreRefused) {
  CHOPSIM_REQUIRE_SHARED_DATA("configs/charllm_ppt");
  // CharLLM-PPT's Llama-3-70B LoRA job (NeMo 1: peft_scheme lora, lora_tuning.adapter_dim 32, no target_modules:
  // NeMo's default, the fused QKV), fine-tuning on samples of at most max_seq_length 2048 tokens.
  const fs::path lora = corpus() / "lora" / "llama3-70b";
  fs::path job;
  for (const auto& entry : fs::recursive_directory_iterator(lora))
    if (entry.path().extension() == ".yaml") job = entry.path();
  ASSERT_FALSE(job.empty());
  const RunSpec run = import_and_load(job);
  EXPECT_EQ(run.training.lora.rank, 32);
  EXPECT_TRUE(run.training.lora.qkv);
  EXPECT_FALSE(run.training.lora.proj || run.training.lora.fc1 || run.training.lora.fc2);
  EXPECT_EQ(run.training.seq_len, 2048);
  std::ifstream in(job);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // With Megatron-Core's local layers the fused softmax's kernel takes the samples' 2,048 keys, though the model's
  // positions go to 8,192 (beyond the kernel's 4,096).
  const std::string positions = "  encoder_seq_length: 8192\n";
  ASSERT_NE(text.find(positions), std::string::npos);
  std::string local = text;
  local.replace(local.find(positions), positions.size(), positions + "  transformer_impl: local\n");
  const TrainingSpec local_training = import_and_load(write("local-lora.yaml", local)).training;
  EXPECT_EQ(local_training.attention, kEagerAttention);
  EXPECT_EQ(local_training.seq_len, 2048);
  EXPECT_TRUE(local_training.masked_softmax_fusion);
  // Another scheme (p-tuning) is refused at its key.
  const std::string scheme = "peft_scheme: lora";
  ASSERT_NE(text.find(scheme), std::string::npos);
  text.replace(text.find(scheme), scheme.size(), "peft_scheme: ptuning");
  const std::string refused = test::input_error([&] { (void)import_and_load(write("ptuning.yaml", text)); });
  EXPECT_NE(refused.find("model.peft.peft_scheme"), std::string::npos) << refused;
  EXPECT_NE(refused.find("a ptuning fine-tuning job"), std::string::npos) << refused;

  const fs::path odd = write("odd.yaml",
                             "trainer: {num_nodes: 1}\nmodel:\n  tensor_model_parallel_size: 1\n  num_layers: 7\n"
                             "  hidden_size: 1000\n  ffn_hidden_size: 4000\n  num_attention_heads: 10\n"
                             "  global_batch_size: 8\n  micro_batch_size: 1\n");
  EXPECT_NE(test::input_error([&] { (void)import_and_load(odd); }).find("give --model NAME"), std::string::npos);
}

TEST_F(Import, NemoInterpolationsAreFollowed) {
  // NeMo's own megatron_gpt_config.yaml refers to other keys: absolute ${model.x}, and ${.x} / ${..x} relative to the
  // key's mapping. A chain of them resolves; one to a key the file does not set is refused at the referring key.
  const std::string job =
      "trainer:\n  num_nodes: 1\n  precision: bf16\n"
      "model:\n  micro_batch_size: 2\n  global_batch_size: ${.gbs}\n  gbs: 16\n"
      "  encoder_seq_length: ${model.data.seq_length}\n  data:\n    seq_length: ${..seq}\n  seq: 4096\n"
      "  tensor_model_parallel_size: 1\n  pipeline_model_parallel_size: 1\n  num_layers: 32\n  hidden_size: 4096\n"
      "  ffn_hidden_size: 14336\n  num_attention_heads: 32\n  num_query_groups: 8\n";
  const RunSpec run = load_run_config(write("interp.yaml", import_nemo(write("job.yaml", job), dgx_h100(1)).yaml),
                                      dgx_h100(1).search, registries_);
  EXPECT_EQ(run.model.name, "llama3-8b");
  EXPECT_EQ(run.training.global_batch, 16);
  EXPECT_EQ(run.training.seq_len, 4096);
  std::string dangling = job;
  dangling.replace(dangling.find("${.gbs}"), 7, "${.batch}");
  const std::string error =
      test::input_error([&] { (void)import_nemo(write("dangling.yaml", dangling), dgx_h100(1)); });
  EXPECT_NE(error.find("model.batch"), std::string::npos) << error;
  EXPECT_NE(error.find("dangling.yaml:6"), std::string::npos) << error;
}

TEST_F(Import, MegatronTestConfigsPredictAsTheHandWrittenValidationRuns) {
  // The MODEL_ARGS of two Megatron-LM functional tests, imported for one DGX H100 node, against the run configs
  // written by hand from the same files for the validation table (configs/validation/megatron-gpt3-7b-*.yaml): the
  // same prediction, figure for figure.
  CHOPSIM_REQUIRE_SHARED_DATA("validation/megatron_lm");
  for (const auto& [test_case, hand_written] :
       std::map<std::string, std::string>{{"gpt3_7b_tp1_pp4_memory_speed", "megatron-gpt3-7b-tp1-pp4.yaml"},
                                          {"gpt3_7b_tp4_pp1_memory_speed", "megatron-gpt3-7b-tp4-pp1.yaml"}}) {
    SCOPED_TRACE(test_case);
    const fs::path job = test::shared_data_dir() / "validation" / "megatron_lm" / test_case / "model_config.yaml";
    ASSERT_TRUE(is_megatron_arguments(job));
    const ImportOptions options = dgx_h100(1);
    const ImportResult result = import_megatron(job, options);
    EXPECT_EQ(result.format, "megatron");
    const RunSpec imported = load_run_config(write(test_case + ".yaml", result.yaml), options.search, registries_);
    const fs::path reference_file = test::configs_dir() / "validation" / hand_written;
    const RunSpec reference = load_run_config(reference_file, default_search_path(reference_file), registries_);
    EXPECT_EQ(imported.model.name, reference.model.name);
    EXPECT_EQ(imported.parallelism.tp, reference.parallelism.tp);
    EXPECT_EQ(imported.parallelism.pp, reference.parallelism.pp);
    EXPECT_EQ(imported.parallelism.dp, reference.parallelism.dp);
    // Megatron-Core's host time per launch on DGX H100, from the cluster file (65 µs, not eager PyTorch's 43 µs).
    EXPECT_DOUBLE_EQ(imported.training.host_launch_s, 65e-6);
    EXPECT_DOUBLE_EQ(imported.training.host_launch_s, reference.training.host_launch_s);
    const RunReport a = run_simulation(imported, registries_, {});
    const RunReport b = run_simulation(reference, registries_, {});
    EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
    EXPECT_NEAR(a.memory.total_bytes, b.memory.total_bytes, 1e-9 * b.memory.total_bytes);
  }
}

TEST_F(Import, MegatronArgumentFilesAreReadAsAShellWouldSplitThem) {
  // Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh: GPT-3 175B, TP 8, PP 16, as the launch line gives it
  // (torchrun and the script first, continuations, a comment, --name=value).
  const fs::path args = write("gpt3_175b.args",
                              "torchrun --nproc_per_node 8 --nnodes 16 pretrain_gpt.py \\\n"
                              "  --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \\\n"
                              "  --seq-length 2048 --max-position-embeddings 2048   # GPT_MODEL_ARGS\n"
                              "  --micro-batch-size 1 --global-batch-size=1536 --train-iters 500000 \\\n"
                              "  --bf16 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 \\\n"
                              "  --data-path \"/data/my gpt\" --use-distributed-optimizer --some-new-flag\n");
  ASSERT_TRUE(is_megatron_arguments(args));
  const ImportOptions options = dgx_h100(16);
  const ImportResult result = import_megatron(args, options);
  const RunSpec run = load_run_config(write("run.yaml", result.yaml), options.search, registries_);
  EXPECT_EQ(run.model.name, "gpt3-175b");  // 96 x 12288, 96 heads, FFN 4 h (Megatron's default)
  EXPECT_EQ(run.parallelism.tp, 8);
  EXPECT_EQ(run.parallelism.pp, 16);
  EXPECT_EQ(run.parallelism.dp, 1);  // 128 GPUs / (8 x 16)
  EXPECT_EQ(run.training.global_batch, 1536);
  EXPECT_EQ(run.training.seq_len, 2048);
  EXPECT_EQ(run.parallelism.zero_stage, 1);
  EXPECT_TRUE(std::any_of(result.notes.begin(), result.notes.end(),
                          [](const std::string& n) { return n == "not imported: --some-new-flag"; }));
  // Block recomputation of the first 2 of each stage's 6 layers is carried over (recompute_layers), not rounded up
  // to every layer; uniform recomputation recomputes them all.
  std::string block_text = test::read_text(args);
  block_text.replace(block_text.find("--bf16"), 6,
                     "--bf16 --recompute-granularity full --recompute-method block --recompute-num-layers 2");
  const fs::path block = write("block.args", block_text);
  const RunSpec block_run =
      load_run_config(write("block.yaml", import_megatron(block, options).yaml), options.search, registries_);
  EXPECT_EQ(block_run.training.recompute, RecomputePolicy::full);
  EXPECT_EQ(block_run.training.recompute_layers, 2);
  std::string uniform_text = test::read_text(block);
  uniform_text.replace(uniform_text.find("block"), 5, "uniform");
  const RunSpec uniform_run =
      load_run_config(write("uniform.yaml", import_megatron(write("uniform.args", uniform_text), options).yaml),
                      options.search, registries_);
  EXPECT_EQ(uniform_run.training.recompute_layers, 0);
  // --fp8-recipe: tensorwise is Transformer Engine's current scaling, mxfp8 block scaling; plain --fp8-format keeps
  // TE's default, delayed scaling.
  for (const auto& [flags, recipe] : std::vector<std::pair<std::string, Fp8Recipe>>{
           {"--fp8-format hybrid", Fp8Recipe::delayed},
           {"--fp8-format hybrid --fp8-recipe tensorwise", Fp8Recipe::current},
           {"--fp8-format e4m3 --fp8-recipe mxfp8", Fp8Recipe::mxfp8}}) {
    std::string fp8_text = test::read_text(args);
    fp8_text.replace(fp8_text.find("--bf16"), 6, "--bf16 " + flags);
    const RunSpec fp8_run = load_run_config(
        write("fp8.yaml", import_megatron(write("fp8.args", fp8_text), options).yaml), options.search, registries_);
    EXPECT_EQ(fp8_run.training.precision, Precision::fp8) << flags;
    EXPECT_EQ(fp8_run.training.fp8_recipe, recipe) << flags;
  }
  // A malformed value is refused naming the argument.
  const fs::path bad = write("bad.args",
                             "--num-layers lots --hidden-size 4096 --num-attention-heads 32 "
                             "--global-batch-size 8 --seq-length 2048\n");
  EXPECT_NE(test::input_error([&] { (void)import_megatron(bad, options); }).find("--num-layers"), std::string::npos);
}

// kernel for 16-bit scores of at most 4,096 keys (megatron/core/fusions/fused_softmax.py) unless

TEST_F(Import, MegatronLocalLayersAttendOverMaterialisedScores) {
  const auto imported = [&](const std::string& flags, int seq_len) {
    const fs::path args = write("local.args",
                                "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                                "--micro-batch-size 1 --global-batch-size 64 --bf16 --seq-length " +
                                    std::to_string(seq_len) + " " + flags + "\n");
    const ImportOptions options = dgx_h100(1);
    return load_run_config(write("local.yaml", import_megatron(args, options).yaml), options.search, registries_)
        .training;
  };
  const TrainingSpec local = imported("--transformer-impl local", 4096);
  EXPECT_EQ(local.attention, kEagerAttention);
  EXPECT_TRUE(local.masked_softmax_fusion);
  EXPECT_FALSE(imported("--transformer-impl local --no-masked-softmax-fusion", 4096).masked_softmax_fusion);
  const TrainingSpec long_keys = imported("--transformer-impl local", 8192);  // beyond the kernel: PyTorch's passes
  EXPECT_EQ(long_keys.attention, kEagerAttention);
  EXPECT_FALSE(long_keys.masked_softmax_fusion);
  const TrainingSpec engine = imported("", 4096);
  EXPECT_NE(engine.attention, kEagerAttention);
  EXPECT_FALSE(engine.masked_softmax_fusion);
}

TEST_F(Import, MegatronDefaultBucketFollowsTheClustersGpusPerNode) {
  // Megatron-Core's default gradient bucket is max(40e6, 1e6 x data-parallel size) parameters; the data-parallel size
  // is nodes x GPUs per node / (tp x pp x cp), so a node of 4 GPUs halves it (the importer assumed 8 before).
  const fs::path args = write("dp.args",
                              "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
                              "--micro-batch-size 1 --global-batch-size 1024 --bf16\n");
  std::string four(test::read_text(test::configs_dir() / "clusters" / "dgx-h100.yaml"));
  four.replace(four.find("gpus_per_node: 8"), 16, "gpus_per_node: 4");
  four.replace(four.find("nics_per_node: 8"), 16, "nics_per_node: 4");
  const fs::path four_gpu_cluster = write("four-gpu-nodes.yaml", four);
  const double bf16_mib_per_million = 1e6 * 2.0 / (1 << 20);
  for (const auto& [cluster, gpus_per_node] :
       std::vector<std::pair<std::string, int>>{{"dgx-h100", 8}, {four_gpu_cluster.string(), 4}}) {
    ImportOptions options = dgx_h100(16);
    options.cluster = cluster;
    const ImportResult result = import_megatron(args, options);
    const RunSpec run = load_run_config(write("bucket.yaml", result.yaml), options.search, registries_);
    const int dp = 16 * gpus_per_node;  // tp = pp = cp = 1
    EXPECT_EQ(run.parallelism.dp, dp) << cluster;
    EXPECT_NEAR(run.training.dp_bucket_bytes / (1 << 20), dp * bf16_mib_per_million, 0.05) << cluster;
  }
}

}  // namespace
}  // namespace chopsim
