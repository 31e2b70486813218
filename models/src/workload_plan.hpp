#pragma once
// Private to chopsim_models: what the workload generator and the memory model must agree on —
// the checks on a training setup, the pipeline schedule, and the parameters each rank holds.

#include <algorithm>
#include <vector>

#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"

namespace chopsim::detail {

/// Throws ModelError when the model, parallelism and training setup cannot be turned into a workload
/// (the config validator should have caught it; this is the last line of defence).
void validate_training_setup(const TransformerSpec& model, const ParallelismSpec& parallelism,
                             const TrainingSpec& training);

/// How the layers and micro-batches are laid out over the pipeline.
struct PipelineShape {
  int stages = 1;         ///< pp
  int chunks = 1;         ///< model chunks per stage (virtual stages; 1 for plain 1F1B)
  int micro_batches = 1;  ///< per pipeline per iteration
  /// The first layer of each virtual stage, then the model's layer count (pp * chunks + 1 entries): an even split,
  /// ParallelismSpec::stage_layers, or a split that counts the embedding and the loss as layers.
  std::vector<int> virtual_first_layers;

  /// Megatron's virtual pipeline rank of (stage, chunk): chunk c of stage i runs the layers of virtual stage c*pp + i,
  /// which follow those of virtual stage c*pp + i - 1 (Narayanan et al., SC'21, Fig. 4).
  [[nodiscard]] int virtual_stage(int stage, int chunk) const { return chunk * stages + stage; }
  [[nodiscard]] int virtual_stage_count() const { return stages * chunks; }
  [[nodiscard]] int first_layer(int stage, int chunk) const {
    return virtual_first_layers[static_cast<std::size_t>(virtual_stage(stage, chunk))];
  }
  /// Layers of model chunk `chunk` of `stage`.
  [[nodiscard]] int layers_in(int stage, int chunk) const {
    const auto v = static_cast<std::size_t>(virtual_stage(stage, chunk));
    return virtual_first_layers[v + 1] - virtual_first_layers[v];
  }
  /// The most layers any chunk of `stage` holds.
  [[nodiscard]] int max_layers_in_chunk(int stage) const {
    int most = 0;
    for (int chunk = 0; chunk < chunks; ++chunk) most = std::max(most, layers_in(stage, chunk));
    return most;
  }
};

[[nodiscard]] PipelineShape pipeline_shape(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                           const TrainingSpec& training);

/// One forward or backward pass of one micro-batch through one model chunk of a stage.
struct PipelineAction {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;
};

/// The order in which `stage` runs its forward and backward passes in one iteration:
/// 1F1B (PipeDream-flush): min(pp - stage - 1, m) warm-up forwards, then alternate one forward and one
/// backward, then the remaining backwards (Narayanan et al., SC'21, Fig. 4 top).
/// Interleaved: Megatron-Core's schedule (pipeline_parallel/schedules.py, forward_backward_pipelining_with_
/// interleaving and get_schedule_table): micro-batches go through the chunks in groups of pp;
/// (pp - stage - 1) * 2 + (chunks - 1) * pp warm-up forwards, then 1F1B, then the cool-down backwards.
[[nodiscard]] std::vector<PipelineAction> pipeline_schedule(const PipelineShape& shape, int stage);

/// Largest number of (micro-batch, chunk) forward passes whose activations `stage` holds at once.
[[nodiscard]] int max_in_flight_chunks(const PipelineShape& shape, int stage);

/// Parameter elements one rank holds before ZeRO/FSDP sharding: divided by tp (Megatron's column and row
/// parallel layers, vocab-parallel embedding and head) and by ep for experts; norms and the MoE router are
/// replicated across the tensor-parallel group.
struct LocalParameters {
  double attention = 0.0;  ///< one layer's QKV + output projection on this rank
  double norms = 0.0;      ///< one transformer layer's two norms (with MLA's latent norms)
  double norm = 0.0;       ///< one norm (a hybrid model's layers have one each)
  /// One Mamba-2 mixer on this rank: Megatron-Core's MambaMixer splits its heads and groups over tp (in_proj
  /// column-parallel, out_proj row-parallel, the convolution, dt, A, D and the gated norm per local channel).
  double mamba = 0.0;
  double dense_mlp = 0.0;    ///< a dense layer's MLP (/tp); MoE models: of their dense_layers
  double shared_mlp = 0.0;   ///< an MoE layer's shared experts (/tp)
  double router = 0.0;       ///< an MoE layer's router
  double experts = 0.0;      ///< an MoE layer's experts held by this rank (experts/ep of them, each /etp)
  double one_expert = 0.0;   ///< one expert's MLP on this rank (/etp)
  double embedding = 0.0;    ///< input embedding (first stage)
  double output_head = 0.0;  ///< output head on the last stage: untied, or a tied copy when pp > 1
  double final_norm = 0.0;   ///< last stage
  /// One multi-token prediction module's own weights beside its layer, last stage: the projection 2h x h
  /// (column-parallel, /tp) and its three norms (replicated).
  double mtp_projection = 0.0;
  double mtp_norms = 0.0;
  /// The embedding the MTP modules look the next tokens up in: a copy on the last stage when pp > 1 (Megatron-Core
  /// keeps one there, as for tied embeddings), 0 when the stage holds the embedding anyway or there is no module.
  double mtp_embedding_copy = 0.0;
  double kv_heads = 0.0;     ///< KV heads on this rank (replicated when tp > kv_heads)
  double query_heads = 0.0;  ///< query heads on this rank

