// The kernels and collectives of a mixture-of-experts sublayer (Megatron-Core MoE with the all-to-all token
// dispatcher), private to the StageGenerator: moved out of workload_layers.cpp unchanged.

#include <string>

#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

// --- mixture of experts (Megatron-Core MoE with the all-to-all token dispatcher) -----------------------
// Each rank routes its own tokens (T/tp with SP), dispatches top_k * capacity copies of each over the ep
// group, the expert tensor-parallel group all-gathers them (etp = tp by default) so each expert GEMM sees
// T/tp * etp * top_k * capacity rows on f/etp columns, then the mirror image: reduce-scatter over etp,
// all-to-all combine, and the weighted sum of each token's expert outputs. With etp = 1 (MoE parallel
// folding) there is no expert tensor-parallel collective at all. With capacity factor 1 the expert GEMMs
// do exactly the active-parameter FLOPs; a larger factor counts the padded slots. Dropless routing with a load
// imbalance gives the busiest expert-parallel rank more rows than the mean; every rank is timed as that one, which
// the others wait for at the combine (Sizes::received_tokens).

// --- the router's and the dispatcher's small kernels, launch by launch --------------------------------------
// Megatron-Core launches many small kernels around the expert GEMMs and all-to-alls, each costing the host a launch
// (training.host_launch_us) however little GPU work it does. Counted in the code of Megatron-Core core_v0.17.0
// (NVIDIA/Megatron-LM, megatron/core/transformer/moe/: router.py TopKRouter, moe_utils.py, token_dispatcher.py;
// Transformer Engine's fused permutation), one launch per CUDA kernel, collective or device-to-host copy:
//  * top-k routing (topk_routing_with_score_function): fused, Transformer Engine's fused_topk_with_score_function (1);
//    unfused, the score and torch.topk (2, softmax), the dense probabilities (zeros_like, scatter) and routing map
//    (zeros_like, int, scatter, bool): 8. With an expert bias (sigmoid scores plus the bias, the chosen scores
//    gathered and renormalised: 5 more unfused) the router also counts each expert's tokens for the bias update
//    (_apply_expert_bias: sum, add: 2).
//  * the auxiliary loss (compute_routing_scores_for_aux_loss, get_tokens_per_expert_and_token_count,
//    switch_load_balancing_loss_func, attach_and_log_load_balancing_loss): fused, the scores, the token counts, the
//    loss, its division by the coefficient and the layer's slot in the loss tracker (5); unfused, softmax, topk, the
//    routing map (4), the counts, the probabilities' sum, product, sum and scale, the division and the tracker (13).
//    The sequence-level loss divides by the batch once more (1); over tp x cp > 1 ranks the counts are all-reduced
//    (1). Backward: fused, the loss's and the scores' backward, MoEAuxLossAutoScaler's ones_like and scale, and the
//    sum of the two gradients of the logits (5); unfused 8.
//  * top-k backward: fused 1; unfused, the probabilities' gather, the score's backward and the top-k's scatter (4),
//    with an expert bias 4 more (the renormalisation and the gather).
//  * the all-to-all dispatcher (MoEAlltoAllTokenDispatcher.preprocess and _maybe_dtoh_and_synchronize, dropless): the
//    tokens per expert (sum, long), the input splits (sum), the counts' all-gather over the expert-parallel group, the
//    local experts' slice and three sums, then four device-to-host copies of the splits (12); its permutation
//    (Transformer Engine's moe_permute_with_probs: three Triton kernels for the row map and the permutation) and the
//    probabilities' own all-to-all beside the tokens' (5 with the permutation, 2 backward); with several local
//    experts the received rows sorted by expert and back (sort_chunks_by_idxs, fused: 2 each way, 1 backward). With
//    experts padded to their capacity the counts are one torch.full and the sorts transposed copies (.contiguous():
//    the tokens and the probabilities, 2, and back, 1; 1 each backward).
//  * the flex dispatcher (MoEFlexTokenDispatcher with DeepEP, _DeepepManager): the top-k of the probabilities,
//    DeepEP's dispatch layout and notification, then _indices_to_multihot (zeros twice, the mask, the masked
//    indices, arange, the mask's sum, repeat_interleave, two index_puts, the masked probabilities and the cast: 14)
//    and the permutation's output size (sum, item): 19; the permutation 4 (1 + the row map); backward 2.
// Captured in CUDA graphs (training.cuda_graph_scope, Megatron's --cuda-graph-scope moe_router [moe_preprocess] with
// Transformer Engine's graphs: MoELayer.route and .preprocess, maybe_skip_or_early_return_by_cudagraph), the router
// and with moe_preprocess the dispatcher's preprocessing (its counts and, for the all-to-all dispatcher, the
// permutation; the copies of the splits to the host move after it, to "before_ep_alltoall") are one graph launch
// forward and one backward, counted on the gating GEMM and on the top-k's backward.
// Not counted: the benchmark's random logits (--moe-router-force-load-balancing: clone, normal_), the experts'
// activation weighted by the probabilities (one fused kernel, already the activation's).
StageGenerator::MoeRouterLaunches StageGenerator::moe_router_launches() const {
  const bool fused = training_.moe_router_fusion;
  const bool bias = training_.moe_expert_bias;
  const bool padded = training_.moe_capacity_factor.has_value() && training_.moe_pad_to_capacity;
  const bool several_local_experts = model_.experts / parallelism_.ep > 1;
  MoeRouterLaunches n;
  n.topk_forward = fused ? (bias ? 3 : 1) : (bias ? 15 : 8);
  n.topk_backward = fused ? 1 : (bias ? 8 : 4);
  if (training_.moe_aux_loss != MoeAuxLoss::none) {
    n.aux_forward = fused ? 5 : 13;
    if (training_.moe_aux_loss == MoeAuxLoss::seq_aux_loss) n.aux_forward += 1;
    if (parallelism_.tp * parallelism_.cp > 1) n.aux_forward += 1;
    n.aux_backward = fused ? 5 : 8;
  }
  if (training_.moe_dispatcher == MoeDispatcher::flex) {
    n.counts_forward = 19;
    n.permute_forward = 4;
    n.permute_backward = 2;
  } else {
    n.counts_forward = padded ? 1 : 12;
    n.permute_forward = 5;
    n.permute_backward = 2;
    if (several_local_experts) {
      n.sort_forward = 2;
      n.unsort_forward = padded ? 1 : 2;
      n.sort_backward = 1;
    }
  }
  const CudaGraphScope& graphs = training_.cuda_graph_scope;
  if (graphs.moe_router) {
    // The graphs' launches: forward on the gating GEMM (which stays 1), backward on the top-k's backward.
    n.topk_forward = 0;
    n.aux_forward = 0;
    n.topk_backward = 1;
    n.aux_backward = 0;
    n.gating_casts_backward = 0;
    n.router_gemms_backward = 0;
  }
  if (graphs.moe_router && graphs.moe_preprocess) {
    if (training_.moe_dispatcher == MoeDispatcher::flex) {
      n.counts_forward -= 1;  // the probabilities' top-k (setup_metadata) is captured; DeepEP's calls are not
    } else {
      n.counts_forward = padded ? 0 : 4;  // only the copies of the splits to the host stay outside
      n.permute_forward = 1;              // the probabilities' all-to-all; the permutation is captured
      n.permute_backward = 1;
    }
  }
  return n;
}

