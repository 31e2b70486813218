// `chopsim import` of Hugging Face model configs: the shipped model files come out of their configs, and the
// architectures chopsim cannot describe are refused with the reason.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/import.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "import_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::dgx_h100;
using test::hf_fixture;
using test::Import;

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
  std::string text = test::read_text(hf_fixture("qwen3-30b-a3b.json"));
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
  std::string lite = test::read_text(hf_fixture("deepseek-v3.json"));
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
  EXPECT_NE(test::read_text(write("ds.yaml", import_megatron(write("ds.args", text), options).yaml))
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
  std::string json = test::read_text(hf_fixture("gpt-oss-20b.json"));
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

}  // namespace
}  // namespace chopsim
