#pragma once
// Architecture of a decoder-only transformer (configs/models/*.yaml) and its parameter and FLOP counts.

#include <string>

namespace chopsim {

/// The MLP's activation: SwiGLU (gated: gate, up and down matrices; Llama, Mixtral), GELU (GPT, MPT) or squared ReLU
/// (relu(x)^2, So et al. 2021; Megatron's squared_relu, Nemotron-H and Nemotron 3), both with up and down matrices.
enum class MlpKind { swiglu, gelu, squared_relu };
enum class NormKind { rmsnorm, layernorm };
/// How token positions enter the model: rotary embeddings applied to Q and K in every layer (Llama, Mixtral), a
/// learned absolute table added to the token embeddings (GPT-2/3, Megatron-LM's default learned_absolute, MPT's
/// learned_pos_emb), or nothing the kernels see (ALiBi biases inside the attention kernel, NoPE).
enum class PositionEmbedding { rope, learned, none };

/// What one layer computes. A transformer layer holds self-attention and an MLP, dense or a mixture of experts, each
/// behind its own pre-norm and residual add. A hybrid model (TransformerSpec::hybrid_pattern) stacks layers of one
/// sublayer each instead: a Mamba-2 mixer, self-attention, a dense MLP or a mixture of experts.
struct LayerKind {
  bool attention = false;
  bool mamba = false;
  bool mlp = false;  ///< a dense MLP
  bool moe = false;  ///< a mixture of experts: router, routed experts and the shared ones
  /// Pre-norms: one per sublayer.
  [[nodiscard]] int norms() const { return (attention || mamba ? 1 : 0) + (mlp || moe ? 1 : 0); }
};

struct TransformerSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;      ///< model width h
  int ffn_hidden = 0;  ///< MLP inner width f (per expert for MoE)
  int heads = 0;       ///< query heads a
  int kv_heads = 0;    ///< key/value heads (GQA); == heads for multi-head attention
  int vocab = 0;       ///< tokens of the tokenizer (unpadded)
  /// Width of one attention head (Megatron's kv_channels, Hugging Face's head_dim); 0 = hidden / heads. Qwen3 and
  /// GPT-OSS set it apart from hidden / heads: the Q, K, V projections are then hidden x heads*head_dim wide.
  int head_dim_override = 0;
  /// Megatron-LM's --make-vocab-size-divisible-by: the embedding and output head are padded to a multiple of this
  /// times tp rows (Megatron's default 128). 1 = no padding (Hugging Face models): each tensor-parallel rank then
  /// holds ceil(vocab / tp) rows, an odd count for GPT-2's 50,257.
  int make_vocab_size_divisible_by = 1;
  int experts = 1;  ///< > 1 makes the layers' MLP a mixture of experts (all but the first dense_layers)
  int top_k = 1;    ///< experts each token is routed to
  /// MoE models: the first layers keep a dense MLP (DeepSeek's first_k_dense_replace, Megatron-Core's
  /// --moe-layer-freq "([0]*k+[1]*(L-k))"); 0 = every layer is MoE.
  int dense_layers = 0;
  /// MoE models: the width of those dense layers' MLP (DeepSeek-V3 18432 next to its experts' 2048); 0 = ffn_hidden.
  int dense_ffn_hidden = 0;
  /// MoE models: the total width of the shared experts every token goes through besides its top_k routed ones
  /// (DeepSeek n_shared_experts x moe_intermediate_size, Qwen2-MoE shared_expert_intermediate_size, Megatron-Core
  /// --moe-shared-expert-intermediate-size); 0 = none. A dense MLP of that width, split over tp.
  int shared_expert_ffn_hidden = 0;
  MlpKind mlp = MlpKind::swiglu;
  NormKind norm = NormKind::rmsnorm;
  bool tied_embeddings = false;  ///< output head shares the input embedding matrix
  bool causal = true;            ///< causal attention (flash kernels skip the masked half)
  /// Hidden dropout after attention and after the MLP (GPT-3, Megatron's default 0.1): its 1-byte masks are
  /// kept for backward (Korthikanti et al. 2022). Llama and Mixtral train without dropout.
  bool dropout = false;
  /// Biases on the linear layers (GPT-2/3, Megatron-LM's default --add-bias-linear; Llama, Mixtral and MPT have
  /// none). Their parameters (qkv + h + f + h per layer, under 0.1 % of a model) are not counted; their gradients
  /// cost kernels of their own (StageGenerator::bias_gradient).
  bool linear_bias = false;
  /// A norm (the model's `norm`) of each head's query and key before the rotary embedding (Qwen3; Megatron-Core
  /// qk_layernorm: TENorm modules q_layernorm and k_layernorm in SelfAttention): two norm kernels forward, their
  /// backward (with each norm's weight gradient), and their inputs kept for it.
  bool qk_norm = false;
  PositionEmbedding position_embedding = PositionEmbedding::rope;
  /// Multi-latent attention (DeepSeek-V2/V3; Megatron-Core --multi-latent-attention): keys and values come from a
  /// shared latent of kv_lora_rank per token (plus one rotary key of qk_rope_head_dim shared by the heads), queries
  /// from a latent of q_lora_rank (0: straight from the hidden state, DeepSeek-V2-Lite). Each head's query and key
  /// are head_dim (the unrotated part, qk_nope_head_dim) + qk_rope_head_dim wide, its value v_head_dim. kv_heads =
  /// heads. kv_lora_rank 0 = standard attention.
  int kv_lora_rank = 0;
  int q_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  /// Sliding-window attention: each query attends the last `sliding_window` positions (itself included) instead of
  /// the whole causal prefix (Mistral-7B-v0.1 4096 in every layer; Gemma 2/3 and GPT-OSS on their local layers). 0 =
  /// full attention in every layer.
  int sliding_window = 0;
  /// With sliding_window: every N-th layer (layers N-1, 2N-1, ...) keeps full attention, the others slide (GPT-OSS
  /// N = 2, Gemma 3 N = 6); 0 = every layer slides (Mistral).
  int full_attention_every = 0;

