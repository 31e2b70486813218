// YAML configuration errors: one test per error kind asserting file, line, key and fix, and the cross-field rules
// of a run's layout.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "config_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::ConfigTest;
using test::expect_contains;
using test::input_error;
using test::read_text;

TEST_F(ConfigTest, YamlSyntaxErrorGivesItsPosition) {
  const fs::path run = write("syntax.yaml", "model: llama3-8b\nparallelism:\n  tp: [1, 2\n  dp: 4\n");
  InputError error({}, "", "", "");
  const std::string message = input_error([&] { (void)load(run); }, &error);
  expect_contains(message, {"syntax.yaml:", "YAML syntax error", "Fix: correct the YAML"});
  EXPECT_GE(error.where().line, 3);
  EXPECT_GT(error.where().column, 0);
}

TEST_F(ConfigTest, MissingRunFileSaysWhereItLooked) {
  const fs::path missing = dir_ / "nope" / "run.yaml";
  const std::string message = input_error([&] { (void)load(missing); });
  expect_contains(message, {"run.yaml", "run config not found: looked at " + missing.lexically_normal().string(),
                            "Fix: check the path"});
}

TEST_F(ConfigTest, MissingComponentFileSaysWhereItLooked) {
  const fs::path run = write("run.yaml", "model: models/nope.yaml\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message, {"run.yaml:1:8: key 'model': model file not found: looked at " +
                                (dir_ / "models" / "nope.yaml").lexically_normal().string(),
                            "Fix: paths are relative to the run file's folder"});
}

TEST_F(ConfigTest, UnknownComponentNameListsTheValidNames) {
  const fs::path run = write("run.yaml", "model: llama9-8b\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message,
                  {"run.yaml:1:8: key 'model': no model named 'llama9-8b'", "looked for ",
                   "models/llama9-8b.yaml; available model names",
                   "Fix: did you mean 'llama3-8b'? Or give a path to a file (e.g. model: ./my-model.yaml)",
                   "available model names: deepseek-v3, gpt-oss-120b, gpt3-175b, llama3-405b, llama3-70b, llama3-8b",
                   "mixtral-8x7b", "mpt-13b", "Fix: did you mean 'llama3-8b'?"});

  const fs::path hw = write("hw.yaml", "model: llama3-8b\nhardware: {name: H100}\ncluster: dgx-h100\n");
  expect_contains(input_error([&] { (void)load(hw); }), {"hw.yaml:2:18: key 'hardware.name': no hardware named 'H100'",
                                                         "H100-SXM5-80GB, H200-SXM-141GB", "MI300X"});
}

// A configs folder on the search path twice (chopsim run --configs configs beside the shipped configs it finds
// anyway, once relative and once absolute) is named once in the message.
TEST_F(ConfigTest, UnknownComponentNameNamesEachFolderOnce) {
  const fs::path run = write("run.yaml", "model: llama9-8b\nhardware: H100-SXM5-80GB\ncluster: dgx-h100\n");
  const fs::path configs = test::configs_dir();
  const ConfigSearchPath twice{{configs, fs::absolute(configs) / "." / ".." / configs.filename()}};
  const std::string message = input_error([&] { (void)load_run_config(run, twice, registries_); });
  const std::string file = "llama9-8b.yaml";
  const auto first = message.find(file);
  ASSERT_NE(first, std::string::npos) << message;
  EXPECT_EQ(message.find(file, first + file.size()), std::string::npos) << message;
}

TEST_F(ConfigTest, UnknownKeyListsTheValidKeys) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  tpp: 2\n", "  global_batch: 8\n"));
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message,
                  {"run.yaml:6:3: key 'parallelism.tpp': unknown key 'tpp' in 'parallelism'; valid keys: dp, tp, "
                   "sequence_parallel, pp, pp_schedule, virtual_stages, stage_layers, account_for_embedding_in_split, "
                   "account_for_loss_in_split, cp, ep, etp, zero_stage, fsdp, shard_group_size",
                   "Fix: did you mean 'tp'?"});

  const fs::path top = write("top.yaml", "modle: llama3-8b\nmodel: llama3-8b\nhardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(top); }),
                  {"top.yaml:1:1: key 'modle': unknown key 'modle' at the top of the file; valid keys: name, "
                   "description, model, calibration, hardware, cluster, parallelism, training, iterations, models, "
                   "collectives, simulation",
                   "Fix: did you mean 'model'?"});
}