// The all-to-all dispatcher's received rows (and their fp32 probabilities) reordered by local expert, or back: a
// read and a write of each; nothing with one local expert or the flex dispatcher (launches 0).
void StageGenerator::sort_chunks(std::string_view name, std::uint16_t launches) {
  if (launches == 0) return;
  const Sizes& s = sizes_;
  const OpRef sort = compute(std::string(name), KernelClass::memcpy, Precision::fp32, 0.0,
                             2.0 * s.expert_tokens * (s.hidden * s.activation_bytes + 4.0));
  builder_.set_host_issue(sort, launches, false);
}

void StageGenerator::moe_forward() {
  const Sizes& s = sizes_;
  const double experts = model_.experts;
  const double local_experts = experts / parallelism_.ep;
  const bool swiglu = model_.mlp == MlpKind::swiglu;
  // The all-to-alls carry the busiest rank's rows: it receives them in the dispatch and sends them back in the
  // combine, and the others wait for it.
  const double routed_bytes = s.received_tokens * s.hidden * s.activation_bytes;
  const double expert_bytes = s.expert_tokens * s.hidden * s.activation_bytes;
  (void)gemm("router", {.m = s.norm_tokens, .n = experts, .k = s.hidden, .transformer_engine = false});
  const MoeRouterLaunches launches = moe_router_launches();
  const OpRef topk = elementwise("router_topk", s.norm_tokens * experts, kSoftmaxFlops, s.activation_bytes + 4.0,
                                 KernelClass::reduction);
  builder_.set_host_issue(topk, launches.topk_forward, false);
  // A graphed router (cuda_graph_scope) still runs the loss's kernels: only their launches are the graph's.
  const bool aux_loss = training_.moe_aux_loss != MoeAuxLoss::none;
  if (aux_loss) {
    // The loss's scores over every (token, expert) pair in fp32, its token counts and the loss itself.
    const OpRef aux = elementwise("router_aux_loss", s.norm_tokens * experts, kSoftmaxFlops,
                                  (training_.moe_router_fusion ? 1.0 : 5.0) * 4.0, KernelClass::reduction);
    builder_.set_host_issue(aux, launches.aux_forward, false);
  }
  // The dispatcher's token counts (per expert and rank, their exchange, the copies of the splits to the host): a
  // pass over the [tokens, experts] routing map, the rest a few hundred bytes.
  const OpRef counts = compute("moe_token_counts", KernelClass::reduction, Precision::fp32, s.norm_tokens * experts,
                               s.norm_tokens * experts);
  builder_.set_host_issue(counts, launches.counts_forward, false);
  const OpRef permute = compute("moe_permute", KernelClass::memcpy, Precision::fp32, 0.0,
                                (s.norm_tokens * s.hidden + s.routed_tokens * s.hidden) * s.activation_bytes);
  // NCCL's all-to-all takes its split sizes on the host: Megatron-Core's all-to-all dispatcher copies the router's
  // token counts to the host and synchronises before the dispatch (cuda_sync_point "before_ep_alltoall" when
  // dropless, "before_permutation_1" with a capacity factor; MoEAlltoAllTokenDispatcher.preprocess), so the host
  // waits for the GPU in every MoE layer's forward and the GPU then waits for the host's next launches. The
  // backward reuses the splits. The flex dispatcher waits as well: DeepEP's dispatch blocks the host until the
  // GPU has counted the tokens each rank receives, to size its buffers (DeepEP README: "the CPU will wait for GPU's
  // signal to arrive, so this is not compatible with CUDA graph"). (Its permutation runs after the dispatch; the
  // same bytes, so the order is kept.) Only the all-to-all dispatcher with experts padded to their capacity
  // (drop_and_pad) does not wait: each expert takes a known number of rows, so preprocess fills the splits on the
  // host and returns before any device-to-host copy (cuda_sync_point stays "no_sync").
  const bool drop_and_pad = training_.moe_capacity_factor.has_value() && training_.moe_pad_to_capacity;
  const bool host_waits = training_.moe_dispatcher == MoeDispatcher::flex || !drop_and_pad;
  builder_.set_host_issue(permute, launches.permute_forward, host_waits);
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_dispatch", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  if (parallelism_.sequence_parallel)
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"moe_tp_all_gather", CollectiveKind::all_gather, GroupRole::expert_tp, CommCategory::tp, expert_bytes}));
  sort_chunks("moe_sort_chunks", launches.sort_forward);
  (void)gemm("expert_fc1", {s.expert_tokens, (swiglu ? 2.0 : 1.0) * s.expert_ffn_local, s.hidden, local_experts});
  expert_activation_forward();
  (void)gemm("expert_fc2", {s.expert_tokens, s.hidden, s.expert_ffn_local, local_experts});
  expert_fc2_bias_forward();
  sort_chunks("moe_unsort_chunks", launches.unsort_forward);
  if (parallelism_.sequence_parallel) {
    await(communicate(training_.overlap.tp, kTpStream,
                      {"moe_tp_reduce_scatter", CollectiveKind::reduce_scatter, GroupRole::expert_tp, CommCategory::tp,
                       expert_bytes}));
  } else {
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"moe_tp_all_reduce", CollectiveKind::all_reduce, GroupRole::expert_tp, CommCategory::tp, expert_bytes}));
  }
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_combine", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  // Weighted sum of each token's top_k expert outputs.
  (void)compute("moe_unpermute", KernelClass::elementwise, Precision::fp32, 2.0 * s.routed_tokens * s.hidden,
                (s.routed_tokens + s.norm_tokens) * s.hidden * s.activation_bytes + 4.0 * s.routed_tokens);
}

