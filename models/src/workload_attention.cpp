// The StageGenerator's attention cores: the fused (flash) attention kernels forward and backward, with context
// parallelism's exchanges of keys and values, and eager attention's matmuls, softmax and dropout. Conventions as in
// workload_layers.cpp (per rank and micro-batch; attention FLOPs 4 * b * s^2 * h per forward, causal halved).

#include <cmath>
#include <string>

#include "chopsim/common/error.hpp"
#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

// --- attention --------------------------------------------------------------------------------------

double StageGenerator::window_share() const {
  if (!model_.is_sliding_layer(layer_)) return 1.0;
  // (query, key) pairs of a causal sequence of s positions whose keys lie within the last w positions, over all
  // its causal pairs: w(w+1)/2 + (s - w) w against s(s+1)/2.
  const double s = sizes_.sequence;
  const double w = model_.sliding_window;
  if (w >= s) return 1.0;
  return (w * (w + 1.0) / 2.0 + (s - w) * w) / (s * (s + 1.0) / 2.0);
}

void StageGenerator::attention_forward() {
  if (training_.attention == kEagerAttention) return eager_attention_forward();
  const Sizes& s = sizes_;
  const double causal = model_.causal ? 0.5 : 1.0;  // flash kernels skip fully masked tiles
  // Scores Q*K^T and probabilities*V: 2 * 2 * d FLOPs per (query, key, head). Each rank's queries see the
  // keys of the whole sequence; with Megatron's load-balanced causal CP every rank gets 1/cp of the work. A
  // sliding-window layer's kernel skips the tiles outside the window too.
  const double flops = 2.0 * s.tokens * s.sequence * (s.qk_dim + s.v_dim) * s.query_heads * causal * window_share();
  const double micro_batch = training_.micro_batch;
  // Reads Q and all K, V; writes O and the fp32 log-sum-exp per query and head.
  const double bytes =
      (s.tokens * s.query_heads * (s.qk_dim + s.v_dim) + micro_batch * s.sequence * s.kv_heads * (s.qk_dim + s.v_dim)) *
          s.activation_bytes +
      4.0 * s.tokens * s.query_heads;
  unpad_attention_inputs();
  fill_output("attention", s.tokens * s.query_heads * s.v_dim * s.activation_bytes);  // O
  const double cp = parallelism_.cp;
  if (cp <= 1) {
    (void)compute("attention", KernelClass::attention, high_precision_, flops, bytes);
    pad_attention_output();
    return;
  }
  // Context parallelism: the K, V of all cp chunks are needed. Megatron/TE exchange them in a ring of
  // p2p steps overlapped with the attention of the chunks already present; modelled as one all-gather
  // on the cp stream overlapped with the local chunk's attention (1/cp of the work).
  const double kv_bytes = micro_batch * s.sequence * s.kv_heads * (s.qk_dim + s.v_dim) * s.activation_bytes;
  const Comm gather{"cp_all_gather_kv", CollectiveKind::all_gather, GroupRole::cp, CommCategory::cp, kv_bytes};
  if (training_.overlap.cp) {
    const auto kv = overlapped(kCpStream, gather, last_compute());
    (void)compute("attention", KernelClass::attention, high_precision_, flops / cp, bytes / cp);
    await(kv);
    (void)compute("attention_remote", KernelClass::attention, high_precision_, flops * (cp - 1) / cp,
                  bytes * (cp - 1) / cp);
  } else {
    await(blocking(gather));
    (void)compute("attention", KernelClass::attention, high_precision_, flops, bytes);
  }
}

void StageGenerator::attention_backward() {
  if (training_.attention == kEagerAttention) return eager_attention_backward();
  const Sizes& s = sizes_;
  const double causal = model_.causal ? 0.5 : 1.0;
  const double flops = kFlashBackwardRatio * 2.0 * s.tokens * s.sequence * (s.qk_dim + s.v_dim) * s.query_heads *
                       causal * window_share();
  const double micro_batch = training_.micro_batch;
  // Reads Q, O, dO and K, V, writes dQ, dK, dV; log-sum-exp and the dO*O row sums in fp32.
  const double bytes = (2.0 * s.tokens * s.query_heads * (s.qk_dim + s.v_dim) +
                        2.0 * micro_batch * s.sequence * s.kv_heads * (s.qk_dim + s.v_dim)) *
                           s.activation_bytes +
                       8.0 * s.tokens * s.query_heads;
  // dQ, dK, dV, and the deterministic workspace of the call over the local keys (all keys without CP).
  const double gradients =
      s.tokens * s.query_heads * s.qk_dim + micro_batch * s.sequence * s.kv_heads * (s.qk_dim + s.v_dim);
  const double cp = parallelism_.cp;
  const double local_keys = training_.overlap.cp && cp > 1 ? s.sequence / cp : s.sequence;
  pad_attention_output_backward();
  fill_output("attention_bwd", gradients * s.activation_bytes + deterministic_workspace_bytes(local_keys));
  if (cp <= 1) {
    (void)compute("attention_bwd", KernelClass::attention, high_precision_, flops, bytes);
    unpad_attention_inputs_backward();
    return;
  }
  // TE's context-parallel backward circulates K, V again and returns the partial dK, dV to their owners:
  // an all-gather of K, V and a reduce-scatter of dK, dV over the cp group.
  const double kv_bytes = micro_batch * s.sequence * s.kv_heads * (s.qk_dim + s.v_dim) * s.activation_bytes;
  const Comm gather{"cp_all_gather_kv", CollectiveKind::all_gather, GroupRole::cp, CommCategory::cp, kv_bytes};
  const Comm reduce{"cp_reduce_scatter_dkv", CollectiveKind::reduce_scatter, GroupRole::cp, CommCategory::cp, kv_bytes};
  if (training_.overlap.cp) {
    const auto kv = overlapped(kCpStream, gather, last_compute());
    (void)compute("attention_bwd", KernelClass::attention, high_precision_, flops / cp, bytes / cp);
    await(kv);
    fill_output("attention_bwd_remote", deterministic_workspace_bytes(s.sequence - local_keys));
    (void)compute("attention_bwd_remote", KernelClass::attention, high_precision_, flops * (cp - 1) / cp,
                  bytes * (cp - 1) / cp);
    await(overlapped(kCpStream, reduce, last_compute()));
  } else {
    await(blocking(gather));
    (void)compute("attention_bwd", KernelClass::attention, high_precision_, flops, bytes);
    await(blocking(reduce));
  }
}