  /// Parameters of a layer of `kind` reduced over the data group (everything except the routed experts).
  [[nodiscard]] double layer_dense(const LayerKind& kind) const {
    const bool transformer_layer = kind.attention && (kind.mlp || kind.moe);
    return (transformer_layer ? norms : kind.norms() * norm) + (kind.attention ? attention : 0.0) +
           (kind.mamba ? mamba : 0.0) + (kind.moe ? router + shared_mlp : 0.0) + (kind.mlp ? dense_mlp : 0.0);
  }
  /// Parameters of a layer of `kind` reduced over the expert-data group (the rank's routed experts).
  [[nodiscard]] double layer_experts(const LayerKind& kind) const { return kind.moe ? experts : 0.0; }
  /// A multi-token prediction module's parameters reduced over the data group (its layer is a transformer layer of
  /// the model's last kind).
  [[nodiscard]] double mtp_dense(bool moe_model) const {
    return layer_dense(LayerKind{.attention = true, .mlp = !moe_model, .moe = moe_model}) + mtp_projection + mtp_norms;
  }
};

[[nodiscard]] LocalParameters local_parameters(const TransformerSpec& model, const ParallelismSpec& parallelism);

/// Parameters of one rank of pipeline stage `stage`, split by the group their gradients are reduced in.
struct StageParameters {
  int layers = 0;
  double dense = 0.0;   ///< reduced/sharded over the data (or shard) group
  double expert = 0.0;  ///< reduced/sharded over the expert_data group
  /// The largest FSDP unit (a layer, the embedding, or the head with the final norm), elements.
  double largest_unit = 0.0;
  double largest_unit_expert = 0.0;  ///< the expert part of that unit
  /// Parameter tensors (torch.nn.Parameter) of this rank before sharding, Megatron-Core's layout: per layer the
  /// two norms (weight, and bias for LayerNorm), fused QKV, output projection, fc1 (gate and up fused) and fc2
  /// (weights, and biases with linear_bias), the router and two per local expert; the word and learned position
  /// embeddings, the final norm and an untied head. What per-tensor Python loops of an optimizer step iterate over.
  double tensors = 0.0;
};

[[nodiscard]] StageParameters stage_parameters(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                               int stage);

/// Bytes of one stored weight or activation element: bf16 for bf16/fp16/fp8 runs (fp8 GEMMs keep bf16
/// weights and activations, Transformer Engine), fp32 for fp32/tf32 runs.
[[nodiscard]] double storage_bytes_per_element(Precision precision);

/// Bytes of one gradient element, as kept and reduced. Megatron-LM (the ZeRO 0-2 runs: DDP and the
/// distributed optimizer) accumulates and reduces bf16 runs' gradients in fp32 (--accumulate-allreduce-
/// grads-in-fp32, forced for bf16; its distributed-optimizer docs count 6 + 12/d bytes per parameter:
/// bf16 weight 2, fp32 gradient 4, fp32 master and Adam moments 12/d), which Megatron's measured memory in
/// ../shared/data/validation/megatron_lm confirms; with `grad_reduce_fp32` off (Megatron-Core's default,
/// Megatron-Bridge's performance recipes) the buffer has the parameters' dtype. ZeRO-3/FSDP keeps the ZeRO accounting 2
/// + 2 + 12 (Rajbhandari et al. 2020, Sec. 3.1; FSDP MixedPrecision with reduce_dtype bf16): 2 bytes, or 4 with
/// `fsdp_reduce_fp32` (FSDP MixedPrecision(reduce_dtype=torch.float32): gradients reduced and kept sharded in fp32).
[[nodiscard]] double gradient_bytes_per_element(Precision precision, int zero_stage, bool fsdp_reduce_fp32 = false,
                                                bool grad_reduce_fp32 = true);
/// Whether FSDP shards the run unit by unit (FSDP units gathered before their use, gradients reduce-scattered after
/// each unit's backward): ZeRO-3, and ZeRO-2 under PyTorch's runtimes (FSDP1's SHARD_GRAD_OP, FSDP2's
/// reshard_after_forward=False: gathered for the forward, kept for the backward). Megatron's ZeRO-2 is its distributed
/// optimizer over gradient buckets instead.
[[nodiscard]] bool fsdp_units(const ParallelismSpec& parallelism, const TrainingSpec& training);
/// The ZeRO stage whose gradient accounting applies: 3 for a run FSDP shards unit by unit, else the run's.
[[nodiscard]] int gradient_zero_stage(const ParallelismSpec& parallelism, const TrainingSpec& training);

/// fp32 master weights + Adam first and second moments = 12 bytes per parameter (ZeRO Sec. 3.1);
/// 8 for fp32 runs, whose weights are their own master copy.
[[nodiscard]] double optimizer_bytes_per_parameter(Precision precision);

}  // namespace chopsim::detail
