// Megatron-Core's router and token-dispatcher kernels around a mixture of experts, launch by launch
// (models/src/workload_moe.cpp: counted in megatron/core/transformer/moe/ at core_v0.17.0). Each test checks the host
// launches of one MoE layer against the counts that follow from that code, and that a setting adds exactly its own
// kernels: the fused router one kernel where the unfused one launches eight, the auxiliary loss its five (fused) or
// thirteen, the all-to-all dispatcher its token counts and copies to the host, the sort of the received rows by
// expert only with several local experts. The bytes of the one data-moving kernel among them (the sort) are those of
// the rows it reorders.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/models/workload.hpp"
#include "chopsim/models/workload_check.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

/// The tiny model (8 layers, hidden 256) with 8 experts (top 2) over ep 2 data ranks: 4 local experts per rank, one
/// micro-batch of 256 tokens each.
test::TinyRun moe_run(int ep = 2) {
  test::TinyRun r;
  r.model.name = "tiny-moe-router";
  r.model.experts = 8;
  r.model.top_k = 2;
  r.parallelism.dp = 2;
  r.parallelism.ep = ep;
  r.training.micro_batch = 1;
  r.training.seq_len = 256;
  r.training.global_batch = 2;
  return r;
}

constexpr int kLayers = 8;
constexpr double kExpertRows = 256.0 * 2.0;  // balanced routing: the copies a rank receives, tokens x top 2
constexpr double kHidden = 256.0;

/// The router's and dispatcher's bookkeeping ops (not the GEMMs, all-to-alls, permutation's data or experts).
bool is_router_op(std::string_view name) {
  return name.starts_with("router_topk") || name.starts_with("router_aux_loss") ||
         name.starts_with("router_gating_casts") || name == "moe_token_counts" || name.starts_with("moe_permute") ||
         name.starts_with("moe_sort_chunks") || name.starts_with("moe_unsort_chunks");
}

/// Host launches of rank 0's ops called `name` (or of every router op when `name` is empty) in `pass`.
double launches(const Workload& workload, Pass pass, std::string_view name = {}) {
  double total = 0.0;
  const Program& program = workload.program(0);
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    const std::string_view op_name = workload.name(op);
    if (op.pass != pass || (name.empty() ? !is_router_op(op_name) : op_name != name)) continue;
    total += step.launches;
  }
  return total;
}

double bytes(const Workload& workload, std::string_view name) {
  double total = 0.0;
  for (const Stream& stream : workload.program(0).streams)
    for (const Op& op : stream.ops)
      if (workload.name(op) == name) total += op.bytes;
  return total;
}

Workload build(const test::TinyRun& r) {
  Workload workload = build_workload(r.model, r.parallelism, r.training);
  check_workload_completes(workload);
  return workload;
}

TEST(MoeRouterLaunches, TheUnfusedRouterWithoutAuxLossLaunchesEightRoutingKernelsAndTheDispatchersBookkeeping) {
  const Workload workload = build(moe_run());
  // Per layer forward: the top-k routing (topk, softmax, the dense probabilities and map: 8), the dispatcher's token
  // counts and copies to the host (12), the permutation (its row map and kernel) with the probabilities' all-to-all
  // (5), and the received rows sorted by expert and back (2 + 2: four local experts).
  EXPECT_DOUBLE_EQ(launches(workload, Pass::forward), kLayers * (8.0 + 12.0 + 5.0 + 2.0 + 2.0));
  // Backward: the routing's (4), the gating's four fp32 casts, the permutation's and the probabilities' (2), the two
  // sorts' (1 + 1).
  EXPECT_DOUBLE_EQ(launches(workload, Pass::backward), kLayers * (4.0 + 4.0 + 2.0 + 1.0 + 1.0));
}

