// The published training records `chopsim validate` predicts: the Megatron-LM README's A100 rows as the SC'21
// artifact launches them, Narayanan et al.'s FLOP count, and every Megatron-Core record a case or a reason why not.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "chopsim/config/config.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim_test_paths.hpp"
#include "validation_internal.hpp"

namespace chopsim {
namespace {

/// The validation cases whose id starts with `prefix`, by id.
std::map<std::string, ValidationCase> readme_rows(const std::string& prefix) {
  std::map<std::string, ValidationCase> rows;
  for (ValidationCase& c : load_validation_cases(test::shared_data_dir(), test::configs_dir(),
                                                 ModelRegistries::with_builtins(), test::profiles_dir()))
    if (c.id.starts_with(prefix)) rows.emplace(c.id, std::move(c));
  return rows;
}

// The MoE dispatcher each Megatron-Bridge run used, from its release's performance scripts: GPT-OSS and Qwen3-235B
// never name a flex backend for H100 or B200, so they run NCCL's all-to-all; DeepSeek-V3 and Nemotron 3 Nano always
// do (HybridEP or DeepEP).
TEST(Validation, EachMegatronBridgeMoeRunDispatchesAsItsReleaseConfigured) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  int checked = 0;
  for (const auto& [id, c] : readme_rows("mbridge-")) {
    if (!c.not_modelled.empty() || !c.run.model.is_moe()) continue;
    const std::string& model = c.run.model.name;
    if (model == "gpt-oss-120b" || model == "qwen3-235b-a22b") {
      EXPECT_EQ(c.run.training.moe_dispatcher, MoeDispatcher::alltoall) << id;
      ++checked;
    } else if (model == "deepseek-v3" || model == "nemotron-3-nano") {
      const bool token_drop = c.run.training.moe_capacity_factor.has_value();  // 25.09's (tokendrop) runs
      EXPECT_EQ(c.run.training.moe_dispatcher, token_drop ? MoeDispatcher::alltoall : MoeDispatcher::flex) << id;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// NVIDIA's Megatron-Core tables (../shared/data/validation/published_megatron_records.yaml): every record is a case,
// mapped by one rule; the ones chopsim cannot predict carry the reason.
// The Megatron-LM README's A100 rows (Narayanan et al., SC'21 Table 1) print hidden size, layers and GPU count only;
// the paper's artifact (examples/sc21/run_table_1.sh, CONFIG.sh) gives the rest, and every row is predicted so.
TEST(Validation, TheReadmesA100RowsRunAsTheSc21ArtifactLaunchesThem) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  const auto cases = readme_rows("megatronlm-readme-a100-gpt");
  std::map<std::string, const ValidationCase*> rows;
  for (const auto& [id, c] : cases) rows[id] = &c;
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& [id, c] : rows) {
    ASSERT_TRUE(c->not_modelled.empty()) << id << ": " << c->not_modelled;
    const RunSpec& run = c->run;
    // Every GPU in the layout, with the README's global batch; 2021's Megatron-LM: fp16, every layer recomputed,
    // no distributed optimizer or sequence parallelism, attention over materialised scores with the fused softmax.
    EXPECT_EQ(run.parallelism.world_size(), run.cluster.gpu_count()) << id;
    EXPECT_TRUE(c->micro_batch_choices.empty()) << id;  // the artifact's micro-batch, not a choice
    EXPECT_EQ(run.training.precision, Precision::fp16) << id;
    EXPECT_NE(
        std::find(c->categories.begin(), c->categories.end(), std::pair<std::string, std::string>{"precision", "fp16"}),
        c->categories.end())
        << id;
    EXPECT_EQ(run.training.recompute, RecomputePolicy::full) << id;
    EXPECT_EQ(run.training.recompute_layers, 0) << id;
    EXPECT_EQ(run.parallelism.zero_stage, 0) << id;
    EXPECT_FALSE(run.parallelism.sequence_parallel) << id;
    EXPECT_EQ(run.training.attention, kEagerAttention) << id;
    EXPECT_TRUE(run.training.masked_softmax_fusion) << id;
    EXPECT_TRUE(c->flops_count_recompute) << id;
    EXPECT_EQ(run.training.seq_len, 2048) << id;
    EXPECT_EQ(run.model.hidden % run.model.heads, 0) << id;
  }
  // GPT 76B: 60 layers, 80 heads, tp 8 x pp 4 on 128 DGX A100, five layers per virtual stage (vp 3), micro-batch 2,
  // local DDP (its gradients reduced after the backward).
  const RunSpec& gpt76 = rows.at("megatronlm-readme-a100-gpt76b-g1024")->run;
  EXPECT_EQ(gpt76.model.heads, 80);
  EXPECT_EQ(gpt76.parallelism.tp, 8);
  EXPECT_EQ(gpt76.parallelism.pp, 4);
  EXPECT_EQ(gpt76.parallelism.dp, 32);
  EXPECT_EQ(gpt76.parallelism.virtual_stages, 3);
  EXPECT_EQ(gpt76.training.micro_batch, 2);
  EXPECT_EQ(gpt76.training.global_batch, 1792);
  EXPECT_FALSE(gpt76.training.overlap.dp);
  // GPT 1.7B: data parallel only (torch DDP, overlapped), micro-batch 16.
  const RunSpec& gpt1 = rows.at("megatronlm-readme-a100-gpt1.7b-g32")->run;
  EXPECT_EQ(gpt1.parallelism.tp * gpt1.parallelism.pp, 1);
  EXPECT_EQ(gpt1.training.micro_batch, 16);
  EXPECT_TRUE(gpt1.training.overlap.dp);
}

// Narayanan et al.'s FLOP count (SC'21, eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh) per iteration) is chopsim's model
// FLOPs (6 N + 12 s l h per token, Megatron's MFU convention) plus one more forward of the transformer layers
// (24 l h^2 + 4 s l h per token): the recomputation the paper counts. For a GPT without biases, untied head.
TEST(Validation, NarayanansFlopCountIsTheModelFlopsPlusTheRecomputedForward) {
  TransformerSpec gpt;
  gpt.layers = 48;
  gpt.hidden = 8192;
  gpt.heads = 64;
  gpt.kv_heads = 64;
  gpt.ffn_hidden = 4 * 8192;
  gpt.vocab = 51200;
  gpt.mlp = MlpKind::gelu;
  gpt.norm = NormKind::layernorm;
  gpt.position_embedding = PositionEmbedding::learned;
  const double l = 48, h = 8192, s = 2048;
  const double narayanan = validation_detail::narayanan_flops_per_token(gpt, 2048);
  EXPECT_NEAR(narayanan, model_training_flops_per_token(gpt, 2048) + 24 * l * h * h + 4 * s * l * h, 1e-9 * narayanan);
  // The paper's eq. 4 approximates it as 8 P per token (P = 12 l h^2): within 2 % for the 1T model's sizes, where
  // s / 6h and V / 16 l h are small.
  gpt.layers = 128;
  gpt.hidden = 25600;
  gpt.heads = gpt.kv_heads = 160;
  gpt.ffn_hidden = 4 * 25600;
  EXPECT_NEAR(validation_detail::narayanan_flops_per_token(gpt, 2048) / (8.0 * 12.0 * 128 * 25600.0 * 25600.0), 1.0,
              0.02);
}

TEST(Validation, EveryMegatronRecordIsACaseOrSaysWhyNot) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  std::map<std::string, const ValidationCase*> by_id;
  const auto cases =
      load_validation_cases(test::shared_data_dir(), test::configs_dir(), registries, test::profiles_dir());
  int modelled = 0;
  for (const ValidationCase& c : cases) {
    if (c.group != "megatron_records") continue;
    by_id[c.id] = &c;
    EXPECT_EQ(c.categories.size(), 6u) << c.id;
    if (c.not_modelled.empty()) ++modelled;
  }
  const YAML::Node records =
      YAML::LoadFile((test::shared_data_dir() / "validation" / "published_megatron_records.yaml").string());
  ASSERT_EQ(by_id.size(), records.size());
  // Where the expert all-to-all runs: ep 8 inside a DGX node; ep 32 across nodes; Qwen3-235B's ep 32 folded over tp 2
  // (etp 1) spans 32 GPUs; dense rows have none.
  const auto expert_parallelism = [&](const std::string& id) {
    for (const auto& [dimension, value] : by_id.at(id)->categories)
      if (dimension == "expert parallelism") return value;
    return std::string("missing");
  };
  EXPECT_EQ(expert_parallelism("mbridge-26.04-dgx-b200-deepseekv3-mxfp8-g256-pre-training"), "ep inside a node");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-b200-deepseekv3-mxfp8-g256-pre-training"), "ep across nodes");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-h100-qwen3_235b_a22b-fp8-g256-pre-training"), "ep across nodes");
  EXPECT_EQ(expert_parallelism("mbridge-26.04.01-dgx-h100-llama3_70b-fp8-g64-pre-training"), "dense");
  EXPECT_GE(modelled, 20);

  // Llama 3 8B on one DGX H100 with FSDP over its 8 GPUs, FP8 with current scaling.
  const ValidationCase& llama = *by_id.at("mbridge-25.11-dgx-h100-llama3_8b-fp8-cs-g8-pre-training");
  ASSERT_TRUE(llama.not_modelled.empty()) << llama.not_modelled;
  EXPECT_EQ(llama.run.model.layers, 32);
  EXPECT_EQ(llama.run.hardware.name, "H100-SXM5-80GB");
  EXPECT_EQ(llama.run.parallelism.zero_stage, 3);
  EXPECT_EQ(llama.run.parallelism.dp, 8);
  EXPECT_EQ(llama.run.training.precision, Precision::fp8);
  EXPECT_EQ(llama.run.cluster.fabric.kind, "none");
  EXPECT_EQ(llama.metric, ValidationMetric::tokens_per_s_per_gpu);
  EXPECT_DOUBLE_EQ(llama.measured, 14451.0);

  // Qwen3-30B-A3B with its 128-wide heads, expert parallel over two nodes.
  const ValidationCase& qwen = *by_id.at("mbridge-26.06-dgx-h100-qwen3_30b_a3b-fp8-g16-pre-training");
  ASSERT_TRUE(qwen.not_modelled.empty()) << qwen.not_modelled;
  EXPECT_EQ(qwen.run.model.head_dim(), 128);
  EXPECT_EQ(qwen.run.parallelism.ep, 16);
  EXPECT_EQ(qwen.run.cluster.nodes, 2);

  // The README's GPT rows: the sizes printed in the model's name, model TFLOP/s per GPU.
  const ValidationCase& gpt = *by_id.at("megatronlm-readme-h100-gpt16b-g192");
  ASSERT_TRUE(gpt.not_modelled.empty()) << gpt.not_modelled;
  EXPECT_EQ(gpt.run.model.heads, 48);
  EXPECT_EQ(gpt.run.model.hidden, 6144);
  EXPECT_EQ(gpt.run.model.layers, 32);
  EXPECT_EQ(gpt.run.parallelism.tp, 4);
  EXPECT_EQ(gpt.metric, ValidationMetric::model_tflops_per_gpu);
  EXPECT_DOUBLE_EQ(gpt.measured, 489.1e12);

  // 126 layers over pp 8 x vp 8: the embedding and the loss counted as layers, as Megatron-Bridge's recipe does.
  const ValidationCase& big = *by_id.at("mbridge-26.06-dgx-h100-llama3.1_405b-fp8-g1024-pre-training");
  ASSERT_TRUE(big.not_modelled.empty()) << big.not_modelled;
  EXPECT_TRUE(big.run.parallelism.account_for_embedding_in_split && big.run.parallelism.account_for_loss_in_split);
  // ep 32 on tp 2 x dp 16: Megatron-Core's MoE parallel folding, experts without tensor parallelism (etp 1).
  const ValidationCase& folded = *by_id.at("mbridge-26.04-dgx-h100-qwen3_235b_a22b-fp8-g256-pre-training");
  ASSERT_TRUE(folded.not_modelled.empty()) << folded.not_modelled;
  EXPECT_EQ(folded.run.parallelism.ep, 32);
  EXPECT_EQ(folded.run.parallelism.tp, 2);
  EXPECT_EQ(folded.run.parallelism.expert_tp(), 1);
  // DeepSeek-V3 with its multi-token prediction module over Megatron-Bridge's layout: pp 16 as 15 x 4 + 1 layers,
  // pp 8 x vp 2 the same per virtual stage; records without a precision say so.
  const ValidationCase& deepseek = *by_id.at("mbridge-26.04-dgx-b200-deepseekv3-mxfp8-g256-pre-training");
  ASSERT_TRUE(deepseek.not_modelled.empty()) << deepseek.not_modelled;
  EXPECT_EQ(deepseek.run.model.mtp_layers, 1);
  EXPECT_TRUE(deepseek.run.model.is_mla());
  ASSERT_EQ(deepseek.run.parallelism.stage_layers.size(), 16u);
  EXPECT_EQ(deepseek.run.parallelism.stage_layers.back(), 1);
  EXPECT_EQ(deepseek.run.parallelism.layers_of_stage(61, 0), 4);
  const ValidationCase& interleaved = *by_id.at("mbridge-26.04.01-dgx-b200-deepseekv3-mxfp8-g256-pre-training");
  ASSERT_TRUE(interleaved.not_modelled.empty()) << interleaved.not_modelled;
  EXPECT_EQ(interleaved.run.parallelism.virtual_stages, 2);
  EXPECT_EQ(interleaved.run.parallelism.layers_of_stage(61, 7), 4 + 1);
  // DeepSeek-V3 on B200 recomputes its recipe's module, multi-latent attention's up projections, and fits with it
  // (without it, 215 GiB of B200's 179).
  EXPECT_EQ(interleaved.run.training.recompute, RecomputePolicy::selective);
  EXPECT_TRUE(interleaved.run.training.recompute_modules.mla_up_proj);
  EXPECT_TRUE(estimate_peak_memory(interleaved.run.model, interleaved.run.parallelism, interleaved.run.training,
                                   interleaved.run.hardware)
                  .fits());
  // A run that does not fit without recomputation (Qwen3-30B-A3B pp 2 x vp 24 on 16 H100, 25.11) recomputes the
  // first k layers of each chunk, the least k that fits; every such case fits with k and not with k - 1.
  EXPECT_EQ(by_id.at("mbridge-25.11-dgx-h100-qwen3_30b_a3b-fp8-cs-g16-pre-training")->run.training.recompute,
            RecomputePolicy::full);
  int recomputing = 0;
  for (const auto& [id, c] : by_id) {
    // (recompute_layers 0: every layer, as a run says it recomputed, not the least that fits)
    if (!c->not_modelled.empty() || c->run.training.recompute != RecomputePolicy::full ||
        c->run.training.recompute_layers == 0)
      continue;
    ++recomputing;
    const RunSpec& run = c->run;
    EXPECT_TRUE(estimate_peak_memory(run.model, run.parallelism, run.training, run.hardware).fits()) << id;
    TrainingSpec less = run.training;
    less.recompute_layers -= 1;
    if (less.recompute_layers == 0) less.recompute = RecomputePolicy::none;
    EXPECT_FALSE(estimate_peak_memory(run.model, run.parallelism, less, run.hardware).fits()) << id;
  }
  EXPECT_GE(recomputing, 1);
  // 25.09's tables print no precision: a row takes the next release's for the same run (25.11: FP8 with current
  // scaling for Llama 3 8B on 8 H100), and says so; DeepSeek-V3 on 1,024 H100 is in no later table.
  const ValidationCase& unprinted = *by_id.at("mbridge-25.09-dgx-h100-llama3_8b-not-g8-pre-training");
  ASSERT_TRUE(unprinted.not_modelled.empty()) << unprinted.not_modelled;
  EXPECT_EQ(unprinted.run.training.precision, Precision::fp8);
  EXPECT_NE(unprinted.notes.find("25.11"), std::string::npos) << unprinted.notes;
  EXPECT_NE(std::find(unprinted.categories.begin(), unprinted.categories.end(),
                      std::pair<std::string, std::string>{"precision", "fp8"}),
            unprinted.categories.end());
  const ValidationCase& qwen_unprinted = *by_id.at("mbridge-25.09-dgx-b200-qwen3_30b_a3b-not-g8-pre-training");
  EXPECT_TRUE(qwen_unprinted.not_modelled.empty()) << qwen_unprinted.not_modelled;
  EXPECT_NE(by_id.at("mbridge-25.09-dgx-h100-deepseekv3-not-g1024-pre-training")->not_modelled.find("precision"),
            std::string::npos);
  // GPT-OSS 120B: its model file (a 128-token window on every other layer, 64-wide heads).
  const ValidationCase& oss = *by_id.at("mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-g64-pre-training");
  ASSERT_TRUE(oss.not_modelled.empty()) << oss.not_modelled;
  EXPECT_EQ(oss.run.model.sliding_window, 128);
  EXPECT_EQ(oss.run.model.experts, 128);
  EXPECT_TRUE(oss.run.model.linear_bias);  // its experts' biases (Megatron-Bridge's GPT-OSS bridge, add_bias_linear)
  // The performance configs' selective recomputation, the same in every release: GPT-OSS [layernorm, moe_act];
  // Nemotron 3 Nano on H100 in FP8 [moe, layernorm, core_attn, moe_act]; on B200 nothing.
  EXPECT_EQ(oss.run.training.recompute, RecomputePolicy::selective);
  EXPECT_EQ(recompute_module_names(oss.run.training.recompute_modules),
            (std::vector<std::string>{"layernorm", "moe_act"}));
  const ValidationCase& nano_h100 = *by_id.at("mbridge-26.04-dgx-h100-nemotron_3_nano-fp8-g16-pre-training");
  EXPECT_EQ(nano_h100.run.training.recompute, RecomputePolicy::selective);
  EXPECT_EQ(recompute_module_names(nano_h100.run.training.recompute_modules),
            (std::vector<std::string>{"core_attn", "layernorm", "moe", "moe_act"}));
  EXPECT_EQ(by_id.at("mbridge-26.04.01-dgx-b200-nemotron_3_nano-mxfp8-g8-pre-training")->run.training.recompute,
            RecomputePolicy::none);
  // The LoRA row runs Megatron-Bridge's H100 LoRA performance config: rank 32 on the fused QKV only.
  const ValidationCase& lora = *by_id.at("mbridge-26.06-dgx-h100-llama3_70b-fp8-g8-lora");
  ASSERT_TRUE(lora.not_modelled.empty()) << lora.not_modelled;
  EXPECT_EQ(lora.run.training.lora.rank, 32);
  EXPECT_TRUE(lora.run.training.lora.qkv);
  EXPECT_FALSE(lora.run.training.lora.proj || lora.run.training.lora.fc1 || lora.run.training.lora.fc2);
  // Nemotron 3 Nano: the hybrid model file (Mamba-2, attention and MoE layers); Nemotron 3 Super's widths and layer
  // order are in no source here, and its LatentMoE is not modelled: its rows say both.
  int nano = 0;
  for (const auto& [id, c] : by_id) {
    if (id.find("nemotron_3_nano") != std::string::npos) {
      ++nano;
      EXPECT_TRUE(c->not_modelled.empty()) << id << ": " << c->not_modelled;
      EXPECT_EQ(c->run.model.hybrid_pattern.size(), 52U) << id;
    }
    if (id.find("nemotron_3_super") != std::string::npos) {
      EXPECT_NE(c->not_modelled.find("Hugging Face config"), std::string::npos) << id;
      EXPECT_NE(c->not_modelled.find("LatentMoE"), std::string::npos) << id;
    }
  }
  EXPECT_EQ(nano, 5);
}

