// YAML configuration of training and parallelism: each training feature key decodes to what the workload reads,
// and its mistakes are named (LoRA, MoE dispatch and load, FP8 recipes, FSDP runtimes, pipeline splits, hybrid
// models, recomputed modules).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "chopsim/common/text.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "config_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::ConfigTest;
using test::expect_contains;
using test::input_error;

TEST_F(ConfigTest, UnevenPipelineSplitRules) {
  const fs::path good = write(
      "good.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [9, 8, 8, 7]\n", "  global_batch: 8\n"));
  EXPECT_EQ(load(good).parallelism.stage_layers, (std::vector<int>{9, 8, 8, 7}));
  const fs::path count = write(
      "count.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [16, 16]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(count); }),
                  {"count.yaml:7:17: key 'parallelism.stage_layers': has 2 entries, but pp is 4",
                   "Fix: give one layer count per pipeline stage (4 entries)"});
  const fs::path sum = write(
      "sum.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [8, 8, 8, 7]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(sum); }),
                  {"key 'parallelism.stage_layers': the stages hold 31 layers, but model.layers is 32",
                   "Fix: make the entries sum to 32"});
  const fs::path zero = write(
      "zero.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: [9, 8, 15, 0]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(zero); }),
                  {"zero.yaml:7:", "key 'parallelism.stage_layers': entry 4: expected a positive integer, found '0'"});
  const fs::path empty =
      write("empty.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: []\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(empty); }),
                  {"empty.yaml:7:17: key 'parallelism.stage_layers': expected a list, each entry a positive integer, "
                   "found an empty list"});
  const fs::path scalar =
      write("scalar.yaml", small_run("llama3-8b", "  pp: 4\n  dp: 2\n  stage_layers: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(scalar); }),
                  {"scalar.yaml:7:17: key 'parallelism.stage_layers': expected a list, each entry a positive integer, "
                   "found '8'",
                   "Fix: write a list, each entry a positive integer, e.g. stage_layers: [6, 6, 7, 5]"});
  const fs::path interleaved =
      write("interleaved.yaml", small_run("llama3-8b",
                                          "  pp: 4\n  dp: 2\n  pp_schedule: interleaved\n  virtual_stages: 2\n"
                                          "  stage_layers: [9, 8, 8, 7]\n",
                                          "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(interleaved); }),
                  {"key 'parallelism.stage_layers': has 4 entries, but pp x virtual_stages is 4 x 2 = 8",
                   "give one layer count per virtual stage (8 entries"});
  // Interleaved: one entry per virtual stage (Megatron's pipeline layout), e.g. a short last chunk beside the loss.
  const fs::path layout =
      write("layout.yaml", small_run("llama3-8b",
                                     "  pp: 4\n  dp: 2\n  pp_schedule: interleaved\n  virtual_stages: 2\n"
                                     "  stage_layers: [4, 4, 4, 4, 4, 4, 5, 3]\n",
                                     "  global_batch: 8\n"));
  EXPECT_EQ(load(layout).parallelism.layers_of_stage(32, 2), 4 + 5);
  EXPECT_EQ(load(layout).parallelism.layers_of_stage(32, 3), 4 + 3);
}

TEST_F(ConfigTest, TrainingFeatureKeysDecode) {
  const fs::path run = write(
      "run.yaml", small_run("llama3-8b", "  dp: 8\n",
                            "  global_batch: 8\n  gradient_accumulation_fusion: false\n  cross_entropy_fusion: false\n"
                            "  grad_clip: false\n  log_num_zeros_in_grad: true\n  log_params_norm: true\n"
                            "  fsdp_reduce_dtype: fp32\n  overlap: {tp_backward: false}\n  attention: flash2\n"
                            "  unpad_attention: true\n"));
  const RunSpec spec = load(run);
  EXPECT_TRUE(spec.training.unpad_attention);
  const fs::path unpad_cp = write(
      "unpad_cp.yaml", small_run("llama3-8b", "  dp: 4\n  cp: 2\n", "  global_batch: 8\n  unpad_attention: true\n"));
  expect_contains(input_error([&] { (void)load(unpad_cp); }),
                  {"unpad_cp.yaml:", "key 'training.unpad_attention'", "but the run has cp 2",
                   "Fix: remove unpad_attention, or set parallelism.cp: 1"});
  EXPECT_FALSE(spec.training.gradient_accumulation_fusion);
  EXPECT_FALSE(spec.training.cross_entropy_fusion);
  EXPECT_FALSE(spec.training.grad_clip);
  EXPECT_TRUE(spec.training.log_num_zeros_in_grad);
  EXPECT_TRUE(spec.training.log_params_norm);
  EXPECT_TRUE(spec.training.fsdp_reduce_fp32);
  EXPECT_FALSE(spec.training.overlap.tp_backward);
  const fs::path dtype =
      write("dtype.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  fsdp_reduce_dtype: fp16\n"));
  expect_contains(input_error([&] { (void)load(dtype); }),
                  {"key 'training.fsdp_reduce_dtype': expected one of bf16, fp32"});
  // The model's position embedding.
  const fs::path model = write("model.yaml",
                               "model: {name: llama3-8b, position_embedding: alibi}\nhardware: H100-SXM5-80GB\n"
                               "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                               "parallelism:\n  dp: 8\ntraining:\n  global_batch: 8\n");
  expect_contains(input_error([&] { (void)load(model); }),
                  {"key 'model.position_embedding': expected one of rope, learned, none, found 'alibi'"});
}

TEST_F(ConfigTest, LoraDecodesItsRankAndTargets) {
  const RunSpec all =
      load(write("all.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 32}\n")));
  EXPECT_EQ(all.training.lora.rank, 32);
  EXPECT_TRUE(all.training.lora.qkv && all.training.lora.proj && all.training.lora.fc1 && all.training.lora.fc2);
  const RunSpec some =
      load(write("some.yaml",
                 small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 16, targets: [qkv, fc2]}\n")));
  EXPECT_TRUE(some.training.lora.qkv && some.training.lora.fc2);
  EXPECT_FALSE(some.training.lora.proj || some.training.lora.fc1);
  EXPECT_FALSE(
      load(write("none.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.lora.enabled());
  const fs::path unknown =
      write("unknown.yaml",
            small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {rank: 16, targets: [lm_head]}\n"));
  expect_contains(input_error([&] { (void)load(unknown); }),
                  {"training.lora.targets", "'lm_head' is not a linear chopsim adapts", "qkv, proj, fc1, fc2"});
  const fs::path rankless =
      write("rankless.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  lora: {targets: [qkv]}\n"));
  expect_contains(input_error([&] { (void)load(rankless); }), {"training.lora.rank"});
}

TEST_F(ConfigTest, MoeDispatcherNamesMegatronsTokenDispatcher) {
  EXPECT_EQ(
      load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.moe_dispatcher,
      MoeDispatcher::alltoall);
  const RunSpec flex =
      load(write("flex.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  moe_dispatcher: flex\n")));
  EXPECT_EQ(flex.training.moe_dispatcher, MoeDispatcher::flex);
  EXPECT_EQ(to_string(flex.training.moe_dispatcher), "flex");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  moe_dispatcher: deepep\n")));
                  }),
                  {"bad.yaml:", "training.moe_dispatcher", "expected one of alltoall, flex, found 'deepep'"});
}

