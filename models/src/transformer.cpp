#include "chopsim/models/transformer.hpp"

#include <algorithm>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

void require_valid(const TransformerSpec& model) {
  if (model.layers <= 0 || model.hidden <= 0 || model.ffn_hidden <= 0 || model.heads <= 0 || model.kv_heads <= 0 ||
      model.vocab <= 0 || model.experts <= 0 || model.top_k <= 0)
    throw ModelError("transformer '" + model.name + "': every dimension must be positive");
  if (model.head_dim_override < 0) throw ModelError("transformer '" + model.name + "': head_dim must be positive");
  if (model.head_dim_override == 0 && model.hidden % model.heads != 0)
    throw ModelError("transformer '" + model.name + "': hidden must be a multiple of heads (or give head_dim)");
  if (model.heads % model.kv_heads != 0)
    throw ModelError("transformer '" + model.name + "': heads must be a multiple of kv_heads (GQA)");
  if (model.top_k > model.experts)
    throw ModelError("transformer '" + model.name + "': top_k cannot exceed the number of experts");
  if (model.dense_layers < 0 || model.dense_ffn_hidden < 0 || model.shared_expert_ffn_hidden < 0)
    throw ModelError("transformer '" + model.name +
                     "': dense_layers, dense_ffn_hidden and shared_expert_ffn_hidden "
                     "cannot be negative");
  if (!model.is_moe() && (model.dense_layers > 0 || model.dense_ffn_hidden > 0 || model.shared_expert_ffn_hidden > 0))
    throw ModelError("transformer '" + model.name +
                     "': dense_layers, dense_ffn_hidden and shared_expert_ffn_hidden "
                     "describe mixture-of-experts models (experts > 1)");
  if (model.kv_lora_rank < 0 || model.q_lora_rank < 0 || model.qk_rope_head_dim < 0 || model.v_head_dim < 0)
    throw ModelError("transformer '" + model.name + "': the multi-latent attention dimensions cannot be negative");
  if (model.is_mla() && (model.v_head_dim <= 0 || model.qk_rope_head_dim <= 0 || model.kv_heads != model.heads))
    throw ModelError("transformer '" + model.name +
                     "': multi-latent attention needs v_head_dim, qk_rope_head_dim "
                     "and kv_heads = heads");
  if (!model.is_mla() && (model.q_lora_rank > 0 || model.qk_rope_head_dim > 0 || model.v_head_dim > 0))
    throw ModelError("transformer '" + model.name +
                     "': q_lora_rank, qk_rope_head_dim and v_head_dim need kv_lora_rank "
                     "(multi-latent attention)");
  if (model.sliding_window < 0 || model.full_attention_every < 0)
    throw ModelError("transformer '" + model.name + "': sliding_window and full_attention_every cannot be negative");
  if (model.full_attention_every > 0 && model.sliding_window == 0)
    throw ModelError("transformer '" + model.name + "': full_attention_every needs a sliding_window");
  if (model.sliding_window > 0 && !model.causal)
    throw ModelError("transformer '" + model.name + "': a sliding window is modelled for causal attention");
  if (model.mtp_layers < 0) throw ModelError("transformer '" + model.name + "': mtp_layers cannot be negative");
  if (model.dense_layers >= model.layers)
    throw ModelError("transformer '" + model.name + "': dense_layers must leave at least one MoE layer");
  if (model.is_hybrid()) {
    if (static_cast<int>(model.hybrid_pattern.size()) != model.layers)
      throw ModelError("transformer '" + model.name + "': hybrid_pattern must have one symbol per layer");
    if (model.hybrid_pattern.find_first_not_of("M*-E") != std::string::npos)
      throw ModelError("transformer '" + model.name + "': hybrid_pattern symbols are M, *, - and E");
    const bool has_mamba = model.hybrid_pattern.find('M') != std::string::npos;
    if (has_mamba && (model.mamba_heads <= 0 || model.mamba_head_dim <= 0 || model.mamba_state_dim <= 0 ||
                      model.mamba_groups <= 0 || model.mamba_conv_kernel <= 0 || model.mamba_chunk_size <= 0))
      throw ModelError("transformer '" + model.name + "': Mamba layers need positive mamba dimensions");
    if (has_mamba && model.mamba_heads % model.mamba_groups != 0)
      throw ModelError("transformer '" + model.name + "': mamba heads must be a multiple of mamba groups");
    if ((model.hybrid_pattern.find('E') != std::string::npos) != model.is_moe())
      throw ModelError("transformer '" + model.name + "': 'E' layers need experts > 1, and experts > 1 needs them");
    if (model.dense_layers > 0 || model.mtp_layers > 0)
      throw ModelError("transformer '" + model.name + "': a hybrid model has no dense_layers or mtp_layers");
  }
}

}  // namespace