TEST_F(ConfigTest, WrongTypeShowsTheValueFound) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  tp: four\n", "  global_batch: 8\n"));
  const std::string message = input_error([&] { (void)load(run); });
  ASSERT_NE(message.find("run.yaml"), std::string::npos);
  EXPECT_EQ(message.substr(message.find("run.yaml")),
            "run.yaml:6:7: key 'parallelism.tp': expected a positive integer, found 'four'. Fix: write a positive "
            "integer, e.g. 'tp: 1'");

  const fs::path flag =
      write("flag.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  overlap: {dp: maybe}\n"));
  expect_contains(input_error([&] { (void)load(flag); }),
                  {"flag.yaml:8:17: key 'training.overlap.dp': expected true or false, found 'maybe'",
                   "Fix: write 'dp: true' or 'dp: false'"});
  const fs::path list = write("list.yaml", small_run("llama3-8b", "  dp: [8]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(list); }),
                  {"list.yaml:5:7: key 'parallelism.dp': expected a positive integer, found a list"});
}

TEST_F(ConfigTest, OutOfRangeValuesAreRejected) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: 0\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:8:16: key 'training.micro_batch': expected a positive integer, found '0'",
                   "Fix: write a positive integer"});
  // A whole number beyond 32 bits says so, in a key and in a list entry; a negative one does not.
  const fs::path huge =
      write("huge.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  seq_len: 3000000000\n"));
  expect_contains(input_error([&] { (void)load(huge); }),
                  {"key 'training.seq_len': expected a positive integer, found '3000000000', above the largest "
                   "allowed value 2147483647. Fix:"});
  const fs::path huge_entry = write(
      "huge_entry.yaml",
      small_run("llama3-8b", "  pp: 2\n  dp: 4\n  stage_layers: [16, 99999999999999999999]\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(huge_entry); }),
                  {"entry 2: expected a positive integer, found '99999999999999999999', above the largest allowed"});
  const fs::path negative =
      write("negative.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: -2\n"));
  const std::string negative_message = input_error([&] { (void)load(negative); });
  EXPECT_EQ(negative_message.find("above the largest"), std::string::npos) << negative_message;
  const fs::path eff = write("eff.yaml", h100_kernels_run("efficiency: {gemm: {compute: 1.5}}"));
  expect_contains(input_error([&] { (void)load(eff); }),
                  {"eff.yaml:2:",
                   "key 'hardware.kernels.efficiency.gemm.compute': expected a fraction in (0, 1], "
                   "found '1.5'",
                   "Fix: write a fraction in (0, 1] for 'hardware.kernels.efficiency.gemm.compute'"});
  const fs::path slow = write("slow.yaml",
                              "model: {name: llama3-8b, make_vocab_size_divisible_by: 0}\n"
                              "hardware: {name: H100-SXM5-80GB, kernels: {unaligned_gemm_slowdown: 0.5}}\n"
                              "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n"
                              "parallelism: {dp: 8}\ntraining: {global_batch: 8}\n");
  expect_contains(
      input_error([&] { (void)load(slow); }),
      {"slow.yaml:1:", "key 'model.make_vocab_size_divisible_by': expected an integer from 1 to 65536, found '0'"});
  const fs::path faster = write("faster.yaml", h100_kernels_run("unaligned_gemm_slowdown: 0.5"));
  expect_contains(
      input_error([&] { (void)load(faster); }),
      {"faster.yaml:2:", "key 'hardware.kernels.unaligned_gemm_slowdown': expected a number >= 1, found '0.5'"});
  const fs::path fp8 = write("fp8.yaml", h100_kernels_run("fp8_gemm_efficiency_ratio: 1.13"));
  expect_contains(
      input_error([&] { (void)load(fp8); }),
      {"fp8.yaml:2:", "key 'hardware.kernels.fp8_gemm_efficiency_ratio': expected a fraction in (0, 1], found '1.13'"});
  const fs::path zero = write("zero.yaml", small_run("llama3-8b", "  dp: 8\n  zero_stage: 4\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(zero); }),
                  {"zero.yaml:6:15: key 'parallelism.zero_stage': expected an integer from 0 to 3, found '4'"});
}

