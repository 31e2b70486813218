// `chopsim import` of NeMo configs (issue 18), on the CharLLM-PPT study's 386 NeMo configs
// (../shared/data/configs/charllm_ppt): every pre-training file maps to a run by one rule, except those whose settings
// Megatron itself rejects; LoRA jobs are refused as not pre-training.

#include "chopsim/experiments/import.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
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

fs::path hf_fixture(const std::string& name) {
  return test::source_dir() / "tests" / "experiments" / "fixtures" / "hf" / name;
}

/// Import options for DGX H100 nodes with the shipped configs.
ImportOptions dgx_h100(int nodes) {
  ImportOptions options;
  options.hardware = "H100-SXM5-80GB";
  options.cluster = "dgx-h100";
  options.nodes = nodes;
  options.search = ConfigSearchPath{{test::configs_dir()}};
  return options;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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

TEST_F(Import, HuggingFaceConfigsGiveTheShippedModelFiles) {
  // The published config.json of three models (fixtures/hf/README.md names them) against the model files chopsim
  // ships for them, written by hand from the same sources: every shape figure equal.
  for (const auto& [json, shipped] : std::map<std::string, std::string>{{"meta-llama-3-8b.json", "llama3-8b"},
                                                                        {"qwen3-30b-a3b.json", "qwen3-30b-a3b"},
                                                                        {"mixtral-8x7b.json", "mixtral-8x7b"}}) {
    SCOPED_TRACE(json);
    ASSERT_TRUE(is_hf_config(hf_fixture(json)));
    const ImportResult result = import_hf_model(hf_fixture(json));
    EXPECT_EQ(result.format, "hf");
    const TransformerSpec imported = load_model_config(write(shipped + ".yaml", result.yaml));
    const TransformerSpec expected = load_model_config(test::configs_dir() / "models" / (shipped + ".yaml"));
    EXPECT_EQ(imported.layers, expected.layers);
    EXPECT_EQ(imported.hidden, expected.hidden);
    EXPECT_EQ(imported.ffn_hidden, expected.ffn_hidden);
    EXPECT_EQ(imported.heads, expected.heads);
    EXPECT_EQ(imported.kv_heads, expected.kv_heads);
    EXPECT_EQ(imported.head_dim(), expected.head_dim());
    EXPECT_EQ(imported.vocab, expected.vocab);
    EXPECT_EQ(imported.experts, expected.experts);
    EXPECT_EQ(imported.top_k, expected.top_k);
    EXPECT_EQ(imported.mlp, expected.mlp);
    EXPECT_EQ(imported.norm, expected.norm);
    EXPECT_EQ(imported.tied_embeddings, expected.tied_embeddings);
    EXPECT_EQ(imported.qk_norm, expected.qk_norm);
    // Every key of these files is read or known to set nothing chopsim predicts.
    for (const std::string& note : result.notes) EXPECT_EQ(note.find("not imported"), std::string::npos) << note;
  }
  // Qwen3 normalises each head's query and key; its head_dim (128, not 2048 / 32) is written.
  const ImportResult qwen = import_hf_model(hf_fixture("qwen3-30b-a3b.json"));
  EXPECT_NE(qwen.yaml.find("head_dim: 128"), std::string::npos);
  EXPECT_TRUE(load_model_config(write("qwen3.yaml", qwen.yaml)).qk_norm);
}

TEST_F(Import, HuggingFaceArchitecturesChopsimCannotDescribeAreRefusedWithTheReason) {
  const std::string gemma = test::input_error([&] {
    (void)import_hf_model(write("gemma2.json", "{\"architectures\": [\"Gemma2ForCausalLM\"], \"hidden_size\": 2304}"));
  });
  EXPECT_NE(gemma.find("architectures"), std::string::npos) << gemma;
  EXPECT_NE(gemma.find("soft-capping"), std::string::npos) << gemma;
  // Dense layers among Qwen3-MoE's expert layers (first ones: dense_layers, else refused), an unknown key listed, a
  // wrong type at its line.
  std::string text = read_text(hf_fixture("qwen3-30b-a3b.json"));
  const std::string mixed = text;
  EXPECT_NE(
      test::input_error([&] {
        (void)import_hf_model(write("mixed.json", std::string(mixed).replace(mixed.find("\"mlp_only_layers\": []"), 21,
                                                                             "\"mlp_only_layers\": [1, 3]")));
      }).find("dense layers among the expert layers are modelled only as the first ones"),
      std::string::npos);
  const ImportResult first =
      import_hf_model(write("first.json", std::string(mixed).replace(mixed.find("\"mlp_only_layers\": []"), 21,
                                                                     "\"mlp_only_layers\": [0, 1]")));
  const TransformerSpec first_model = load_model_config(write("first.yaml", first.yaml));
  EXPECT_EQ(first_model.dense_layers, 2);
  EXPECT_EQ(first_model.dense_ffn_hidden, 6144);  // Qwen3-30B-A3B's intermediate_size
  const ImportResult extra =
      import_hf_model(write("extra.json", std::string(text).replace(1, 0, "\n  \"new_key\": 3,")));
  EXPECT_TRUE(std::any_of(extra.notes.begin(), extra.notes.end(),
                          [](const std::string& n) { return n == "not imported: new_key"; }));
  const std::string bad = test::input_error([&] {
    (void)import_hf_model(write("bad.json", std::string(text).replace(text.find("\"num_hidden_layers\": 48"), 23,
                                                                      "\"num_hidden_layers\": \"many\"")));
  });
  EXPECT_NE(bad.find("num_hidden_layers"), std::string::npos) << bad;
  EXPECT_NE(bad.find("bad.json"), std::string::npos) << bad;  // the file named
  EXPECT_FALSE(is_hf_config(test::configs_dir() / "llama3-8b-fsdp.yaml"));
}

TEST_F(Import, DeepSeekV3IsImportedWithItsLatentAttentionAndDenseFirstLayers) {
  // deepseek-ai/DeepSeek-V3's config.json: the model file counts the technical report's 671B parameters.
  const ImportResult result = import_hf_model(hf_fixture("deepseek-v3.json"));
  const TransformerSpec model = load_model_config(write("deepseek-v3.yaml", result.yaml));
  EXPECT_TRUE(model.is_mla());
  EXPECT_EQ(model.qk_head_dim(), 192);
  EXPECT_EQ(model.v_dim(), 128);
  EXPECT_EQ(model.q_lora_rank, 1536);
  EXPECT_EQ(model.dense_layers, 3);
  EXPECT_EQ(model.dense_ffn_hidden, 18432);
  EXPECT_EQ(model.shared_expert_ffn_hidden, 2048);
  EXPECT_EQ(model.experts, 256);
  EXPECT_EQ(model.mtp_layers, 1);  // num_nextn_predict_layers
  EXPECT_NEAR(count_parameters(model).total - count_parameters(model).mtp_module, 671e9, 1e9);
  EXPECT_EQ(model.mtp_layers, load_model_config(test::configs_dir() / "models" / "deepseek-v3.yaml").mtp_layers);
  EXPECT_TRUE(std::none_of(result.notes.begin(), result.notes.end(),
                           [](const std::string& n) { return n.rfind("not imported", 0) == 0; }));
  // DeepSeek-V2-Lite's query comes straight from the hidden state (q_lora_rank null).
  std::string lite = read_text(hf_fixture("deepseek-v3.json"));
  lite.replace(lite.find("\"q_lora_rank\": 1536"), 19, "\"q_lora_rank\": null");
  const TransformerSpec no_q_latent =
      load_model_config(write("lite.yaml", import_hf_model(write("lite.json", lite)).yaml));
  EXPECT_EQ(no_q_latent.q_lora_rank, 0);
  EXPECT_TRUE(no_q_latent.is_mla());
}

TEST_F(Import, MegatronDeepSeekArgumentsSelectTheShippedDeepSeekV3) {
  // Megatron-LM's DeepSeek-V3 arguments (multi-latent attention, experts apart from the dense layers, a shared
  // expert, three dense first layers) select configs/models/deepseek-v3.yaml; without the latent attention flag the
  // same shape matches no shipped model.
  const std::string text =
      "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 --seq-length 4096 "
      "--global-batch-size 64 --micro-batch-size 1 --bf16 --tensor-model-parallel-size 8 "
      "--expert-model-parallel-size 8 --num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 "
      "--moe-shared-expert-intermediate-size 2048 --moe-layer-freq ([0]*3+[1]*58) --multi-latent-attention "
      "--q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 "
      "--vocab-size 129280 --untie-embeddings-and-output-weights\n";
  const ImportOptions options = dgx_h100(8);
  const RunSpec run = load_run_config(write("ds.yaml", import_megatron(write("ds.args", text), options).yaml),
                                      options.search, registries_);
  // Megatron-LM trains without multi-token prediction unless --mtp-num-layers says so: the shipped model's keys are
  // written inline without its module, and the file itself is named with --mtp-num-layers 1.
  EXPECT_NE(read_text(write("ds.yaml", import_megatron(write("ds.args", text), options).yaml))
                .find("model:  # configs/models/deepseek-v3.yaml, mtp_layers from the job"),
            std::string::npos);
  EXPECT_EQ(run.model.mtp_layers, 0);
  EXPECT_EQ(run.model.layers, 61);
  EXPECT_TRUE(run.model.is_mla());
  const RunSpec with_mtp = load_run_config(
      write("ds-mtp.yaml", import_megatron(write("ds-mtp.args", text + "--mtp-num-layers 1\n"), options).yaml),
      options.search, registries_);
  EXPECT_EQ(with_mtp.model.mtp_layers, 1);
  EXPECT_EQ(with_mtp.model.name, "deepseek-v3");
  std::string plain = text;
  plain.replace(plain.find("--multi-latent-attention "), 25, "");
  EXPECT_NE(test::input_error([&] { (void)import_megatron(write("plain.args", plain), options); }).find("--model"),
            std::string::npos);
}

TEST_F(Import, GptOssSlidingLayersAndExpertsAreImported) {
  // openai/gpt-oss-20b's config.json: 32 experts (top 4) of 2880, 64-wide heads, a 128-token window on every other
  // layer; OpenAI's model card gives 20.9B parameters and 3.6B active (the unembedding counted, the embedding not).
  const ImportResult result = import_hf_model(hf_fixture("gpt-oss-20b.json"));
  const TransformerSpec model = load_model_config(write("gpt-oss-20b.yaml", result.yaml));
  EXPECT_EQ(model.experts, 32);
  EXPECT_EQ(model.head_dim(), 64);
  EXPECT_EQ(model.sliding_window, 128);
  EXPECT_EQ(model.full_attention_every, 2);
  EXPECT_TRUE(model.is_sliding_layer(0) && !model.is_sliding_layer(1));
  const ParameterCount count = count_parameters(model);
  EXPECT_NEAR(count.total, 20.91e9, 0.05e9);
  EXPECT_NEAR(count.active_matmul, 3.61e9, 0.05e9);
  EXPECT_TRUE(std::none_of(result.notes.begin(), result.notes.end(),
                           [](const std::string& n) { return n.rfind("not imported", 0) == 0; }));
}

TEST_F(Import, GptOss120bModelFileMatchesTheModelCard) {
  // configs/models/gpt-oss-120b.yaml against OpenAI's model card (116.83B parameters, 5.13B active, the unembedding
  // counted, the embedding not) and against the 20b's config.json with 36 layers and 128 experts, as the 120b's reads.
  const TransformerSpec shipped = load_model_config(test::configs_dir() / "models" / "gpt-oss-120b.yaml");
  const ParameterCount count = count_parameters(shipped);
  EXPECT_NEAR(count.total, 116.83e9, 0.1e9);
  EXPECT_NEAR(count.active_matmul, 5.13e9, 0.05e9);
  std::string json = read_text(hf_fixture("gpt-oss-20b.json"));
  const auto set = [&json](const std::string& from, const std::string& to) {
    json.replace(json.find(from), from.size(), to);
  };
  set("\"num_hidden_layers\": 24", "\"num_hidden_layers\": 36");
  set("\"num_local_experts\": 32", "\"num_local_experts\": 128");
  const std::string types = "\"sliding_attention\", \"full_attention\", ";
  json.insert(json.find(types), types + types + types + types + types + types);
  const TransformerSpec imported =
      load_model_config(write("gpt-oss-120b.yaml", import_hf_model(write("120b.json", json)).yaml));
  EXPECT_EQ(imported.layers, shipped.layers);
  EXPECT_EQ(imported.experts, shipped.experts);
  EXPECT_EQ(imported.head_dim(), shipped.head_dim());
  EXPECT_EQ(imported.sliding_window, shipped.sliding_window);
  EXPECT_EQ(imported.full_attention_every, shipped.full_attention_every);
  EXPECT_DOUBLE_EQ(count_parameters(imported).total, count.total);
}

// A Nemotron-H config.json (transformers' NemotronHConfig keys, as configuration_nemotron_h.py saves them) with
// Nemotron 3 Nano's shape from Megatron-Bridge's Nemotron3NanoProvider: it imports as the shipped model file.
TEST_F(Import, NemotronHybridConfigImportsAsTheShippedModelFile) {
  const std::string json = R"({
  "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "vocab_size": 131072,
  "tie_word_embeddings": false, "hidden_size": 2688, "intermediate_size": 1856, "num_hidden_layers": 52,
  "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
  "num_attention_heads": 32, "head_dim": 128, "num_key_value_heads": 2, "mlp_hidden_act": "relu2",
  "attention_bias": false, "mlp_bias": false, "use_bias": false, "layer_norm_epsilon": 1e-05,
  "residual_in_fp32": false, "ssm_state_size": 128, "mamba_num_heads": 64, "n_groups": 8, "mamba_head_dim": 64,
  "conv_kernel": 4, "expand": 2, "mamba_hidden_act": "silu", "time_step_limit": [0.0, 1e9], "use_conv_bias": true,
  "mamba_proj_bias": false, "chunk_size": 128, "n_routed_experts": 128, "n_shared_experts": 1,
  "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "num_experts_per_tok": 6,
  "routed_scaling_factor": 2.5, "n_group": 1, "topk_group": 1, "norm_topk_prob": true
})";
  const ImportResult result = import_hf_model(write("nemotron.json", json));
  const TransformerSpec imported = load_model_config(write("nemotron.yaml", result.yaml));
  const TransformerSpec shipped = load_model_config(test::configs_dir() / "models" / "nemotron-3-nano.yaml");
  EXPECT_EQ(imported.hybrid_pattern, shipped.hybrid_pattern);
  EXPECT_EQ(imported.mamba_heads, shipped.mamba_heads);
  EXPECT_EQ(imported.mamba_groups, shipped.mamba_groups);
  EXPECT_EQ(imported.mlp, MlpKind::squared_relu);
  EXPECT_EQ(imported.shared_expert_ffn_hidden, 3712);
  EXPECT_DOUBLE_EQ(count_parameters(imported).total, count_parameters(shipped).total);
  EXPECT_TRUE(std::none_of(result.notes.begin(), result.notes.end(),
                           [](const std::string& n) { return n.rfind("not imported", 0) == 0; }));
  // A pattern that does not describe every layer names the key.
  std::string short_pattern = json;
  short_pattern.replace(short_pattern.find("MEMEM*"), 6, "MEM*");
  const std::string error = test::input_error([&] { (void)import_hf_model(write("short.json", short_pattern)); });
  EXPECT_NE(error.find("hybrid_override_pattern"), std::string::npos) << error;
}

