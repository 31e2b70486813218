// LoRA fine-tuning (TrainingSpec::lora): frozen base weights and low-rank adapters (Hu et al., ICLR 2022) as
// Megatron-Bridge runs them. Checked against counts that follow from the method: a frozen matrix costs its forward
// and its input gradient (4 FLOPs per parameter and token, no weight gradient), the adapters train (6), only the
// adapters' gradients are reduced and stepped, and the memory holds no gradient or optimizer state for the base.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/common/error.hpp"
#include "chopsim/models/memory.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

struct LoraRun {
  TransformerSpec model = test::tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

/// LoRA of rank 16 on every linear, `dp` data ranks (distributed optimizer) x tp (with SP) x pp.
LoraRun lora_run(int dp, int tp, int pp) {
  LoraRun r;
  r.parallelism.dp = dp;
  r.parallelism.tp = tp;
  r.parallelism.pp = pp;
  r.parallelism.sequence_parallel = tp > 1;
  r.parallelism.zero_stage = 1;
  r.training.seq_len = 256;
  r.training.global_batch = dp * 4;
  r.training.lora.rank = 16;
  r.training.grad_reduce_fp32 = false;  // Megatron-Bridge's recipes
  return r;
}

/// Sum over every rank of `field` of the compute ops of `kernel_class` in `pass` whose name passes `keep`.
template <class Keep>
double summed(const Workload& workload, KernelClass kernel_class, Pass pass, Keep keep) {
  double total = 0.0;
  for (int rank = 0; rank < workload.layout.world_size(); ++rank)
    for (const Stream& stream : workload.program(rank).streams)
      for (const Op& op : stream.ops)
        if (op.kind == OpKind::compute && op.kernel_class == kernel_class && op.pass == pass && keep(workload.name(op)))
          total += op.flops;
  return total;
}

/// Bytes of the ops called `name` in rank 0's program, and how many there are.
std::pair<double, int> ops_named(const Workload& workload, std::string_view name) {
  double bytes = 0.0;
  int count = 0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name) {
        bytes += op.bytes;
        ++count;
      }
  return {bytes, count};
}

bool is_adapter(std::string_view name) { return name.find("_lora") != std::string_view::npos; }

/// Forward: every matrix once (2 FLOPs per parameter and token); backward: the frozen ones only their input gradient
/// (2 more), the adapters their input and weight gradients (4); the model FLOPs say the same, with attention as in
/// full training.
void expect_lora_gemm_flops(const LoraRun& r, const Workload& workload) {
  const double tokens = workload.tokens_per_iteration;
  const double base = count_parameters(r.model).active_matmul;
  const double adapters = r.model.layers * lora_layer_parameters(r.model, r.training.lora);
  const auto base_ops = [](std::string_view name) { return !is_adapter(name); };
  const double tolerance = 6.0 * base * tokens * 1e-12;
  EXPECT_NEAR(summed(workload, KernelClass::gemm, Pass::forward, base_ops), 2.0 * base * tokens, tolerance);
  EXPECT_NEAR(summed(workload, KernelClass::gemm, Pass::backward, base_ops), 2.0 * base * tokens, tolerance);
  EXPECT_NEAR(summed(workload, KernelClass::gemm, Pass::forward, is_adapter), 2.0 * adapters * tokens, tolerance);
  EXPECT_NEAR(summed(workload, KernelClass::gemm, Pass::backward, is_adapter), 4.0 * adapters * tokens, tolerance);
  TrainingSpec full = r.training;
  full.lora = {};
  EXPECT_NEAR(workload.model_flops_per_iteration,
              (training_flops_per_token(r.model, full) - 2.0 * base + 6.0 * adapters) * tokens, tolerance);
}

class LoraMix : public testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(LoraMix, FrozenMatricesCostFourFlopsPerParameterAndTokenAdaptersSix) {
  const auto [dp, tp, pp] = GetParam();
  const LoraRun r = lora_run(dp, tp, pp);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  expect_lora_gemm_flops(r, workload);
}

