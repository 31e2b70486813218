// Peak memory of one GPU per pipeline stage.
//
// Model states (Rajbhandari et al. 2020, ZeRO, Sec. 3.1 and 5): weights in the storage precision (2 bytes
// in mixed precision), gradients (4 bytes with Megatron's fp32 gradient buffers for ZeRO 0-2, 2 for
// ZeRO-3/FSDP: see gradient_bytes_per_element) and 12 bytes of fp32 optimizer state (master weights, Adam
// m and v) per parameter. ZeRO-1 shards the optimizer state over the shard group (Megatron's distributed
// optimizer: 6 + 12/d bytes per parameter), ZeRO-2 also the gradients, ZeRO-3/FSDP also the weights
// (16/d), which are then gathered per unit (current + prefetched) while they compute. Expert parameters
// are sharded over the expert_data group instead.
//
// Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// Sec. 4): their 34*s*b*h + 5*a*s^2*b bytes per layer, tensor by tensor, with three changes:
//  * attention is always a flash-style fused kernel, which stores no s x s tensors (the 5*a*s^2*b term is
//    gone, as with selective recomputation) but keeps the fp32 log-sum-exp (4 bytes per query and head);
//  * the tensors are sized from the model (GQA K and V, SwiGLU's two fc1 outputs, f != 4h), which for a
//    GPT block (MHA, GELU, f = 4h, dropout) gives their 34*s*b*h exactly; without dropout (Llama, Mixtral)
//    the two 1-byte masks, 2*s*b*h, are not stored;
//  * MoE layers store their expert inputs and intermediates for top_k * capacity copies of each token.
// Tensor parallelism splits the tensors inside attention and MLP; without sequence parallelism the norm
// inputs and the GEMM inputs after the norms are replicated on every tp rank (their 10*s*b*h + 24*s*b*h/t);
// with SP everything is split over tp. Context parallelism splits the sequence over cp.
// Full recomputation keeps each layer's input (2*s*b*h, /tp with SP) and one layer's full activations
// during its backward. The pipeline schedule decides how many micro-batches' activations are in flight.

#include "chopsim/models/memory.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "chopsim/common/error.hpp"
#include "chopsim/models/workload.hpp"
#include "workload_plan.hpp"