TEST_F(Import, Qwen2MoeSharedExpertIsImported) {
  // Qwen1.5-MoE-A2.7B's config.json: 60 routed experts of 1408 and a shared expert of 5632; the model file counts
  // the published 14.3B parameters.
  const ImportResult result = import_hf_model(hf_fixture("qwen1.5-moe-a2.7b.json"));
  const TransformerSpec model = load_model_config(write("qwen-moe.yaml", result.yaml));
  EXPECT_EQ(model.experts, 60);
  EXPECT_EQ(model.top_k, 4);
  EXPECT_EQ(model.ffn_hidden, 1408);
  EXPECT_EQ(model.shared_expert_ffn_hidden, 5632);
  EXPECT_EQ(model.dense_layers, 0);
  EXPECT_NEAR(count_parameters(model).total, 14.3e9, 0.05e9);
  EXPECT_TRUE(std::none_of(result.notes.begin(), result.notes.end(),
                           [](const std::string& n) { return n.rfind("not imported", 0) == 0; }));
}

TEST_F(Import, MistralSlidingWindowIsImported) {
  // mistralai/Mistral-7B-v0.1's config.json shape keys: a 4096-token window in every layer; the model's FLOPs per
  // token at 8192 tokens then count 4096 keys per query.
  const fs::path json = write("mistral.json",
                              "{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 4096, "
                              "\"intermediate_size\": 14336, \"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
                              "\"num_key_value_heads\": 8, \"vocab_size\": 32000, \"sliding_window\": 4096, "
                              "\"hidden_act\": \"silu\", \"tie_word_embeddings\": false}");
  const TransformerSpec model = load_model_config(write("mistral.yaml", import_hf_model(json).yaml));
  EXPECT_EQ(model.sliding_window, 4096);
  EXPECT_EQ(model.full_attention_every, 0);
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(model, 8192) - 6.0 * count_parameters(model).active_matmul,
                   12.0 * 32 * 4096 * 4096);
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
  std::string block_text = read_text(args);
  block_text.replace(block_text.find("--bf16"), 6,
                     "--bf16 --recompute-granularity full --recompute-method block --recompute-num-layers 2");
  const fs::path block = write("block.args", block_text);
  const RunSpec block_run =
      load_run_config(write("block.yaml", import_megatron(block, options).yaml), options.search, registries_);
  EXPECT_EQ(block_run.training.recompute, RecomputePolicy::full);
  EXPECT_EQ(block_run.training.recompute_layers, 2);
  std::string uniform_text = read_text(block);
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
    std::string fp8_text = read_text(args);
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