ParameterCount count_parameters(const TransformerSpec& model) {
  require_valid(model);
  const double h = model.hidden;
  const double f = model.ffn_hidden;
  const double vocab = model.vocab;
  const double head_dim = model.head_dim();
  const double experts = model.experts;

  ParameterCount count;
  // Q has `heads` heads, K and V `kv_heads` heads each (GQA, Ainslie et al. 2023); the output projection
  // maps heads*head_dim (= h unless head_dim is set apart) back to h. No linear biases (Llama, Mixtral; Megatron
  // --disable-bias-linear).
  count.attention_per_layer = h * head_dim * (model.heads + 2.0 * model.kv_heads) + model.attention_width() * h;
  if (model.is_mla()) {
    // DeepSeek-V2 (arXiv 2405.04434, Sec. 2.1): queries from a q_lora_rank latent (or from h directly), keys and
    // values from a kv_lora_rank latent plus one shared rotary key, the output projection from heads * v_head_dim.
    const double heads = model.heads;
    const double q_lora = model.q_lora_rank;
    const double kv_lora = model.kv_lora_rank;
    const double queries = heads * model.qk_head_dim();
    count.attention_per_layer = (q_lora > 0 ? h * q_lora + q_lora * queries : h * queries) +
                                h * (kv_lora + model.qk_rope_head_dim) +
                                kv_lora * heads * (model.head_dim() + model.v_dim()) + model.attention_width() * h;
  }
  // SwiGLU has gate, up and down matrices (Shazeer 2020), the GELU MLP up and down.
  const double matrices = model.mlp == MlpKind::swiglu ? 3.0 : 2.0;  // GELU and squared ReLU: up and down
  const double one_mlp = matrices * h * f;
  count.shared_mlp_per_layer = matrices * h * model.shared_expert_ffn_hidden;
  count.mlp_per_layer = experts * one_mlp + count.shared_mlp_per_layer;
  count.mlp_active_per_layer = (model.is_moe() ? model.top_k : 1) * one_mlp + count.shared_mlp_per_layer;
  count.dense_mlp_per_layer = matrices * h * model.dense_width();
  count.router_per_layer = model.is_moe() ? h * experts : 0.0;
  // RMSNorm has a scale per channel, LayerNorm a scale and a bias; two norms per layer.
  const double one_norm = (model.norm == NormKind::rmsnorm ? 1.0 : 2.0) * h;
  // Multi-latent attention also normalises its query and key-value latents.
  count.norms_per_layer = 2.0 * one_norm + (model.is_mla() ? model.q_lora_rank + model.kv_lora_rank : 0.0);
  count.norm = one_norm;
  count.final_norm = one_norm;
  if (model.is_hybrid()) {
    // Megatron-Core MambaMixer: in_proj (h x (2 d_inner + 2 G N + heads), no bias), the depthwise convolution's
    // weights and biases (conv_kernel + 1 per channel), dt_bias, A_log and D (one per head), the gated RMSNorm's
    // weight (d_inner) and out_proj (d_inner x h).
    const double inner = model.mamba_inner();
    const double channels = model.mamba_conv_channels();
    count.mamba_per_layer = h * model.mamba_in_proj_width() + channels * (model.mamba_conv_kernel + 1.0) +
                            3.0 * model.mamba_heads + inner + inner * h;
  }
  count.embedding = vocab * h;
  count.output_head = model.tied_embeddings ? 0.0 : vocab * h;

  count.per_layer = count.attention_per_layer + count.mlp_per_layer + count.router_per_layer + count.norms_per_layer;
  count.dense_layer = count.attention_per_layer + count.dense_mlp_per_layer + count.norms_per_layer;
  // A multi-token prediction module (DeepSeek-V3 report, Sec. 2.2): the projection M (h x 2h), RMSNorms of the hidden
  // state and of the embedding and the module's final norm, and one layer of the model's last kind.
  const bool moe_model = model.is_moe();
  count.mtp_module = 2.0 * h * h + 3.0 * one_norm + (moe_model ? count.per_layer : count.dense_layer);
  count.total = count.embedding + count.output_head + count.final_norm + model.mtp_layers * count.mtp_module;
  // The embedding lookup is a gather, not a matmul; the output head is a matmul whether or not it shares the
  // embedding's matrix, so it is counted once either way.
  count.active_matmul = vocab * h;
  for (int layer = 0; layer < model.layers; ++layer) {
    const LayerKind kind = model.layer_kind(layer);
    count.total += layer_parameters(model, count, layer);
    count.active_matmul += (kind.attention ? count.attention_per_layer : 0.0) +
                           (kind.mamba ? h * model.mamba_in_proj_width() + model.mamba_inner() * h : 0.0) +
                           (kind.moe ? count.mlp_active_per_layer + count.router_per_layer : 0.0) +
                           (kind.mlp ? count.dense_mlp_per_layer : 0.0);
  }
  count.mtp_active_matmul =
      2.0 * h * h + count.attention_per_layer + vocab * h +
      (moe_model ? count.mlp_active_per_layer + count.router_per_layer : count.dense_mlp_per_layer);
  return count;
}

