#include "workload_stage.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

StageGenerator::StageGenerator(const TransformerSpec& model, const ParallelismSpec& parallelism,
                               const TrainingSpec& training, const KernelFacts& kernels, const RankLayout& layout,
                               NameTable& names, int stage)
    : model_(model),
      parallelism_(parallelism),
      training_(training),
      kernels_(kernels),
      layout_(layout),
      names_(names),
      stage_(stage),
      shape_(pipeline_shape(model, parallelism, training)),
      local_(local_parameters(model, parallelism)) {
  const double tp = parallelism.tp;
  Sizes& s = sizes_;
  s.sequence = training.seq_len;
  s.tokens = static_cast<double>(training.micro_batch) * training.seq_len / parallelism.cp;
  s.norm_tokens = parallelism.sequence_parallel ? s.tokens / tp : s.tokens;
  s.hidden = model.hidden;
  s.ffn_local = model.dense_width() / tp;
  s.shared_ffn_local = model.shared_expert_ffn_hidden / tp;
  s.vocab_local = model.vocab_per_tp_rank(parallelism.tp);
  s.head_dim = model.head_dim();
  s.qk_dim = model.qk_head_dim();
  s.v_dim = model.v_dim();
  s.query_heads = local_.query_heads;
  s.kv_heads = local_.kv_heads;
  const double copies = model.is_moe() ? model.top_k : 0.0;
  s.routed_tokens = s.norm_tokens * copies * training.moe_sent_load();
  s.received_tokens = s.norm_tokens * copies * training.moe_busiest_rank_load(parallelism.ep);
  s.expert_tokens = s.received_tokens * (parallelism.sequence_parallel ? parallelism.expert_tp() : 1);
  s.expert_ffn_local = static_cast<double>(model.ffn_hidden) / parallelism.expert_tp();
  s.mamba_heads = model.mamba_heads / tp;
  s.mamba_groups = model.mamba_groups / tp;
  s.mamba_inner = s.mamba_heads * model.mamba_head_dim;
  s.mamba_channels = s.mamba_inner + 2.0 * s.mamba_groups * model.mamba_state_dim;
  s.mamba_in_width = s.mamba_inner + s.mamba_channels + s.mamba_heads;
  s.mamba_states = s.mamba_inner * model.mamba_state_dim / model.mamba_chunk_size;
  s.activation_bytes = storage_bytes_per_element(training.precision);
  s.gradient_bytes = gradient_bytes_per_element(training.precision, gradient_zero_stage(parallelism, training),
                                                training.fsdp_reduce_fp32, training.grad_reduce_fp32);
  s.weight_grad_bytes =
      fsdp_units(parallelism, training) ? storage_bytes_per_element(training.precision) : s.gradient_bytes;
  gemm_precision_ = training.precision;
  // Flash attention runs in bf16 even in fp8 runs (Transformer Engine's default DotProductAttention).
  high_precision_ = training.precision == Precision::fp8 ? Precision::bf16 : training.precision;
  first_forward_op_.assign(static_cast<std::size_t>(model.layers + 2 + model.mtp_layers), std::nullopt);
}

// --- emission primitives ----------------------------------------------------------------------------

Op StageGenerator::base_op(std::string_view name) const {
  Op op;
  op.name = names_.intern(name);
  op.layer = layer_;
  op.micro_batch = micro_batch_;
  op.pass = pass_;
  return op;
}

std::optional<OpRef> StageGenerator::last_compute() const {
  OpRef ref;
  if (builder_.last_op(compute_stream_, ref)) return ref;
  return std::nullopt;
}

OpRef StageGenerator::append_to_compute_stream(const Op& op) {
  const OpRef ref = builder_.append(compute_stream_, op);
  for (const OpRef& producer : awaited_) builder_.depend(ref, producer);
  awaited_.clear();
  if (record_first_op_of_unit_ >= 0) {
    first_forward_op_[static_cast<std::size_t>(record_first_op_of_unit_)] = ref;
    record_first_op_of_unit_ = -1;
  }
  return ref;
}