  /// Multi-token prediction depth (DeepSeek-V3 num_nextn_predict_layers 1; Megatron-Core --mtp-num-layers): after the
  /// last layer, each MTP module normalises the hidden state and the embedding of the tokens one step further, projects
  /// their concatenation (2h -> h), runs one more transformer layer (an MoE layer in an MoE model) and its own final
  /// norm, and predicts through the shared output head with a loss of its own (DeepSeek-V3 report, Sec. 2.2). It sits
  /// on the last pipeline stage, which then also keeps a copy of the embedding. 0 = none.
  int mtp_layers = 0;

  /// A hybrid model's layers, one symbol each (Megatron-Core's hybrid_layer_pattern, megatron/core/ssm/
  /// mamba_hybrid_layer_allocation.py): 'M' a Mamba-2 mixer, '*' self-attention, '-' a dense MLP, 'E' a mixture of
  /// experts. Nemotron 3 Nano: "MEMEM*EMEMEM*..." (52 layers). Empty: every layer is a transformer layer.
  std::string hybrid_pattern;
  /// The Mamba-2 mixer of 'M' layers (Dao and Gu 2024, "Transformers are SSMs"; Megatron-Core MambaMixer):
  /// in_proj maps h to z and x (heads x head_dim each), B and C (groups x state_dim each) and one dt per head; a
  /// causal depthwise convolution of conv_kernel taps over x, B and C; the chunked state-space scan (SSD, chunks of
  /// chunk_size tokens); the RMSNorm of the output gated by z; out_proj back to h.
  int mamba_heads = 0;
  int mamba_head_dim = 64;
  int mamba_state_dim = 128;
  int mamba_groups = 8;
  int mamba_conv_kernel = 4;
  int mamba_chunk_size = 128;
  [[nodiscard]] bool is_hybrid() const { return !hybrid_pattern.empty(); }
  /// Width of the scan's input and output: heads x head_dim (d_inner).
  [[nodiscard]] double mamba_inner() const { return static_cast<double>(mamba_heads) * mamba_head_dim; }
  /// Channels of the causal convolution: x, B and C.
  [[nodiscard]] double mamba_conv_channels() const {
    return mamba_inner() + 2.0 * static_cast<double>(mamba_groups) * mamba_state_dim;
  }
  /// Output width of in_proj: z, x, B, C and dt.
  [[nodiscard]] double mamba_in_proj_width() const {
    return mamba_inner() + mamba_conv_channels() + static_cast<double>(mamba_heads);
  }
  /// What layer `layer` (0-based) computes.
  [[nodiscard]] LayerKind layer_kind(int layer) const {
    LayerKind kind;
    if (!is_hybrid()) {
      kind.attention = true;
      kind.moe = is_moe() && layer >= dense_layers;
      kind.mlp = !kind.moe;
      return kind;
    }
    const char symbol = layer >= 0 && layer < static_cast<int>(hybrid_pattern.size())
                            ? hybrid_pattern[static_cast<std::size_t>(layer)]
                            : '\0';
    kind.mamba = symbol == 'M';
    kind.attention = symbol == '*';
    kind.mlp = symbol == '-';
    kind.moe = symbol == 'E';
    return kind;
  }
  /// Layers that attend (every layer of a transformer; the '*' layers of a hybrid model).
  [[nodiscard]] int attention_layers() const {
    int count = 0;
    for (int layer = 0; layer < layers; ++layer) count += layer_kind(layer).attention ? 1 : 0;
    return count;
  }
  [[nodiscard]] int head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  [[nodiscard]] bool is_mla() const { return kv_lora_rank > 0; }
  /// Width of one head's query and key: head_dim, plus the rotary part under multi-latent attention.
  [[nodiscard]] int qk_head_dim() const { return head_dim() + (is_mla() ? qk_rope_head_dim : 0); }
  /// Width of one head's value (and attention output): head_dim, or v_head_dim under multi-latent attention.
  [[nodiscard]] int v_dim() const { return is_mla() ? v_head_dim : head_dim(); }
  /// Width of the attention's output before the output projection: heads * head_dim (= hidden without an override;
  /// heads * v_head_dim under multi-latent attention).
  [[nodiscard]] int attention_width() const { return heads * v_dim(); }
  /// Rows of the embedding and output head one of `tp` tensor-parallel ranks holds, padding included.
  [[nodiscard]] int vocab_per_tp_rank(int tp) const {
    const long long multiple = make_vocab_size_divisible_by;
    const long long step = multiple * tp;
    return static_cast<int>((vocab + step - 1) / step * multiple);
  }
  [[nodiscard]] bool is_moe() const { return experts > 1; }
  /// Whether layer `layer` (0-based) attends through a sliding window.
  [[nodiscard]] bool is_sliding_layer(int layer) const {
    return sliding_window > 0 && (full_attention_every == 0 || (layer + 1) % full_attention_every != 0);
  }
  /// Key positions a query attends on average in layer `layer` for sequences of `seq_len`, counted as Megatron's
  /// FLOPs formula counts attention (every key of the sequence, the causal mask ignored): seq_len, or the window.
  [[nodiscard]] double attended_keys(int layer, int seq_len) const {
    return is_sliding_layer(layer) && sliding_window < seq_len ? sliding_window : seq_len;
  }
  /// Whether layer `layer` (0-based) routes its tokens to experts.
  [[nodiscard]] bool is_moe_layer(int layer) const { return layer_kind(layer).moe; }
  /// Layers with experts (0 for a dense model).
  [[nodiscard]] int moe_layers() const {
    int count = 0;
    for (int layer = 0; layer < layers; ++layer) count += is_moe_layer(layer) ? 1 : 0;
    return count;
  }
  /// MLP width of a dense layer: dense_ffn_hidden when set (MoE models), else ffn_hidden.
  [[nodiscard]] int dense_width() const { return dense_ffn_hidden > 0 ? dense_ffn_hidden : ffn_hidden; }
};