// --transformer-impl local: Megatron-Core's DotProductAttention over materialised scores, with FusedScaleMaskSoftmax's
// kernel for 16-bit scores of at most 4,096 keys (megatron/core/fusions/fused_softmax.py) unless
// --no-masked-softmax-fusion; Transformer Engine's layers (the default) keep the fused attention kernel.
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
  std::string four(read_text(test::configs_dir() / "clusters" / "dgx-h100.yaml"));
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

TEST_F(Import, AHuggingFaceConfigAsTheModelIsWrittenInline) {
  // --model config.json: the job's parallelism and batch with the model that config.json describes, written into the
  // run config itself (no second file), the same model import_hf_model gives.
  const fs::path args = write("llama.args",
                              "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 8192 "
                              "--micro-batch-size 1 --global-batch-size 64 --bf16 --tensor-model-parallel-size 8\n");
  ImportOptions options = dgx_h100(1);
  options.model = hf_fixture("meta-llama-3-8b.json").string();
  const ImportResult result = import_megatron(args, options);
  const RunSpec run = load_run_config(write("inline.yaml", result.yaml), options.search, registries_);
  const TransformerSpec expected = load_model_config(write("llama.yaml", import_hf_model(options.model).yaml));
  EXPECT_EQ(run.model.layers, expected.layers);
  EXPECT_EQ(run.model.hidden, expected.hidden);
  EXPECT_EQ(run.model.kv_heads, 8);  // grouped-query attention, which the arguments above do not say
  EXPECT_EQ(run.model.vocab, 128256);
  EXPECT_EQ(run.model.ffn_hidden, expected.ffn_hidden);
  EXPECT_EQ(run.parallelism.tp, 8);
  // A config.json that is not a model is refused naming it.
  options.model = write("broken.json", "{\"architectures\": [\"SomethingElse\"]}").string();
  EXPECT_NE(test::input_error([&] { (void)import_megatron(args, options); }).find("broken.json"), std::string::npos);
}