TEST_F(ConfigTest, MissingRequiredKeysAreNamed) {
  const fs::path run = write("run.yaml", "hardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:1:1: key 'model': required key 'model' is missing", "Fix: add 'model: ...'"});

  // An inline model must be complete.
  const fs::path partial = write("partial.yaml",
                                 "model:\n  layers: 2\n  hidden: 64\n  ffn_hidden: 256\n  kv_heads: 1\n  vocab: 100\n"
                                 "  mlp: gelu\n  norm: layernorm\n  tied_embeddings: true\n"
                                 "hardware: MI300X\ncluster: mi300x\n");
  expect_contains(input_error([&] { (void)load(partial); }),
                  {"partial.yaml:2:3: key 'model.heads': required key 'heads' is missing in 'model'",
                   "Fix: add 'heads: ...' with a positive integer"});

  // A component file without a required key; the message names that file.
  const fs::path model = write("models/short.yaml",
                               "layers: 2\nhidden: 64\nffn_hiden: 256\nheads: 4\nkv_heads: 4\n"
                               "vocab: 100\nmlp: gelu\nnorm: layernorm\ntied_embeddings: true\n");
  expect_contains(input_error([&] { (void)load_model_config(model); }),
                  {(dir_ / "models" / "short.yaml").string() + ":1:1: key 'ffn_hidden': required key 'ffn_hidden' is "
                                                               "missing ('ffn_hiden' is present: a misspelling?)"});
}

TEST_F(ConfigTest, UnknownChoiceListsTheChoices) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  recompute: partial\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:8:14: key 'training.recompute': expected one of none, selective, full, found 'partial'",
                   "Fix: use one of: none, selective, full"});
  const fs::path schedule =
      write("schedule.yaml", small_run("llama3-8b", "  dp: 8\n  pp_schedule: 1F1B\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(schedule); }),
                  {"key 'parallelism.pp_schedule': expected one of 1f1b, interleaved, found '1F1B'"});
}

TEST_F(ConfigTest, UnknownRegistryNamesListTheRegisteredOnes) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n",
                                                   "{name: dgx-h100, nodes: 1, node_topology: nvlink, "
                                                   "fabric: {kind: none}}"));
  const std::string message = input_error([&] { (void)load(run); });
  const std::string names = join(registries_.node_topology.names());
  expect_contains(
      message,
      {"run.yaml:3:52: key 'cluster.node_topology': unknown node topology 'nvlink'; valid names: " + names, "Fix: "});

  const fs::path engine =
      write("engine.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "simulation: {engine: ns3}\n");
  expect_contains(input_error([&] { (void)load(engine); }),
                  {"engine.yaml:8:22: key 'simulation.engine': unknown engine 'ns3'; valid names: fast, simgrid"});
  const fs::path compute = write(
      "compute.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "models: {compute: rooflin}\n");
  expect_contains(input_error([&] { (void)load(compute); }),
                  {"key 'models.compute': unknown compute model 'rooflin'", "Fix: did you mean 'roofline'?"});

  // A name inside an included cluster file is reported at that file's line.
  write("clusters/odd.yaml", "gpus_per_node: 8\nnode_topology: nvlink\nnics_per_node: 8\nfabric: {kind: none}\n");
  const fs::path odd =
      write("odd.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n", "{path: clusters/odd.yaml}"));
  expect_contains(input_error([&] { (void)load(odd); }),
                  {(dir_ / "clusters" / "odd.yaml").string() + ":2:16: key 'cluster.node_topology': unknown node "
                                                               "topology 'nvlink'"});
}