Op StageGenerator::collective_op(const Comm& comm) const {
  Op op = base_op(comm.name);
  op.kind = OpKind::collective;
  op.kernel_class = KernelClass::communication;
  op.category = comm.category;
  op.collective = comm.kind;
  op.group = comm.group;
  op.bytes = comm.bytes;
  return op;
}

OpRef StageGenerator::compute(std::string_view name, KernelClass kernel_class, Precision precision, double flops,
                              double bytes, bool unaligned) {
  return append_to_compute_stream(compute_op(name, kernel_class, precision, flops, bytes, unaligned));
}

Op StageGenerator::compute_op(std::string_view name, KernelClass kernel_class, Precision precision, double flops,
                              double bytes, bool unaligned) const {
  Op op = base_op(name);
  op.unaligned = unaligned;
  // Every attention kernel of the backward pass (the local and the context-parallel remote chunks); recomputed
  // forwards are not affected.
  op.deterministic = training_.deterministic && kernel_class == KernelClass::attention && op.pass == Pass::backward;
  // A fused attention kernel applies the model's attention dropout itself (forward, recomputed forward and backward,
  // which regenerates the mask from the same random state).
  op.dropout = model_.dropout && kernel_class == KernelClass::attention;
  op.kind = OpKind::compute;
  op.kernel_class = kernel_class;
  op.precision = precision;
  op.flops = flops;
  op.bytes = bytes;
  return op;
}

std::optional<OpRef> StageGenerator::blocking(const Comm& comm) {
  if (layout_.group_size(comm.group) <= 1) return std::nullopt;
  return append_to_compute_stream(collective_op(comm));
}

std::optional<OpRef> StageGenerator::overlapped(std::string_view stream, const Comm& comm, std::optional<OpRef> after) {
  if (layout_.group_size(comm.group) <= 1) return std::nullopt;
  // A merged pair's backward has side streams of its own: its collectives must not queue behind the forward's
  // (Megatron's one communication stream orders them as the schedule plan issues them, layer by layer).
  const std::uint16_t side = compute_stream_ == 0
                                 ? builder_.stream(stream)
                                 : builder_.stream(std::string(stream) + "_" + std::string(kMergedBackwardStream));
  const OpRef ref = builder_.append(side, collective_op(comm));
  if (after) builder_.depend(ref, *after);
  return ref;
}

std::optional<OpRef> StageGenerator::communicate(bool overlap, std::string_view stream, const Comm& comm) {
  if (!overlap) return blocking(comm);
  const std::optional<OpRef> ref = overlapped(stream, comm, last_compute());
  // Its input may also be the result of a collective that compute has not consumed yet (the tp
  // all-gather of tokens an ep all-to-all just delivered).
  if (ref)
    for (const OpRef& pending : awaited_) builder_.depend(*ref, pending);
  return ref;
}

void StageGenerator::await(std::optional<OpRef> producer) {
  if (producer && producer->stream != compute_stream_) awaited_.push_back(*producer);
}

void StageGenerator::await_stream(std::string_view stream) {
  if (!builder_.has_stream(stream)) return;
  OpRef last;
  if (builder_.last_op(builder_.stream(stream), last)) await(last);
}

// --- the iteration ----------------------------------------------------------------------------------

Program StageGenerator::generate() {
  zero_gradient_buffer();
  const std::vector<PipelineAction> actions = pipeline_schedule(shape_, stage_);
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const PipelineAction& action = actions[i];
    // The schedule's steady state is its forwards immediately followed by a backward (warm-up: forwards only,
    // cool-down: backwards only); Megatron-Core's combined 1F1B merges each such pair.
    if (training_.overlap.ep_1f1b && action.forward && i + 1 < actions.size() && !actions[i + 1].forward) {
      merged_passes(action, actions[i + 1]);
      ++i;
      continue;
    }
    if (training_.overlap.ep_1f1b) await_stream(kMergedBackwardStream);  // one stream again: after every merged op
    if (action.forward) {
      forward_pass(action.micro_batch, action.chunk);
    } else {
      backward_pass(action.micro_batch, action.chunk);
    }
  }
  if (training_.overlap.ep_1f1b) await_stream(kMergedBackwardStream);
  optimizer_step();
  if (!awaited_.empty()) throw ModelError("workload: internal error, an awaited op has no consumer");
  return builder_.finish();
}

// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm; megatron/core/models/common/
// model_chunk_schedule_plan.py, TransformerModelChunkSchedulePlan.run and TransformerLayerSchedulePlan.run) runs a
// steady-state forward and the backward beside it layer by layer, forward layer i with backward layer n-1-i, on one
// compute and one communication stream:
//   comm:    combine backward   | dispatch forward -> dispatch backward | combine forward
//   compute: attention forward  | expert MLP backward -> MLP forward    | attention backward
// so each pass's expert all-to-alls run while the other pass computes. chopsim keeps each pass's op order and
// dependencies and runs the backward on a second compute stream: while one pass waits for its all-to-all the other
// has the GPU, and while both compute they share it (the engine's max-min sharing), the same work either way. The
// pair starts after everything before it on both streams and what follows starts after both (one CUDA stream in
// Megatron). The host issues the two passes in alternation, switching at each unit (embedding, layer, head) and at
// each expert all-to-all, as the schedule plan issues the layers' sub-modules.
void StageGenerator::merged_passes(const PipelineAction& forward, const PipelineAction& backward) {
  const std::uint16_t merged_stream = builder_.stream(kMergedBackwardStream);
  OpRef before;
  const bool compute_before = builder_.last_op(0, before);
  await_stream(kMergedBackwardStream);  // the forward starts after the previous pair's backward
  std::vector<std::size_t> forward_cuts{builder_.issued_count()};
  issue_cuts_ = &forward_cuts;
  forward_pass(forward.micro_batch, forward.chunk);
  // What the forward leaves for the next compute op (a send it waits for without overlap.pp) is for stream 0's next.
  std::vector<OpRef> forward_pending = std::move(awaited_);
  awaited_.clear();
  compute_stream_ = merged_stream;
  if (compute_before) await(before);  // the backward starts after what preceded the forward on stream 0
  std::vector<std::size_t> backward_cuts{builder_.issued_count()};
  issue_cuts_ = &backward_cuts;
  backward_pass(backward.micro_batch, backward.chunk);
  issue_cuts_ = nullptr;
  compute_stream_ = 0;
  awaited_.insert(awaited_.end(), forward_pending.begin(), forward_pending.end());
  builder_.alternate_issued(forward_cuts, backward_cuts);
}

void StageGenerator::cut_issue() {
  if (issue_cuts_ != nullptr) issue_cuts_->push_back(builder_.issued_count());
}

std::uint32_t StageGenerator::pipeline_tag(int micro_batch, int virtual_stage, bool gradient) const {
  // Unique per (direction, micro-batch, boundary between virtual stages): the sender names the
  // boundary by its own virtual stage, the receiver by its neighbour's.
  const auto boundary =
      static_cast<std::uint64_t>(micro_batch) * static_cast<std::uint64_t>(shape_.virtual_stage_count()) +
      static_cast<std::uint64_t>(virtual_stage);
  const std::uint64_t tag = boundary * 2 + (gradient ? 1 : 0);
  if (tag > 0xffffffffULL) throw ModelError("workload: too many micro-batches for 32-bit pipeline tags");
  return static_cast<std::uint32_t>(tag);
}

OpRef StageGenerator::pipeline_send(bool gradient, int virtual_stage) {
  Op op = base_op(gradient ? "pp_send_gradient" : "pp_send_activation");
  op.kind = OpKind::send;
  op.kernel_class = KernelClass::communication;
  op.category = CommCategory::pp;
  op.collective = CollectiveKind::send_recv;
  op.group = GroupRole::pp;
  op.peer_offset = static_cast<std::int8_t>(gradient ? -1 : +1);
  op.tag = pipeline_tag(micro_batch_, virtual_stage, gradient);
  // Activations (or their gradients) at a layer boundary: s/cp * b * h elements, split over tp with SP.
  op.bytes = sizes_.norm_tokens * sizes_.hidden * sizes_.activation_bytes;
  const OpRef ref = builder_.append(builder_.stream(gradient ? kPpSendPrevStream : kPpSendNextStream), op);
  if (const auto producer = last_compute()) builder_.depend(ref, *producer);
  return ref;
}