void StageGenerator::moe_layer_forward() {
  moe_forward();
  // Megatron-Core's MoELayer adds the shared experts' output (a dense MLP on every token) to the routed one.
  if (model_.shared_expert_ffn_hidden > 0) {
    const Sizes& s = sizes_;
    mlp_forward("shared_expert", s.shared_ffn_local);
    (void)elementwise("shared_expert_add", s.norm_tokens * s.hidden, 1.0, 3.0 * s.activation_bytes);
  }
}

void StageGenerator::expert_activation_forward() {
  const Sizes& s = sizes_;
  if (model_.mlp == MlpKind::swiglu) {
    (void)elementwise("expert_swiglu", s.expert_tokens * s.expert_ffn_local, kSwigluFlops, 3.0 * s.activation_bytes);
  } else {
    (void)elementwise("expert_" + activation_name(), s.expert_tokens * s.expert_ffn_local, activation_flops(),
                      2.0 * s.activation_bytes);
  }
}

// --- the experts' biases (gpt-oss: TransformerSpec::linear_bias on a mixture of experts) ---------------------
// Megatron-Core's TEGroupedMLP (megatron/core/transformer/moe/experts.py, from "Enable bias in expert mlp",
// a329dd6da5, 2025-09-22, until the packed path of 883533e049, 2026-08-14) builds linear_fc1 without skip_bias_add,
// so fc1's biases are added in the grouped GEMM's epilogue and their gradients come from its wgrad (no kernel of
// their own), and linear_fc2 with skip_bias_add, whose biases _apply_bias adds expert by expert, weighted by each
// row's routing probability:
//   torch.cat([t + b * p for t, b, p in zip(split(out, tokens_per_expert), biases, split(probs, ...))]).to(dtype)
// p is fp32, so b * p and the sum are fp32 [rows_e, h] tensors: per local expert a multiply (writes 4 B per element)
// and an add (reads 2 + 4, writes 4), then one cat (reads 4, writes 4) and one cast back (reads 4, writes 2): 28 B
// per element of the expert rows, 2 E + 2 launches. Autograd runs the mirror image: the cast's gradient (2 -> 4 B),
// per expert the add's gradient cast to t's dtype (4 -> 2 B) and the multiply's two gradients, each a product and a
// sum (grad * p summed over rows for b, grad * b summed over the hidden size for p: 12 B per element each), then
// the cat of the split's gradient (2 -> 2 B): 40 B per element, 5 E + 2 launches. Megatron's DDP hooks add each
// bias's gradient (2 E parameters, fc1's and fc2's) to its main_grad: 2 E more tiny launches. The host issues every
// one of them (a Python list comprehension and autograd's per-op nodes), which is what makes the loop cost: the GPU
// work is a few bytes per element, the launches scale with the local experts.
void StageGenerator::expert_fc2_bias_forward() {
  if (!model_.linear_bias) return;
  const Sizes& s = sizes_;
  const double elements = s.expert_tokens * s.hidden;
  const double local_experts = model_.experts / parallelism_.ep;
  const OpRef loop = elementwise("expert_fc2_bias", elements, 2.0, 14.0);
  builder_.set_host_issue(loop, launch_count(2.0 * local_experts), false);
  (void)compute("expert_fc2_bias_cat", KernelClass::memcpy, Precision::fp32, 0.0, 8.0 * elements);
  (void)elementwise("expert_fc2_bias_cast", elements, 1.0, 6.0);
}