TEST_F(ConfigTest, ErrorsInsideAnIncludedFileNameThatFile) {
  std::string text = read_text(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  const std::string from = "bf16: 989.4";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(), "bf16: fast");
  const fs::path hardware = write("hw/broken.yaml", text);
  const fs::path run = write("run.yaml", "model: llama3-8b\nhardware: hw/broken.yaml\ncluster: dgx-h100\n");

  // The line of "bf16:" in the hardware file, counted independently.
  int line = 1;
  for (std::size_t i = 0; i < at; ++i) line += text[i] == '\n' ? 1 : 0;
  const std::string message = input_error([&] { (void)load(run); });
  expect_contains(message, {hardware.lexically_normal().string() + ":" + std::to_string(line) + ":",
                            "key 'peak_tflops.bf16': expected a number > 0 (TFLOP/s), found 'fast'",
                            "Fix: write a number > 0 (TFLOP/s)"});
  EXPECT_EQ(message.find("run.yaml"), std::string::npos) << "the error is in the hardware file, not the run";
}

TEST_F(ConfigTest, DuplicateKeysAreRejected) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n  dp: 4\n", "  global_batch: 8\n"));
  expect_contains(
      input_error([&] { (void)load(run); }),
      {"run.yaml:6:3: key 'parallelism.dp': key 'dp' appears twice (first on line 5)", "Fix: keep one of them"});
}

TEST_F(ConfigTest, ClusterFilesMayNotSetTheNodeCount) {
  const fs::path cluster = write("c.yaml",
                                 "nodes: 4\ngpus_per_node: 8\nnode_topology: nvswitch\nnics_per_node: 8\n"
                                 "fabric: {kind: rail_optimized}\n");
  expect_contains(input_error([&] { (void)load_cluster_config(cluster); }),
                  {"c.yaml:1:8: key 'nodes': a cluster file describes the node type and fabric",
                   "Fix: remove 'nodes' here and give it in the run: cluster: {name: NAME, nodes: N}"});
}

TEST_F(ConfigTest, GpuCountMustMatchTheParallelLayout) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 4\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:5:7: key 'parallelism.dp': tp*pp*dp*cp = 1*1*4*1 = 4 does not match the cluster's 8 GPUs "
                   "(cluster.nodes 1 x cluster.gpus_per_node 8)",
                   "Fix: set parallelism.dp: 8 (= 8 GPUs / (tp*pp*cp = 1)), or change cluster.nodes"});
  const fs::path none_fits = write("three.yaml", small_run("llama3-8b", "  pp: 3\n", "  global_batch: 8\n"));
  expect_contains(
      input_error([&] { (void)load(none_fits); }),
      {"key 'parallelism.dp': tp*pp*dp*cp = 1*3*1*1 = 3", "Fix: no dp fits: 8 GPUs is not a multiple of tp*pp*cp = 3"});
}

TEST_F(ConfigTest, HeadsAndKvHeadsMustDivideByTp) {
  const fs::path heads = write("heads.yaml", small_run("mpt-760m", "  tp: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(heads); }),
                  {"heads.yaml:5:7: key 'parallelism.tp': model.heads (12) is not divisible by parallelism.tp (8)",
                   "Fix: use a tp that divides both heads and kv_heads: 1, 2, 3, 4, 6, 12"});
  const fs::path kv =
      write("kv.yaml", small_run("llama3-8b", "  tp: 16\n", "  global_batch: 8\n", "{name: dgx-h100, nodes: 2}"));
  expect_contains(input_error([&] { (void)load(kv); }),
                  {"kv.yaml:5:7: key 'parallelism.tp': model.kv_heads (8) is not divisible by parallelism.tp (16)",
                   "Fix: use a tp that divides kv_heads: 1, 2, 4, 8"});
}

TEST_F(ConfigTest, LayersMustDivideByPipelineChunks) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  virtual_stages: 3\n  dp: 2\n",
                                  "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:5:7: key 'parallelism.pp': model.layers (32) is not divisible by parallelism.pp x "
                   "virtual_stages (4 x 3 = 12)",
                   "Fix: use pp x virtual_stages among the divisors of 32: 1, 2, 4, 8, 16, 32"});
}