namespace chopsim {

namespace {

struct LayerActivations {
  double stored_bytes = 0.0;            ///< one layer, one micro-batch, no recomputation
  double input_bytes = 0.0;             ///< the layer's input alone (kept under full recomputation)
  double attention_scores_bytes = 0.0;  ///< eager attention's kept probabilities (0 with a fused kernel)
  /// Selective recomputation by module: what the layer's recomputed modules did not keep (in stored_bytes' place);
  /// live again while the layer's backward runs.
  double recomputed_bytes = 0.0;
};

LayerActivations layer_activations(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                   const TrainingSpec& training, const detail::LocalParameters& local,
                                   const LayerKind& kind) {
  const double element = detail::storage_bytes_per_element(training.precision);
  const double tp = parallelism.tp;
  const double tokens = static_cast<double>(training.micro_batch) * training.seq_len / parallelism.cp;
  // Tensors outside the tensor-parallel regions: split over tp only with sequence parallelism.
  const double replicated_tokens = parallelism.sequence_parallel ? tokens / tp : tokens;
  const double h = model.hidden;
  const double d = model.head_dim();
  const double f_local = model.dense_width() / tp;
  const bool swiglu = model.mlp == MlpKind::swiglu;

  // Per token, outside the tp regions: the inputs of both norms, the norms' outputs that feed the QKV GEMM
  // and the MLP (or the MoE router), and with dropout the two 1-byte masks after attention and the MLP.
  // (Attention dropout runs inside the flash kernel from its RNG state: no mask is stored.) A hybrid model's layer
  // has one sublayer: one norm's input and output, one mask.
  const double sublayers = kind.norms();
  const double replicated = sublayers * 2.0 * h * element + (model.dropout ? sublayers * h : 0.0);
  // Inside attention: Q, K, V (flash attention's saved inputs), the output O (the output projection's
  // input) and the fp32 log-sum-exp.
  double attention = (local.query_heads + 2.0 * local.kv_heads) * d * element + local.query_heads * d * element +
                     4.0 * local.query_heads;
  // Query and key norms (qk_norm): their inputs and the fp32 rstd of each head's row.
  if (model.qk_norm) attention += (local.query_heads + local.kv_heads) * (d * element + 4.0);
  // Multi-latent attention: Q and K (qk wide), V and O (v wide) of the rank's heads; and on the rank's tokens its
  // latents before and after their norms (the norms' and the up projections' inputs).
  double latents = 0.0;
  if (model.is_mla()) {
    attention =
        local.query_heads * (2.0 * model.qk_head_dim() + 2.0 * model.v_dim()) * element + 4.0 * local.query_heads;
    latents = 2.0 * (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_head_dim) * element;
  }
  // The MLP's stored intermediates: SwiGLU keeps fc1's gate and up outputs and the product (fc2's input);
  // GELU keeps its input and output.
  const double mlp_intermediates = (swiglu ? 3.0 : 2.0) * f_local * element;

  LayerActivations result;
  // (A transformer layer's sum in the order it always had: outside the tp regions, then attention.)
  double bytes =
      replicated_tokens * (replicated + (kind.attention ? latents : 0.0)) + (kind.attention ? tokens * attention : 0.0);
  if (kind.mamba) {
    // A Mamba-2 mixer on the memory-efficient path (mamba_split_conv1d_scan_combined saves in_proj's output zxbcdt
    // and the scan's output before its silu(z) gate; the convolution and the scan's states are recomputed in the
    // backward), the RMSNorm after it its input (the gated output) and fp32 rstd per group, and out_proj its input:
    // the rank's heads and groups (split over tp).
    const double heads = model.mamba_heads / tp;
    const double groups = model.mamba_groups / tp;
    const double inner = heads * model.mamba_head_dim;
    const double in_width = 2.0 * inner + 2.0 * groups * model.mamba_state_dim + heads;
    bytes += tokens * ((in_width + 3.0 * inner) * element + 4.0 * groups);
  }
  const RecomputeModules recomputed = training.recomputed_modules();
  double dropped = 0.0;  // what the recomputed modules do not keep
  // An MoE layer's expert rows on this rank (the routed copies it receives, after the expert tensor-parallel
  // all-gather) and an expert's width here (f / etp).
  // The busiest expert-parallel rank's rows (its load over the mean: the padded capacity, or the load imbalance up
  // to the capacity).
  const double copies = model.top_k * training.moe_busiest_rank_load(parallelism.ep);
  const double expert_rows =
      kind.moe ? replicated_tokens * copies * (parallelism.sequence_parallel ? parallelism.expert_tp() : 1) : 0.0;
  const double expert_width = static_cast<double>(model.ffn_hidden) / parallelism.expert_tp();
  if (kind.moe) {
    // Router probabilities (fp32, per routed token), the permuted expert inputs after the expert tensor-parallel
    // all-gather (whole hidden width), and the experts' intermediates (f / etp wide).
    const double router = replicated_tokens * model.experts * 4.0;
    const double expert_intermediates =
        (swiglu ? 3.0 : 2.0) * static_cast<double>(model.ffn_hidden) / parallelism.expert_tp() * element;
    const double experts = expert_rows * (h * element + expert_intermediates);
    // The shared experts: a dense MLP's intermediates at their width.
    const double shared = tokens * (swiglu ? 3.0 : 2.0) * (model.shared_expert_ffn_hidden / tp) * element;
    bytes += router;
    bytes += experts;
    bytes += shared;
    if (recomputed.moe) {
      dropped += router + experts + shared;
    } else {
      // The activation's output (SwiGLU's product, GELU's output): one of the intermediates.
      if (recomputed.moe_act) dropped += expert_rows * expert_width * element;
      if (recomputed.shared_experts) dropped += shared;
    }
  } else if (kind.mlp) {
    bytes += tokens * mlp_intermediates;
    if (recomputed.mlp) dropped += tokens * mlp_intermediates;
  }
  if (training.lora.enabled()) {
    // LoRA: a frozen linear needs no input for a weight gradient, and Transformer Engine keeps the input only when
    // the weight takes one (backward_needs_input = weight.requires_grad); an adapter keeps its own: the norm's output
    // of the whole sequence for QKV and fc1 (gathered for it by Transformer Engine or by the adapter itself), the
    // attention output (flash attention keeps it anyway) and fc2's input as the base did. The experts and the router
    // of an MoE layer are frozen: their inputs go, the permuted tokens' probabilities stay.
    const LoraSpec& lora = training.lora;
    double frozen = 0.0;  // inputs nothing keeps any more
    if (!recomputed.layernorm) frozen += replicated_tokens * sublayers * h * element;
    if (kind.attention && lora.qkv) bytes += tokens * h * element;
    if (kind.mlp && lora.fc1) bytes += tokens * h * element;
    if (kind.mlp && !lora.fc2 && !recomputed.mlp) frozen += tokens * f_local * element;
    if (kind.moe && !recomputed.moe) {
      frozen += expert_rows * h * element;                                      // the experts' fc1 input
      if (!recomputed.moe_act) frozen += expert_rows * expert_width * element;  // and their fc2 input
      if (!recomputed.shared_experts) frozen += tokens * (model.shared_expert_ffn_hidden / tp) * element;
    }
    bytes -= frozen;
  }
  // The norms' outputs (the next GEMM's input, one per sublayer), and flash attention's log-sum-exp.
  if (recomputed.layernorm) dropped += replicated_tokens * sublayers * h * element;
  if (recomputed.core_attn && kind.attention && training.attention != kEagerAttention)
    dropped += tokens * 4.0 * local.query_heads;
  // Multi-latent attention's up projections recomputed (recompute_up_proj): the queries, keys (qk wide) and values (v
  // wide) the attention kernel keeps are dropped after it (CheckpointWithoutOutput); its output and statistics stay.
  if (recomputed.mla_up_proj && kind.attention && model.is_mla())
    dropped += tokens * local.query_heads * (2.0 * model.qk_head_dim() + model.v_dim()) * element;
  if (dropped > 0.0) bytes -= dropped;
  result.recomputed_bytes = dropped;
  result.stored_bytes = bytes;
  result.input_bytes = replicated_tokens * h * element;
  if (kind.attention && training.attention == kEagerAttention) {
    // The probabilities P of every (query, key) pair of the rank's heads, with dropout also its 1-byte mask and
    // the dropped-out P: 2 or 5 bytes per score (Korthikanti et al. 2022, 5 a s^2 b).
    const double scores = tokens * training.seq_len * local.query_heads;
    result.attention_scores_bytes = scores * (model.dropout ? 2.0 * element + 1.0 : element);
  }
  return result;
}

/// The GEMM libraries' workspaces, which PyTorch's caching allocator hands out (so max_memory_allocated counts
/// them). PyTorch keeps one cuBLAS workspace per (handle, stream) and one handle per thread (DeviceThreadHandlePool,
/// aten/src/ATen/cuda/CublasHandlePool.cpp): the forward's GEMMs run on the Python thread, the backward's on
/// autograd's device thread, both on the compute stream, so two. Transformer Engine allocates one of its own
/// (transformer_engine/pytorch/module/base.py, get_workspace). Checked on Megatron-LM's functional tests
/// (tests/models/memory_test.cpp): after a step the same job holds 28 MiB + 1 KiB more on DGX H100 and GB200 than on
/// DGX A100, TE's 32 MiB + 1 KiB against 4 MiB.
double library_workspace_bytes(const TrainingSpec& training, const HardwareSpec& hardware) {
  const double cublas =
      training.cublas_workspace_bytes > 0.0 ? training.cublas_workspace_bytes : hardware.cublas_workspace_bytes;
  const double transformer_engine =
      training.framework == Framework::megatron_te ? hardware.transformer_engine_workspace_bytes : 0.0;
  return 2.0 * cublas + transformer_engine;
}

/// Adds the GEMM libraries' workspaces to the allocated parts, then the hardware's allocator fragmentation allowance
/// and runtime reserve, and the total.
MemoryBreakdown with_allowances(MemoryBreakdown m, const TrainingSpec& training, const HardwareSpec& hardware) {
  m.workspace_bytes = library_workspace_bytes(training, hardware);
  const double allocated = m.weights_bytes + m.gathered_weights_bytes + m.gradients_bytes + m.optimizer_bytes +
                           m.activations_bytes + m.transient_bytes + m.workspace_bytes;
  m.fragmentation_bytes = hardware.memory_fragmentation_fraction * allocated;
  m.reserved_bytes = hardware.memory_reserved_bytes;
  m.total_bytes = allocated + m.fragmentation_bytes + m.reserved_bytes;
  m.capacity_bytes = hardware.hbm_capacity_bytes;
  return m;
}

/// Eager PyTorch under autocast (Framework::pytorch_eager), per token of one layer, as autograd saves it for the
/// Hugging Face Llama modules (workload_eager.cpp), checked tensor by tensor against the H200 measurement's peaks
/// (../shared/data/measured/h200_llama32_1b: 13.83 GiB per 4,096-token sequence):
///  * each LlamaRMSNorm keeps its fp32 input (the residual stream), its fp32 normalised output (for the weight's
///    gradient) and the fp32 rsqrt per token; a LayerNorm its fp32 input and the mean and rstd;
///  * every linear keeps its autocast-cast bf16 input: q, k and v each cast the first norm's output, gate and up
///    (or fc1) the second's; o_proj and down_proj read bf16 tensors that are kept anyway;
///  * SDPA keeps its bf16 q, k, v, the output and the fp32 log-sum-exp;
///  * SwiGLU keeps the gate output (SiLU's input), SiLU's output and the up output (the product's inputs) and the
///    product (down_proj's input); GELU its input and output.
double eager_layer_bytes_per_token(const TransformerSpec& model, const detail::LocalParameters& local,
                                   double compute_element_bytes) {
  const double h = model.hidden;
  const double d = model.head_dim();
  const double e = compute_element_bytes;
  const bool rms = model.norm == NormKind::rmsnorm;
  const bool swiglu = model.mlp == MlpKind::swiglu;
  const double norms = 2.0 * (rms ? 4.0 * h + 4.0 * h + 4.0 : 4.0 * h + 8.0);
  const double linear_inputs = (3.0 + (swiglu ? 2.0 : 1.0)) * h * e;
  const double attention = (2.0 * local.query_heads + 2.0 * local.kv_heads) * d * e + 4.0 * local.query_heads;
  const double mlp = (swiglu ? 4.0 : 2.0) * model.ffn_hidden * e;
  return norms + linear_inputs + attention + mlp;
}

/// The eager peak. Static: the fp32 parameters, Adam's two fp32 moments, and autocast's compute-precision copy of
/// every weight (cached during the forward, held by autograd until each linear's backward). The gradients are set to
/// None between steps, so they are allocated while the backward frees activations: the peak is the larger of the
/// start of the backward (every activation, the last layer's norm and the head's input cast, and the loss's fp32
/// tensors: log_softmax's output, its zero-filled gradient and the logits' fp32 gradient, 3 x 4 bytes per logit)
/// and the end of the backward (every gradient).
MemoryBreakdown eager_stage_memory(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                   const TrainingSpec& training, const HardwareSpec& hardware) {
  const RankLayout layout(parallelism);
  const detail::StageParameters params = detail::stage_parameters(model, parallelism, 0);
  const detail::LocalParameters local = detail::local_parameters(model, parallelism);
  const bool mixed = training.precision != Precision::fp32 && training.precision != Precision::tf32;
  const double compute_bytes = mixed ? 2.0 : 4.0;
  const double shards = layout.group_size(GroupRole::shard);
  const int zero = parallelism.zero_stage;
  const double parameters = params.dense;

  MemoryBreakdown m;
  m.weights_bytes = parameters / (zero >= 3 ? shards : 1.0) * 4.0;
  m.optimizer_bytes = parameters / (zero >= 1 ? shards : 1.0) * 8.0;
  m.gathered_weights_bytes = mixed ? parameters * compute_bytes : 0.0;
  if (zero >= 3) m.gathered_weights_bytes = (1.0 + training.fsdp_prefetch) * params.largest_unit * compute_bytes;
  const double tokens = static_cast<double>(training.micro_batch) * training.seq_len;
  const double layers = model.layers;
  const double final_norm = model.norm == NormKind::rmsnorm ? 8.0 * model.hidden + 4.0 : 4.0 * model.hidden + 8.0;
  const double per_layer = eager_layer_bytes_per_token(model, local, compute_bytes);
  // HF gradient checkpointing keeps a recomputed layer's fp32 input (and one layer's activations while it is
  // recomputed); the other layers keep everything.
  const double recomputed = training.recomputed_layers(model.layers);
  double activations = tokens * ((layers - recomputed) * per_layer + recomputed * 4.0 * model.hidden +
                                 (recomputed > 0 ? per_layer : 0.0) + final_norm + model.hidden * compute_bytes);
  const double loss = 3.0 * 4.0 * tokens * model.vocab_per_tp_rank(1);
  const double gradients = parameters / (zero >= 2 ? shards : 1.0) * 4.0;
  if (activations + loss >= gradients) {
    m.activations_bytes = activations;
    m.transient_bytes = loss;
  } else {
    m.gradients_bytes = gradients;
    m.gathered_weights_bytes = 0.0;  // freed by then: every linear's backward has run
  }
  return with_allowances(m, training, hardware);
}

}  // namespace

MemoryBreakdown estimate_stage_memory(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                      const TrainingSpec& training, const HardwareSpec& hardware, int pp_stage) {
  detail::validate_training_setup(model, parallelism, training);
  if (pp_stage < 0 || pp_stage >= parallelism.pp)
    throw ModelError("memory: pp_stage " + std::to_string(pp_stage) + " outside [0, " + std::to_string(parallelism.pp) +
                     ")");
  if (training.framework == Framework::pytorch_eager) return eager_stage_memory(model, parallelism, training, hardware);
  const RankLayout layout(parallelism);
  const detail::StageParameters params = detail::stage_parameters(model, parallelism, pp_stage);
  const detail::LocalParameters local = detail::local_parameters(model, parallelism);
  const double weight_bytes = detail::storage_bytes_per_element(training.precision);
  const double gradient_bytes =
      detail::gradient_bytes_per_element(training.precision, detail::gradient_zero_stage(parallelism, training),
                                         training.fsdp_reduce_fp32, training.grad_reduce_fp32);
  const double optimizer_bytes = detail::optimizer_bytes_per_parameter(training.precision);
  const int zero = parallelism.zero_stage;
  const double dense_shards = layout.group_size(GroupRole::shard);
  const double expert_shards = layout.group_size(GroupRole::expert_data);
  const auto sharded = [&](bool is_sharded, double bytes_per_parameter) {
    return (params.dense / (is_sharded ? dense_shards : 1.0) + params.expert / (is_sharded ? expert_shards : 1.0)) *
           bytes_per_parameter;
  };

  MemoryBreakdown m;
  m.pp_stage = pp_stage;
  m.weights_bytes = sharded(zero >= 3, weight_bytes);
  if (training.lora.enabled()) {
    // LoRA: the frozen base keeps only its weights; gradient buffers and optimizer state are the adapters' (Megatron's
    // DDP and distributed optimizer cover the parameters that require a gradient), and the adapters' weights sit
    // beside the base's. Each adapter matrix is split over tp.
    const double adapters = params.layers * lora_layer_parameters(model, training.lora) / parallelism.tp;
    m.weights_bytes += adapters * weight_bytes;
    m.gradients_bytes = adapters / (zero >= 2 ? dense_shards : 1.0) * gradient_bytes;
    m.optimizer_bytes = adapters / (zero >= 1 ? dense_shards : 1.0) * optimizer_bytes;
  } else {
    m.gradients_bytes = sharded(zero >= 2, gradient_bytes);
    m.optimizer_bytes = sharded(zero >= 1, optimizer_bytes);
  }
  if (zero == 3) {
    // The unit computing plus the ones prefetched, gathered in full, and the unit's unsharded gradient
    // until its reduce-scatter has run.
    const double prefetched = training.overlap.fsdp ? training.fsdp_prefetch : 0;
    m.gathered_weights_bytes =
        (1.0 + prefetched) * params.largest_unit * weight_bytes + params.largest_unit * gradient_bytes;
  }

  // Activations of the (micro-batch, chunk) passes in flight: each chunk of this stage sums its layers' (an MoE
  // layer and a dense one differ), the largest chunk counted for every pass in flight. Under full recomputation a
  // recomputed layer keeps its input and the others of its chunk (recompute_layers < the chunk's layers) keep
  // everything, and one recomputed layer's activations are live again during its backward; selective
  // recomputation keeps every layer's activations but the s x s attention tensors, of which one layer's are live
  // (flash attention never stores them; eager attention recomputes them layer by layer).
  const detail::PipelineShape shape = detail::pipeline_shape(model, parallelism, training);
  const std::vector<int> chunk_layers = parallelism.virtual_stage_layers(model.layers);
  // A layer's activations depend only on its kind: computed once per kind (four flags), not once per layer.
  std::array<std::optional<LayerActivations>, 16> by_kind;
  const auto activations_of = [&](const LayerKind& kind) -> const LayerActivations& {
    const std::size_t index =
        (kind.attention ? 1U : 0U) | (kind.mamba ? 2U : 0U) | (kind.mlp ? 4U : 0U) | (kind.moe ? 8U : 0U);
    if (!by_kind[index]) by_kind[index] = layer_activations(model, parallelism, training, local, kind);
    return *by_kind[index];
  };
  double largest_chunk = 0.0;
  double live_again = 0.0;  // one layer's activations live besides the chunks' (recomputed or its scores)
  for (std::size_t v = 0, first = 0; v < chunk_layers.size(); first += static_cast<std::size_t>(chunk_layers[v]), ++v) {
    if (static_cast<int>(v) % parallelism.pp != pp_stage) continue;
    const int recomputed = training.recomputed_layers(chunk_layers[v]);
    double chunk = 0.0;
    for (int i = 0; i < chunk_layers[v]; ++i) {
      const LayerActivations& layer = activations_of(model.layer_kind(static_cast<int>(first) + i));
      if (i < recomputed) {
        chunk += layer.input_bytes;
        live_again = std::max(live_again, layer.stored_bytes + layer.attention_scores_bytes);
      } else if (training.recompute == RecomputePolicy::selective) {
        chunk += layer.stored_bytes;
        live_again = std::max(live_again, layer.attention_scores_bytes + layer.recomputed_bytes);
      } else {
        chunk += layer.stored_bytes + layer.attention_scores_bytes;
      }
    }
    // The chunk holding the loss also keeps its multi-token prediction modules' activations: each module's layer
    // (of the model's last kind, not recomputed) and its inputs: the embedding, the two norms' outputs and their
    // concatenation, the projection's output (6 hidden-wide tensors).
    if (v + 1 == chunk_layers.size() && model.mtp_layers > 0) {
      const LayerActivations& layer =
          activations_of(LayerKind{.attention = true, .mlp = !model.is_moe(), .moe = model.is_moe()});
      chunk += model.mtp_layers * (layer.stored_bytes + layer.attention_scores_bytes + 6.0 * layer.input_bytes);
    }
    largest_chunk = std::max(largest_chunk, chunk);
  }
  m.activations_bytes = detail::max_in_flight_chunks(shape, pp_stage) * largest_chunk + live_again;

  if (pp_stage == parallelism.pp - 1) {
    // The logits of one micro-batch in fp32 (vocab-parallel: the rank's V/tp columns, padding included).
    // Each multi-token prediction module keeps logits of its own until the backward (its loss is added to the main
    // one). Megatron's unfused vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py,
    // calculate_logits_max) makes that fp32 tensor with .float() while GPTModel.forward still holds the head's
    // output in the compute precision (2 more bytes per logit in mixed precision; in fp32, .float() is the tensor
    // itself); the backward's cast of the fp32 gradient back to it holds both again. A fused loss kernel reads the
    // head's output and keeps only the fp32 softmax.
    const double tokens = static_cast<double>(training.micro_batch) * training.seq_len / parallelism.cp;
    const double head_output_bytes = weight_bytes < 4.0 ? weight_bytes : 0.0;  // fp32: the copy is the tensor
    const double bytes_per_logit = 4.0 + (training.cross_entropy_fusion ? 0.0 : head_output_bytes);
    m.transient_bytes = (1.0 + model.mtp_layers) * tokens * model.vocab_per_tp_rank(parallelism.tp) * bytes_per_logit;
  }
  if (training.deterministic && training.attention != kEagerAttention) {
    // A deterministic attention backward's workspace, per kernel call: micro-batch x the rank's heads x the
    // call's queries x keys (cuDNN on Hopper: the score gradients, b h s_q s_kv 2 bytes). Live during one
    // layer's backward, never with the logits (the loss's backward has ended), so the larger of the two counts.
    const double chunk = static_cast<double>(training.seq_len) / parallelism.cp;
    const double workspace = kernel_facts_for(hardware, training).deterministic_workspace_bytes_per_score *
                             training.micro_batch * local.query_heads * chunk * chunk;
    m.transient_bytes = std::max(m.transient_bytes, workspace);
  }

  return with_allowances(m, training, hardware);
}

std::vector<MemoryBreakdown> estimate_memory_by_stage(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                                      const TrainingSpec& training, const HardwareSpec& hardware) {
  std::vector<MemoryBreakdown> stages;
  for (int stage = 0; stage < std::max(parallelism.pp, 1); ++stage)
    stages.push_back(estimate_stage_memory(model, parallelism, training, hardware, stage));
  return stages;
}

MemoryBreakdown peak_stage_memory(const std::vector<MemoryBreakdown>& stages) {
  if (stages.empty()) throw ModelError("memory: no pipeline stage");
  // The first of the largest (ties to the earlier stage).
  return *std::max_element(stages.begin(), stages.end(), [](const MemoryBreakdown& a, const MemoryBreakdown& b) {
    return a.total_bytes < b.total_bytes;
  });
}

MemoryBreakdown estimate_peak_memory(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                     const TrainingSpec& training, const HardwareSpec& hardware) {
  return peak_stage_memory(estimate_memory_by_stage(model, parallelism, training, hardware));
}

}  // namespace chopsim
