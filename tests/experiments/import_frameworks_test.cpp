// `chopsim import` of llm-foundry YAML, torchtitan TOML and Megatron-Bridge performance entries: each maps to the run a
// hand-written config describes, and its errors name the key, the line and the choices.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/import.hpp"
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
  std::string flash = test::read_text(yaml);
  flash.replace(flash.find("attn_impl: triton"), 17, "attn_impl: flash");
  const RunSpec with_flash =
      load_run_config(write("flash.yaml", import_foundry(write("flash_in.yaml", flash), dgx_h100(1)).yaml),
                      dgx_h100(1).search, registries_);
  EXPECT_EQ(with_flash.training.attention, "flash2");
  EXPECT_TRUE(with_flash.training.unpad_attention);
  // Checkpointed blocks: Composer's default reentrant checkpoint re-runs a whole block; the mpt-*.yaml's
  // activation_checkpointing_reentrant: false gives PyTorch's non-reentrant checkpoint, which stops early.
  const auto checkpointed = [&](const std::string& reentrant) {
    std::string yaml_text = test::read_text(yaml);
    yaml_text.replace(yaml_text.find("activation_checkpointing: false"), 31,
                      "activation_checkpointing: true" + reentrant);
    return load_run_config(write("ac.yaml", import_foundry(write("ac_in.yaml", yaml_text), dgx_h100(1)).yaml),
                           dgx_h100(1).search, registries_)
        .training;
  };
  EXPECT_EQ(checkpointed("").recompute, RecomputePolicy::full);
  EXPECT_FALSE(checkpointed("").recompute_early_stop);
  EXPECT_FALSE(checkpointed("\n  activation_checkpointing_reentrant: true").recompute_early_stop);
  EXPECT_TRUE(checkpointed("\n  activation_checkpointing_reentrant: false").recompute_early_stop);
  // Composer's run-time micro-batch is refused with the fix.
  std::string text = test::read_text(yaml);
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

