// The StageGenerator's multi-latent attention projections (DeepSeek-V2/V3; Megatron-Core MLASelfAttention):
// forward and backward of the latent down projections, their norms and the column-parallel up projections.

#include "workload_flops.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

// --- multi-latent attention's projections (Megatron-Core MLASelfAttention) --------------------------------

void StageGenerator::mla_projections_forward() {
  const Sizes& s = sizes_;
  const double q_lora = model_.q_lora_rank;
  const double kv_latent = model_.kv_lora_rank + model_.qk_rope_head_dim;  // the latent and the shared rotary key
  const double e = s.activation_bytes;
  const double norm_flops = model_.norm == NormKind::rmsnorm ? kRmsNormFlops : kLayerNormFlops;
  // The down projections are duplicated over tp and run on this rank's tokens (its sequence shard with SP).
  if (q_lora > 0) {
    (void)gemm("q_down_proj", {s.norm_tokens, q_lora, s.hidden});
    (void)elementwise("q_latent_norm", s.norm_tokens * q_lora, norm_flops, 2.0 * e, KernelClass::norm);
  }
  (void)gemm("kv_down_proj", {s.norm_tokens, kv_latent, s.hidden});
  (void)elementwise("kv_latent_norm", s.norm_tokens * model_.kv_lora_rank, norm_flops, 2.0 * e, KernelClass::norm);
  // With SP the latents (not the hidden states) are all-gathered for the column-parallel up projections.
  if (parallelism_.sequence_parallel) {
    const double bytes = s.tokens * ((q_lora > 0 ? q_lora : s.hidden) + kv_latent) * e;
    await(communicate(training_.overlap.tp, kTpStream,
                      {"sp_all_gather_latent", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, bytes}));
  }
  mla_up_projections();
}

void StageGenerator::mla_up_projections() {
  const Sizes& s = sizes_;
  const double q_lora = model_.q_lora_rank;
  const double queries = s.query_heads * s.qk_dim;
  (void)gemm(q_lora > 0 ? "q_up_proj" : "q_proj", {s.tokens, queries, q_lora > 0 ? q_lora : s.hidden});
  (void)gemm("kv_up_proj", {s.tokens, s.query_heads * (s.head_dim + s.v_dim), double(model_.kv_lora_rank)});
  // Rotary embedding of each query head's rotary part and of the one shared rotary key.
  (void)elementwise("rotary", s.tokens * (s.query_heads + 1.0) * model_.qk_rope_head_dim, kRotaryFlops,
                    2.0 * s.activation_bytes);
}

void StageGenerator::mla_projections_backward() {
  const Sizes& s = sizes_;
  const double q_lora = model_.q_lora_rank;
  const double kv_lora = model_.kv_lora_rank;
  const double kv_latent = kv_lora + model_.qk_rope_head_dim;
  const double rope = model_.qk_rope_head_dim;
  const double e = s.activation_bytes;
  const double norm_flops = model_.norm == NormKind::rmsnorm ? kRmsNormFlops : kLayerNormFlops;
  (void)elementwise("rotary_bwd", s.tokens * (s.query_heads + 1.0) * rope, kRotaryFlops, 2.0 * e);
  // The up projections are column-parallel over the latents: their input gradients are summed over tp (a
  // reduce-scatter back to the sequence shard with SP).
  const double kv_up = s.query_heads * (s.head_dim + s.v_dim);
  column_parallel_backward("kv_up_proj_dgrad", "kv_up_proj_wgrad", {s.tokens, kv_up, kv_lora}, kv_up * kv_lora, false);
  const double queries = s.query_heads * s.qk_dim;
  const double q_in = q_lora > 0 ? q_lora : s.hidden;
  column_parallel_backward(q_lora > 0 ? "q_up_proj_dgrad" : "q_proj_dgrad",
                           q_lora > 0 ? "q_up_proj_wgrad" : "q_proj_wgrad", {s.tokens, queries, q_in}, queries * q_in,
                           false);
  // The duplicated down projections on this rank's tokens. (With SP their weight gradients, partial per token
  // shard, are summed over tp once per step, as Megatron-Core does for sequence-parallel norms: not modelled.)
  (void)elementwise("kv_latent_norm_bwd", s.norm_tokens * kv_lora, kBackwardFlopRatio * norm_flops, 3.0 * e,
                    KernelClass::norm);
  const Gemm kv_down{s.norm_tokens, kv_latent, s.hidden};
  (void)gemm_dgrad("kv_down_proj_dgrad", kv_down);
  gradient_ready(kv_latent * s.hidden, false, gemm_wgrad("kv_down_proj_wgrad", kv_down));
  if (q_lora > 0) {
    (void)elementwise("q_latent_norm_bwd", s.norm_tokens * q_lora, kBackwardFlopRatio * norm_flops, 3.0 * e,
                      KernelClass::norm);
    const Gemm q_down{s.norm_tokens, q_lora, s.hidden};
    (void)gemm_dgrad("q_down_proj_dgrad", q_down);
    gradient_ready(q_lora * s.hidden, false, gemm_wgrad("q_down_proj_wgrad", q_down));
  }
}

}  // namespace chopsim::detail