TEST_F(ConfigTest, MoeRouterKeysNameMegatronsRouterSettings) {
  const auto run_with = [&](const std::string& file, const std::string& training) {
    return write(file, small_run("mixtral-8x7b", "  dp: 8\n  ep: 8\n", "  global_batch: 8\n" + training));
  };
  // Megatron-Core's defaults: unfused, no auxiliary loss (coefficient 0), no expert bias.
  const RunSpec plain = load(run_with("plain.yaml", ""));
  EXPECT_FALSE(plain.training.moe_router_fusion);
  EXPECT_EQ(plain.training.moe_aux_loss, MoeAuxLoss::none);
  EXPECT_FALSE(plain.training.moe_expert_bias);
  const RunSpec set =
      load(run_with("set.yaml", "  moe_router_fusion: true\n  moe_aux_loss: seq_aux_loss\n  moe_expert_bias: true\n"));
  EXPECT_TRUE(set.training.moe_router_fusion);
  EXPECT_EQ(set.training.moe_aux_loss, MoeAuxLoss::seq_aux_loss);
  EXPECT_TRUE(set.training.moe_expert_bias);
  expect_contains(input_error([&] { (void)load(run_with("bad.yaml", "  moe_aux_loss: z_loss\n")); }),
                  {"bad.yaml:", "training.moe_aux_loss",
                   "expected one of none, aux_loss, seq_aux_loss, global_aux_loss, found 'z_loss'"});
  expect_contains(input_error([&] {
                    (void)load(write("dense.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                             "  global_batch: 8\n  moe_router_fusion: true\n")));
                  }),
                  {"dense.yaml:", "training.moe_router_fusion", "model 'llama3-8b' has no experts",
                   "Fix: remove it, or use a model with experts"});
  // Megatron's --cuda-graph-scope, the MoE scopes only.
  const RunSpec graphed = load(run_with("graphed.yaml", "  cuda_graph_scope: [moe_router, moe_preprocess]\n"));
  EXPECT_TRUE(graphed.training.cuda_graph_scope.moe_router);
  EXPECT_TRUE(graphed.training.cuda_graph_scope.moe_preprocess);
  expect_contains(input_error([&] { (void)load(run_with("attn.yaml", "  cuda_graph_scope: [attn, moe_router]\n")); }),
                  {"attn.yaml:", "training.cuda_graph_scope", "'attn' is not a CUDA graph scope chopsim models",
                   "moe_router, moe_preprocess"});
  expect_contains(input_error([&] { (void)load(run_with("alone.yaml", "  cuda_graph_scope: [moe_preprocess]\n")); }),
                  {"alone.yaml:", "training.cuda_graph_scope", "moe_router is not listed", "Fix: list moe_router too"});
}

TEST_F(ConfigTest, MoeLoadImbalanceIsTheBusiestRanksLoadOfADroplessRun) {
  // Mixtral: 8 experts, top 2. Unset: balanced and dropless.
  const auto run_with = [&](const std::string& file, const std::string& parallelism, const std::string& training) {
    return write(file, small_run("mixtral-8x7b", parallelism, "  global_batch: 8\n" + training));
  };
  const RunSpec balanced = load(run_with("balanced.yaml", "  dp: 8\n  ep: 8\n", ""));
  EXPECT_EQ(balanced.training.moe_load_imbalance, 1.0);
  EXPECT_FALSE(balanced.training.moe_capacity_factor.has_value());
  EXPECT_EQ(balanced.training.moe_busiest_rank_load(8), 1.0);
  const RunSpec skewed = load(run_with("skewed.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 1.4\n"));
  EXPECT_EQ(skewed.training.moe_load_imbalance, 1.4);
  EXPECT_EQ(skewed.training.moe_busiest_rank_load(8), 1.4);
  const RunSpec capped = load(run_with("capped.yaml", "  dp: 8\n  ep: 8\n", "  moe_capacity_factor: 1.25\n"));
  EXPECT_EQ(capped.training.moe_busiest_rank_load(8), 1.25);  // padded to capacity

  expect_contains(
      input_error([&] { (void)load(run_with("below.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 0.9\n")); }),
      {"below.yaml:", "training.moe_load_imbalance", "a number >= 1"});
  // At most min(ep, experts / top_k) = min(8, 8 / 2) = 4 times the mean: a token reaches a rank at most once per
  // expert there, and goes to 2 distinct experts.
  expect_contains(
      input_error([&] { (void)load(run_with("above.yaml", "  dp: 8\n  ep: 8\n", "  moe_load_imbalance: 4.5\n")); }),
      {"above.yaml:", "key 'training.moe_load_imbalance'", "takes at most 4 times the mean", "found 4.5",
       "Fix: use the measured max / mean"});
  expect_contains(
      input_error([&] { (void)load(run_with("one_rank.yaml", "  dp: 8\n", "  moe_load_imbalance: 1.2\n")); }),
      {"one_rank.yaml:", "needs a mixture of experts split over ep > 1 (ep is 1)",
       "Fix: remove moe_load_imbalance, or set parallelism.ep > 1"});
  expect_contains(input_error([&] {
                    (void)load(write("dense.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                             "  global_batch: 8\n  moe_load_imbalance: 1.2\n")));
                  }),
                  {"dense.yaml:", "model 'llama3-8b' has none"});
  expect_contains(input_error([&] {
                    (void)load(run_with("both.yaml", "  dp: 8\n  ep: 8\n",
                                        "  moe_capacity_factor: 1.0\n  moe_load_imbalance: 1.2\n"));
                  }),
                  {"both.yaml:", "with moe_capacity_factor and moe_pad_to_capacity every expert takes its capacity",
                   "Fix: remove moe_load_imbalance; or set moe_pad_to_capacity: false"});
  // Not padded: an expert takes what is routed to it up to its capacity, the tokens above it dropped.
  const RunSpec dropping =
      load(run_with("dropping.yaml", "  dp: 8\n  ep: 8\n",
                    "  moe_capacity_factor: 1.25\n  moe_pad_to_capacity: false\n  moe_load_imbalance: 1.4\n"));
  EXPECT_EQ(dropping.training.moe_busiest_rank_load(8), 1.25);
  expect_contains(
      input_error([&] { (void)load(run_with("pad.yaml", "  dp: 8\n  ep: 8\n", "  moe_pad_to_capacity: false\n")); }),
      {"pad.yaml:", "key 'training.moe_pad_to_capacity'", "moe_capacity_factor is not set",
       "Fix: remove moe_pad_to_capacity, or set moe_capacity_factor"});
}

TEST_F(ConfigTest, Fp8RecipeNamesTransformerEnginesScaling) {
  EXPECT_EQ(load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  precision: fp8\n")))
                .training.fp8_recipe,
            Fp8Recipe::delayed);
  const RunSpec current =
      load(write("current.yaml",
                 small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  precision: fp8\n  fp8_recipe: current\n")));
  EXPECT_EQ(current.training.fp8_recipe, Fp8Recipe::current);
  EXPECT_EQ(to_string(current.training.fp8_recipe), "current");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  fp8_recipe: tensorwise\n")));
                  }),
                  {"bad.yaml:", "training.fp8_recipe", "expected one of delayed, current, mxfp8, found 'tensorwise'"});
}

TEST_F(ConfigTest, FsdpImplementationNamesTheShardingRuntime) {
  const RunSpec unset =
      load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n  fsdp: full_shard\n", "  global_batch: 8\n")));
  EXPECT_FALSE(unset.training.fsdp_implementation.has_value());
  EXPECT_EQ(unset.training.fsdp_runtime(), FsdpImplementation::megatron);
  const RunSpec fsdp1 = load(write("fsdp1.yaml", small_run("llama3-8b", "  dp: 8\n  fsdp: full_shard\n",
                                                           "  global_batch: 8\n  fsdp_implementation: fsdp1\n")));
  EXPECT_EQ(fsdp1.training.fsdp_runtime(), FsdpImplementation::fsdp1);
  EXPECT_EQ(to_string(fsdp1.training.fsdp_runtime()), "fsdp1");
  expect_contains(
      input_error([&] {
        (void)load(write("bad.yaml",
                         small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  fsdp_implementation: deepspeed\n")));
      }),
      {"bad.yaml:", "training.fsdp_implementation", "expected one of megatron, fsdp1, fsdp2, found 'deepspeed'"});
}

TEST_F(ConfigTest, OptimizerAndTrainMetricsNameWhatTheTrainingLoopRuns) {
  const RunSpec unset = load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n")));
  EXPECT_EQ(unset.training.optimizer, Optimizer::fused_adamw);
  EXPECT_TRUE(unset.training.train_metrics.empty());
  const RunSpec composer = load(write(
      "composer.yaml", small_run("llama3-8b", "  dp: 8\n",
                                 "  global_batch: 8\n  optimizer: decoupled_adamw\n"
                                 "  train_metrics: [language_cross_entropy, language_perplexity, token_accuracy]\n")));
  EXPECT_EQ(to_string(composer.training.optimizer), "decoupled_adamw");
  ASSERT_EQ(composer.training.train_metrics.size(), 3u);
  EXPECT_EQ(to_string(composer.training.train_metrics[1]), "language_perplexity");
  expect_contains(
      input_error([&] {
        (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  optimizer: lion\n")));
      }),
      {"bad.yaml:", "training.optimizer", "expected one of fused_adamw, decoupled_adamw, found 'lion'"});
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  train_metrics: [accuracy]\n")));
                  }),
                  {"bad.yaml:", "training.train_metrics", "'accuracy' is not a metric", "token_accuracy"});
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  train_metrics: "
                                                           "[token_accuracy, token_accuracy]\n")));
                  }),
                  {"training.train_metrics", "listed twice"});
}