void StageGenerator::expert_fc2_bias_backward() {
  if (!model_.linear_bias) return;
  const Sizes& s = sizes_;
  const double elements = s.expert_tokens * s.hidden;
  const double local_experts = model_.experts / parallelism_.ep;
  (void)elementwise("expert_fc2_bias_cast_bwd", elements, 1.0, 6.0);
  // The biases' gradients are not needed for frozen experts (LoRA), the rows' and probabilities' ones are. Per
  // expert: t's gradient cast (6 B per element) and, per gradient taken, a product and a sum (12 B, 2 FLOPs).
  const double gradients = frozen_base() ? 1.0 : 2.0;
  const OpRef loop =
      elementwise("expert_fc2_bias_bwd", elements, 2.0 * gradients, 6.0 + 12.0 * gradients, KernelClass::reduction);
  builder_.set_host_issue(loop, launch_count((1.0 + 2.0 * gradients) * local_experts), false);
  (void)compute("expert_fc2_bias_split_bwd", KernelClass::memcpy, Precision::fp32, 0.0, 4.0 * elements);
  if (frozen_base()) return;
  const OpRef accumulate = elementwise("expert_bias_grad_accumulate", 2.0 * local_experts * s.hidden, 1.0, 10.0);
  builder_.set_host_issue(accumulate, launch_count(2.0 * local_experts), false);
}

