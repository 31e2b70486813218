// Parameter and FLOP counts against published model sizes and the Megatron-LM FLOPs formula.

#include "chopsim/models/transformer.hpp"

#include <gtest/gtest.h>

#include "chopsim/common/error.hpp"

namespace chopsim {
namespace {

// Architectures from the models' papers/configs: Llama 3 (Meta, "The Llama 3 Herd of Models", 2024, Table 3),
// GPT-3 (Brown et al. 2020, Table 2.1, GPT-2 vocabulary of 50257 tokens, tied embeddings),
// Mixtral (Jiang et al. 2024, Table 1).
TransformerSpec llama3_8b() {
  TransformerSpec m;
  m.name = "llama3-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.vocab = 128256;
  return m;
}

TransformerSpec llama3_70b() {
  TransformerSpec m = llama3_8b();
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  m.kv_heads = 8;
  return m;
}

TransformerSpec gpt3_175b() {
  TransformerSpec m;
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.ffn_hidden = 4 * 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.vocab = 50257;
  m.mlp = MlpKind::gelu;
  m.norm = NormKind::layernorm;
  m.tied_embeddings = true;
  return m;
}

TransformerSpec mixtral_8x7b() {
  TransformerSpec m = llama3_8b();
  m.name = "mixtral-8x7b";
  m.vocab = 32000;
  m.experts = 8;
  m.top_k = 2;
  return m;
}

// Published sizes are rounded; accept half a unit of their last digit.
TEST(TransformerParameters, Llama3_8BMatchesPublishedSize) {
  const ParameterCount count = count_parameters(llama3_8b());
  EXPECT_NEAR(count.total, 8.03e9, 0.005e9);
  // By hand: per layer 4096*128*(32+16) + 4096^2 + 3*4096*14336 + 2*4096 = 218,112,000;
  // 32 layers + untied embedding and head 2*128256*4096 + final norm 4096.
  EXPECT_DOUBLE_EQ(count.per_layer, 218112000.0);
  EXPECT_DOUBLE_EQ(count.total, 32.0 * 218112000.0 + 2.0 * 128256.0 * 4096.0 + 4096.0);
}

TEST(TransformerParameters, Llama3_70BMatchesPublishedSize) {
  EXPECT_NEAR(count_parameters(llama3_70b()).total, 70.6e9, 0.05e9);
}

TEST(TransformerParameters, Gpt3_175BMatchesPublishedSize) {
  // 174.6e9 is the usual exact count of the "175B" model (12*L*h^2 + V*h plus norms and positions).
  const ParameterCount count = count_parameters(gpt3_175b());
  EXPECT_NEAR(count.total, 174.6e9, 0.05e9);
  EXPECT_DOUBLE_EQ(count.output_head, 0.0);                // tied
  EXPECT_DOUBLE_EQ(count.norms_per_layer, 4.0 * 12288.0);  // two LayerNorms with scale and bias
}

TEST(TransformerParameters, MixtralTotalAndActiveMatchPublishedSizes) {
  const TransformerSpec model = mixtral_8x7b();
  const ParameterCount count = count_parameters(model);
  EXPECT_NEAR(count.total, 46.7e9, 0.05e9);
  const double active = count.total - model.layers * (count.mlp_per_layer - count.mlp_active_per_layer);
  EXPECT_NEAR(active, 12.9e9, 0.05e9);
  EXPECT_DOUBLE_EQ(count.router_per_layer, 4096.0 * 8.0);
  EXPECT_DOUBLE_EQ(count.mlp_active_per_layer, 2.0 * 3.0 * 4096.0 * 14336.0);
}

// Qwen3's heads are 128 wide whatever the hidden size (head_dim set apart from hidden / heads). Published sizes
// (Qwen3 technical report, Table 2; the model cards): Qwen3-30B-A3B 30.5B total, 3.3B activated; Qwen3-235B-A22B
// 235B total, 22B activated. Without head_dim (64-wide heads) the 30B model would count 29.9B.
TEST(TransformerParameters, QwenMoeWithItsOwnHeadWidthMatchesPublishedSizes) {
  TransformerSpec small;
  small.name = "qwen3-30b-a3b";
  small.layers = 48;
  small.hidden = 2048;
  small.head_dim_override = 128;
  small.ffn_hidden = 768;
  small.heads = 32;
  small.kv_heads = 4;
  small.vocab = 151936;
  small.experts = 128;
  small.top_k = 8;
  const auto active = [](const TransformerSpec& m, const ParameterCount& c) {
    return c.total - m.layers * (c.mlp_per_layer - c.mlp_active_per_layer);
  };
  const ParameterCount s = count_parameters(small);
  EXPECT_NEAR(s.total, 30.5e9, 0.1e9);
  EXPECT_NEAR(active(small, s), 3.3e9, 0.1e9);
  EXPECT_EQ(small.attention_width(), 4096);
  // q, k, v: 2048 x 128 x (32 + 2 x 4); the output projection 4096 -> 2048.
  EXPECT_DOUBLE_EQ(s.attention_per_layer, 2048.0 * 128 * 40 + 4096.0 * 2048);
  TransformerSpec big = small;
  big.layers = 94;
  big.hidden = 4096;
  big.ffn_hidden = 1536;
  big.heads = 64;
  const ParameterCount b = count_parameters(big);
  EXPECT_NEAR(b.total, 235e9, 1.5e9);
  EXPECT_NEAR(active(big, b), 22e9, 0.5e9);
  // Megatron's FLOPs formula takes the attention's width (kv_channels x heads), not hidden.
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(small, 4096) - 6.0 * s.active_matmul, 12.0 * 48 * 4096 * 4096);
}

// Qwen1.5-MoE-A2.7B (Qwen/Qwen1.5-MoE-A2.7B config.json): 24 layers of 60 routed experts (1408 wide, top 4) and a
// shared expert 5632 wide beside them. The Qwen team's release post (qwenlm.github.io/blog/qwen-moe, 2024-03-28)
// gives 14.3B parameters and 2.7B activated (2.0B of them outside the embeddings).
TEST(TransformerParameters, SharedExpertMoeMatchesPublishedSizes) {
  TransformerSpec qwen;
  qwen.name = "qwen1.5-moe-a2.7b";
  qwen.layers = 24;
  qwen.hidden = 2048;
  qwen.ffn_hidden = 1408;
  qwen.heads = 16;
  qwen.kv_heads = 16;
  qwen.vocab = 151936;
  qwen.experts = 60;
  qwen.top_k = 4;
  qwen.shared_expert_ffn_hidden = 5632;
  const ParameterCount c = count_parameters(qwen);
  EXPECT_DOUBLE_EQ(c.shared_mlp_per_layer, 3.0 * 2048 * 5632);
  EXPECT_NEAR(c.total, 14.3e9, 0.05e9);
  const double embedding = 151936.0 * 2048;
  EXPECT_NEAR(c.active_matmul + embedding, 2.7e9, 0.05e9);  // the head counted once, plus the input embedding
  EXPECT_NEAR(c.active_matmul - embedding, 2.0e9, 0.1e9);   // outside the embedding and the head
  // Without its shared expert the model would be 0.83B smaller and activate 0.83B fewer.
  TransformerSpec unshared = qwen;
  unshared.shared_expert_ffn_hidden = 0;
  EXPECT_DOUBLE_EQ(c.total - count_parameters(unshared).total, 24.0 * 3.0 * 2048 * 5632);
  EXPECT_DOUBLE_EQ(c.active_matmul - count_parameters(unshared).active_matmul, 24.0 * 3.0 * 2048 * 5632);
}

// Dense first layers (DeepSeek's first_k_dense_replace): by hand, 2 dense layers with an 18432-wide MLP before 6 MoE
// layers of 16 experts (2048 wide, top 2) and one shared expert.
TEST(TransformerParameters, DenseFirstLayersCountTheirOwnWidth) {
  TransformerSpec m;
  m.name = "dense-first";
  m.layers = 8;
  m.hidden = 1024;
  m.ffn_hidden = 2048;
  m.heads = 8;
  m.kv_heads = 8;
  m.vocab = 32000;
  m.experts = 16;
  m.top_k = 2;
  m.dense_layers = 2;
  m.dense_ffn_hidden = 18432;
  m.shared_expert_ffn_hidden = 2048;
  const ParameterCount c = count_parameters(m);
  const double h = 1024, attention = 4.0 * h * h, norms = 2.0 * h;
  const double dense_layer = attention + 3.0 * h * 18432 + norms;
  const double moe_layer = attention + (16 + 1) * 3.0 * h * 2048 + 16 * h + norms;
  EXPECT_DOUBLE_EQ(c.dense_layer, dense_layer);
  EXPECT_DOUBLE_EQ(c.per_layer, moe_layer);
  EXPECT_DOUBLE_EQ(c.total, 2 * dense_layer + 6 * moe_layer + 2.0 * 32000 * h + h);
  const double moe_active = attention + (2 + 1) * 3.0 * h * 2048 + 16 * h;
  EXPECT_DOUBLE_EQ(c.active_matmul, 2 * (attention + 3.0 * h * 18432) + 6 * moe_active + 32000 * h);
  EXPECT_TRUE(!m.is_moe_layer(1) && m.is_moe_layer(2));
  // Only MoE models have dense first layers, and at least one MoE layer must remain.
  TransformerSpec all_dense = m;
  all_dense.dense_layers = 8;
  EXPECT_THROW((void)count_parameters(all_dense), ModelError);
  TransformerSpec dense_model = m;
  dense_model.experts = 1;
  dense_model.top_k = 1;
  EXPECT_THROW((void)count_parameters(dense_model), ModelError);
}

// Sliding-window attention (Mistral-7B-v0.1: a 4096 window in every layer; GPT-OSS: every other layer): a query
// attends the window's keys, so the attention term of the FLOPs per token is 12 x width x window for those layers.
TEST(TransformerFlops, SlidingWindowLayersAttendTheWindow) {
  TransformerSpec mistral;
  mistral.name = "mistral-7b-v0.1";
  mistral.layers = 32;
  mistral.hidden = 4096;
  mistral.ffn_hidden = 14336;
  mistral.heads = 32;
  mistral.kv_heads = 8;
  mistral.vocab = 32000;
  const double matmul = 6.0 * count_parameters(mistral).active_matmul;
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(mistral, 8192) - matmul, 12.0 * 32 * 4096 * 8192);
  mistral.sliding_window = 4096;
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(mistral, 8192) - matmul, 12.0 * 32 * 4096 * 4096);
  // A sequence within the window attends every key.
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(mistral, 2048) - matmul, 12.0 * 32 * 4096 * 2048);
  // Every second layer full (layers 1, 3, ...), the others sliding.
  mistral.full_attention_every = 2;
  EXPECT_TRUE(mistral.is_sliding_layer(0) && !mistral.is_sliding_layer(1));
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(mistral, 8192) - matmul, 12.0 * 4096 * (16 * 4096.0 + 16 * 8192.0));
  TransformerSpec no_window = mistral;
  no_window.sliding_window = 0;
  EXPECT_THROW((void)count_parameters(no_window), ModelError);  // full_attention_every without a window
}

// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json; technical report arXiv 2412.19437: 671B total parameters, 37B
// activated per token, the multi-token-prediction module's 14B not counted): 61 layers, the first 3 dense (18432
// wide), then 256 routed experts of 2048 (top 8) and one shared expert; multi-latent attention with a 1536 query
// latent, a 512 key-value latent, 128 + 64 query/key and 128 value dimensions per head.
TEST(TransformerParameters, DeepSeekV3MatchesPublishedSizes) {
  TransformerSpec v3;
  v3.name = "deepseek-v3";
  v3.layers = 61;
  v3.hidden = 7168;
  v3.heads = 128;
  v3.kv_heads = 128;
  v3.head_dim_override = 128;  // qk_nope_head_dim
  v3.qk_rope_head_dim = 64;
  v3.v_head_dim = 128;
  v3.q_lora_rank = 1536;
  v3.kv_lora_rank = 512;
  v3.ffn_hidden = 2048;
  v3.experts = 256;
  v3.top_k = 8;
  v3.dense_layers = 3;
  v3.dense_ffn_hidden = 18432;
  v3.shared_expert_ffn_hidden = 2048;
  v3.vocab = 129280;
  const ParameterCount c = count_parameters(v3);
  // q: 7168 x 1536 + 1536 x 128 x 192; kv: 7168 x (512 + 64) + 512 x 128 x (128 + 128); out: 128 x 128 x 7168.
  EXPECT_DOUBLE_EQ(c.attention_per_layer,
                   7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168);
  EXPECT_NEAR(c.total, 671e9, 1e9);
  EXPECT_NEAR(c.active_matmul + 129280.0 * 7168, 37e9, 1e9);
  // Attention FLOPs per token and key: 6 x heads x (192 + 128).
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(v3, 4096) - 6.0 * c.active_matmul, 6.0 * 128 * 320 * 4096 * 61);
  // The multi-token prediction module (num_nextn_predict_layers 1): Hugging Face's checkpoint holds 685B, "671B of
  // the main model weights and 14B of the MTP module weights", the 14B with the module's own copies of the embedding
  // and the head (both 129280 x 7168), which training shares. 685 and 671 are rounded: +-0.6B.
  v3.mtp_layers = 1;
  const ParameterCount with = count_parameters(v3);
  EXPECT_NEAR(with.mtp_module + 2.0 * 129280.0 * 7168.0, 14e9, 0.6e9);
  EXPECT_DOUBLE_EQ(with.total, c.total + with.mtp_module);
  EXPECT_DOUBLE_EQ(with.active_matmul, c.active_matmul);  // the 37B activated are the main model's
}