OpRef StageGenerator::pipeline_recv(bool gradient, int virtual_stage_of_sender) {
  Op op = base_op(gradient ? "pp_recv_gradient" : "pp_recv_activation");
  op.kind = OpKind::recv;
  op.kernel_class = KernelClass::communication;
  op.category = CommCategory::pp;
  op.collective = CollectiveKind::send_recv;
  op.group = GroupRole::pp;
  op.peer_offset = static_cast<std::int8_t>(gradient ? +1 : -1);
  op.tag = pipeline_tag(micro_batch_, virtual_stage_of_sender, gradient);
  op.bytes = sizes_.norm_tokens * sizes_.hidden * sizes_.activation_bytes;
  // Receives are posted as early as their stream allows (one FIFO channel per neighbour and direction,
  // in the order both sides run the schedule), so a send never waits on an unrelated transfer.
  return builder_.append(builder_.stream(gradient ? kPpRecvNextStream : kPpRecvPrevStream), op);
}

void StageGenerator::forward_pass(int micro_batch, int chunk) {
  micro_batch_ = micro_batch;
  pass_ = Pass::forward;
  final_backward_ = false;
  const int virtual_stage = shape_.virtual_stage(stage_, chunk);
  const int last_virtual_stage = shape_.virtual_stage_count() - 1;
  layer_ = -1;
  if (virtual_stage > 0) await(pipeline_recv(false, virtual_stage - 1));
  // Megatron's get_batch runs on the chunks that hold the embedding (tokens) and the loss (labels); both take the mask.
  if (virtual_stage == 0 || virtual_stage == last_virtual_stage) load_attention_mask();
  if (virtual_stage == 0) {
    begin_unit(embedding_unit(), false);
    eager() ? eager_embedding_forward() : embedding_forward();
    end_unit(false);
  }
  const int first = shape_.first_layer(stage_, chunk);
  for (int layer = first; layer < first + shape_.layers_in(stage_, chunk); ++layer) {
    begin_unit(layer_unit(layer), false);
    eager() ? eager_layer_forward(layer) : layer_forward(layer);
    end_unit(false);
  }
  layer_ = -1;
  if (virtual_stage == last_virtual_stage) {
    begin_unit(head_unit(), false);
    eager() ? eager_head_forward() : head_forward();
    end_unit(false);
    for (int depth = 0; depth < model_.mtp_layers; ++depth) {
      begin_unit(mtp_unit(depth), false);
      mtp_forward(depth);
      end_unit(false);
    }
    layer_ = -1;
  } else {
    const OpRef send = pipeline_send(false, virtual_stage);
    if (!training_.overlap.pp) await(send);  // compute waits until the activation has left
  }
}

// Megatron-LM's get_batch with the data loader's attention mask (--create-attention-mask-in-dataloader, its default):
// tensor-parallel rank 0 copies the [b, 1, s, s] boolean mask from pinned host memory with .cuda(non_blocking=True),
// on the compute stream, so the micro-batch's kernels wait for it, and broadcasts it to the other tensor-parallel
// ranks, which receive it into torch.empty (NaN-filled first under deterministic mode). The ranks of a
// tensor-parallel group share one program, so every rank runs the copy: the broadcast makes rank 0's copy the
// group's critical path anyway. The tokens, labels, loss mask and position ids (8 bytes per token each) are left out.
void StageGenerator::load_attention_mask() {
  if (!training_.attention_mask_in_dataloader) return;
  const double bytes = training_.micro_batch * sizes_.sequence * sizes_.sequence;  // one byte per bool
  Op copy = compute_op("attention_mask_h2d", KernelClass::memcpy, Precision::fp32, 0.0, bytes);
  copy.host_to_device = true;
  (void)append_to_compute_stream(copy);
  if (layout_.group_size(GroupRole::tp) <= 1) return;
  fill_output("attention_mask", bytes);
  await(blocking({"attention_mask_broadcast", CollectiveKind::broadcast, GroupRole::tp, CommCategory::tp, bytes}));
}

