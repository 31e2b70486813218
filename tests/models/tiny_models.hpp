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

/// A model and how it is trained: what build_workload and the memory estimates take.
struct TinyRun {
  TransformerSpec model = tiny_dense();
  ParallelismSpec parallelism;
  TrainingSpec training;
};

}  // namespace chopsim::test