// Nemotron 3 Nano (30B-A3B), a hybrid of 23 Mamba-2, 23 MoE and 6 attention layers: Megatron-Bridge's
// Nemotron3NanoProvider (configs/models/nemotron-3-nano.yaml gives the sources).
TransformerSpec nemotron_3_nano() {
  TransformerSpec m;
  m.name = "nemotron-3-nano";
  m.hybrid_pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  m.layers = 52;
  m.hidden = 2688;
  m.head_dim_override = 128;
  m.heads = 32;
  m.kv_heads = 2;
  m.ffn_hidden = 1856;
  m.shared_expert_ffn_hidden = 3712;
  m.experts = 128;
  m.top_k = 6;
  m.vocab = 131072;
  m.mlp = MlpKind::squared_relu;
  m.mamba_heads = 64;
  m.mamba_head_dim = 64;
  m.mamba_state_dim = 128;
  m.mamba_groups = 8;
  return m;
}

// NVIDIA's model card: 31.6B parameters in total, about 3.2B active per token (3.6B including embeddings). chopsim's
// active count is the matmuls a token runs through, the output head included; adding the input embedding gives the
// card's "including embeddings".
TEST(TransformerParameters, NemotronHybridMatchesPublishedSizes) {
  const TransformerSpec nano = nemotron_3_nano();
  const ParameterCount c = count_parameters(nano);
  // MambaMixer: in_proj h x (2 x 4096 + 2 x 8 x 128 + 64), the convolution over 6144 channels (4 taps and a bias),
  // dt_bias, A_log, D, the gated norm's weight and out_proj 4096 x h.
  EXPECT_DOUBLE_EQ(c.mamba_per_layer, 2688.0 * 10304 + 6144.0 * 5 + 3 * 64 + 4096 + 4096.0 * 2688);
  EXPECT_NEAR(c.total, 31.6e9, 0.05e9);
  EXPECT_NEAR(c.active_matmul, 3.2e9, 0.05e9);
  EXPECT_NEAR(c.active_matmul + c.embedding, 3.6e9, 0.05e9);
  EXPECT_EQ(nano.moe_layers(), 23);
  EXPECT_EQ(nano.attention_layers(), 6);
  EXPECT_TRUE(nano.layer_kind(0).mamba);
  EXPECT_TRUE(nano.layer_kind(1).moe);
  EXPECT_TRUE(nano.layer_kind(5).attention);
  EXPECT_EQ(nano.layer_kind(5).norms(), 1);
  // A transformer layer (no pattern) has attention and an MLP behind two norms.
  EXPECT_EQ(llama3_8b().layer_kind(3).norms(), 2);
}