TEST(MoeRouterLaunches, TheFusedRouterIsOneKernelEachWay) {
  test::TinyRun r = moe_run();
  const Workload unfused = build(r);
  r.training.moe_router_fusion = true;
  const Workload fused = build(r);
  EXPECT_DOUBLE_EQ(launches(fused, Pass::forward, "router_topk"), kLayers * 1.0);
  EXPECT_DOUBLE_EQ(launches(fused, Pass::backward, "router_topk_bwd"), kLayers * 1.0);
  EXPECT_DOUBLE_EQ(launches(unfused, Pass::forward) - launches(fused, Pass::forward), kLayers * 7.0);
  EXPECT_DOUBLE_EQ(launches(unfused, Pass::backward) - launches(fused, Pass::backward), kLayers * 3.0);
}

TEST(MoeRouterLaunches, TheAuxiliaryLossAddsItsKernelsAndTheSequenceLevelOneDividesOnceMore) {
  test::TinyRun r = moe_run();
  r.training.moe_router_fusion = true;
  const Workload plain = build(r);
  r.training.moe_aux_loss = MoeAuxLoss::aux_loss;
  const Workload with_loss = build(r);
  // Fused: the scores, the token counts, the loss, its division by the coefficient, the tracker (5 forward); the
  // loss's and scores' backward, the autoscaler's ones_like and scale, the sum of the logits' gradients (5).
  EXPECT_DOUBLE_EQ(launches(with_loss, Pass::forward) - launches(plain, Pass::forward), kLayers * 5.0);
  EXPECT_DOUBLE_EQ(launches(with_loss, Pass::backward) - launches(plain, Pass::backward), kLayers * 5.0);
  r.training.moe_aux_loss = MoeAuxLoss::seq_aux_loss;
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::forward, "router_aux_loss"), kLayers * 6.0);
  r.training.moe_router_fusion = false;
  r.training.moe_aux_loss = MoeAuxLoss::aux_loss;
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::forward, "router_aux_loss"), kLayers * 13.0);
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::backward, "router_aux_loss_bwd"), kLayers * 8.0);
}

TEST(MoeRouterLaunches, AnExpertBiasCountsTheTokensPerExpertAndUnfusedRanksBiasedScores) {
  test::TinyRun r = moe_run();
  r.training.moe_expert_bias = true;
  // Unfused: sigmoid scores plus the bias, top-k, the chosen scores gathered and renormalised, the dense outputs,
  // and the token count for the bias update (sum, add): 15; backward 8.
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::forward, "router_topk"), kLayers * 15.0);
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::backward, "router_topk_bwd"), kLayers * 8.0);
  r.training.moe_router_fusion = true;
  EXPECT_DOUBLE_EQ(launches(build(r), Pass::forward, "router_topk"), kLayers * 3.0);
}

TEST(MoeRouterLaunches, OneLocalExpertNeedsNoSortAndTheSortMovesTheReceivedRowsOnce) {
  const Workload four_local = build(moe_run(2));
  // A read and a write of each received row (hidden bf16 values and its fp32 probability), per layer each way.
  EXPECT_DOUBLE_EQ(bytes(four_local, "moe_sort_chunks"), kLayers * 2.0 * kExpertRows * (kHidden * 2.0 + 4.0));
  test::TinyRun r = moe_run(8);
  r.parallelism.dp = 8;
  r.training.global_batch = 8;
  const Workload one_local = build(r);
  EXPECT_DOUBLE_EQ(launches(one_local, Pass::forward, "moe_sort_chunks"), 0.0);
  EXPECT_DOUBLE_EQ(launches(one_local, Pass::backward, "moe_sort_chunks_bwd"), 0.0);
  EXPECT_DOUBLE_EQ(launches(one_local, Pass::forward), kLayers * (8.0 + 12.0 + 5.0));
}

