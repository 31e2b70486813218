#pragma once
// Small models the models tests share.

#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"

namespace chopsim::test {

/// A small Llama-style model: GQA (8 query heads over 4 KV heads), SwiGLU, untied embeddings.
inline TransformerSpec tiny_dense() {
  TransformerSpec m;
  m.name = "tiny";
  m.layers = 8;
  m.hidden = 256;
  m.ffn_hidden = 688;
  m.heads = 8;
  m.kv_heads = 4;
  m.vocab = 1024;
  return m;
}

/// Multi-latent attention in small (DeepSeek-V3's proportions): query and key-value latents, 32 + 16 wide
/// query/key and 32 wide value heads.
inline TransformerSpec tiny_mla(int q_lora_rank) {
  TransformerSpec m = tiny_dense();
  m.name = "tiny-mla";
  m.kv_heads = m.heads;
  m.head_dim_override = 32;
  m.qk_rope_head_dim = 16;
  m.v_head_dim = 32;
  m.q_lora_rank = q_lora_rank;
  m.kv_lora_rank = 64;
  return m;
}

/// tiny_dense() with four experts, each token routed to two.
inline TransformerSpec tiny_moe() {
  TransformerSpec m = tiny_dense();
  m.name = "tiny-moe";
  m.experts = 4;
  m.top_k = 2;
  return m;
}

/// DeepSeek's layout in small: two dense first layers of their own width, then MoE layers with a shared expert.
inline TransformerSpec tiny_moe_dense_first_shared() {
  TransformerSpec m = tiny_moe();
  m.name = "tiny-moe-dense-first-shared";
  m.dense_layers = 2;
  m.dense_ffn_hidden = 1024;
  m.shared_expert_ffn_hidden = 344;
  return m;
}

/// A hybrid model in small (Nemotron 3's proportions): Mamba-2, attention, dense-MLP and MoE layers with a shared
/// expert and squared-ReLU MLPs; the Mamba heads and groups split over tp 2.
inline TransformerSpec tiny_hybrid() {
  TransformerSpec m = tiny_moe();
  m.name = "tiny-hybrid";
  m.hybrid_pattern = "M*EM-ME*";
  m.head_dim_override = 64;
  m.shared_expert_ffn_hidden = 344;
  m.mlp = MlpKind::squared_relu;
  m.mamba_heads = 8;
  m.mamba_head_dim = 16;
  m.mamba_state_dim = 16;
  m.mamba_groups = 2;
  m.mamba_chunk_size = 64;
  return m;
}

/// A model and how it is trained: what build_workload and the memory estimates take.
struct TinyRun {
  TransformerSpec model = tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

}  // namespace chopsim::test
