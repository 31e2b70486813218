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

/// A model and how it is trained: what build_workload and the memory estimates take.
struct TinyRun {
  TransformerSpec model = tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

}  // namespace chopsim::test