TEST(MoeRouterLaunches, TheFlexDispatcherCountsItsMultihotMapInsteadOfSortingChunks) {
  test::TinyRun r = moe_run();
  r.training.moe_dispatcher = MoeDispatcher::flex;
  const Workload flex = build(r);
  // DeepEP: the probabilities' top-k, its layout and notification, _indices_to_multihot (14) and the output size
  // (sum, item): 19; the permutation 4; no sort by expert (the permutation orders the rows by expert).
  EXPECT_DOUBLE_EQ(launches(flex, Pass::forward, "moe_token_counts"), kLayers * 19.0);
  EXPECT_DOUBLE_EQ(launches(flex, Pass::forward, "moe_permute"), kLayers * 4.0);
  EXPECT_EQ(launches(flex, Pass::forward, "moe_sort_chunks"), 0.0);
}

TEST(MoeRouterLaunches, ExpertsPaddedToTheirCapacityNeedNoTokenCounts) {
  test::TinyRun r = moe_run();
  r.training.moe_capacity_factor = 1.0;
  r.training.moe_pad_to_capacity = true;
  // The splits are known on the host: one torch.full on the device, no counting and no copies back; the rows are
  // reordered by transposed copies (tokens and probabilities, then the output back).
  const Workload padded = build(r);
  EXPECT_DOUBLE_EQ(launches(padded, Pass::forward, "moe_token_counts"), kLayers * 1.0);
  EXPECT_DOUBLE_EQ(launches(padded, Pass::forward, "moe_sort_chunks"), kLayers * 2.0);
  EXPECT_DOUBLE_EQ(launches(padded, Pass::forward, "moe_unsort_chunks"), kLayers * 1.0);
}

TEST(MoeRouterLaunches, ARouterCapturedInACudaGraphIsOneLaunchEachWay) {
  test::TinyRun r = moe_run();
  r.training.moe_aux_loss = MoeAuxLoss::aux_loss;
  const Workload eager = build(r);
  r.training.cuda_graph_scope.moe_router = true;
  const Workload graphed = build(r);
  // The router's top-k (8) and auxiliary loss (13) are replayed by the gating GEMM's graph launch; backward the
  // graph's one launch replaces the top-k's (4), the loss's (8), the casts (4) and the two gating GEMMs.
  EXPECT_DOUBLE_EQ(launches(graphed, Pass::forward, "router_topk"), 0.0);
  // The graph still runs the loss's kernels on the GPU: only their launches are the graph's.
  EXPECT_GT(bytes(graphed, "router_aux_loss"), 0.0);
  EXPECT_DOUBLE_EQ(bytes(graphed, "router_aux_loss"), bytes(eager, "router_aux_loss"));
  EXPECT_DOUBLE_EQ(bytes(graphed, "router_aux_loss_bwd"), bytes(eager, "router_aux_loss_bwd"));
  EXPECT_DOUBLE_EQ(launches(graphed, Pass::forward, "router"), kLayers * 1.0);
  EXPECT_DOUBLE_EQ(launches(eager, Pass::forward) - launches(graphed, Pass::forward), kLayers * (8.0 + 13.0));
  EXPECT_DOUBLE_EQ(launches(eager, Pass::backward) - launches(graphed, Pass::backward),
                   kLayers * (4.0 + 8.0 + 4.0 - 1.0));
  EXPECT_DOUBLE_EQ(
      launches(graphed, Pass::backward, "router_dgrad") + launches(graphed, Pass::backward, "router_wgrad"), 0.0);
  // With the dispatcher's preprocessing captured too, its counts and the permutation are in the graph: only the
  // four copies of the splits to the host and the probabilities' all-to-all stay outside.
  r.training.cuda_graph_scope.moe_preprocess = true;
  const Workload preprocess = build(r);
  EXPECT_DOUBLE_EQ(launches(preprocess, Pass::forward, "moe_token_counts"), kLayers * 4.0);
  EXPECT_DOUBLE_EQ(launches(preprocess, Pass::forward, "moe_permute"), kLayers * 1.0);
  EXPECT_DOUBLE_EQ(launches(preprocess, Pass::backward, "moe_permute_bwd"), kLayers * 1.0);
}

}  // namespace
}  // namespace chopsim