TEST_F(ConfigTest, PipelineScheduleRules) {
  const fs::path one =
      write("one.yaml", small_run("llama3-8b", "  pp: 4\n  virtual_stages: 2\n  dp: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(one); }),
                  {"one.yaml:6:19: key 'parallelism.virtual_stages': pp_schedule 1f1b runs one model chunk per stage, "
                   "but virtual_stages is 2",
                   "Fix: set pp_schedule: interleaved, or virtual_stages: 1"});
  const fs::path single = write(
      "single.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  dp: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(single); }),
                  {"key 'parallelism.virtual_stages': pp_schedule interleaved needs virtual_stages > 1",
                   "Fix: set virtual_stages >= 2"});
  const fs::path batches = write(
      "batches.yaml", small_run("llama3-8b", "  pp: 4\n  pp_schedule: interleaved\n  virtual_stages: 2\n  dp: 2\n",
                                "  global_batch: 6\n"));
  expect_contains(input_error([&] { (void)load(batches); }),
                  {"batches.yaml:10:17: key 'training.global_batch': the interleaved schedule needs the number of "
                   "micro-batches (global_batch / (dp x micro_batch) = 3) to be a multiple of pp (4)",
                   "Fix: use a global_batch that is a multiple of dp x micro_batch x pp = 8"});
}

TEST_F(ConfigTest, GlobalBatchMustDivideIntoMicroBatches) {
  const fs::path run = write("run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 20\n  micro_batch: 2\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:7:17: key 'training.global_batch': training.global_batch (20) is not divisible by dp x "
                   "micro_batch (8 x 2 = 16)",
                   "Fix: use a multiple of 16, e.g. 16 or 32"});
  const fs::path small =
      write("small.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n  micro_batch: 2\n"));
  expect_contains(input_error([&] { (void)load(small); }),
                  {"key 'training.global_batch': training.global_batch (8) is smaller than dp x micro_batch (8 x 2 = "
                   "16): each data-parallel rank needs at least one micro-batch"});
}