// Model FLOPs of a hybrid: 6 N for the matmuls, attention only in the '*' layers, and each Mamba-2 layer's chunked
// scan three times (forward and backward) at 2 Q N G + 2 Q P H + 4 N P H per token (Dao and Gu 2024, Sec. 6).
TEST(TransformerFlops, HybridCountsAttentionLayersAndTheScan) {
  const TransformerSpec nano = nemotron_3_nano();
  const ParameterCount c = count_parameters(nano);
  const double scan = 2.0 * 128 * 128 * 8 + 2.0 * 128 * 64 * 64 + 4.0 * 128 * 64 * 64;
  EXPECT_DOUBLE_EQ(mamba_scan_flops_per_token(nano), scan);
  EXPECT_DOUBLE_EQ(model_training_flops_per_token(nano, 8192),
                   6.0 * c.active_matmul + 6.0 * 32 * (128 + 128) * 8192.0 * 6 + 23 * 3.0 * scan);
}

TEST(TransformerParameters, HybridPatternMustDescribeEveryLayer) {
  TransformerSpec bad = nemotron_3_nano();
  bad.hybrid_pattern.pop_back();
  EXPECT_THROW((void)count_parameters(bad), ModelError);
  bad = nemotron_3_nano();
  bad.hybrid_pattern[3] = 'X';
  EXPECT_THROW((void)count_parameters(bad), ModelError);
  bad = nemotron_3_nano();
  bad.mamba_groups = 7;  // 64 heads in groups of 7
  EXPECT_THROW((void)count_parameters(bad), ModelError);
  bad = nemotron_3_nano();
  bad.experts = 1;
  bad.top_k = 1;
  bad.shared_expert_ffn_hidden = 0;
  EXPECT_THROW((void)count_parameters(bad), ModelError);  // 'E' layers without experts
}