TEST_F(Import, AnLlmFoundryYamlPredictsAsItsValidationRecord) {
  // llm-foundry's MPT-7B YAML with the settings of one published H100 benchmark row, imported for one DGX H100
  // node, predicts what the validation table predicts for that row (the same rules, reached from the YAML).
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_dev_records.yaml");
  const fs::path yaml = test::source_dir() / "tests" / "experiments" / "fixtures" / "foundry" / "mpt-7b-h100-8gpu.yaml";
  ASSERT_TRUE(is_foundry_config(yaml));
  const ImportResult result = import_foundry(yaml, dgx_h100(1));
  EXPECT_EQ(result.format, "foundry");
  const RunSpec imported = load_run_config(write("mpt.yaml", result.yaml), dgx_h100(1).search, registries_);
  EXPECT_EQ(imported.model.name, "mpt-7b");  // not megatron-gpt3-7b: MPT is multi-head, vocabulary 50368
  EXPECT_EQ(imported.training.fsdp_implementation, FsdpImplementation::fsdp1);  // Composer's FlatParameter FSDP
  const auto cases = load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries_);
  const auto record = std::find_if(cases.begin(), cases.end(), [](const ValidationCase& c) {
    return c.id == "llmfoundry-h100_80gb-bf16-7b-s2048-g8-mb6";
  });
  ASSERT_NE(record, cases.end());
  EXPECT_EQ(imported.training.optimizer, Optimizer::decoupled_adamw);  // the YAML's optimizer.name
  // The YAML does not say its llm-foundry version: the importer takes today's train metrics, the record the
  // benchmark's v0.3.0 (no TokenAccuracy yet). Compared with the record's.
  EXPECT_EQ(imported.training.train_metrics,
            (std::vector<TrainMetric>{TrainMetric::language_cross_entropy, TrainMetric::language_perplexity,
                                      TrainMetric::token_accuracy}));
  RunSpec as_benchmarked = imported;
  as_benchmarked.training.train_metrics = record->run.training.train_metrics;
  const RunReport a = run_simulation(as_benchmarked, registries_, {});
  const RunReport b = run_simulation(record->run, registries_, {});
  EXPECT_NEAR(a.tokens_per_s, b.tokens_per_s, 1e-9 * b.tokens_per_s);
  EXPECT_NEAR(a.memory.total_bytes, b.memory.total_bytes, 1e-9 * b.memory.total_bytes);
  EXPECT_FALSE(imported.training.unpad_attention);  // the Triton kernel takes the padded tensors
  // attn_impl flash: flash-attn 2 behind llm-foundry's unpad_input / pad_input, as the large-scale table ran it.
  std::string flash = read_text(yaml);
  flash.replace(flash.find("attn_impl: triton"), 17, "attn_impl: flash");
  const RunSpec with_flash =
      load_run_config(write("flash.yaml", import_foundry(write("flash_in.yaml", flash), dgx_h100(1)).yaml),
                      dgx_h100(1).search, registries_);
  EXPECT_EQ(with_flash.training.attention, "flash2");
  EXPECT_TRUE(with_flash.training.unpad_attention);
  // Composer's run-time micro-batch is refused with the fix.
  std::string text = read_text(yaml);
  text.replace(text.find("device_train_microbatch_size: 6"), 31, "device_train_microbatch_size: auto");
  EXPECT_NE(test::input_error([&] { (void)import_foundry(write("auto.yaml", text), dgx_h100(1)); }).find("'auto'"),
            std::string::npos);
}

