// YAML configuration: every shipped file loads and mirrors its source, the three ways of naming a component decode
// the same, overrides, the search path. The other configuration tests: config_hardware_test.cpp (SI conversion
// against datasheet values, hardware and cluster keys), config_training_test.cpp (training, parallelism and model
// keys), config_errors_test.cpp (one test per error kind, asserting file, line, key and fix; cross-field rules).

#include "chopsim/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "chopsim/common/text.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"
#include "config_test_support.hpp"

namespace chopsim {
namespace {

namespace fs = std::filesystem;

using test::ConfigTest;
using test::expect_contains;
using test::idx;
using test::indent;
using test::input_error;
using test::read_text;
using test::yaml_files;

/// Every decoded field except names and the source path, for "decodes the same" comparisons.
std::string describe(const RunSpec& run) {
  std::ostringstream out;
  out << std::setprecision(17);
  const auto& m = run.model;
  out << m.layers << ' ' << m.hidden << ' ' << m.ffn_hidden << ' ' << m.heads << ' ' << m.kv_heads << ' ' << m.vocab
      << ' ' << m.experts << ' ' << m.top_k << ' ' << static_cast<int>(m.mlp) << ' ' << static_cast<int>(m.norm) << ' '
      << m.tied_embeddings << ' ' << m.causal << ' ' << m.dropout << ' ' << m.linear_bias << ' '
      << static_cast<int>(m.position_embedding) << '\n';
  const auto& h = run.hardware;
  out << h.vendor << ' ';
  for (double peak : h.compute.peak_flops_per_s) out << peak << ' ';
  out << h.compute.hbm_bandwidth_bytes_per_s << ' ' << h.compute.boost_clock_hz << ' ' << h.compute.launch_overhead_s
      << ' ' << h.compute.comm_compute_slowdown << ' ' << h.compute.unaligned_gemm_slowdown << ' '
      << h.compute.deterministic_attention.backward_slowdown << ' '
      << h.compute.deterministic_attention.workspace_bytes_per_score << ' ' << h.compute.attention_dropout_slowdown
      << ' ' << h.compute.fp8_gemm_efficiency_ratio << ' ' << h.host_link_bandwidth_bytes_per_s << '\n';
  for (const double eta : h.compute.elementwise_path_memory) out << eta << ' ';
  out << h.attention_head_dim_64_ratio << '\n';
  for (const auto& e : h.compute.efficiency)
    out << e.compute << ' ' << e.memory << ' ' << e.half_efficiency_flops << ' ';
  out << '\n'
      << h.min_clock_hz << ' ' << h.hbm_capacity_bytes << ' ' << h.tdp_w << ' ' << h.idle_power_w << ' '
      << h.intra_node_link_bandwidth_bytes_per_s << ' ' << h.intra_node_links_per_gpu << ' '
      << h.intra_node_link_latency_s << ' ' << h.pcie_bandwidth_bytes_per_s << ' ' << h.nic_bandwidth_bytes_per_s << ' '
      << h.nic_latency_s << ' ' << h.dies_per_package << ' ' << h.in_package_link_bandwidth_bytes_per_s << ' '
      << h.memory_reserved_bytes << ' ' << h.memory_fragmentation_fraction << ' ' << h.intra_node_link_efficiency << ' '
      << h.nic_efficiency << ' ' << h.cublas_workspace_bytes << ' ' << h.transformer_engine_workspace_bytes << '\n';
  for (const auto& [name, impl] : h.attention_implementations)
    out << name << ' ' << impl.efficiency.compute << ' ' << impl.efficiency.memory << ' '
        << impl.efficiency.half_efficiency_flops << ' ' << impl.deterministic.backward_slowdown << ' '
        << impl.deterministic.workspace_bytes_per_score << ' ' << impl.dropout_slowdown << ' ' << impl.head_dim_64_ratio
        << ' ';
  out << '\n';
  const auto& c = run.cluster;
  out << c.nodes << ' ' << c.gpus_per_node << ' ' << c.node_topology << ' ' << c.nics_per_node << ' ' << c.fabric.kind
      << ' ' << c.fabric.oversubscription << ' ' << c.fabric.leaf_downlinks << ' ' << c.fabric.switch_latency_s << ' '
      << c.fabric.cable_latency_s << ' ' << c.fabric.uplink_bandwidth_bytes_per_s << '\n';
  const auto& p = run.parallelism;
  out << p.dp << ' ' << p.tp << ' ' << p.pp << ' ' << p.cp << ' ' << p.ep << ' ' << p.sequence_parallel << ' '
      << static_cast<int>(p.pp_schedule) << ' ' << p.virtual_stages << ' ' << p.zero_stage << ' ' << p.shard_group_size
      << '\n';
  const auto& t = run.training;
  out << t.global_batch << ' ' << t.micro_batch << ' ' << t.seq_len << ' ' << static_cast<int>(t.precision) << ' '
      << static_cast<int>(t.recompute) << ' ' << t.overlap.dp << t.overlap.fsdp << t.overlap.tp << t.overlap.pp
      << t.overlap.cp << t.overlap.ep << ' ' << t.fsdp_prefetch << ' ' << t.dp_bucket_bytes << ' '
      << t.moe_capacity_factor.value_or(0.0) << t.moe_pad_to_capacity << ' ' << t.moe_load_imbalance << ' '
      << t.overlap.tp_backward << ' ' << t.attention << ' ' << t.gradient_accumulation_fusion << t.cross_entropy_fusion
      << t.grad_clip << t.log_num_zeros_in_grad << t.log_params_norm << t.fsdp_reduce_fp32 << t.deterministic
      << t.fill_uninitialized_memory << t.attention_mask_in_dataloader << t.check_for_nan_in_grad << ' '
      << t.host_launch_s << ' ' << to_string(t.moe_dispatcher) << ' ' << to_string(t.fp8_recipe) << ' ' << t.lora.rank
      << t.lora.qkv << t.lora.proj << t.lora.fc1 << t.lora.fc2 << ' ' << to_string(t.fsdp_runtime()) << ' '
      << t.moe_router_fusion << static_cast<int>(t.moe_aux_loss) << t.moe_expert_bias << t.cuda_graph_scope.moe_router
      << t.cuda_graph_scope.moe_preprocess << ' ' << t.cublas_workspace_bytes << '\n';
  out << run.compute_model << ' ' << run.collective_model << ' ' << run.collectives.all_reduce << ' '
      << run.collectives.all_gather << ' ' << run.collectives.reduce_scatter << ' ' << run.collectives.all_to_all << ' '
      << run.collectives.step_latency_s << ' ' << run.collectives.mesh_channels << ' '
      << run.collectives.pipelined_rings << ' ' << run.engine << ' ' << run.engine_options.network_model << ' '
      << run.engine_options.isolate_in_child_process << ' ' << run.iterations << '\n';
  return out.str();
}

TEST_F(ConfigTest, EveryShippedComponentFileLoads) {
  const auto hardware = yaml_files(test::configs_dir() / "hardware");
  const auto models = yaml_files(test::configs_dir() / "models");
  const auto clusters = yaml_files(test::configs_dir() / "clusters");
  EXPECT_GE(hardware.size(), 7U);
  EXPECT_GE(models.size(), 12U);
  EXPECT_GE(clusters.size(), 8U);
  for (const auto& file : hardware) {
    SCOPED_TRACE(file.string());
    const HardwareSpec spec = load_hardware_config(file);
    EXPECT_EQ(spec.name, file.stem().string());
    EXPECT_GT(spec.compute.peak_flops_per_s[idx(Precision::bf16)], 0.0);
    for (const auto& e : spec.compute.efficiency) {
      EXPECT_GT(e.compute, 0.0);
      EXPECT_LE(e.compute, 1.0);
      EXPECT_LT(e.memory, 1.0) << "an efficiency of exactly 1 is the struct default: every class must be stated";
    }
  }
  for (const auto& file : models) {
    SCOPED_TRACE(file.string());
    const TransformerSpec spec = load_model_config(file);
    EXPECT_EQ(spec.hidden % spec.heads, 0);
  }
  for (const auto& file : clusters) {
    SCOPED_TRACE(file.string());
    const ClusterSpec spec = load_cluster_config(file);
    EXPECT_TRUE(registries_.node_topology.contains(spec.node_topology));
    EXPECT_TRUE(registries_.fabric_topology.contains(spec.fabric.kind));
  }
}

TEST_F(ConfigTest, EveryShippedRunLoadsWithTheDefaultSearchPath) {
  std::vector<fs::path> runs = yaml_files(test::configs_dir());
  const auto validation = yaml_files(test::configs_dir() / "validation");
  runs.insert(runs.end(), validation.begin(), validation.end());
  EXPECT_GE(runs.size(), 9U);
  for (const auto& file : runs) {
    SCOPED_TRACE(file.string());
    const ConfigSearchPath search = default_search_path(file);
    ASSERT_EQ(search.roots.size(), 1U);
    EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(test::configs_dir()));
    const RunSpec run = load_run_config(file, search, registries_);
    EXPECT_EQ(run.parallelism.world_size(), run.cluster.gpu_count());
    EXPECT_EQ(run.source, file);
    EXPECT_NO_THROW(validate_run(run, SourceLocation{file.string()}));
  }
}

TEST_F(ConfigTest, ARunListsEveryFileItRead) {
  // What a sweep point's cache key hashes: the run config, then its model, calibration profile, hardware and cluster
  // files, in that order; an inline component reads no file.
  const fs::path config = test::configs_dir() / "llama3-8b-fsdp.yaml";
  const auto listed = [&](const std::vector<ConfigOverride>& overrides) {
    std::vector<fs::path> files;
    for (const fs::path& f : load_run_config(config, default_search_path(config), registries_, overrides).input_files)
      files.push_back(fs::canonical(f));
    return files;
  };
  const fs::path configs = fs::canonical(test::configs_dir());
  EXPECT_EQ(listed({}),
            (std::vector<fs::path>{fs::canonical(config), configs / "models" / "llama3-8b.yaml",
                                   configs / "hardware" / "MI300X.yaml", configs / "clusters" / "mi300x.yaml"}));
  const fs::path profile = fs::canonical(test::source_dir() / "calibration" / "profiles" / "mi300x.yaml");
  EXPECT_EQ(listed({{"calibration", profile.string(), "test"}}),
            (std::vector<fs::path>{fs::canonical(config), configs / "models" / "llama3-8b.yaml", profile,
                                   configs / "hardware" / "MI300X.yaml", configs / "clusters" / "mi300x.yaml"}));
}

TEST_F(ConfigTest, ShippedRunsMirrorTheirSources) {
  const RunSpec fsdp = load(test::configs_dir() / "llama3-8b-fsdp.yaml");
  EXPECT_EQ(fsdp.hardware.name, "MI300X");
  EXPECT_EQ(fsdp.cluster.gpu_count(), 8);
  EXPECT_EQ(fsdp.parallelism.zero_stage, 3);  // fsdp: full_shard

  const RunSpec llama70 = load(test::configs_dir() / "llama3-70b-h100-3d.yaml");
  EXPECT_EQ(llama70.cluster.gpu_count(), 64);
  EXPECT_EQ(llama70.parallelism.tp, 8);
  EXPECT_EQ(llama70.parallelism.pp, 4);
  EXPECT_EQ(llama70.parallelism.dp, 2);
  EXPECT_TRUE(llama70.parallelism.sequence_parallel);
  EXPECT_EQ(llama70.training.dp_bucket_bytes, 125.0 * 1024 * 1024);  // NeMo bucket_cap_mb is MiB

  const RunSpec mixtral = load(test::configs_dir() / "mixtral-8x7b-h200-ep.yaml");
  EXPECT_EQ(mixtral.cluster.gpu_count(), 32);
  EXPECT_EQ(mixtral.parallelism.ep, 8);
  EXPECT_EQ(mixtral.model.experts, 8);

  // Megatron validation runs: interleaving with 1 layer per virtual stage; tp4 uses micro-batch 2 and no SP.
  const RunSpec pp4 = load(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp1-pp4.yaml");
  EXPECT_EQ(pp4.parallelism.pp_schedule, PipelineSchedule::interleaved);
  EXPECT_EQ(pp4.parallelism.virtual_stages, 8);
  EXPECT_EQ(pp4.model.layers / (pp4.parallelism.pp * pp4.parallelism.virtual_stages), 1);
  EXPECT_EQ(pp4.training.micro_batches(pp4.parallelism), 4);
  EXPECT_EQ(pp4.collectives.all_reduce, "ring");
  const RunSpec tp4 = load(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp4-pp1.yaml");
  EXPECT_EQ(tp4.parallelism.tp, 4);
  EXPECT_FALSE(tp4.parallelism.sequence_parallel);
  EXPECT_EQ(tp4.training.micro_batch, 2);
  EXPECT_EQ(tp4.model.ffn_hidden, 4 * tp4.model.hidden);  // no --swiglu, no --ffn-hidden-size: 4h GELU
  EXPECT_EQ(tp4.model.mlp, MlpKind::gelu);
  EXPECT_TRUE(tp4.model.linear_bias);                      // Megatron's default --add-bias-linear
  EXPECT_TRUE(tp4.training.attention_mask_in_dataloader);  // and --create-attention-mask-in-dataloader
  EXPECT_FALSE(load(test::configs_dir() / "validation" / "megatron-gpt-tiny-tp2-pp2.yaml")
                   .training.attention_mask_in_dataloader);  // the test named no_create_attention_mask_in_dataloader

  // The scale-out / scale-up pair trains the same model on the same tokens per step.
  const RunSpec out = load(test::configs_dir() / "llama3-70b-scaleout-h100.yaml");
  const RunSpec up = load(test::configs_dir() / "llama3-70b-scaleup-h200.yaml");
  EXPECT_EQ(out.model.name, up.model.name);
  EXPECT_EQ(out.training.tokens_per_iteration(), up.training.tokens_per_iteration());
  EXPECT_GT(out.cluster.gpu_count(), up.cluster.gpu_count());
}

TEST_F(ConfigTest, ByNameByPathAndInlineDecodeTheSame) {
  const std::string rest =
      "parallelism: {tp: 2, sequence_parallel: true, dp: 4}\n"
      "training: {global_batch: 32, micro_batch: 1, seq_len: 4096}\n";
  const fs::path by_name = write("by-name.yaml",
                                 "model: llama3-8b\nhardware: H100-SXM5-80GB\n"
                                 "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n" +
                                     rest);
  const std::string configs = fs::absolute(test::configs_dir()).string();
  const fs::path by_path =
      write("by-path.yaml", "model: " + configs + "/models/llama3-8b.yaml\n" + "hardware: {path: " + configs +
                                "/hardware/H100-SXM5-80GB.yaml}\n" + "cluster: {path: " + configs +
                                "/clusters/dgx-h100.yaml, nodes: 1, fabric: {kind: none}}\n" + rest);
  // Relative paths are relative to the run file's folder.
  write("components/llama.yaml", read_text(test::configs_dir() / "models" / "llama3-8b.yaml"));
  const fs::path relative = write("relative.yaml",
                                  "model: components/llama.yaml\nhardware: H100-SXM5-80GB\n"
                                  "cluster: {name: dgx-h100, nodes: 1, fabric: {kind: none}}\n" +
                                      rest);
  std::string cluster_text = read_text(test::configs_dir() / "clusters" / "dgx-h100.yaml");
  cluster_text.replace(cluster_text.find("kind: rail_optimized"), std::string("kind: rail_optimized").size(),
                       "kind: none");
  const fs::path inline_file =
      write("inline.yaml", "model:\n" + indent(read_text(test::configs_dir() / "models" / "llama3-8b.yaml"), "  ") +
                               "hardware:\n" +
                               indent(read_text(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml"), "  ") +
                               "cluster:\n  nodes: 1\n" + indent(cluster_text, "  ") + rest);

  const RunSpec a = load(by_name);
  const RunSpec b = load(by_path);
  const RunSpec c = load(relative);
  const RunSpec d = load(inline_file);
  EXPECT_EQ(describe(a), describe(b));
  EXPECT_EQ(describe(a), describe(c));
  EXPECT_EQ(describe(a), describe(d));
  EXPECT_EQ(a.model.name, "llama3-8b");
  EXPECT_EQ(b.hardware.name, "H100-SXM5-80GB");
  EXPECT_EQ(c.model.name, "llama");  // a file's name is its stem
  EXPECT_EQ(d.model.name, "inline model");
  EXPECT_EQ(a.name, "by-name");  // the run's name defaults to its file's stem
}

TEST_F(ConfigTest, RunOverridesChangeOnlyTheKeysGiven) {
  const fs::path run = write("override.yaml",
                             "model: {name: llama3-8b, layers: 16}\n"
                             "hardware:\n"
                             "  name: H100-SXM5-80GB\n"
                             "  kernels: {efficiency: {gemm: {compute: 0.5}}}\n"
                             "  nic: {bandwidth_gbit_s: 200}\n"
                             "cluster: {name: dgx-h100, nodes: 2}\n"
                             "parallelism: {dp: 16}\n"
                             "training: {global_batch: 16, dp_bucket_mb: 25}\n"
                             "collectives: {step_latency_us: 5, all_reduce: tree}\n"
                             "simulation: {network_model: LV08, isolate_in_child_process: false}\n");
  const RunSpec spec = load(run);
  const HardwareSpec base = load_hardware_config(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
  EXPECT_EQ(spec.model.layers, 16);
  EXPECT_EQ(spec.model.hidden, 4096);
  const auto& gemm = spec.hardware.compute.efficiency[idx(KernelClass::gemm)];
  EXPECT_DOUBLE_EQ(gemm.compute, 0.5);
  EXPECT_DOUBLE_EQ(gemm.memory, base.compute.efficiency[idx(KernelClass::gemm)].memory);
  EXPECT_DOUBLE_EQ(gemm.half_efficiency_flops, 8e9);
  EXPECT_DOUBLE_EQ(spec.hardware.compute.efficiency[idx(KernelClass::attention)].compute,
                   base.compute.efficiency[idx(KernelClass::attention)].compute);
  EXPECT_DOUBLE_EQ(spec.hardware.nic_bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(spec.hardware.nic_latency_s, base.nic_latency_s);
  EXPECT_EQ(spec.cluster.nodes, 2);
  EXPECT_EQ(spec.cluster.fabric.kind, "rail_optimized");
  EXPECT_DOUBLE_EQ(spec.training.dp_bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(spec.collectives.step_latency_s, 5e-6);
  EXPECT_EQ(spec.collectives.all_reduce, "tree");
  EXPECT_EQ(spec.collectives.all_gather, "auto");  // unset keys keep the struct defaults
  EXPECT_EQ(spec.engine_options.network_model, "LV08");
  EXPECT_FALSE(spec.engine_options.isolate_in_child_process);
  EXPECT_EQ(spec.training.seq_len, TrainingSpec{}.seq_len);
}

TEST_F(ConfigTest, FsdpNamesAreAliasesOfZeroStages) {
  auto stage = [&](const std::string& lines) {
    return load(write("fsdp.yaml", small_run("llama3-8b", lines, "  global_batch: 8\n"))).parallelism;
  };
  EXPECT_EQ(stage("  dp: 8\n  fsdp: full_shard\n").zero_stage, 3);
  EXPECT_EQ(stage("  dp: 8\n  fsdp: shard_grad_op\n").zero_stage, 2);
  EXPECT_EQ(stage("  dp: 8\n  fsdp: no_shard\n").zero_stage, 0);
  const auto hybrid = stage("  dp: 8\n  fsdp: hybrid_shard\n  shard_group_size: 4\n");
  EXPECT_EQ(hybrid.zero_stage, 3);
  EXPECT_EQ(hybrid.shard_group_size, 4);
  EXPECT_EQ(stage("  dp: 8\n  zero_stage: 3\n  fsdp: full_shard\n").zero_stage, 3);

  const std::string conflict = input_error([&] { stage("  dp: 8\n  zero_stage: 1\n  fsdp: full_shard\n"); });
  expect_contains(conflict, {"fsdp.yaml:7:9:", "key 'parallelism.fsdp'", "means zero_stage 3, but zero_stage is 1",
                             "Fix: give only one"});
  const std::string hybrid_size = input_error([&] { stage("  dp: 8\n  fsdp: hybrid_shard\n"); });
  expect_contains(hybrid_size, {"key 'parallelism.fsdp'", "shard_group_size is not set", "Fix: add 'shard_group_size"});
}

TEST_F(ConfigTest, DefaultSearchPathFindsTheConfigsFolder) {
  const auto search = default_search_path(test::configs_dir() / "validation" / "megatron-gpt3-7b-tp1-pp4.yaml");
  ASSERT_EQ(search.roots.size(), 1U);
  EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(test::configs_dir()));

  // Outside any configs folder the shipped configs are the root: a run file copied anywhere finds names (issue 18:
  // it failed with "no configs folder was found" unless --configs was given).
  const fs::path run = write("lonely.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"));
  const ConfigSearchPath outside = default_search_path(run);
  ASSERT_EQ(outside.roots.size(), 1U) << "a 'hardware' folder above " << dir_;
  EXPECT_EQ(fs::canonical(outside.roots[0]), fs::canonical(test::configs_dir()));
  EXPECT_EQ(load_run_config(run, outside, registries_).model.layers, 32);
  // With no root at all, names cannot be looked up.
  const std::string message = input_error([&] { (void)load_run_config(run, ConfigSearchPath{}, registries_); });
  expect_contains(message, {"lonely.yaml:1:8: key 'model': no model named 'llama3-8b': no configs folder was found",
                            "Fix: give a path to the file instead"});
}

TEST_F(ConfigTest, ARunFileInASubfolderFindsTheConfigsFolderAboveIt) {
  // A user's copy of the configs with an edited hardware file, and a run file two folders below it: the run takes the
  // copy's hardware, not the shipped file of the same name (the walk up once stopped at the run file's own folder, so
  // an edited copy was silently ignored).
  const fs::path root = dir_ / "my-configs";
  std::string text;
  {
    std::ifstream in(test::configs_dir() / "hardware" / "H100-SXM5-80GB.yaml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string shipped_tdp = "power_w:\n  tdp: 700";
  const auto tdp = text.find(shipped_tdp);
  ASSERT_NE(tdp, std::string::npos) << "the shipped H100 file's TDP line moved";
  text.replace(tdp, shipped_tdp.size(), "power_w:\n  tdp: 600");
  write("my-configs/hardware/H100-SXM5-80GB.yaml", text);
  const fs::path run =
      write("my-configs/runs/h100/run.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n"));

  const ConfigSearchPath search = default_search_path(run);
  ASSERT_FALSE(search.roots.empty());
  EXPECT_EQ(fs::canonical(search.roots[0]), fs::canonical(root));
  EXPECT_DOUBLE_EQ(load_run_config(run, search, registries_).hardware.tdp_w, 600.0);
  // Names the copy does not hold still come from the shipped configs (the model and the cluster here).
  EXPECT_EQ(load_run_config(run, search, registries_).model.layers, 32);
}

TEST_F(ConfigTest, FilesMustHoldOneMapping) {
  const fs::path empty = write("empty.yaml", "# nothing but a comment\n");
  expect_contains(input_error([&] { (void)load(empty); }), {"empty.yaml: the run config is empty", "Fix: write"});
  const fs::path list = write("list.yaml", "- model: llama3-8b\n");
  expect_contains(input_error([&] { (void)load(list); }),
                  {"list.yaml:1:1: expected a mapping of 'key: value' lines at the top of the file, found a list"});
  const fs::path two = write("two.yaml", "model: llama3-8b\n---\nmodel: llama3-70b\n");
  expect_contains(input_error([&] { (void)load(two); }),
                  {"two.yaml:2:1: the run config holds more than one YAML document: a second one starts here",
                   "Fix: keep one document per file"});
  const fs::path section =
      write("section.yaml", small_run("llama3-8b", "  dp: 8\n", "  global_batch: 8\n") + "collectives: ring\n");
  expect_contains(input_error([&] { (void)load(section); }),
                  {"section.yaml:8:14: key 'collectives': expected a mapping of 'key: value' lines, found 'ring'"});
}

}  // namespace
}  // namespace chopsim