TEST_P(LoraMix, OnlyTheAdaptersAreReducedAndStepped) {
  const auto [dp, tp, pp] = GetParam();
  const LoraRun r = lora_run(dp, tp, pp);
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  // No weight gradient of a frozen matrix, no embedding gradient.
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops) {
      const std::string_view name = workload.name(op);
      EXPECT_FALSE(name.ends_with("_wgrad") && !is_adapter(name)) << name;
      EXPECT_NE(name, "embedding_bwd");
    }
  // Rank 0 holds the first stage's layers: its adapters are what it reduces (bf16 buffer) and steps.
  const double stage_adapters = (r.model.layers / pp) * lora_layer_parameters(r.model, r.training.lora) / tp;
  if (dp > 1) {
    EXPECT_DOUBLE_EQ(ops_named(workload, "dp_reduce_scatter").first, 2.0 * stage_adapters);
  }
  EXPECT_DOUBLE_EQ(ops_named(workload, "zero_grad_buffer").first, 2.0 * stage_adapters);
  // AdamW on the rank's shard: fp32 master, m, v read and written, bf16 gradient read, bf16 copy written.
  EXPECT_DOUBLE_EQ(ops_named(workload, "adamw").first, (12.0 + 2.0 + 12.0 + 2.0) * stage_adapters / dp);
}

INSTANTIATE_TEST_SUITE_P(Mixes, LoraMix,
                         testing::Values(std::make_tuple(2, 1, 1), std::make_tuple(1, 2, 2), std::make_tuple(2, 2, 2)));

TEST(Lora, AdaptersHoldRankTimesInPlusOutPerLinear) {
  const TransformerSpec m = test::tiny_dense();
  LoraSpec lora;
  lora.rank = 8;
  const double d = m.head_dim();
  const double qkv = m.hidden + (m.heads + 2.0 * m.kv_heads) * d;
  const double proj = m.heads * d + m.hidden;
  const double fc1 = m.hidden + 2.0 * m.ffn_hidden;  // SwiGLU's gate and up, fused
  const double fc2 = m.ffn_hidden + m.hidden;
  EXPECT_DOUBLE_EQ(lora_layer_parameters(m, lora), 8.0 * (qkv + proj + fc1 + fc2));
  lora.proj = lora.fc1 = false;
  EXPECT_DOUBLE_EQ(lora_layer_parameters(m, lora), 8.0 * (qkv + fc2));
  lora.rank = 0;
  EXPECT_DOUBLE_EQ(lora_layer_parameters(m, lora), 0.0);
}

TEST(Lora, UserbuffersMakeTheColumnParallelAdaptersGatherTheNormOutputThemselves) {
  // Megatron-Bridge: with userbuffers on the base's gather, Transformer Engine returns the norm's local output and
  // the adapter of QKV and fc1 all-gathers it (and reduce-scatters its gradient); without them it gets it gathered.
  LoraRun r = lora_run(1, 2, 1);
  r.training.global_batch = 2;
  const double tokens = r.training.seq_len;  // one sequence per micro-batch
  const double gathered = tokens * r.model.hidden * 2.0;
  r.training.overlap.tp = true;
  const Workload overlapped = build_workload(r.model, r.parallelism, r.training);
  const int passes = r.model.layers * r.training.global_batch;
  EXPECT_EQ(ops_named(overlapped, "lora_sp_all_gather").second, 2 * passes);
  EXPECT_DOUBLE_EQ(ops_named(overlapped, "lora_sp_all_gather").first, 2.0 * passes * gathered);
  EXPECT_EQ(ops_named(overlapped, "lora_sp_reduce_scatter").second, 2 * passes);
  r.training.overlap.tp = false;
  const Workload plain = build_workload(r.model, r.parallelism, r.training);
  EXPECT_EQ(ops_named(plain, "lora_sp_all_gather").second, 0);
  EXPECT_EQ(ops_named(plain, "lora_sp_reduce_scatter").second, 0);
  // The row-parallel adapters (output projection, fc2) gather B's output over tp either way, and their backward the
  // output gradient of the whole sequence (the backward of the scatter back to the sequence shard).
  EXPECT_EQ(ops_named(plain, "lora_sp_all_gather_grad").second, 2 * passes);
  EXPECT_DOUBLE_EQ(ops_named(plain, "lora_all_gather").first,
                   passes * (2.0 * gathered + 2.0 * tokens * r.training.lora.rank * 2.0));
}

