#include "workload_plan.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"

namespace chopsim::detail {

namespace {

[[noreturn]] void fail(const std::string& message) { throw ModelError("workload: " + message); }

std::string str(int value) { return std::to_string(value); }

}  // namespace

void validate_training_setup(const TransformerSpec& model, const ParallelismSpec& parallelism,
                             const TrainingSpec& training) {
  (void)count_parameters(model);  // checks the model's own dimensions
  (void)RankLayout(parallelism);  // checks dp, tp, pp, cp, ep and the shard group
  const auto& p = parallelism;
  if (model.heads % p.tp != 0) fail("heads=" + str(model.heads) + " must be a multiple of tp=" + str(p.tp));
  if (model.kv_heads % p.tp != 0 && p.tp % model.kv_heads != 0)
    fail("kv_heads=" + str(model.kv_heads) + " and tp=" + str(p.tp) +
         " must divide one another (Megatron splits KV heads over tp, or replicates them when tp > kv_heads)");
  if (p.virtual_stages < 1) fail("virtual_stages must be at least 1");
  if (p.pp_schedule == PipelineSchedule::interleaved && p.virtual_stages > 1 && p.pp < 2)
    fail("the interleaved schedule needs pp >= 2 (virtual_stages=" + str(p.virtual_stages) + ", pp=1)");
  const int chunks = p.pp_schedule == PipelineSchedule::interleaved ? p.virtual_stages : 1;
  if (!p.stage_layers.empty()) {
    if (static_cast<int>(p.stage_layers.size()) != p.pp * chunks)
      fail("stage_layers has " + str(static_cast<int>(p.stage_layers.size())) + " entries for pp=" + str(p.pp) + " x " +
           str(chunks) + " model chunks");
    int sum = 0;
    for (const int layers : p.stage_layers) {
      if (layers < 1) fail("every pipeline stage needs at least one layer (stage_layers)");
      sum += layers;
    }
    if (sum != model.layers) fail("stage_layers sum to " + str(sum) + ", the model has " + str(model.layers));
  } else {
    const int embedding = p.account_for_embedding_in_split ? 1 : 0;
    const int loss = p.account_for_loss_in_split ? 1 : 0;
    const int slots = model.layers + embedding + loss;
    if (slots % (p.pp * chunks) != 0)
      fail("layers=" + str(model.layers) +
           (embedding + loss > 0 ? " + " + str(embedding + loss) + " (embedding, loss)" : "") +
           " must be a multiple of pp*virtual_stages=" + str(p.pp * chunks));
    for (const int layers : p.virtual_stage_layers(model.layers))
      if (layers < 1)
        fail("every virtual pipeline stage needs at least one transformer layer (layers=" + str(model.layers) +
             " over pp*virtual_stages=" + str(p.pp * chunks) + ")");
  }
  if (training.framework == Framework::pytorch_eager) {
    if (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1)
      fail(
          "framework pytorch-eager models Hugging Face modules without model parallelism: tp, pp, cp and ep must be 1 "
          "(found tp=" +
          str(p.tp) + ", pp=" + str(p.pp) + ", cp=" + str(p.cp) + ", ep=" + str(p.ep) + ")");
    if (model.is_moe()) fail("framework pytorch-eager does not model mixture-of-experts layers");
  }
  if (training.lora.enabled()) {
    const LoraSpec& lora = training.lora;
    // What Megatron-Bridge's LoRA adapts and how (src/megatron/bridge/peft/lora.py, utils.py): chopsim models its
    // adapters on each layer's four Transformer Engine linears (an MoE model's attention only), trained with
    // Megatron's DDP or distributed optimizer.
    if (training.framework != Framework::megatron_te)
      fail("LoRA is modelled as Megatron-Bridge runs it (framework megatron-te)");
    if (model.is_mla() || model.is_hybrid() || model.mtp_layers > 0)
      fail(
          "LoRA is modelled on transformer layers with standard attention (no multi-latent attention, Mamba-2 or "
          "multi-token prediction)");
    // Megatron-Bridge's fc1/fc2 targets also adapt every expert (is_expert_linear); chopsim adapts the attention of
    // an MoE model and keeps its experts frozen.
    if (model.is_moe() && (lora.fc1 || lora.fc2))
      fail(
          "LoRA on a mixture of experts is modelled on the attention only (targets qkv, proj): adapters on the "
          "experts' fc1/fc2 are not");
    if (p.zero_stage == 3) fail("LoRA is modelled with Megatron's DDP or distributed optimizer (zero_stage 0-2)");
    if (!(lora.qkv || lora.proj || lora.fc1 || lora.fc2)) fail("LoRA needs at least one target (qkv, proj, fc1, fc2)");
    // The adapters' A of a column-parallel linear splits its rank over tp (ColumnParallelLinear(in, rank)).
    if (lora.rank % p.tp != 0)
      fail("LoRA rank=" + str(lora.rank) + " must be a multiple of tp=" + str(p.tp) +
           " (the adapter of a column-parallel linear splits its rank over tp)");
  }
  if (training.recompute_layers < 0) fail("recompute_layers must be 0 (every layer) or positive");
  if (training.recompute_layers > 0 && training.recompute != RecomputePolicy::full)
    fail("recompute_layers=" + str(training.recompute_layers) +
         " needs recompute: full (it says how many layers of each chunk are recomputed)");
  if (training.recompute_early_stop && training.recompute != RecomputePolicy::full)
    fail("recompute_early_stop needs recompute: full (it says where a recomputed layer's forward stops)");
  if (model.is_mla() && training.framework == Framework::pytorch_eager)
    fail("multi-latent attention is modelled with Megatron-Core's layers (framework megatron-te)");
  if (model.mtp_layers > 0 && training.framework == Framework::pytorch_eager)
    fail("multi-token prediction (mtp_layers) is modelled with Megatron-Core's modules (framework megatron-te)");
  if (training.attention == kEagerAttention && p.cp > 1)
    fail("eager attention is not modelled with context parallelism (cp=" + str(p.cp) + ")");
  if (training.masked_softmax_fusion && training.attention != kEagerAttention)
    fail("masked_softmax_fusion fuses eager attention's softmax; the run's attention is '" + training.attention + "'");
  if (training.micro_batch < 1 || training.global_batch < 1 || training.seq_len < 1)
    fail("global_batch, micro_batch and seq_len must be positive");
  if (training.global_batch % (p.dp * training.micro_batch) != 0)
    fail("global_batch=" + str(training.global_batch) +
         " must be a multiple of dp*micro_batch=" + str(p.dp * training.micro_batch));
  const int micro_batches = training.micro_batches(p);
  // Megatron's interleaved schedule runs micro-batches through the chunks in groups of pp; a last group
  // of fewer than pp micro-batches makes the first stage wait for a chunk the last stage has not
  // produced yet (a deadlock chopsim's checker finds; Megatron-LM rejects such runs).
  if (chunks > 1 && micro_batches % p.pp != 0)
    fail("the interleaved schedule needs the micro-batches per iteration (global_batch / (dp*micro_batch) = " +
         str(micro_batches) + ") to be a multiple of pp=" + str(p.pp));
  if (p.cp > 1 && training.seq_len % (2 * p.cp) != 0)
    fail("seq_len=" + str(training.seq_len) + " must be a multiple of 2*cp=" + str(2 * p.cp) +
         " (Megatron's load-balanced causal context parallelism splits the sequence into 2*cp chunks)");
  if (p.sequence_parallel && p.tp > 1 && (training.seq_len / p.cp) % p.tp != 0)
    fail("with sequence parallelism seq_len/cp=" + str(training.seq_len / p.cp) +
         " must be a multiple of tp=" + str(p.tp));
  if (p.ep > 1 && !model.is_moe()) fail("ep=" + str(p.ep) + " needs a mixture-of-experts model");
  // Megatron-Core's checks for --overlap-moe-expert-parallel-comm (TransformerConfig.__post_init__): expert
  // parallelism, the interleaved schedule when pp > 1, no full recomputation. Without pipelining Megatron merges the
  // forward of one micro-batch with the backward of the one before; chopsim models the pipelined schedules' merge only.
  if (training.overlap.ep_1f1b) {
    if (p.ep < 2) fail("overlap.ep_1f1b needs expert parallelism (ep > 1), as Megatron-Core requires");
    if (chunks < 2)
      fail(
          "overlap.ep_1f1b needs the interleaved pipeline schedule (pp > 1, virtual_stages > 1): Megatron-Core "
          "requires it when pp > 1, and chopsim does not model the merged step without pipelining (pp = 1)");
    if (training.recompute == RecomputePolicy::full)
      fail("overlap.ep_1f1b does not allow full recomputation (Megatron-Core rejects the combination)");
    if (p.zero_stage == 3)
      fail("overlap.ep_1f1b is modelled with Megatron's DDP or distributed optimizer (zero_stage 0-2), not FSDP");
  }
  if (model.experts % p.ep != 0) fail("experts=" + str(model.experts) + " must be a multiple of ep=" + str(p.ep));
  if (p.expert_tp() != p.tp && p.tp > 1 && !p.sequence_parallel)
    fail("etp=" + str(p.expert_tp()) + " differs from tp=" + str(p.tp) +
         ": the expert layers then need sequence parallelism (each tp rank routes its own share of the tokens)");
  if (model.is_moe() && model.ffn_hidden % p.expert_tp() != 0)
    fail("the experts' ffn_hidden=" + str(model.ffn_hidden) + " must be a multiple of etp=" + str(p.expert_tp()));
  if (p.zero_stage < 0 || p.zero_stage > 3) fail("zero_stage must be 0, 1, 2 or 3");
  if (training.fsdp_prefetch < 0) fail("fsdp_prefetch must be >= 0");
  if (!(training.dp_bucket_bytes > 0.0)) fail("dp_bucket_bytes must be positive");
  if (training.unpad_attention && (p.cp > 1 || training.attention == kEagerAttention))
    fail(
        "unpad_attention is llm-foundry's flash-attn path around a fused attention kernel without context "
        "parallelism (cp=" +
        str(p.cp) + ", attention '" + training.attention + "')");
  if (training.moe_capacity_factor && !(*training.moe_capacity_factor > 0.0))
    fail("moe_capacity_factor must be positive");
  const double most_load =
      model.is_moe() ? TrainingSpec::largest_moe_load_imbalance(model.experts, model.top_k, p.ep) : 1.0;
  if (!(training.moe_load_imbalance >= 1.0 && training.moe_load_imbalance <= most_load))
    fail("moe_load_imbalance=" + JsonWriter::format_number(training.moe_load_imbalance) + " must be between 1 and " +
         JsonWriter::format_number(most_load) + " (min(ep, experts / top_k); 1 without experts or expert parallelism)");
}

PipelineShape pipeline_shape(const TransformerSpec& model, const ParallelismSpec& parallelism,
                             const TrainingSpec& training) {
  PipelineShape shape;
  shape.stages = parallelism.pp;
  shape.chunks = parallelism.pp_schedule == PipelineSchedule::interleaved ? parallelism.virtual_stages : 1;
  shape.micro_batches = training.micro_batches(parallelism);
  shape.virtual_first_layers.push_back(0);
  for (const int layers : parallelism.virtual_stage_layers(model.layers))
    shape.virtual_first_layers.push_back(shape.virtual_first_layers.back() + layers);
  return shape;
}

std::vector<PipelineAction> pipeline_schedule(const PipelineShape& shape, int stage) {
  const int p = shape.stages;
  const int v = shape.chunks;
  const int m = shape.micro_batches;
  std::vector<PipelineAction> actions;
  actions.reserve(static_cast<std::size_t>(2 * m * v));
  if (v == 1) {
    const int warmup = std::min(p - stage - 1, m);
    for (int i = 0; i < warmup; ++i) actions.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
      actions.push_back({true, warmup + i, 0});
      actions.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i) actions.push_back({false, i, 0});
    return actions;
  }
  // Megatron-Core get_schedule_table with microbatch_group_size_per_vp_stage = pp: groups of pp
  // micro-batches run through chunk 0, then chunk 1, ...; the last group holds what is left.
  std::vector<std::pair<int, int>> table;  // (micro-batch, chunk) of the k-th forward
  table.reserve(static_cast<std::size_t>(m * v));
  for (int group_start = 0; group_start < m; group_start += p) {
    const int group_end = std::min(group_start + p, m);
    for (int chunk = 0; chunk < v; ++chunk)
      for (int mb = group_start; mb < group_end; ++mb) table.emplace_back(mb, chunk);
  }
  const int total = m * v;
  const int warmup = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  const auto forward = [&](int k) { return PipelineAction{true, table[k].first, table[k].second}; };
  // The k-th backward runs the chunks in reverse (get_model_chunk_id(k, forward=False)).
  const auto backward = [&](int k) { return PipelineAction{false, table[k].first, v - 1 - table[k].second}; };
  for (int k = 0; k < warmup; ++k) actions.push_back(forward(k));
  for (int k = 0; k < total - warmup; ++k) {
    actions.push_back(forward(warmup + k));
    actions.push_back(backward(k));
  }
  for (int k = total - warmup; k < total; ++k) actions.push_back(backward(k));
  return actions;
}