TEST_F(ConfigTest, FrameworkNamesTheKernelInventory) {
  EXPECT_EQ(load(write("default.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"))).training.framework,
            Framework::megatron_te);
  const RunSpec eager =
      load(write("eager.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  framework: pytorch-eager\n")));
  EXPECT_EQ(eager.training.framework, Framework::pytorch_eager);
  EXPECT_EQ(to_string(eager.training.framework), "pytorch-eager");
  expect_contains(input_error([&] {
                    (void)load(write("bad.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                           "  global_batch: 8\n  framework: deepspeed\n")));
                  }),
                  {"bad.yaml:", "training.framework", "expected one of megatron-te, pytorch-eager, found 'deepspeed'"});
  expect_contains(input_error([&] {
                    (void)load(write("tp.yaml", small_run("llama3-8b", "  tp: 2\n  dp: 4\n",
                                                          "  global_batch: 8\n  framework: pytorch-eager\n")));
                  }),
                  {"tp.yaml", "training.framework", "model parallelism", "Fix:"});
}

// 62 layers over pp 8 x vp 4 (as Llama 3.1 405B's 126 over pp 8 x vp 8): rejected as is, with Megatron's split flags
// as the fix; accepted with them, two slots per virtual stage.
TEST_F(ConfigTest, TheEmbeddingAndTheLossMayCountAsPipelineLayers) {
  const std::string model =
      "model: {name: llama3-8b, layers: 62}\nhardware: H100-SXM5-80GB\n"
      "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n";
  const std::string training = "training:\n  global_batch: 8\n";
  const auto pipeline = [&](const std::string& extra) {
    return model + "parallelism:\n  pp: 8\n  pp_schedule: interleaved\n  virtual_stages: 4\n" + extra + training;
  };
  expect_contains(input_error([&] { (void)load(write("plain.yaml", pipeline(""))); }),
                  {"parallelism.pp", "model.layers (62) is not divisible by", "account_for_embedding_in_split"});
  const RunSpec run = load(
      write("split.yaml", pipeline("  account_for_embedding_in_split: true\n  account_for_loss_in_split: true\n")));
  const std::vector<int> split = run.parallelism.virtual_stage_layers(62);
  ASSERT_EQ(split.size(), 32u);
  EXPECT_EQ(split.front(), 1);
  EXPECT_EQ(split[1], 2);
  EXPECT_EQ(split.back(), 1);
  EXPECT_EQ(run.parallelism.layers_of_stage(62, 0), 7);  // virtual stages 0, 8, 16, 24: 1 + 2 + 2 + 2
  EXPECT_EQ(run.parallelism.layers_of_stage(62, 7), 7);
  // One slot per virtual stage leaves the first one no layer: rejected.
  expect_contains(input_error([&] {
                    (void)load(write("thin.yaml",
                                     "model: {name: llama3-8b, layers: 30}\nhardware: H100-SXM5-80GB\n"
                                     "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                                     "parallelism:\n  pp: 8\n  pp_schedule: interleaved\n  "
                                     "virtual_stages: 4\n  account_for_embedding_in_split: true\n  "
                                     "account_for_loss_in_split: true\n" +
                                         training));
                  }),
                  {"thin.yaml", "would hold no transformer layer"});
}

// A hybrid model file: the layer pattern and the Mamba-2 mixer decode; a pattern that does not describe every layer, a
// symbol that is no layer kind, Mamba layers without a mixer, and a tp that splits the Mamba heads unevenly are
// rejected at their keys.
TEST_F(ConfigTest, HybridModelFileDecodesAndItsMistakesAreNamed) {
  const TransformerSpec nano = load_model_config(test::configs_dir() / "models" / "nemotron-3-nano.yaml");
  EXPECT_EQ(nano.hybrid_pattern.size(), 52U);
  EXPECT_EQ(nano.mamba_heads, 64);
  EXPECT_EQ(nano.mamba_groups, 8);
  EXPECT_EQ(nano.mlp, MlpKind::squared_relu);
  EXPECT_EQ(nano.moe_layers(), 23);
  const std::string mixer = ", mamba: {heads: 8, head_dim: 16, state_dim: 16, groups: 2}";
  const auto model = [&](const std::string& pattern, int layers, const std::string& rest) {
    return "{name: llama3-8b, layers: " + std::to_string(layers) + ", hybrid_pattern: '" + pattern + "'" + rest + "}";
  };
  const auto run = [&](const std::string& file, const std::string& pattern, int layers, const std::string& rest,
                       const std::string& parallelism) {
    return write(file, small_run(model(pattern, layers, rest), parallelism, "  global_batch: 8\n"));
  };
  const fs::path short_pattern = run("short.yaml", "M*M", 4, mixer, "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(short_pattern); }),
                  {"short.yaml:1:", "key 'model.hybrid_pattern': the pattern has 3 symbols but layers is 4"});
  const fs::path bad_symbol = run("symbol.yaml", "M*X*", 4, mixer, "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(bad_symbol); }), {"symbol 'X' at position 3 is not a layer kind"});
  const fs::path no_mixer = run("nomixer.yaml", "M*M*", 4, "", "  dp: 8\n");
  expect_contains(input_error([&] { (void)load(no_mixer); }), {"key 'model.mamba'", "no mamba: {heads: ...}"});
  const fs::path uneven = run("uneven.yaml", "M*M*", 4, mixer, "  tp: 4\n  dp: 2\n");
  expect_contains(input_error([&] { (void)load(uneven); }),
                  {"key 'parallelism.tp'", "Mamba-2 heads (8) and groups (2)"});
  const fs::path ok = run("ok.yaml", "M*M*", 4, mixer, "  tp: 2\n  dp: 4\n");
  EXPECT_TRUE(load(ok).model.layer_kind(2).mamba);
}

// Megatron's --recompute-modules decode by name; an unknown name and a list without selective recomputation are
// rejected at the key.
TEST_F(ConfigTest, RecomputeModulesDecodeAndNeedSelectiveRecomputation) {
  const fs::path ok = write("modules.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                      "  global_batch: 8\n  recompute: selective\n"
                                                      "  recompute_modules: [core_attn, layernorm, moe_act]\n"));
  const RecomputeModules modules = load(ok).training.recompute_modules;
  EXPECT_TRUE(modules.core_attn && modules.layernorm && modules.moe_act);
  EXPECT_FALSE(modules.moe || modules.mlp || modules.shared_experts);
  const fs::path unknown =
      write("unknown.yaml", small_run("llama3-8b", "  dp: 8\n",
                                      "  global_batch: 8\n  recompute: selective\n  recompute_modules: [mla_up]\n"));
  expect_contains(input_error([&] { (void)load(unknown); }),
                  {"key 'training.recompute_modules'", "'mla_up' is not a module chopsim recomputes"});
  const fs::path full = write("full.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                     "  global_batch: 8\n  recompute: full\n"
                                                     "  recompute_modules: [moe_act]\n"));
  expect_contains(input_error([&] { (void)load(full); }), {"key 'training.recompute_modules'", "recompute is full"});
  // mla_up_proj needs multi-latent attention to recompute.
  const fs::path no_mla = write("no-mla.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                         "  global_batch: 8\n  recompute: selective\n"
                                                         "  recompute_modules: [mla_up_proj]\n"));
  expect_contains(input_error([&] { (void)load(no_mla); }),
                  {"key 'training.recompute_modules'", "model 'llama3-8b' has no latent attention"});
}

// PyTorch's early stop of a recomputed forward decodes as a bool and belongs to full recomputation only.
TEST_F(ConfigTest, RecomputeEarlyStopNeedsFullRecomputation) {
  const fs::path ok = write("early.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                    "  global_batch: 8\n  recompute: full\n"
                                                    "  recompute_early_stop: true\n"));
  EXPECT_TRUE(load(ok).training.recompute_early_stop);
  const fs::path absent =
      write("absent.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  recompute: full\n"));
  EXPECT_FALSE(load(absent).training.recompute_early_stop);
  const fs::path selective = write("selective.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                               "  global_batch: 8\n  recompute: selective\n"
                                                               "  recompute_early_stop: true\n"));
  expect_contains(input_error([&] { (void)load(selective); }),
                  {"key 'training.recompute_early_stop'", "recompute is selective", "set recompute: full"});
  const fs::path not_bool = write("word.yaml", small_run("llama3-8b", "  dp: 8\n",
                                                         "  global_batch: 8\n  recompute: full\n"
                                                         "  recompute_early_stop: sometimes\n"));
  expect_contains(input_error([&] { (void)load(not_bool); }), {"key 'training.recompute_early_stop'"});
}

}  // namespace
}  // namespace chopsim