TEST(Lora, TheFrozenBaseKeepsNoGradientOrOptimizerState) {
  LoraRun r = lora_run(1, 1, 1);
  HardwareSpec h100;
  h100.name = "H100";
  h100.hbm_capacity_bytes = 80e9;
  const MemoryBreakdown lora = estimate_stage_memory(r.model, r.parallelism, r.training, h100, 0);
  TrainingSpec full = r.training;
  full.lora = {};
  const MemoryBreakdown trained = estimate_stage_memory(r.model, r.parallelism, full, h100, 0);
  const double adapters = r.model.layers * lora_layer_parameters(r.model, r.training.lora);
  EXPECT_DOUBLE_EQ(lora.weights_bytes, trained.weights_bytes + 2.0 * adapters);  // bf16 base + bf16 adapters
  EXPECT_DOUBLE_EQ(lora.gradients_bytes, 2.0 * adapters);                        // bf16 gradient buffer
  EXPECT_DOUBLE_EQ(lora.optimizer_bytes, 12.0 * adapters);                       // fp32 master, m, v
  // Activations: the frozen linears' inputs go, the adapters keep theirs. On every linear (tp 1) that is the same
  // bytes: QKV's and fc1's adapters keep the norms' outputs, fc2's its input.
  EXPECT_DOUBLE_EQ(lora.activations_bytes, trained.activations_bytes);
  // On the QKV alone, the MLP's norm output and fc2's input (SwiGLU's product) are no longer kept: T (h + f) bf16
  // elements per layer of the one micro-batch in flight.
  r.training.lora.proj = r.training.lora.fc1 = r.training.lora.fc2 = false;
  const MemoryBreakdown qkv_only = estimate_stage_memory(r.model, r.parallelism, r.training, h100, 0);
  const double tokens = r.training.seq_len;
  EXPECT_DOUBLE_EQ(trained.activations_bytes - qkv_only.activations_bytes,
                   r.model.layers * tokens * (r.model.hidden + r.model.ffn_hidden) * 2.0);
  // Under sequence parallelism (tp 2) the adapters of QKV and fc1 keep the whole sequence of the norms' outputs, where
  // the base kept its shard: T h / 2 more elements each per layer.
  LoraRun sp = lora_run(1, 2, 1);
  TrainingSpec sp_full = sp.training;
  sp_full.lora = {};
  EXPECT_DOUBLE_EQ(estimate_stage_memory(sp.model, sp.parallelism, sp.training, h100, 0).activations_bytes -
                       estimate_stage_memory(sp.model, sp.parallelism, sp_full, h100, 0).activations_bytes,
                   sp.model.layers * 2.0 * (tokens * r.model.hidden / 2.0) * 2.0);
}

TEST(Lora, AnExpertModelAdaptsItsAttentionAndKeepsItsExpertsFrozen) {
  // NeMo's default LoRA target (the fused QKV) on a mixture of experts, as CharLLM-PPT's Mixtral LoRA jobs run it:
  // the experts and the router take no weight gradient; every matrix still runs forward and passes its input
  // gradient back.
  LoraRun r = lora_run(2, 1, 1);
  r.model.experts = 4;
  r.model.top_k = 2;
  r.parallelism.ep = 2;
  r.training.lora.proj = r.training.lora.fc1 = r.training.lora.fc2 = false;
  const Workload workload = build_workload(r.model, r.parallelism, r.training);
  EXPECT_NO_THROW(check_workload_completes(workload));
  expect_lora_gemm_flops(r, workload);
  EXPECT_EQ(ops_named(workload, "expert_fc1_wgrad").second, 0);
  EXPECT_EQ(ops_named(workload, "router_wgrad").second, 0);
  // Only the adapters are stepped: no expert-parallel gradient anywhere.
  EXPECT_DOUBLE_EQ(ops_named(workload, "adamw").first,
                   (12.0 + 2.0 + 12.0 + 2.0) * r.model.layers * lora_layer_parameters(r.model, r.training.lora) / 2.0);
}

TEST(Lora, RejectsWhatItDoesNotModel) {
  LoraRun r = lora_run(1, 2, 1);
  r.training.lora.rank = 15;  // not a multiple of tp
  EXPECT_THROW((void)build_workload(r.model, r.parallelism, r.training), ModelError);
  r.training.lora.rank = 16;
  r.training.lora.qkv = r.training.lora.proj = r.training.lora.fc1 = r.training.lora.fc2 = false;
  EXPECT_THROW((void)build_workload(r.model, r.parallelism, r.training), ModelError);
  LoraRun moe = lora_run(1, 1, 1);  // adapters on the experts' fc1/fc2: not modelled
  moe.model.experts = 4;
  moe.model.top_k = 2;
  EXPECT_THROW((void)build_workload(moe.model, moe.parallelism, moe.training), ModelError);
  LoraRun fsdp = lora_run(2, 1, 1);
  fsdp.parallelism.zero_stage = 3;
  EXPECT_THROW((void)build_workload(fsdp.model, fsdp.parallelism, fsdp.training), ModelError);
}

}  // namespace
}  // namespace chopsim