void StageGenerator::moe_backward() {
  const Sizes& s = sizes_;
  const double experts = model_.experts;
  const double local_experts = experts / parallelism_.ep;
  const bool swiglu = model_.mlp == MlpKind::swiglu;
  const double routed_bytes = s.received_tokens * s.hidden * s.activation_bytes;  // the busiest rank's, as forward
  const double expert_bytes = s.expert_tokens * s.hidden * s.activation_bytes;
  const MoeRouterLaunches launches = moe_router_launches();
  (void)compute("moe_unpermute_bwd", KernelClass::elementwise, Precision::fp32, 2.0 * s.routed_tokens * s.hidden,
                (s.routed_tokens + s.norm_tokens) * s.hidden * s.activation_bytes + 4.0 * s.routed_tokens);
  // Backward of the combine all-to-all sends the output gradients back to the experts.
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_combine", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  if (parallelism_.sequence_parallel)
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"moe_tp_all_gather", CollectiveKind::all_gather, GroupRole::expert_tp, CommCategory::tp, expert_bytes}));
  sort_chunks("moe_unsort_chunks_bwd", launches.sort_backward);
  expert_fc2_bias_backward();
  const Gemm fc2{s.expert_tokens, s.hidden, s.expert_ffn_local, local_experts};
  (void)gemm_dgrad("expert_fc2_dgrad", fc2);
  // Frozen experts (LoRA on the attention only) take no weight gradient.
  if (!frozen_base())
    gradient_ready(local_experts * s.expert_ffn_local * s.hidden, true, gemm_wgrad("expert_fc2_wgrad", fc2));
  if (swiglu) {
    (void)elementwise("expert_swiglu_bwd", s.expert_tokens * s.expert_ffn_local, kBackwardFlopRatio * kSwigluFlops,
                      5.0 * s.activation_bytes);
  } else {
    (void)elementwise("expert_" + activation_name() + "_bwd", s.expert_tokens * s.expert_ffn_local,
                      kBackwardFlopRatio * activation_flops(), 3.0 * s.activation_bytes);
  }
  const double fc1_width = (swiglu ? 2.0 : 1.0) * s.expert_ffn_local;
  const Gemm fc1{s.expert_tokens, fc1_width, s.hidden, local_experts};
  (void)gemm_dgrad("expert_fc1_dgrad", fc1);
  // The gathered expert inputs are kept by autograd, so no re-gather; the input gradient goes back
  // through the tp reduce-scatter (or all-reduce without SP) while the wgrad GEMM runs.
  const std::optional<OpRef> reduce = parallelism_.sequence_parallel
                                          ? communicate(training_.overlap.tp, kTpStream,
                                                        {"moe_tp_reduce_scatter", CollectiveKind::reduce_scatter,
                                                         GroupRole::expert_tp, CommCategory::tp, expert_bytes})
                                          : communicate(training_.overlap.tp, kTpStream,
                                                        {"moe_tp_all_reduce", CollectiveKind::all_reduce,
                                                         GroupRole::expert_tp, CommCategory::tp, expert_bytes});
  if (!frozen_base()) gradient_ready(local_experts * fc1_width * s.hidden, true, gemm_wgrad("expert_fc1_wgrad", fc1));
  sort_chunks("moe_sort_chunks_bwd", launches.sort_backward);
  await(reduce);
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_dispatch", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  const OpRef permute = compute("moe_permute_bwd", KernelClass::memcpy, Precision::fp32, s.routed_tokens * s.hidden,
                                (s.norm_tokens * s.hidden + s.routed_tokens * s.hidden) * s.activation_bytes);
  builder_.set_host_issue(permute, launches.permute_backward, false);
  if (training_.moe_aux_loss != MoeAuxLoss::none) {
    const OpRef aux = elementwise("router_aux_loss_bwd", s.norm_tokens * experts, kBackwardFlopRatio * kSoftmaxFlops,
                                  (training_.moe_router_fusion ? 2.0 : 6.0) * 4.0, KernelClass::reduction);
    builder_.set_host_issue(aux, launches.aux_backward, false);
  }
  const OpRef topk = elementwise("router_topk_bwd", s.norm_tokens * experts, kBackwardFlopRatio * kSoftmaxFlops,
                                 s.activation_bytes + 8.0, KernelClass::reduction);
  builder_.set_host_issue(topk, launches.topk_backward, false);
  const Gemm router{.m = s.norm_tokens, .n = experts, .k = s.hidden, .transformer_engine = false};
  // Megatron-Core's RouterGatingLinearFunction computes both gradients in the router's fp32: its backward casts the
  // saved bf16 input and weight up, and the two fp32 gradients back down (4 casts, 6 bytes per element each).
  const OpRef casts = elementwise("router_gating_casts_bwd", 2.0 * (s.norm_tokens + experts) * s.hidden, 1.0, 6.0);
  builder_.set_host_issue(casts, launches.gating_casts_backward, false);
  builder_.set_host_issue(gemm_dgrad("router_dgrad", router), launches.router_gemms_backward, false);
  if (!frozen_base()) {
    const OpRef wgrad = gemm_wgrad("router_wgrad", router);
    builder_.set_host_issue(wgrad, launches.router_gemms_backward, false);
    gradient_ready(local_.router, false, wgrad);
  }
}

}  // namespace chopsim::detail