fs::path torchtitan_fixture(const std::string& name) {
  return test::source_dir() / "tests" / "experiments" / "fixtures" / "torchtitan" / name;
}

TEST_F(Import, TorchtitanTomlMapsToTheRunAHandWrittenConfigDescribes) {
  // torchtitan's Llama 3 8B preset: FSDP2 over every GPU (data_parallel_shard_degree -1), selective "op"
  // checkpointing, local batch 1 of 8192 tokens. On one DGX H100 node it is the run below, written by hand from
  // torchtitan's documented defaults; both must give the same figures.
  const fs::path toml = torchtitan_fixture("llama3_8b.toml");
  ASSERT_TRUE(is_torchtitan_config(toml));
  EXPECT_FALSE(is_hf_config(toml));
  const ImportResult result = import_torchtitan(toml, dgx_h100(1));
  EXPECT_EQ(result.format, "torchtitan");
  const RunSpec imported = load_run_config(write("titan.yaml", result.yaml), dgx_h100(1).search, registries_);
  EXPECT_EQ(imported.model.name, "llama3-8b");  // the 8B flavor's shape: 32 layers, 4096 wide, SwiGLU 14336
  EXPECT_EQ(imported.parallelism.dp, 8);
  EXPECT_EQ(imported.parallelism.zero_stage, 3);
  EXPECT_EQ(imported.training.framework, Framework::pytorch_eager);
  EXPECT_EQ(imported.training.global_batch, 8);  // local_batch_size 1 on each of 8 data ranks
  EXPECT_EQ(imported.training.recompute, RecomputePolicy::selective);
  EXPECT_TRUE(imported.training.fsdp_reduce_fp32);  // torchtitan's mixed_precision_reduce default float32
  EXPECT_EQ(imported.training.fsdp_implementation, FsdpImplementation::fsdp2);  // fully_shard
  const std::string by_hand =
      "name: by-hand\nmodel: llama3-8b\nhardware: H100-SXM5-80GB\ncluster: {name: dgx-h100, nodes: 1}\n"
      "parallelism: {dp: 8, zero_stage: 3}\n"
      "training: {framework: pytorch-eager, global_batch: 8, micro_batch: 1, seq_len: 8192, precision: bf16,\n"
      "           recompute: selective, fsdp_reduce_dtype: fp32, grad_clip: true}\n";
  const RunSpec hand = load_run_config(write("hand.yaml", by_hand), dgx_h100(1).search, registries_);
  const RunReport a = run_simulation(imported, registries_, {});
  const RunReport b = run_simulation(hand, registries_, {});
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);
  EXPECT_EQ(a.memory.total_bytes, b.memory.total_bytes);
  // The unknown section is listed, the timeless ones ([job], [metrics], [optimizer], ...) are not.
  const auto unread = std::find_if(result.notes.begin(), result.notes.end(),
                                   [](const std::string& n) { return n.rfind("not imported:", 0) == 0; });
  ASSERT_NE(unread, result.notes.end());
  EXPECT_EQ(*unread, "not imported: experimental_future.custom_sharding");
}