double layer_parameters(const TransformerSpec& model, const ParameterCount& count, int layer) {
  const LayerKind kind = model.layer_kind(layer);
  // A transformer layer's norms include MLA's latent norms; a hybrid layer has one pre-norm.
  const double norms = model.is_hybrid() ? kind.norms() * count.norm : count.norms_per_layer;
  return norms + (kind.attention ? count.attention_per_layer : 0.0) + (kind.mamba ? count.mamba_per_layer : 0.0) +
         (kind.moe ? count.mlp_per_layer + count.router_per_layer : 0.0) + (kind.mlp ? count.dense_mlp_per_layer : 0.0);
}

double mamba_scan_flops_per_token(const TransformerSpec& model) {
  const double chunk = model.mamba_chunk_size;
  const double state = model.mamba_state_dim;
  const double head_dim = model.mamba_head_dim;
  const double heads = model.mamba_heads;
  return 2.0 * chunk * state * model.mamba_groups + 2.0 * chunk * head_dim * heads + 4.0 * state * head_dim * heads;
}

double model_training_flops_per_token(const TransformerSpec& model, int seq_len) {
  if (seq_len <= 0) throw ModelError("model_training_flops_per_token: seq_len must be positive");
  const ParameterCount count = count_parameters(model);
  // 2 FLOPs per multiply-add, forward + backward = 3x forward (Narayanan et al., SC'21, eq. 3 and appendix):
  // 6*N for the matmuls; scores Q*K^T and probabilities*V are 2*s*h each per token and layer forward,
  // counted without causal masking: 3 * 4*s*h = 12*s*h per layer, with h the attention's width heads*head_dim
  // (Megatron's num_floating_point_operations uses kv_channels * num_attention_heads, its query projection size),
  // and s the keys a query attends: the window in a sliding-window layer shorter than the sequence.
  double attended = 0.0;
  // The MTP modules' layers attend as the last layer does (DeepSeek-V3's are full-attention layers).
  for (int layer = 0; layer < model.layers + model.mtp_layers; ++layer)
    if (model.layer_kind(std::min(layer, model.layers - 1)).attention)
      attended += model.attended_keys(std::min(layer, model.layers - 1), seq_len);
  // Hybrid models: each Mamba-2 mixer's scan, forward and backward (3x forward), as its matmuls are counted.
  double scans = 0.0;
  for (int layer = 0; layer < model.layers; ++layer)
    if (model.layer_kind(layer).mamba) scans += 3.0 * mamba_scan_flops_per_token(model);
  // Per (query, key) pair and head: 2 * qk FLOPs for the score, 2 * v for the weighted value, three times.
  return 6.0 * (count.active_matmul + model.mtp_layers * count.mtp_active_matmul) +
         6.0 * model.heads * static_cast<double>(model.qk_head_dim() + model.v_dim()) * attended + scans;
}

}  // namespace chopsim
