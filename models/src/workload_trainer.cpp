// What the training loop runs besides the model's layers: the optimizer step with the passes over the gradients
// before it, and the trainer's metrics after each micro-batch's backward.

#include <algorithm>
#include <cmath>
#include <string>

#include "chopsim/common/pytorch_softmax.hpp"
#include "workload_stage.hpp"

namespace chopsim::detail {

bool StageGenerator::pytorch_gradient_clipping() const {
  return eager() || training_.fsdp_runtime() != FsdpImplementation::megatron;
}

// --- optimizer ----------------------------------------------------------------------------------------

void StageGenerator::optimizer_step() {
  layer_ = -1;
  micro_batch_ = -1;
  pass_ = Pass::backward;
  close_bucket(false);
  close_bucket(true);
  if (!training_.overlap.dp)
    for (std::size_t i = 0; i < buckets_.size(); ++i) reduce_bucket(i, false);
  pass_ = Pass::optimizer;
  // The step needs every reduced gradient of this rank.
  for (const std::string_view stream : {kDpStream, kFsdpReduceStream}) await_stream(stream);
  const StageParameters params = trainable_parameters();
  const bool sharded = parallelism_.zero_stage >= 1;
  const int dense_shards = sharded ? layout_.group_size(GroupRole::shard) : 1;
  const double local =
      params.dense / dense_shards + params.expert / (sharded ? layout_.group_size(GroupRole::expert_data) : 1);
  // AdamW (Loshchilov & Hutter 2019) on fp32 state: read master weight, m, v (12 bytes) and the gradient,
  // write master weight, m, v and, in mixed precision, the bf16 working copy: 12 + 4 + 12 + 2 = 30 bytes per
  // parameter with Megatron's fp32 gradients, 28 with FSDP's bf16 ones. About 14 FLOPs per parameter
  // (moment updates 7, sqrt/eps/divide 3, decay and step 4).
  // Eager PyTorch under autocast updates its fp32 parameters in place and keeps no low-precision copy.
  const double weight_copy_bytes =
      training_.precision == Precision::fp32 || training_.precision == Precision::tf32 || eager()
          ? 0.0
          : sizes_.activation_bytes;
  const double bytes_per_parameter = 12.0 + sizes_.gradient_bytes + 12.0 + weight_copy_bytes;
  // Per-step passes over this rank's gradient or master-parameter shard (multi_tensor_l2norm and friends, memory-
  // bound; the scalar all-reduces that follow are latency only and not modelled): the global gradient norm for
  // clipping (Megatron clip_grad_norm_fp32 / PyTorch clip_grad_norm_; Megatron's rescale, only when the norm exceeds
  // the threshold, is not modelled, PyTorch's unconditional one is), Megatron's --log-num-zeros-in-grad
  // (count_zeros_fp32) and --log-params-norm (calc_params_l2_norm over the fp32 main parameters).
  //
  // The host's part (IssueStep): Megatron's count_zeros_fp32 loops over the shard's gradient tensors in Python,
  // four kernels each (count_nonzero's compare and sum, numel minus it, the running total), and both it and
  // calc_params_l2_norm end in .item(), so the host waits for them (Megatron's gradient norm also ends in .item(),
  // just before count_zeros; not a host wait here, since PyTorch's clip_grad_norm_ has none). The distributed optimizer
  // (ZeRO 1-2) copies the updated fp32 shard into the bf16 parameters one tensor at a time
  // (_copy_main_params_to_model_params); the fused AdamW itself is multi_tensor_apply, one launch per chunk of tensors
  // (36 for its four lists, Apex/TE). The shard's tensors: this rank's share of the stage's tensors, plus one cut at a
  // shard boundary.
  const double shard_tensors = std::ceil(params.tensors / dense_shards) + 1;
  if (training_.grad_clip) {
    (void)compute("grad_norm", KernelClass::reduction, Precision::fp32, 2.0 * local, sizes_.gradient_bytes * local);
    // PyTorch multiplies every gradient by min(1, max_norm / norm) whether or not it clips (TrainingSpec::grad_clip).
    if (pytorch_gradient_clipping())
      (void)compute("grad_clip_scale", KernelClass::elementwise, Precision::fp32, local,
                    2.0 * sizes_.gradient_bytes * local);
  }
  if (training_.log_num_zeros_in_grad) {
    const OpRef count =
        compute("grad_count_zeros", KernelClass::reduction, Precision::fp32, local, sizes_.gradient_bytes * local);
    builder_.set_host_issue(count, launch_count(4.0 * shard_tensors), true);
  }
  if (training_.optimizer == Optimizer::decoupled_adamw) {
    decoupled_adamw_step(local, params);
    return;
  }
  const OpRef adamw =
      compute("adamw", KernelClass::optimizer, Precision::fp32, 14.0 * local, bytes_per_parameter * local);
  // Megatron's distributed optimizer (ZeRO 1-2 over buckets) copies and gathers its parameters; FSDP gathers them per
  // unit at their next use.
  const bool gathers_after_step =
      (parallelism_.zero_stage == 1 || parallelism_.zero_stage == 2) && !fsdp_units(parallelism_, training_);
  const double copy_launches = gathers_after_step ? shard_tensors : 0.0;
  builder_.set_host_issue(adamw, launch_count(std::ceil(shard_tensors / 36.0) + copy_launches), false);
  if (training_.log_params_norm) {
    const OpRef norm = compute("params_norm", KernelClass::reduction, Precision::fp32, 2.0 * local, 4.0 * local);
    builder_.set_host_issue(norm, 1, true);
  }

  if (gathers_after_step) {
    // The updated bf16 parameters are all-gathered bucket by bucket. With overlap.param_gather Megatron gathers
    // them during the next iteration's forward (--overlap-param-gather): modelled at the start of the
    // iteration on a dp_ag stream, each layer's first forward op waiting for the buckets holding its
    // parameters (the same in steady state, since every iteration is alike). Without overlap the gathers
    // follow the optimizer on the compute stream.
    std::vector<std::size_t> order(buckets_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto first_use = [&](std::size_t index) {
      std::uint32_t earliest = UINT32_MAX;
      for (const int unit : buckets_[index].units)
        if (const auto& op = first_forward_op_[static_cast<std::size_t>(unit)]) earliest = std::min(earliest, op->op);
      return earliest;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return first_use(a) < first_use(b); });
    for (const std::size_t index : order) {
      const Bucket& bucket = buckets_[index];
      const Comm gather{"dp_param_all_gather", CollectiveKind::all_gather,
                        bucket.expert ? GroupRole::expert_data : GroupRole::shard, CommCategory::dp,
                        bucket.elements * sizes_.activation_bytes};
      if (training_.overlap.param_gather) {
        if (layout_.group_size(gather.group) <= 1) continue;
        // The host launches them from the forward pre-hooks at the start of the next iteration (issued first).
        const OpRef ref = builder_.append_issued_first(builder_.stream(kDpParamGatherStream), collective_op(gather));
        for (const int unit : bucket.units)
          if (const auto& op = first_forward_op_[static_cast<std::size_t>(unit)]) builder_.depend(*op, ref);
      } else {
        (void)blocking(gather);
      }
    }
  }
}

// Composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py, v0.16 to v0.32): step() adds 1 to every
// tensor's step counter (a GPU scalar: one launch each), then adamw() loops over the tensors in Python. Per tensor it
// reads the counter with .item() (the host waits for the GPU) and launches eight kernels, per element with fp32
// moments m, v and the gradient's g bytes: m.mul_(beta1) 8, m.add_(grad) 8 + g, v.mul_(beta2) 8,
// v.addcmul_(grad, grad) 8 + g, v.sqrt() 8, / sqrt(bias_correction2) 8, .add_(eps) 8, p.addcdiv_(m, denom) 16:
// 72 + 2g bytes, 80 with fp32 gradients, against the fused kernel's 28. Weight decay would add p.mul_ (8 bytes);
// llm-foundry's pretraining YAMLs set weight_decay 0.0, so it is left out.
//
// The tensors: under FSDP with use_orig_params (Composer's default) each unit's flat shard holds pieces of about
// 1/n of the unit's parameters, plus one where the cut falls inside a tensor; a rank whose shard misses a parameter
// gets no gradient for it. Elements are spread evenly over the tensors (the kernels are memory-bound: their time
// follows the bytes, not the split).
void StageGenerator::decoupled_adamw_step(double local_elements, const StageParameters& params) {
  const int shards = layout_.group_size(GroupRole::shard);
  const double units = params.layers + 2.0;
  const double tensors =
      shards > 1 ? std::min(params.tensors, std::ceil(params.tensors / shards) + units) : std::max(1.0, params.tensors);
  const auto count = static_cast<int>(tensors);
  const double elements = local_elements / count;
  const double bytes_per_element = 72.0 + 2.0 * sizes_.gradient_bytes;
  for (int tensor = 0; tensor < count; ++tensor) {
    const OpRef update = compute("decoupled_adamw", KernelClass::elementwise, Precision::fp32, 14.0 * elements,
                                 bytes_per_element * elements);
    // The first tensor's launches include every counter's increment.
    builder_.set_host_issue(update, launch_count(tensor == 0 ? 8.0 + tensors : 8.0), true);
  }
}

// Composer's Trainer, after each micro-batch's backward (_train_microbatches: _eval_train_metrics under no_grad and
// the autocast context): each metric's update() reads the logits the forward kept (state.outputs).
//  * LanguageCrossEntropy and LanguagePerplexity each run torch.nn.CrossEntropyLoss(reduction='sum'), which autocast
//    runs in fp32: the logits' cast (2 + 4 bytes per logit with bf16 logits), log_softmax over the vocabulary
//    (PyTorch's cunn_SoftMaxForward for rows too wide for its shared-memory variant: max, sum of exponentials and
//    the output in three reads and a write, 16 bytes; common/pytorch_softmax.hpp), then nll_loss, the count of
//    labels that are not ignored and the two running sums (six launches on per-token data).
//  * TokenAccuracy: argmax over the logits (a read), then target != ignore_index and the boolean-mask selections,
//    whose output size the host waits for (nonzero), and the running sums (nine launches).
void StageGenerator::train_metrics_update() {
  if (training_.train_metrics.empty()) return;
  layer_ = -1;
  const double logits = sizes_.tokens * sizes_.vocab_local;
  const double labels_bytes = 8.0 * sizes_.tokens;  // int64 labels
  for (const TrainMetric metric : training_.train_metrics) {
    const std::string name(to_string(metric));
    if (metric == TrainMetric::token_accuracy) {
      (void)elementwise(name + "_argmax", logits, 1.0, sizes_.activation_bytes, KernelClass::reduction);
      const OpRef update =
          compute(name + "_update", KernelClass::elementwise, Precision::fp32, sizes_.tokens, 4.0 * labels_bytes);
      builder_.set_host_issue(update, launch_count(9.0), true);
      continue;
    }
    // PyTorch's own kernels: the cast to fp32 takes TensorIterator's unrolled path (two dtypes), the log_softmax
    // over the vocabulary its multi-pass kernel (common/pytorch_softmax.hpp), which streams as a vectorized one.
    const double vocab = sizes_.vocab_local;
    (void)eager_elementwise(name + "_logits_float", logits, sizes_.activation_bytes + 4.0, ElementwisePath::unrolled);
    (void)eager_elementwise(name + "_log_softmax", logits, pytorch_softmax_forward_bytes(vocab, 4.0, 4.0),
                            pytorch_softmax_path(vocab, 4.0), KernelClass::reduction);
    const OpRef update =
        compute(name + "_update", KernelClass::elementwise, Precision::fp32, sizes_.tokens, 2.0 * labels_bytes);
    builder_.set_host_issue(update, launch_count(6.0), false);
  }
}

}  // namespace chopsim::detail