void StageGenerator::backward_pass(int micro_batch, int chunk) {
  micro_batch_ = micro_batch;
  pass_ = Pass::backward;
  // Each chunk runs micro-batches in increasing order, so the last one completes its gradients.
  final_backward_ = micro_batch == shape_.micro_batches - 1;
  const int virtual_stage = shape_.virtual_stage(stage_, chunk);
  const int last_virtual_stage = shape_.virtual_stage_count() - 1;
  layer_ = -1;
  if (virtual_stage < last_virtual_stage) {
    await(pipeline_recv(true, virtual_stage + 1));
  } else {
    // The MTP modules' losses come after the main one: their backward runs first, and their gradient reaches the
    // last layer's output (and the shared head's weight) beside the main loss's.
    for (int depth = model_.mtp_layers - 1; depth >= 0; --depth) {
      begin_unit(mtp_unit(depth), true);
      mtp_backward(depth);
      end_unit(true);
    }
    layer_ = -1;
    begin_unit(head_unit(), true);
    eager() ? eager_head_backward() : head_backward();
    end_unit(true);
  }
  const int first = shape_.first_layer(stage_, chunk);
  const int recomputed = training_.recomputed_layers(shape_.layers_in(stage_, chunk));
  for (int layer = first + shape_.layers_in(stage_, chunk) - 1; layer >= first; --layer) {
    begin_unit(layer_unit(layer), true);
    if (layer - first < recomputed) {
      // Full recomputation re-runs the layer's forward from its stored input right before its backward
      // (Megatron --recompute-granularity full --recompute-method uniform --recompute-num-layers 1), or only the
      // chunk's first recompute_layers (--recompute-method block --recompute-num-layers N).
      pass_ = Pass::recompute;
      eager() ? eager_layer_forward(layer) : layer_forward(layer);
      pass_ = Pass::backward;
    }
    eager() ? eager_layer_backward(layer) : layer_backward(layer);
    end_unit(true);
  }
  layer_ = -1;
  if (virtual_stage == 0) {
    begin_unit(embedding_unit(), true);
    eager() ? eager_embedding_backward() : embedding_backward();
    end_unit(true);
  } else {
    const OpRef send = pipeline_send(true, virtual_stage);
    if (!training_.overlap.pp) await(send);
  }
  // PyTorch's FSDP ends every backward by making the compute stream wait for the reduce-scatters it launched
  // (FSDP1's _post_backward_final_callback: current_stream().wait_stream(post_backward_stream); FSDP2's
  // _root_post_backward_final_callback: the last reduce-scatter's event), so what follows waits for them.
  if (fsdp_units(parallelism_, training_) && training_.fsdp_runtime() != FsdpImplementation::megatron &&
      training_.overlap.fsdp)
    await_stream(kFsdpReduceStream);
  // The trainer's metrics read the logits once the backward has returned (the loss's chunk only).
  if (virtual_stage == last_virtual_stage) train_metrics_update();
  final_backward_ = false;
}

// --- data-parallel gradient buckets (ZeRO 0-2) ----------------------------------------------------

// Megatron's DDP keeps every gradient of the rank's model chunks in one contiguous buffer (fp32 main_grad, not sharded
// by the distributed optimizer) and zeroes it at the start of each step (train_step: zero_grad_buffer(), a memset of
// the whole buffer), since the backward accumulates into it. FSDP (ZeRO-3) sets its gradients to None instead.
void StageGenerator::zero_gradient_buffer() {
  // Eager PyTorch sets .grad to None between steps (optimizer.zero_grad(set_to_none=True), PyTorch >= 2.0's default).
  if (fsdp_units(parallelism_, training_) || eager()) return;
  const StageParameters params = trainable_parameters();
  const double elements = params.dense + params.expert;
  pass_ = Pass::other;
  (void)compute("zero_grad_buffer", KernelClass::elementwise, Precision::fp32, 0.0, elements * sizes_.gradient_bytes);
}

void StageGenerator::gradient_ready(double elements, bool expert, OpRef producer) {
  if (frozen_base()) return;  // LoRA: requires_grad is off for every base weight
  bucket_gradient(elements, expert, producer);
}