/// Parameter counts (elements, not bytes).
struct ParameterCount {
  double embedding = 0;             ///< input embedding V*h
  double output_head = 0;           ///< V*h if untied, else 0
  double attention_per_layer = 0;   ///< QKV (with GQA) + output projection
  double mlp_per_layer = 0;         ///< one MoE layer's MLPs: every expert and the shared ones (dense: one MLP)
  double mlp_active_per_layer = 0;  ///< the MLP weights one token touches (top_k experts and the shared ones)
  double shared_mlp_per_layer = 0;  ///< one MoE layer's shared experts (part of the two above)
  double dense_mlp_per_layer = 0;   ///< the MLP of a dense layer (dense models: every layer's, = mlp_per_layer)
  double router_per_layer = 0;      ///< MoE router h*E
  double norms_per_layer = 0;       ///< a transformer layer's two norms (and MLA's latent norms)
  double norm = 0;                  ///< one norm
  double mamba_per_layer = 0;       ///< a Mamba-2 mixer: in_proj, convolution, dt bias, A, D, gated norm, out_proj
  double final_norm = 0;
  double total = 0;        ///< every parameter
  double per_layer = 0;    ///< every parameter of one MoE layer (dense models: of one layer)
  double dense_layer = 0;  ///< every parameter of one dense layer (dense models: = per_layer)
  /// Matrix parameters one token multiplies through, counting the output head once
  /// (the N of the 6*N FLOPs-per-token rule). The main model's: the multi-token prediction modules are apart.
  double active_matmul = 0;
  /// One multi-token prediction module: its projection 2h x h, its layer (an MoE layer in an MoE model) and three
  /// norms (the hidden state's, the embedding's and its final one); the embedding and output head are shared.
  double mtp_module = 0;
  /// Matrix parameters a token multiplies through in one MTP module: the projection, the layer's active weights and
  /// the shared output head once more.
  double mtp_active_matmul = 0;
};

[[nodiscard]] ParameterCount count_parameters(const TransformerSpec& model);

/// Parameters of layer `layer` (0-based), every expert counted.
[[nodiscard]] double layer_parameters(const TransformerSpec& model, const ParameterCount& count, int layer);

/// Forward FLOPs per token of one Mamba-2 mixer's state-space scan (SSD), chunk by chunk (Dao and Gu 2024, Sec. 6):
/// within a chunk of Q tokens the scores C B^T (2 Q N per group) and their product with x (2 Q P per head); across
/// chunks each chunk's state B^T x (2 N P per head) and its contribution to the outputs C h (2 N P per head).
[[nodiscard]] double mamba_scan_flops_per_token(const TransformerSpec& model);

/// Model FLOPs per token of one training step (forward + backward = 3x forward), in the convention of
/// Megatron-LM (Narayanan et al., SC'21) and llm-foundry: 6*N_active plus attention 12*L*h*s,
/// attention counted without causal masking. Recomputation is not counted (this is MFU, not HFU). Multi-token
/// prediction modules count as Megatron-LM's num_floating_point_operations counts them: their matrices and their
/// layer's attention.
[[nodiscard]] double model_training_flops_per_token(const TransformerSpec& model, int seq_len);

}  // namespace chopsim