TEST_F(Import, TorchtitanFullCheckpointingStopsEarlyOnlyWhereTheJobSaysSo) {
  // torchtitan wraps whole blocks in PyTorch's non-reentrant checkpoint with early_stop from its config
  // (activation_checkpoint.early_stop, default false since pytorch/torchtitan#1580).
  const auto imported = [&](const std::string& section) {
    std::string text = test::read_text(torchtitan_fixture("llama3_8b.toml"));
    text.replace(text.find("mode = \"selective\""), 18, section);
    const ImportResult result = import_torchtitan(write("ac.toml", text), dgx_h100(1));
    return std::make_pair(load_run_config(write("ac.yaml", result.yaml), dgx_h100(1).search, registries_).training,
                          result.notes);
  };
  const auto [stopping, stopping_notes] = imported("mode = \"full\"\nearly_stop = true");
  EXPECT_EQ(stopping.recompute, RecomputePolicy::full);
  EXPECT_TRUE(stopping.recompute_early_stop);
  const auto [whole, whole_notes] = imported("mode = \"full\"\nearly_stop = false");
  EXPECT_FALSE(whole.recompute_early_stop);
  const auto [absent, absent_notes] = imported("mode = \"full\"");
  EXPECT_FALSE(absent.recompute_early_stop);
  EXPECT_TRUE(std::any_of(absent_notes.begin(), absent_notes.end(), [](const std::string& note) {
    return note.rfind("activation_checkpoint.early_stop absent", 0) == 0;
  }));
  EXPECT_FALSE(std::any_of(whole_notes.begin(), whole_notes.end(), [](const std::string& note) {
    return note.rfind("activation_checkpoint.early_stop absent", 0) == 0;
  }));
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
  std::string text = test::read_text(torchtitan_fixture("llama3_8b.toml"));
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

// The router's settings (its kernels: models/src/workload_moe.cpp): Megatron-LM's --moe-router-fusion,
// --moe-router-load-balancing-type with --moe-aux-loss-coeff, --moe-router-enable-expert-bias, and Bridge's model keys
// of the same names. The loss is on only with a coefficient above 0 (Megatron's default coefficient is 0).
TEST_F(Import, MoeRouterSettingsAreImported) {
  const ImportOptions options = dgx_h100(2);
  const auto run_of = [&](const std::string& name, const ImportResult& result) {
    return load_run_config(write(name, result.yaml), options.search, registries_);
  };
  const std::string shape =
      "--num-layers 48 --hidden-size 2048 --ffn-hidden-size 768 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 4 --num-experts 128 --moe-router-topk 8 --seq-length 4096 --global-batch-size 64 "
      "--micro-batch-size 1 --bf16 --expert-model-parallel-size 16";
  const RunSpec plain = run_of("p.yaml", import_megatron(write("p.args", shape + "\n"), options));
  EXPECT_FALSE(plain.training.moe_router_fusion);
  EXPECT_EQ(plain.training.moe_aux_loss, MoeAuxLoss::none);
  EXPECT_FALSE(plain.training.moe_expert_bias);
  const RunSpec set =
      run_of("s.yaml", import_megatron(write("s.args", shape + " --moe-router-fusion --moe-router-load-balancing-type "
                                                               "seq_aux_loss --moe-aux-loss-coeff 1e-4 "
                                                               "--moe-router-enable-expert-bias\n"),
                                       options));
  EXPECT_TRUE(set.training.moe_router_fusion);
  EXPECT_EQ(set.training.moe_aux_loss, MoeAuxLoss::seq_aux_loss);
  EXPECT_TRUE(set.training.moe_expert_bias);
  // A coefficient alone: Megatron's default type, the Switch Transformer loss.
  const RunSpec coefficient =
      run_of("c.yaml", import_megatron(write("c.args", shape + " --moe-aux-loss-coeff 1e-3\n"), options));
  EXPECT_EQ(coefficient.training.moe_aux_loss, MoeAuxLoss::aux_loss);

  const std::string bridge =
      "model:\n  expert_model_parallel_size: 16\n  num_layers: 48\n  hidden_size: 2048\n  ffn_hidden_size: 768\n"
      "  num_attention_heads: 32\n  num_query_groups: 4\n  num_moe_experts: 128\n  moe_router_topk: 8\n"
      "  moe_router_fusion: true\n  moe_router_load_balancing_type: aux_loss\n  moe_aux_loss_coeff: 0.001\n"
      "train: {global_batch_size: 64, micro_batch_size: 1}\ndataset: {seq_length: 4096}\n";
  const RunSpec from_bridge = run_of("b.yaml", import_bridge(write("b_in.yaml", bridge), options));
  EXPECT_TRUE(from_bridge.training.moe_router_fusion);
  EXPECT_EQ(from_bridge.training.moe_aux_loss, MoeAuxLoss::aux_loss);
  EXPECT_FALSE(from_bridge.training.moe_expert_bias);

  // Transformer Engine's CUDA graphs of the router and the dispatcher's preprocessing (--cuda-graph-scope takes
  // several names); the attention graph is a note.
  const ImportResult graphed = import_megatron(
      write("g.args", shape + " --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router "
                              "moe_preprocess --moe-router-fusion\n"),
      options);
  const RunSpec from_graphed = run_of("g.yaml", graphed);
  EXPECT_TRUE(from_graphed.training.cuda_graph_scope.moe_router);
  EXPECT_TRUE(from_graphed.training.cuda_graph_scope.moe_preprocess);
  EXPECT_TRUE(from_graphed.training.moe_router_fusion);  // the argument after the list is still read
  EXPECT_TRUE(std::any_of(graphed.notes.begin(), graphed.notes.end(), [](const std::string& note) {
    return note.find("model.cuda_graph_scope attn") != std::string::npos &&
           note.find("not modelled") != std::string::npos;
  }));
  std::string bridge_graphed = bridge;
  bridge_graphed.insert(bridge_graphed.find("model:\n") + 7,
                        "  cuda_graph_impl: transformer_engine\n  cuda_graph_scope: [moe_router]\n");
  const RunSpec router_only = run_of("bg.yaml", import_bridge(write("bg_in.yaml", bridge_graphed), options));
  EXPECT_TRUE(router_only.training.cuda_graph_scope.moe_router);
  EXPECT_FALSE(router_only.training.cuda_graph_scope.moe_preprocess);
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