int max_in_flight_chunks(const PipelineShape& shape, int stage) {
  int in_flight = 0;
  int peak = 0;
  for (const PipelineAction& action : pipeline_schedule(shape, stage)) {
    in_flight += action.forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

LocalParameters local_parameters(const TransformerSpec& model, const ParallelismSpec& parallelism) {
  const ParameterCount count = count_parameters(model);
  const double tp = parallelism.tp;
  const double h = model.hidden;
  const double head_dim = model.head_dim();
  LocalParameters local;
  local.query_heads = static_cast<double>(model.heads) / tp;
  // Megatron splits the KV heads over tp; when tp exceeds them each rank keeps one KV head (replicated).
  local.kv_heads = model.kv_heads >= parallelism.tp ? static_cast<double>(model.kv_heads) / tp : 1.0;
  local.attention = h * head_dim * (local.query_heads + 2.0 * local.kv_heads) + local.query_heads * head_dim * h;
  if (model.is_mla()) {
    // The down projections are duplicated on every tp rank; the up and output projections split by heads.
    const double q_lora = model.q_lora_rank;
    const double kv_lora = model.kv_lora_rank;
    const double queries = local.query_heads * model.qk_head_dim();
    local.kv_heads = local.query_heads;
    local.attention =
        (q_lora > 0 ? h * q_lora + q_lora * queries : h * queries) + h * (kv_lora + model.qk_rope_head_dim) +
        kv_lora * local.query_heads * (model.head_dim() + model.v_dim()) + local.query_heads * model.v_dim() * h;
  }
  local.norms = count.norms_per_layer;
  local.norm = count.norm;
  local.mamba = count.mamba_per_layer / tp;
  local.router = count.router_per_layer;
  local.one_expert = (count.mlp_per_layer - count.shared_mlp_per_layer) / model.experts / parallelism.expert_tp();
  if (model.is_moe()) local.experts = static_cast<double>(model.experts / parallelism.ep) * local.one_expert;
  local.shared_mlp = count.shared_mlp_per_layer / tp;
  local.dense_mlp = count.dense_mlp_per_layer / tp;
  // The rank's rows of the embedding, padding included (count.embedding is the unpadded V*h of the 6*N rule).
  local.embedding = static_cast<double>(model.vocab_per_tp_rank(parallelism.tp)) * h;
  // With tied embeddings and pp > 1 the last stage keeps its own copy of the matrix for the output
  // head (Megatron's shared_embedding); with pp == 1 the head reuses the input embedding.
  if (!model.tied_embeddings || parallelism.pp > 1) local.output_head = local.embedding;
  local.final_norm = count.final_norm;
  if (model.mtp_layers > 0) {
    const double one_norm = (model.norm == NormKind::rmsnorm ? 1.0 : 2.0) * h;
    local.mtp_projection = 2.0 * h * h / tp;
    local.mtp_norms = 3.0 * one_norm;
    if (parallelism.pp > 1) local.mtp_embedding_copy = local.embedding;
  }
  return local;
}

StageParameters stage_parameters(const TransformerSpec& model, const ParallelismSpec& parallelism, int stage) {
  const LocalParameters local = local_parameters(model, parallelism);
  StageParameters stage_params;
  stage_params.layers = parallelism.layers_of_stage(model.layers, stage);
  // The stage's layers: virtual stages stage, stage + pp, ... in Megatron's order, each a run of layers.
  const std::vector<int> counts = parallelism.virtual_stage_layers(model.layers);
  int moe_layers = 0, mamba_layers = 0, transformer_layers = 0;
  for (std::size_t v = 0, first = 0; v < counts.size(); first += static_cast<std::size_t>(counts[v]), ++v) {
    if (static_cast<int>(v) % parallelism.pp != stage) continue;
    for (int layer = static_cast<int>(first); layer < static_cast<int>(first) + counts[v]; ++layer) {
      const LayerKind kind = model.layer_kind(layer);
      moe_layers += kind.moe ? 1 : 0;
      mamba_layers += kind.mamba ? 1 : 0;
      transformer_layers += kind.attention && (kind.mlp || kind.moe) ? 1 : 0;
      stage_params.dense += local.layer_dense(kind);
      stage_params.expert += local.layer_experts(kind);
      // The largest FSDP unit among the stage's layers (an MoE layer with its experts, or a dense one).
      const double elements = local.layer_dense(kind) + local.layer_experts(kind);
      if (elements > stage_params.largest_unit) {
        stage_params.largest_unit = elements;
        stage_params.largest_unit_expert = local.layer_experts(kind);
      }
    }
  }
  const auto consider_unit = [&](double elements) {
    stage_params.dense += elements;
    if (elements > stage_params.largest_unit) {
      stage_params.largest_unit = elements;
      stage_params.largest_unit_expert = 0.0;
    }
  };
  if (stage == 0) consider_unit(local.embedding);
  if (stage == parallelism.pp - 1) consider_unit(local.output_head + local.final_norm + local.mtp_embedding_copy);
  // The multi-token prediction modules, each a unit of its own (its layer with the projection and norms).
  const bool last_stage = stage == parallelism.pp - 1;
  if (last_stage) {
    for (int depth = 0; depth < model.mtp_layers; ++depth) {
      const double dense = local.mtp_dense(model.is_moe());
      const double expert = local.layer_experts(LayerKind{.moe = model.is_moe()});
      stage_params.dense += dense;
      stage_params.expert += expert;
      if (dense + expert > stage_params.largest_unit) {
        stage_params.largest_unit = dense + expert;
        stage_params.largest_unit_expert = expert;
      }
    }
  }

  const double per_norm = model.norm == NormKind::layernorm ? 2.0 : 1.0;
  const double bias = model.linear_bias ? 2.0 : 1.0;  // a weight, and a bias with linear_bias
  // Its norm, QKV, output projection (and the query and key norms' weights).
  const double attention_tensors = per_norm + 2.0 * bias + (model.qk_norm ? 2.0 : 0.0);
  const double mlp_tensors = per_norm + 2.0 * bias;  // its norm, fc1, fc2
  // An MoE sublayer: its norm, the router, two per local expert and the shared experts' fc1 and fc2 (each with its
  // bias under linear_bias: gpt-oss's router and experts have them).
  const double moe_tensors = per_norm + bias * (1.0 + 2.0 * static_cast<double>(model.experts / parallelism.ep) +
                                                (model.shared_expert_ffn_hidden > 0 ? 2.0 : 0.0));
  // A Mamba-2 mixer: its norm, in_proj, the convolution's weight and bias, dt_bias, A_log, D, the gated norm's
  // weight and out_proj.
  const double mamba_tensors = per_norm + 8.0;
  const int hybrid_attention = model.is_hybrid() ? stage_params.layers - moe_layers - mamba_layers : 0;
  const int dense_layers = transformer_layers - moe_layers;
  if (model.is_hybrid()) {
    // The hybrid's single-sublayer layers: attention or a dense MLP (the same tensor count), Mamba and MoE.
    stage_params.tensors =
        hybrid_attention * attention_tensors + mamba_layers * mamba_tensors + moe_layers * moe_tensors;
  } else {
    stage_params.tensors =
        moe_layers * (attention_tensors + moe_tensors) + dense_layers * (attention_tensors + mlp_tensors);
  }
  if (stage == 0) stage_params.tensors += model.position_embedding == PositionEmbedding::learned ? 2.0 : 1.0;
  if (stage == parallelism.pp - 1) stage_params.tensors += per_norm + (local.output_head > 0.0 ? 1.0 : 0.0);
  // Each MTP module: its layer's tensors, the projection and three norms; the embedding copy.
  if (last_stage && model.mtp_layers > 0)
    stage_params.tensors +=
        model.mtp_layers * (attention_tensors + (model.is_moe() ? moe_tensors : mlp_tensors) + 1.0 + 3.0 * per_norm) +
        (local.mtp_embedding_copy > 0.0 ? 1.0 : 0.0);
  return stage_params;
}

double storage_bytes_per_element(Precision precision) {
  return precision == Precision::fp32 || precision == Precision::tf32 ? 4.0 : 2.0;
}

bool fsdp_units(const ParallelismSpec& parallelism, const TrainingSpec& training) {
  return parallelism.zero_stage == 3 ||
         (parallelism.zero_stage == 2 && training.fsdp_runtime() != FsdpImplementation::megatron);
}

int gradient_zero_stage(const ParallelismSpec& parallelism, const TrainingSpec& training) {
  return fsdp_units(parallelism, training) ? 3 : parallelism.zero_stage;
}

double gradient_bytes_per_element(Precision precision, int zero_stage, bool fsdp_reduce_fp32, bool grad_reduce_fp32) {
  if (zero_stage == 3) return fsdp_reduce_fp32 ? 4.0 : storage_bytes_per_element(precision);
  return grad_reduce_fp32 ? 4.0 : storage_bytes_per_element(precision);
}

double optimizer_bytes_per_parameter(Precision precision) {
  return precision == Precision::fp32 || precision == Precision::tf32 ? 8.0 : 12.0;
}

}  // namespace chopsim::detail