TEST_F(ConfigTest, ExpertParallelismRules) {
  const fs::path experts = write("experts.yaml", small_run("mixtral-8x7b", "  dp: 16\n  ep: 16\n",
                                                           "  global_batch: 16\n", "{name: dgx-h100, nodes: 2}"));
  expect_contains(input_error([&] { (void)load(experts); }),
                  {"experts.yaml:6:7: key 'parallelism.ep': model.experts (8) is not divisible by parallelism.ep (16)",
                   "Fix: use an ep that divides the expert count: 1, 2, 4, 8"});
  const fs::path data =
      write("data.yaml", small_run("mixtral-8x7b", "  tp: 2\n  dp: 4\n  ep: 8\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(data); }),
                  {"data.yaml:7:7: key 'parallelism.ep': dp x cp (4 x 1 = 4) is not divisible by parallelism.ep (8)",
                   "Fix: use an ep that divides 4: 1, 2, 4, or set etp: 1"});
  // MoE parallel folding: with etp 1 the same ep 8 spans tp 2 x dp 4 (and needs sequence parallelism).
  const fs::path folded = write("folded.yaml", small_run("mixtral-8x7b",
                                                         "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 1\n"
                                                         "  sequence_parallel: true\n",
                                                         "  global_batch: 8\n"));
  const RunSpec run = load(folded);
  EXPECT_EQ(run.parallelism.etp, 1);
  EXPECT_EQ(run.parallelism.expert_tp(), 1);
  const fs::path no_sp =
      write("no_sp.yaml", small_run("mixtral-8x7b", "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 1\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(no_sp); }),
                  {"key 'parallelism.etp': etp (1) differs from tp (2) without sequence parallelism",
                   "Fix: set parallelism.sequence_parallel: true, or remove etp"});
  const fs::path too_many = write("too_many.yaml", small_run("mixtral-8x7b",
                                                             "  tp: 2\n  dp: 4\n  ep: 8\n  etp: 4\n"
                                                             "  sequence_parallel: true\n",
                                                             "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(too_many); }),
                  {"key 'parallelism.etp': etp x ep (4 x 8) does not divide tp x cp x dp (8)"});
  const fs::path dense = write("dense.yaml", small_run("llama3-8b", "  dp: 8\n  ep: 2\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(dense); }),
                  {"dense.yaml:6:7: key 'parallelism.ep': parallelism.ep is 2 but model 'llama3-8b' has no experts",
                   "Fix: set ep: 1, or use a mixture-of-experts model"});
}

TEST_F(ConfigTest, ContextParallelismMustDivideTheSequence) {
  const fs::path run =
      write("run.yaml", small_run("llama3-8b", "  dp: 2\n  cp: 4\n", "  global_batch: 8\n  seq_len: 8190\n"));
  expect_contains(input_error([&] { (void)load(run); }),
                  {"run.yaml:6:7: key 'parallelism.cp': training.seq_len (8190) is not divisible by parallelism.cp (4)",
                   "Fix: use a cp that divides seq_len"});
}

TEST_F(ConfigTest, ShardingAndTopologyRules) {
  const fs::path group =
      write("group.yaml",
            small_run("llama3-8b", "  dp: 8\n  fsdp: hybrid_shard\n  shard_group_size: 3\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(group); }),
                  {"group.yaml:7:21: key 'parallelism.shard_group_size': shard_group_size (3) does not divide dp x cp "
                   "(8 x 1 = 8)",
                   "Fix: use a divisor of 8: 1, 2, 4, 8"});
  const fs::path nodes = write("nodes.yaml", small_run("llama3-8b", "  dp: 16\n", "  global_batch: 16\n",
                                                       "{name: dgx-h100, nodes: 2, fabric: {kind: none}}"));
  expect_contains(input_error([&] { (void)load(nodes); }),
                  {"nodes.yaml:3:34: key 'cluster.nodes': cluster.fabric.kind 'none' connects no nodes, but "
                   "cluster.nodes is 2",
                   "Fix: set cluster.nodes: 1"});
  const fs::path sp =
      write("sp.yaml", small_run("llama3-8b", "  dp: 8\n  sequence_parallel: true\n", "  global_batch: 8\n"));
  expect_contains(input_error([&] { (void)load(sp); }),
                  {"key 'parallelism.sequence_parallel': sequence_parallel splits activations across the TP group, but "
                   "tp is 1"});
  const fs::path fp8 = write("fp8.yaml",
                             "model: llama3-8b\nhardware: A100-SXM4-80GB\n"
                             "cluster: {name: dgx-a100, nodes: 1, fabric: {kind: none}}\n"
                             "parallelism: {dp: 8}\ntraining: {global_batch: 8, precision: fp8}\n");
  expect_contains(input_error([&] { (void)load(fp8); }),
                  {"fp8.yaml:5:40: key 'training.precision': hardware 'A100-SXM4-80GB' has no fp8 units"});
}

TEST_F(ConfigTest, ValidateRunChecksRunsBuiltInCode) {
  RunSpec run = load(test::configs_dir() / "llama3-70b-h100-3d.yaml");
  EXPECT_NO_THROW(validate_run(run, SourceLocation{"sweep"}));
  run.parallelism.dp = 4;  // 8*4*4 = 128 GPUs on a 64-GPU cluster
  const std::string message = input_error([&] { validate_run(run, SourceLocation{"sweep"}); });
  EXPECT_EQ(message,
            "sweep: key 'parallelism.dp': tp*pp*dp*cp = 8*4*4*1 = 128 does not match the cluster's 64 GPUs "
            "(cluster.nodes 8 x cluster.gpus_per_node 8). Fix: set parallelism.dp: 2 (= 64 GPUs / (tp*pp*cp = 32)), "
            "or change cluster.nodes");
  run.parallelism.dp = 2;
  run.training.micro_batch = 0;
  expect_contains(input_error([&] { validate_run(run, SourceLocation{"sweep"}); }),
                  {"sweep: key 'training.micro_batch': must be a positive integer, found 0"});
}

}  // namespace
}  // namespace chopsim