TEST_F(Import, TorchtitanTensorPipelineAndHybridShardingAreCarriedOver) {
  // 70B with 8-way TP (torchtitan's TP shards the norms along the sequence: Megatron's sequence parallelism) and
  // FSDP over the rest of 64 GPUs; async TP overlaps its collectives.
  const RunSpec tp8 =
      load_run_config(write("tp8.yaml", import_torchtitan(torchtitan_fixture("llama3_70b_tp8.toml"), dgx_h100(8)).yaml),
                      dgx_h100(8).search, registries_);
  EXPECT_EQ(tp8.model.name, "llama3-70b");
  EXPECT_EQ(tp8.parallelism.tp, 8);
  EXPECT_TRUE(tp8.parallelism.sequence_parallel);
  EXPECT_EQ(tp8.parallelism.dp, 8);
  EXPECT_EQ(tp8.training.global_batch, 64);  // local batch 8 x 8 data ranks
  EXPECT_EQ(tp8.training.recompute, RecomputePolicy::full);
  EXPECT_TRUE(tp8.training.overlap.tp);
  EXPECT_EQ(tp8.training.framework, Framework::megatron_te);  // pytorch-eager has no model parallelism

  // The JSON job config: HSDP 2 x 4, TP 4, two pipeline ranks of 10-layer stages (80 / (2 x 10) = 4 chunks per
  // rank), float8, bf16 reduction. No --nodes: 2 x 4 x 4 x 2 = 64 GPUs fill 8 DGX nodes.
  ImportOptions no_nodes = dgx_h100(1);
  no_nodes.nodes.reset();
  const fs::path json = torchtitan_fixture("llama3_70b_hsdp_pp.json");
  ASSERT_TRUE(is_torchtitan_config(json));
  const RunSpec hsdp =
      load_run_config(write("hsdp.yaml", import_torchtitan(json, no_nodes).yaml), no_nodes.search, registries_);
  EXPECT_EQ(hsdp.cluster.gpu_count(), 64);
  EXPECT_EQ(hsdp.parallelism.dp, 8);  // 64 / (tp 4 x pp 2) = replicate 2 x shard 4
  EXPECT_EQ(hsdp.parallelism.shard_group_size, 4);
  EXPECT_EQ(hsdp.parallelism.zero_stage, 3);
  EXPECT_EQ(hsdp.parallelism.pp_schedule, PipelineSchedule::interleaved);
  EXPECT_EQ(hsdp.parallelism.virtual_stages, 4);
  EXPECT_EQ(hsdp.training.global_batch, 256);
  EXPECT_EQ(hsdp.training.micro_batch, 2);  // pipeline_parallel_microbatch_size
  EXPECT_EQ(hsdp.training.precision, Precision::fp8);
  EXPECT_FALSE(hsdp.training.fsdp_reduce_fp32);
  EXPECT_FALSE(hsdp.training.grad_clip);  // max_norm 0
  // selective_ac_option "2": one layer in two checkpointed, 5 of each 10-layer chunk.
  EXPECT_EQ(hsdp.training.recompute, RecomputePolicy::full);
  EXPECT_EQ(hsdp.training.recompute_layers, 5);
}