// Eager attention, as Hugging Face's GPT2Attention._attn and PyTorch's math SDPA run it: S = Q K^T and O = P V are
// batched GEMMs over every (query, key) pair (no causal skipping), and between them separate kernels pass over the
// b x heads x s x s scores: scale, causal mask (torch.where), softmax, and dropout when the model has it. Each
// reads and writes the scores once (dropout also writes its 1-byte mask), and P (and the dropped-out P) are kept
// for backward (Korthikanti et al. 2022: 5 a s^2 b bytes per layer with dropout). Under Megatron-LM's
// masked_softmax_fusion one kernel scales, masks and normalises the scores in a single pass (FusedScaleMaskSoftmax).
// Queries and keys are qk_dim wide, values and outputs v_dim (both head_dim but under multi-latent attention, whose
// heads are head_dim + qk_rope_head_dim and v_head_dim wide: Megatron-Core's unfused DotProductAttention takes them).
void StageGenerator::eager_attention_forward() {
  const Sizes& s = sizes_;
  const double scores = s.tokens * s.sequence * s.query_heads;  // per rank: its heads, all query-key pairs
  const double e = s.activation_bytes;
  const double qk = s.tokens * s.query_heads * s.qk_dim * e;  // one of Q or K
  const double vo = s.tokens * s.query_heads * s.v_dim * e;   // one of V or O
  // Per head S[s x s] = Q[s x d] K^T: rows of s keys.
  (void)compute("attention_scores", KernelClass::gemm, high_precision_, 2.0 * scores * s.qk_dim, 2.0 * qk + scores * e,
                unaligned(s.sequence));
  if (training_.masked_softmax_fusion) {
    (void)elementwise("attention_scale_mask_softmax", scores, 2.0 + kSoftmaxFlops, 2.0 * e, KernelClass::reduction);
  } else {
    (void)elementwise("attention_scale", scores, 1.0, 2.0 * e);
    if (model_.causal) (void)elementwise("attention_causal_mask", scores, 1.0, 2.0 * e);
    (void)elementwise("attention_softmax", scores, kSoftmaxFlops, 2.0 * e, KernelClass::reduction);
  }
  if (model_.dropout) (void)elementwise("attention_dropout", scores, 2.0, 2.0 * e + 1.0);
  (void)compute("attention_probs_v", KernelClass::gemm, high_precision_, 2.0 * scores * s.v_dim, scores * e + 2.0 * vo,
                unaligned(s.v_dim));
}

void StageGenerator::eager_attention_backward() {
  if (training_.recompute == RecomputePolicy::selective) {
    // Selective recomputation (Korthikanti et al. 2022) keeps no scores: the core's forward runs again first.
    const Pass pass = pass_;
    pass_ = Pass::recompute;
    eager_attention_forward();
    pass_ = pass;
  }
  const Sizes& s = sizes_;
  const double scores = s.tokens * s.sequence * s.query_heads;
  const double e = s.activation_bytes;
  const double qk = s.tokens * s.query_heads * s.qk_dim * e;  // one of Q, K or their gradients
  const double vo = s.tokens * s.query_heads * s.v_dim * e;   // one of V, O or their gradients
  // dV = P^T dO and dP = dO V^T (writes the scores-sized dP).
  (void)compute("attention_probs_v_wgrad", KernelClass::gemm, high_precision_, 2.0 * scores * s.v_dim,
                scores * e + 2.0 * vo, unaligned(s.v_dim));
  (void)compute("attention_probs_v_dgrad", KernelClass::gemm, high_precision_, 2.0 * scores * s.v_dim,
                2.0 * vo + scores * e, unaligned(s.sequence));
  if (model_.dropout) (void)elementwise("attention_dropout_bwd", scores, 1.0, 2.0 * e + 1.0);
  // dS = P * (dP - sum(dP * P)): reads P and dP, writes dS; the fused kernel also applies the mask and the scale
  // (scaled_upper_triang_masked_softmax_backward), which are otherwise a pass each.
  if (training_.masked_softmax_fusion) {
    (void)elementwise("attention_scale_mask_softmax_bwd", scores, 2.0 + kSoftmaxFlops, 3.0 * e, KernelClass::reduction);
  } else {
    (void)elementwise("attention_softmax_bwd", scores, kSoftmaxFlops, 3.0 * e, KernelClass::reduction);
    if (model_.causal) (void)elementwise("attention_causal_mask_bwd", scores, 1.0, 2.0 * e);
    (void)elementwise("attention_scale_bwd", scores, 1.0, 2.0 * e);
  }
  // dQ = dS K and dK = dS^T Q.
  (void)compute("attention_scores_dgrad", KernelClass::gemm, high_precision_, 2.0 * scores * s.qk_dim,
                scores * e + 2.0 * qk, unaligned(s.qk_dim));
  (void)compute("attention_scores_wgrad", KernelClass::gemm, high_precision_, 2.0 * scores * s.qk_dim,
                scores * e + 2.0 * qk, unaligned(s.qk_dim));
}

}  // namespace chopsim::detail