TEST(TransformerParameters, ActiveMatmulCountsTheHeadOnceAndNoNorms) {
  const TransformerSpec model = llama3_8b();
  const ParameterCount count = count_parameters(model);
  EXPECT_DOUBLE_EQ(count.active_matmul, 32.0 * (count.attention_per_layer + count.mlp_per_layer) + 128256.0 * 4096.0);
  TransformerSpec tied = model;
  tied.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(count_parameters(tied).active_matmul, count.active_matmul);
  EXPECT_DOUBLE_EQ(count_parameters(tied).total, count.total - 128256.0 * 4096.0);
}

TEST(TransformerFlops, GptBlockMatchesNarayananFormula) {
  // Narayanan et al., SC'21, eq. 3: 72*B*s*L*h^2*(1 + s/(6h) + V/(12hL)) FLOPs per iteration for a GPT
  // model (MHA, f = 4h, biases and norms ignored), i.e. per token 72*L*h^2*(1 + s/(6h) + V/(12hL)).
  const TransformerSpec model = gpt3_175b();
  const double L = model.layers, h = model.hidden, V = model.vocab, s = 2048;
  const double expected = 72.0 * L * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * L));
  EXPECT_NEAR(model_training_flops_per_token(model, 2048), expected, expected * 1e-12);
}

TEST(TransformerFlops, MoeCountsOnlyActiveExpertsAndTheRouter) {
  const TransformerSpec model = mixtral_8x7b();
  const ParameterCount count = count_parameters(model);
  const double per_layer = count.attention_per_layer + 2.0 * 3.0 * 4096.0 * 14336.0 + 4096.0 * 8.0;
  const double expected = 6.0 * (32.0 * per_layer + 32000.0 * 4096.0) + 12.0 * 32.0 * 4096.0 * 4096.0;
  EXPECT_NEAR(model_training_flops_per_token(model, 4096), expected, expected * 1e-12);
}

// Megatron-LM's _vocab_size_with_padding: round the vocabulary up to a multiple of make_vocab_size_divisible_by * tp
// (GPT-2's 50257 -> 50304 at tp 1, 51200 at tp 8; the Megatron 7B's 131073 -> 131584 at tp 4).
TEST(TransformerParameters, VocabularyPadsAsMegatronPerTensorParallelRank) {
  TransformerSpec m = gpt3_175b();
  EXPECT_EQ(m.vocab_per_tp_rank(1), 50257);  // unpadded (Hugging Face)
  EXPECT_EQ(m.vocab_per_tp_rank(8), 6283);   // ceil(50257 / 8): an odd row count per rank
  m.make_vocab_size_divisible_by = 128;
  EXPECT_EQ(m.vocab_per_tp_rank(1), 50304);
  EXPECT_EQ(m.vocab_per_tp_rank(8) * 8, 51200);
  m.vocab = 131073;
  EXPECT_EQ(m.vocab_per_tp_rank(4) * 4, 131584);
}

TEST(TransformerParameters, RejectsInconsistentShapes) {
  TransformerSpec model = llama3_8b();
  model.kv_heads = 5;  // 32 query heads cannot be grouped over 5 KV heads
  EXPECT_THROW((void)count_parameters(model), ModelError);
  model = llama3_8b();
  model.layers = 0;
  EXPECT_THROW((void)count_parameters(model), ModelError);
  EXPECT_THROW((void)model_training_flops_per_token(llama3_8b(), 0), ModelError);
}

}  // namespace
}  // namespace chopsim
