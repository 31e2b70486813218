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
  (void)elementwise("router_topk", s.norm_tokens * experts, kSoftmaxFlops, s.activation_bytes + 4.0,
                    KernelClass::reduction);
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
  builder_.set_host_issue(permute, 1, host_waits);
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_dispatch", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  if (parallelism_.sequence_parallel)
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"moe_tp_all_gather", CollectiveKind::all_gather, GroupRole::expert_tp, CommCategory::tp, expert_bytes}));
  (void)gemm("expert_fc1", {s.expert_tokens, (swiglu ? 2.0 : 1.0) * s.expert_ffn_local, s.hidden, local_experts});
  expert_activation_forward();
  (void)gemm("expert_fc2", {s.expert_tokens, s.hidden, s.expert_ffn_local, local_experts});
  expert_fc2_bias_forward();
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
  await(reduce);
  cut_issue();
  await(communicate(
      training_.overlap.ep, kEpStream,
      {"ep_all_to_all_dispatch", CollectiveKind::all_to_all, GroupRole::ep, CommCategory::ep, routed_bytes}));
  (void)compute("moe_permute_bwd", KernelClass::memcpy, Precision::fp32, s.routed_tokens * s.hidden,
                (s.norm_tokens * s.hidden + s.routed_tokens * s.hidden) * s.activation_bytes);
  (void)elementwise("router_topk_bwd", s.norm_tokens * experts, kBackwardFlopRatio * kSoftmaxFlops,
                    s.activation_bytes + 8.0, KernelClass::reduction);
  const Gemm router{.m = s.norm_tokens, .n = experts, .k = s.hidden, .transformer_engine = false};
  (void)gemm_dgrad("router_dgrad", router);
  if (!frozen_base()) gradient_ready(local_.router, false, gemm_wgrad("router_wgrad", router));
}

}  // namespace chopsim::detail