TEST_F(Import, TorchtitanErrorsNameTheKeyAndLine) {
  std::string text = read_text(torchtitan_fixture("llama3_8b.toml"));
  // A flavor chopsim has no model for: the key, its line and the fix (--model).
  std::string other = text;
  other.replace(other.find("flavor = \"8B\""), 13, "flavor = \"3B\"");
  const std::string unknown = test::input_error([&] { (void)import_torchtitan(write("x.toml", other), dgx_h100(1)); });
  EXPECT_NE(unknown.find("x.toml:22"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("model.flavor"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("--model"), std::string::npos) << unknown;
  // With --model the same job imports.
  ImportOptions with_model = dgx_h100(1);
  with_model.model = "llama3.2-1b";
  EXPECT_NE(import_torchtitan(write("x.toml", other), with_model).yaml.find("model: llama3.2-1b"), std::string::npos);
  // TOML syntax: the parser's line.
  std::string broken = text;
  broken.replace(broken.find("seq_len = 8192"), 14, "seq_len = = 8192");
  const std::string syntax = test::input_error([&] { (void)import_torchtitan(write("y.toml", broken), dgx_h100(1)); });
  EXPECT_NE(syntax.find("y.toml:36"), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("TOML syntax error"), std::string::npos) << syntax;
  // A value of the wrong kind.
  std::string degree = text;
  degree.replace(degree.find("tensor_parallel_degree = 1"), 26, "tensor_parallel_degree = 0");
  const std::string zero = test::input_error([&] { (void)import_torchtitan(write("z.toml", degree), dgx_h100(1)); });
  EXPECT_NE(zero.find("parallelism.tensor_parallel_degree"), std::string::npos) << zero;
}

fs::path bridge_fixture(const std::string& name) {
  return test::source_dir() / "tests" / "experiments" / "fixtures" / "bridge" / name;
}

TEST_F(Import, BridgePerfMatrixEntryMapsToTheRunItDescribes) {
  // perf_matrix.h100.num_gpus_64.bf16 of a Bridge performance config: TP 4, PP 4 x VP 5, micro-batch 1 of 128, over
  // Bridge's recipe defaults (distributed optimizer, overlapped gradient reduce, TE) and the file's bf16 gradient
  // reduction. The model comes from the recipe the file is named after.
  const fs::path perf = bridge_fixture("llama3_70b_llm_pretrain.yaml");
  ASSERT_TRUE(is_bridge_config(perf));
  EXPECT_EQ(detect_job_format(perf), "");  // not a NeMo config (no trainer)
  const ImportResult result = import_bridge(perf, dgx_h100(8));
  EXPECT_EQ(result.format, "bridge");
  const RunSpec imported = load_run_config(write("bridge.yaml", result.yaml), dgx_h100(8).search, registries_);
  EXPECT_EQ(imported.model.name, "llama3-70b");
  EXPECT_EQ(imported.parallelism.tp, 4);
  EXPECT_TRUE(imported.parallelism.sequence_parallel);
  EXPECT_EQ(imported.parallelism.pp, 4);
  EXPECT_EQ(imported.parallelism.virtual_stages, 5);
  EXPECT_EQ(imported.parallelism.dp, 4);  // 64 / (4 x 4)
  EXPECT_EQ(imported.parallelism.zero_stage, 1);
  EXPECT_FALSE(imported.training.grad_reduce_fp32);  // mixed_precision.grad_reduce_in_fp32: false
  const std::string by_hand =
      "name: by-hand\nmodel: llama3-70b\nhardware: H100-SXM5-80GB\ncluster: {name: dgx-h100, nodes: 8}\n"
      "parallelism: {tp: 4, sequence_parallel: true, pp: 4, pp_schedule: interleaved, virtual_stages: 5, dp: 4,\n"
      "              zero_stage: 1}\n"
      "training: {global_batch: 128, micro_batch: 1, seq_len: 8192, precision: bf16, attention: cudnn,\n"
      "           cross_entropy_fusion: true, grad_reduce_dtype: bf16, overlap: {dp: true, tp: false}}\n";
  const RunSpec hand = load_run_config(write("hand.yaml", by_hand), dgx_h100(8).search, registries_);
  EXPECT_EQ(run_simulation(imported, registries_, {}).iteration_time_s,
            run_simulation(hand, registries_, {}).iteration_time_s);

  // --precision picks the entry's fp8_cs overrides (TP 2, CP 2); its unread nccl_ub is listed.
  ImportOptions fp8 = dgx_h100(8);
  fp8.precision = "fp8_cs";
  const ImportResult fp8_result = import_bridge(perf, fp8);
  const RunSpec fp8_run = load_run_config(write("fp8.yaml", fp8_result.yaml), fp8.search, registries_);
  EXPECT_EQ(fp8_run.parallelism.tp, 2);
  EXPECT_EQ(fp8_run.parallelism.cp, 2);
  EXPECT_EQ(fp8_run.training.precision, Precision::fp8);
  EXPECT_EQ(fp8_run.training.fp8_recipe, Fp8Recipe::current);  // fp8_cs: Transformer Engine's current scaling
  EXPECT_NE(std::find(fp8_result.notes.begin(), fp8_result.notes.end(),
                      "not imported from perf_matrix.h100.num_gpus_64.fp8_cs: nccl_ub"),
            fp8_result.notes.end());
}

TEST_F(Import, BridgeOverrideFileWithAShapeFindsTheModel) {
  // The *_config sections of Bridge's override examples, with Qwen3-30B-A3B's shape: matched by shape (48 layers,
  // 128 experts, top 8), EP 8, full recompute, clip 0, no overlapped reduce, fp32 gradient reduction.
  const fs::path file = bridge_fixture("qwen_override.yaml");
  ASSERT_TRUE(is_bridge_config(file));
  const RunSpec run =
      load_run_config(write("q.yaml", import_bridge(file, dgx_h100(2)).yaml), dgx_h100(2).search, registries_);
  EXPECT_EQ(run.model.name, "qwen3-30b-a3b");
  EXPECT_EQ(run.parallelism.ep, 8);
  EXPECT_EQ(run.training.global_batch, 256);
  EXPECT_EQ(run.training.micro_batch, 2);
  EXPECT_EQ(run.training.seq_len, 4096);
  EXPECT_EQ(run.training.recompute, RecomputePolicy::full);
  EXPECT_FALSE(run.training.grad_clip);
  EXPECT_FALSE(run.training.overlap.dp);
  EXPECT_TRUE(run.training.grad_reduce_fp32);
}

TEST_F(Import, BridgePeftSectionBecomesLora) {
  // A ConfigContainer with Megatron-Bridge's LoRA dataclass: its dim and target_modules, in Bridge's names.
  const std::string head =
      "model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: true\n  num_layers: 32\n  hidden_size: 4096\n"
      "  ffn_hidden_size: 14336\n  num_attention_heads: 32\n  num_query_groups: 8\n"
      "train: {global_batch_size: 16, micro_batch_size: 1}\ndataset: {seq_length: 4096}\n";
  const RunSpec run = load_run_config(
      write("bridge_lora.yaml",
            import_bridge(write("lora.yaml", head + "peft: {_target_: megatron.bridge.peft.lora.LoRA, dim: 16,\n"
                                                    "       target_modules: [linear_qkv, linear_fc2]}\n"),
                          dgx_h100(1))
                .yaml),
      dgx_h100(1).search, registries_);
  EXPECT_EQ(run.training.lora.rank, 16);
  EXPECT_TRUE(run.training.lora.qkv && run.training.lora.fc2);
  EXPECT_FALSE(run.training.lora.proj || run.training.lora.fc1);
  // Bridge's defaults where the section is silent: dim 32 on all four linears.
  const RunSpec defaults = load_run_config(
      write("bridge_defaults.yaml",
            import_bridge(write("d.yaml", head + "peft: {_target_: megatron.bridge.peft.lora.LoRA}\n"), dgx_h100(1))
                .yaml),
      dgx_h100(1).search, registries_);
  EXPECT_EQ(defaults.training.lora.rank, 32);
  EXPECT_TRUE(defaults.training.lora.qkv && defaults.training.lora.proj && defaults.training.lora.fc1 &&
              defaults.training.lora.fc2);
  // DoRA is not LoRA.
  const std::string dora = test::input_error([&] {
    (void)import_bridge(write("dora.yaml", head + "peft: {_target_: megatron.bridge.peft.dora.DoRA}\n"), dgx_h100(1));
  });
  EXPECT_NE(dora.find("a DoRA fine-tuning job"), std::string::npos) << dora;
}

// The token dispatcher and Megatron-Core's batch-level expert-parallel overlap, as each front-end names them:
// Megatron-LM's --moe-token-dispatcher-type and --overlap-moe-expert-parallel-comm, Bridge's model keys and its
// comm_overlap section (CommOverlapConfig). Qwen3-30B-A3B's shape over 16 H100, pp 2 x vp 2 (Megatron-Core allows
// the overlap only with the interleaved schedule).
TEST_F(Import, MoeDispatcherAndBatchLevelOverlapAreImported) {
  const ImportOptions options = dgx_h100(2);
  const auto run_of = [&](const std::string& name, const ImportResult& result) {
    return load_run_config(write(name, result.yaml), options.search, registries_);
  };
  const std::string megatron =
      "--num-layers 48 --hidden-size 2048 --ffn-hidden-size 768 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 4 --num-experts 128 --moe-router-topk 8 --seq-length 4096 --global-batch-size 64 "
      "--micro-batch-size 1 --bf16 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 12 "
      "--expert-model-parallel-size 8 --moe-token-dispatcher-type flex --overlap-moe-expert-parallel-comm\n";
  const RunSpec from_args = run_of("m.yaml", import_megatron(write("m.args", megatron), options));
  EXPECT_EQ(from_args.model.name, "qwen3-30b-a3b");
  EXPECT_EQ(from_args.training.moe_dispatcher, MoeDispatcher::flex);
  EXPECT_TRUE(from_args.training.overlap.ep_1f1b);
  // Without the flags: Megatron-Core's defaults (the all-to-all dispatcher, no batch-level overlap).
  std::string plain = megatron;
  plain.replace(plain.find("--moe-token-dispatcher-type"), std::string::npos, "\n");
  const RunSpec defaults = run_of("p.yaml", import_megatron(write("p.args", plain), options));
  EXPECT_EQ(defaults.training.moe_dispatcher, MoeDispatcher::alltoall);
  EXPECT_FALSE(defaults.training.overlap.ep_1f1b);
  EXPECT_FALSE(defaults.training.moe_capacity_factor.has_value());  // Megatron's default: dropless
  // A capacity factor, each expert padded to it (--moe-pad-expert-input-to-capacity) or not.
  const RunSpec padded = run_of("c.yaml", import_megatron(write("c.args", plain.substr(0, plain.size() - 1) +
                                                                              " --moe-expert-capacity-factor 1.25 "
                                                                              "--moe-pad-expert-input-to-capacity\n"),
                                                          options));
  EXPECT_EQ(padded.training.moe_capacity_factor.value_or(0.0), 1.25);
  EXPECT_TRUE(padded.training.moe_pad_to_capacity);
  const RunSpec unpadded =
      run_of("u.yaml",
             import_megatron(
                 write("u.args", plain.substr(0, plain.size() - 1) + " --moe-expert-capacity-factor 1.25\n"), options));
  EXPECT_EQ(unpadded.training.moe_capacity_factor.value_or(0.0), 1.25);
  EXPECT_FALSE(unpadded.training.moe_pad_to_capacity);

  const std::string bridge =
      "model:\n  pipeline_model_parallel_size: 2\n  virtual_pipeline_model_parallel_size: 2\n"
      "  expert_model_parallel_size: 8\n  num_layers: 48\n  hidden_size: 2048\n  ffn_hidden_size: 768\n"
      "  num_attention_heads: 32\n  num_query_groups: 4\n  num_moe_experts: 128\n  moe_router_topk: 8\n"
      "  moe_token_dispatcher_type: alltoall\n  moe_expert_capacity_factor: 1.0\n"
      "  moe_pad_expert_input_to_capacity: true\n"
      "train: {global_batch_size: 64, micro_batch_size: 1}\ndataset: {seq_length: 4096}\n"
      "comm_overlap: {overlap_moe_expert_parallel_comm: true}\n";
  const RunSpec from_bridge = run_of("b.yaml", import_bridge(write("b_in.yaml", bridge), options));
  EXPECT_EQ(from_bridge.model.name, "qwen3-30b-a3b");
  EXPECT_EQ(from_bridge.training.moe_dispatcher, MoeDispatcher::alltoall);
  EXPECT_TRUE(from_bridge.training.overlap.ep_1f1b);
  EXPECT_EQ(from_bridge.training.moe_capacity_factor.value_or(0.0), 1.0);
}

TEST_F(Import, BridgeErrorsNameTheEntryAndTheChoices) {
  const fs::path perf = bridge_fixture("llama3_70b_llm_pretrain.yaml");
  ImportOptions a100 = dgx_h100(8);
  a100.hardware = "A100-SXM4-80GB";
  const std::string gpu = test::input_error([&] { (void)import_bridge(perf, a100); });
  EXPECT_NE(gpu.find("'a100'"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("h100, b200"), std::string::npos) << gpu;
  ImportOptions no_nodes = dgx_h100(1);
  no_nodes.nodes.reset();
  const std::string counts = test::input_error([&] { (void)import_bridge(perf, no_nodes); });
  EXPECT_NE(counts.find("num_gpus_64, num_gpus_128"), std::string::npos) << counts;
  EXPECT_NE(counts.find("--nodes"), std::string::npos) << counts;
  ImportOptions mx = dgx_h100(8);
  mx.precision = "fp8_mx";
  const std::string precision = test::input_error([&] { (void)import_bridge(perf, mx); });
  EXPECT_NE(precision.find(":22:"), std::string::npos) << precision;  // the num_gpus_64 entry's line
  EXPECT_NE(precision.find("common, bf16, fp8_cs"), std::string::npos) << precision;
}

}  // namespace
}  // namespace chopsim