// The README's H100 rows state their overlap flags and the model's sizes only: the rest is Megatron-LM's default at
// the commit that published them (core_r0.8.0), and the micro-batch, not printed, is the fastest of those that fit.
TEST(Validation, TheReadmesH100RowsRunMegatronsDefaultsAtTheirFastestMicroBatch) {
  CHOPSIM_REQUIRE_SHARED_DATA("validation/published_megatron_records.yaml");
  const auto registries = ModelRegistries::with_builtins();
  const auto cases = readme_rows("megatronlm-readme-h100-gpt");
  std::map<std::string, const ValidationCase*> rows;
  for (const auto& [id, c] : cases)
    if (c.not_modelled.empty()) rows[id] = &c;
  ASSERT_EQ(rows.size(), 9u);
  int with_choices = 0;
  for (const auto& [id, c] : rows) {
    const RunSpec& run = c->run;
    // arguments.py's defaults: --add-bias-linear, 0.1 dropouts, the unfused cross entropy, the data loader's mask,
    // the NaN checks.
    EXPECT_TRUE(run.model.linear_bias && run.model.dropout) << id;
    EXPECT_FALSE(run.training.cross_entropy_fusion) << id;
    EXPECT_TRUE(run.training.attention_mask_in_dataloader && run.training.check_for_nan_in_grad) << id;
    if (!c->micro_batch_choices.empty()) ++with_choices;
    // Every choice a power of two dividing the replica's share of the batch, and fitting; the next one up does not
    // fit, breaks the schedule or exceeds the share.
    const int per_replica = run.training.global_batch / run.parallelism.dp;
    for (const int micro_batch : c->micro_batch_choices) {
      EXPECT_EQ(micro_batch & (micro_batch - 1), 0) << id;
      EXPECT_EQ(per_replica % micro_batch, 0) << id;
      TrainingSpec training = run.training;
      training.micro_batch = micro_batch;
      EXPECT_TRUE(estimate_peak_memory(run.model, run.parallelism, training, run.hardware).fits()) << id;
    }
  }
  EXPECT_GE(with_choices, 5);
  EXPECT_EQ(rows.at("megatronlm-readme-h100-gpt32b-g384")->micro_batch_choices, (std::vector<int>{1, 2, 4}));
  // GPT-462B (pp 16, 64 sequences per replica) does not fit two sequences per micro-batch without recomputation.
  EXPECT_TRUE(rows.at("megatronlm-readme-h100-gpt462b-g6144")->micro_batch_choices.empty());

  // Why the choice matters: GPT-32B on tp 8 x dp 48 reduce-scatters fp32 gradients, 16 GB per GPU through its one
  // 400 Gb/s NIC (>= 0.31 s at line rate), behind the backward of the last micro-batch only. With four micro-batches
  // of one sequence most of it is exposed and the step is slower than the 0.89 s measured (459.6 TFLOP/s); with one
  // of four sequences it hides, and the prediction picks that one.
  const ValidationCase& gpt32 = *rows.at("megatronlm-readme-h100-gpt32b-g384");
  RunSpec one = gpt32.run;
  one.training.micro_batch = 1;
  RunSpec four = gpt32.run;
  four.training.micro_batch = 4;
  const RunReport slow = run_simulation(one, registries, RunOptions{});
  const RunReport fast = run_simulation(four, registries, RunOptions{});
  const auto dp = static_cast<std::size_t>(CommCategory::dp);
  const double measured_step_s = model_training_flops_per_token(gpt32.run.model, gpt32.run.training.seq_len) *
                                 gpt32.run.training.global_batch * gpt32.run.training.seq_len /
                                 gpt32.run.parallelism.world_size() / gpt32.measured;
  EXPECT_NEAR(measured_step_s, 0.89, 0.03);
  EXPECT_GT(slow.breakdown.exposed_comm_s[dp], 0.15);
  EXPECT_GT(slow.iteration_time_s, 1.2 * measured_step_s);
  EXPECT_LT(fast.breakdown.exposed_comm_s[dp], 0.1);
  EXPECT_LT(fast.iteration_time_s, slow.iteration_time_s);
  const auto results = run_validation({gpt32}, registries, 1);
  ASSERT_TRUE(results.at(0).uncalibrated.ok) << results.at(0).uncalibrated.failure;
  EXPECT_NE(results.at(0).uncalibrated.notes.find("micro-batch 4 (not printed: the fastest of 1, 2, 4)"),
            std::string::npos)
      << results.at(0).uncalibrated.notes;
  EXPECT_NEAR(results.at(0).uncalibrated.relative_error, 0.0, 0.15);
}

}  // namespace
}  // namespace chopsim