StageParameters StageGenerator::trainable_parameters() const {
  StageParameters params = stage_parameters(model_, parallelism_, stage_);
  if (!frozen_base()) return params;
  // Each adapter matrix is split over tp with its linear (ParallelLinearAdapter): A and B of every targeted linear.
  const LoraSpec& lora = training_.lora;
  const auto targets = std::count_if(kLoraTargetNames.begin(), kLoraTargetNames.end(),
                                     [&](const auto& target) { return lora.*(target.second); });
  params.dense = params.layers * lora_layer_parameters(model_, lora) / parallelism_.tp;
  params.expert = 0.0;
  params.tensors = 2.0 * static_cast<double>(targets) * params.layers;
  return params;
}

void StageGenerator::bucket_gradient(double elements, bool expert, OpRef producer) {
  if (!final_backward_ || fsdp_units(parallelism_, training_) || elements <= 0) return;
  Bucket& bucket = expert ? open_expert_ : open_dense_;
  bucket.expert = expert;
  bucket.elements += elements;
  bucket.last_producer = producer;
  if (bucket.units.empty() || bucket.units.back() != current_unit_) bucket.units.push_back(current_unit_);
  // Megatron's DDP closes a bucket once it holds at least bucket_size bytes; parameters are not split.
  if (bucket.elements * sizes_.gradient_bytes >= training_.dp_bucket_bytes) close_bucket(expert);
}

void StageGenerator::close_bucket(bool expert) {
  Bucket& bucket = expert ? open_expert_ : open_dense_;
  if (bucket.elements <= 0) return;
  buckets_.push_back(std::move(bucket));
  bucket = Bucket{};
  // With overlap, each bucket is reduced as soon as the backward op completing it has run
  // (Megatron --overlap-grad-reduce, PyTorch DDP); without it all buckets wait for the end of backward.
  if (training_.overlap.dp) reduce_bucket(buckets_.size() - 1, true);
}

void StageGenerator::reduce_bucket(std::size_t index, bool overlap) {
  const Bucket& bucket = buckets_[index];
  const double bytes = bucket.elements * sizes_.gradient_bytes;
  // What the backward hook runs on the compute stream before it launches the collective: Megatron's
  // --check-for-nan-in-loss-and-grad takes the bucket's norm (grad_data.norm(), read once; the NaN test on it is a
  // host synchronisation: a host wait, below), and the gradients are scaled by 1 / data-parallel size
  // (Megatron DDP's gradient_scaling_factor without --ddp-average-in-collective; PyTorch DDP divides by the world
  // size): one pass that reads and writes the bucket.
  OpRef ready = bucket.last_producer;
  if (training_.check_for_nan_in_grad) {
    ready = compute("dp_grad_nan_check", KernelClass::reduction, Precision::fp32, bucket.elements, bytes);
    // The NaN test reads the norm on the host (RerunStateMachine.validate_result: `if rejection_func(result)`).
    builder_.set_host_issue(ready, 1, true);
  }
  if (layout_.group_size(bucket.expert ? GroupRole::expert_data : GroupRole::data) > 1)
    ready = elementwise("dp_grad_scale", bucket.elements, 1.0, 2.0 * sizes_.gradient_bytes);
  std::vector<Comm> comms;
  if (parallelism_.zero_stage == 0) {
    comms.push_back({"dp_all_reduce", CollectiveKind::all_reduce,
                     bucket.expert ? GroupRole::expert_data : GroupRole::data, CommCategory::dp, bytes});
  } else {
    // Distributed optimizer (ZeRO-1/2): reduce-scatter so each rank gets the gradient of its shard.
    const GroupRole group = bucket.expert ? GroupRole::expert_data : GroupRole::shard;
    comms.push_back({"dp_reduce_scatter", CollectiveKind::reduce_scatter, group, CommCategory::dp, bytes});
    if (!bucket.expert)
      comms.push_back({"dp_all_reduce_replicate", CollectiveKind::all_reduce, GroupRole::replicate, CommCategory::dp,
                       bytes / layout_.group_size(GroupRole::shard)});
  }
  for (const Comm& comm : comms) {
    if (overlap) {
      (void)overlapped(kDpStream, comm, ready);
    } else {
      (void)blocking(comm);
    }
  }
}

}  // namespace chopsim::detail
