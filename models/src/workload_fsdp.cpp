// The FSDP (ZeRO-3) units of a stage's program: each unit's parameters all-gathered before its forward and before its
// backward, its gradients reduce-scattered after its backward in every micro-batch, and the kernels the FSDP runtime
// (TrainingSpec::fsdp_runtime()) launches around those collectives. Per unit and use, with P the unit's parameters on
// this rank before sharding, n the shard group, p the bytes of a parameter as computed with (2 under bf16 mixed
// precision), g of a gradient as reduced (4 with reduce_dtype fp32) and w of a weight gradient as the backward
// writes it (p):
//
//  * megatron (Megatron-FSDP): nothing besides the collectives; the gathers land in the bucket buffers the layers read
//    and the wgrad GEMMs accumulate into the main-gradient buffer that is reduce-scattered.
//  * fsdp1, PyTorch's FullyShardedDataParallel (torch/distributed/fsdp/_runtime_utils.py, flat_param.py, PyTorch
//    1.13 to 2.x):
//      - before each all-gather, on its stream: the local fp32 shard cast to the parameter dtype
//        (_use_low_precision_shard): P/n elements, 4 + p bytes each (mixed precision only);
//      - after each backward, on the compute stream: autograd's backward of the split that made the parameters views
//        of the FlatParameter, a cat of their gradients into the flat gradient: P x 2w bytes;
//      - then on the post-backward stream, before the reduce-scatter: the cast to the reduce dtype (P x (w + g), when
//        they differ) and the division by the pre-divide factor (P x 2g, when it is above 1);
//      - after the reduce-scatter: the division of the shard by n / factor (P/n x 2g, when above 1), and from the
//        second micro-batch on the sharded gradient's accumulation into the saved one (P/n x 3g).
//  * fsdp2, fully_shard (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, PyTorch 2.4+):
//      - before each all-gather, on its stream: the copy-in of the shards, cast to the parameter dtype, into the
//        gather's input (P/n x (4 + p) for the cast, P/n x 2p for the copy);
//      - after it, on the compute stream (FSDPParamGroup.wait_for_unshard): the copy-out of the gathered rows into
//        the unsharded parameters, split_with_sizes_copy: P x 2p;
//      - before each reduce-scatter, on its stream: the copy of the gradients into its input in the reduce dtype
//        (_chunk_cat): P x (w + g). bf16 and fp32 reductions divide inside NCCL (ReduceOp.AVG): no division kernels;
//      - after it, from the second micro-batch on: the accumulation of the sharded gradient (P/n x 3g).
// The casts, divisions and accumulations of fsdp1 and fsdp2 are PyTorch's TensorIterator kernels, timed by their path
// (ElementwisePath): the fp32 -> bf16 shard cast and the same-dtype divisions and sums vectorized, fsdp1's bf16 -> fp32
// gradient cast unrolled (the H200 trace's bf16 -> fp32 copies run unrolled_elementwise_kernel at 0.43 of HBM). The
// copy-ins and -outs, the flattening cat and _chunk_cat are kernels of their own (the memcpy class's efficiency).
// With training.overlap.fsdp the side-stream kernels share the GPU with the compute stream's (the engines give
// running kernels equal shares), as the streams do on the GPU; without it everything runs in line on the compute
// stream.

#include "workload_stage.hpp"

namespace chopsim::detail {

double fsdp1_gradient_predivide_factor(int world_size) {
  // torch/distributed/fsdp/_init_utils.py, _get_gradient_predivide_factor: the pre-division by f and the post-division
  // by n / f keep both the sum and the result representable in low precision.
  int factor = 1;
  while (world_size % factor == 0 && world_size / factor > factor) factor *= 2;
  return factor;
}

double StageGenerator::unit_dense_parameters(int unit) const {
  if (unit == embedding_unit()) return local_.embedding;
  if (unit == head_unit()) return local_.output_head + local_.final_norm + local_.mtp_embedding_copy;
  if (is_mtp_unit(unit)) return local_.mtp_dense(model_.is_moe());
  return local_.layer_dense(model_.layer_kind(unit - 1));
}

double StageGenerator::unit_expert_parameters(int unit) const {
  if (unit == embedding_unit() || unit == head_unit()) return 0.0;
  if (is_mtp_unit(unit)) return local_.layer_experts(LayerKind{.moe = model_.is_moe()});
  return local_.layer_experts(model_.layer_kind(unit - 1));
}

StageGenerator::UnitElements StageGenerator::unit_elements(int unit) const {
  UnitElements e;
  const int dense_group = layout_.group_size(GroupRole::shard);
  const int expert_group = layout_.group_size(GroupRole::expert_data);
  if (dense_group > 1) {
    e.unsharded += unit_dense_parameters(unit);
    e.sharded += unit_dense_parameters(unit) / dense_group;
  }
  if (expert_group > 1) {
    e.unsharded += unit_expert_parameters(unit);
    e.sharded += unit_expert_parameters(unit) / expert_group;
  }
  return e;
}

void StageGenerator::fsdp_kernel(std::string_view stream, std::optional<OpRef> after, std::string_view name,
                                 KernelClass kernel_class, ElementwisePath path, double elements,
                                 double bytes_per_element, double flops_per_element) {
  if (elements <= 0 || bytes_per_element <= 0) return;
  Op op = compute_op(name, kernel_class, Precision::fp32, elements * flops_per_element, elements * bytes_per_element);
  op.elementwise_path = path;
  if (!training_.overlap.fsdp || stream == kComputeStream) {
    (void)append_to_compute_stream(op);
    return;
  }
  const OpRef ref = builder_.append(builder_.stream(stream), op);
  if (after) builder_.depend(ref, *after);
}

void StageGenerator::begin_unit(int unit, bool backward) {
  current_unit_ = unit;
  cut_issue();
  layer_ = unit == embedding_unit() || unit == head_unit() ? -1 : is_mtp_unit(unit) ? unit - 2 : unit - 1;
  auto& first_op = first_forward_op_[static_cast<std::size_t>(unit)];
  if (!backward && !first_op) record_first_op_of_unit_ = unit;
  if (!fsdp_units(parallelism_, training_)) return;
  // A unit whose forward was the last thing computed keeps its parameters for its backward
  // (torchtitan does not reshard the last block after forward; FSDP would re-gather it at once). Under ZeRO-2
  // (SHARD_GRAD_OP, reshard_after_forward=False) every unit keeps them from its forward to its backward.
  const bool kept = backward && (parallelism_.zero_stage == 2 ||
                                 (!unit_uses_.empty() && unit_uses_.back().unit == unit &&
                                  !unit_uses_.back().backward && unit_uses_.back().micro_batch == micro_batch_));
  const std::size_t use = unit_uses_.size();
  unit_uses_.push_back(UnitUse{unit, backward, micro_batch_, std::nullopt});
  if (kept) return;
  const Comm dense{"fsdp_all_gather", CollectiveKind::all_gather, GroupRole::shard, CommCategory::fsdp,
                   unit_dense_parameters(unit) * sizes_.activation_bytes};
  const Comm expert{"fsdp_all_gather_expert", CollectiveKind::all_gather, GroupRole::expert_data, CommCategory::fsdp,
                    unit_expert_parameters(unit) * sizes_.activation_bytes};
  // Prefetch: the gather for use j may start once use j - prefetch - 1 has finished computing
  // (FSDP's rate limiter, limit_all_gathers), so at most prefetch + 1 gathered units wait ahead.
  std::optional<OpRef> after;
  const auto distance = static_cast<std::size_t>(training_.fsdp_prefetch) + 1;
  if (training_.overlap.fsdp && use >= distance) after = unit_uses_[use - distance].last_compute;

  const FsdpImplementation runtime = training_.fsdp_runtime();
  const UnitElements elements = unit_elements(unit);
  const double parameter_bytes = sizes_.activation_bytes;
  const double master_bytes = 4.0;  // the sharded parameters FSDP keeps for the optimizer: fp32
  const double cast_bytes = parameter_bytes < master_bytes ? master_bytes + parameter_bytes : 0.0;
  if (runtime == FsdpImplementation::fsdp1)
    fsdp_kernel(kFsdpGatherStream, after, "fsdp_shard_cast", KernelClass::elementwise, ElementwisePath::vectorized,
                elements.sharded, cast_bytes);
  if (runtime == FsdpImplementation::fsdp2)
    fsdp_kernel(kFsdpGatherStream, after, "fsdp_all_gather_copy_in", KernelClass::memcpy, ElementwisePath::fused,
                elements.sharded, cast_bytes + 2.0 * parameter_bytes);
  if (training_.overlap.fsdp) {
    await(overlapped(kFsdpGatherStream, dense, after));
    if (expert.bytes > 0) await(overlapped(kFsdpGatherStream, expert, after));
  } else {
    await(blocking(dense));
    if (expert.bytes > 0) await(blocking(expert));
  }
  if (runtime == FsdpImplementation::fsdp2)
    fsdp_kernel(kComputeStream, std::nullopt, "fsdp_all_gather_copy_out", KernelClass::memcpy, ElementwisePath::fused,
                elements.unsharded, 2.0 * parameter_bytes);
}

void StageGenerator::end_unit(bool backward) {
  record_first_op_of_unit_ = -1;
  const int unit = current_unit_;
  current_unit_ = -1;
  if (!fsdp_units(parallelism_, training_)) return;
  unit_uses_.back().last_compute = last_compute();
  if (!backward) return;
  // Gradients are reduce-scattered after every micro-batch's backward: PyTorch FSDP's default
  // (no no_sync()); with no_sync the unsharded gradients would stay in memory until the last one.
  const FsdpImplementation runtime = training_.fsdp_runtime();
  const UnitElements elements = unit_elements(unit);
  const double weight_gradient = sizes_.weight_grad_bytes, reduced = sizes_.gradient_bytes;
  const double cast_bytes = weight_gradient != reduced ? weight_gradient + reduced : 0.0;
  const int shard_group = layout_.group_size(GroupRole::shard);
  const double predivide = fsdp1_gradient_predivide_factor(shard_group);
  if (runtime == FsdpImplementation::fsdp1) {
    fsdp_kernel(kComputeStream, std::nullopt, "fsdp_grad_flatten", KernelClass::memcpy, ElementwisePath::fused,
                elements.unsharded, 2.0 * weight_gradient);
    const std::optional<OpRef> computed = last_compute();
    fsdp_kernel(kFsdpReduceStream, computed, "fsdp_grad_cast", KernelClass::elementwise, ElementwisePath::unrolled,
                elements.unsharded, cast_bytes);
    if (predivide > 1.0)
      fsdp_kernel(kFsdpReduceStream, computed, "fsdp_grad_predivide", KernelClass::elementwise,
                  ElementwisePath::vectorized, elements.unsharded, 2.0 * reduced, 1.0);
  }
  if (runtime == FsdpImplementation::fsdp2)
    fsdp_kernel(kFsdpReduceStream, last_compute(), "fsdp_reduce_scatter_copy_in", KernelClass::memcpy,
                ElementwisePath::fused, elements.unsharded, weight_gradient + reduced);

  const auto reduce = [&](const Comm& comm) {
    if (comm.bytes <= 0) return;
    if (training_.overlap.fsdp) {
      (void)overlapped(kFsdpReduceStream, comm, last_compute());
    } else {
      (void)blocking(comm);
    }
  };
  const double dense_bytes = unit_dense_parameters(unit) * sizes_.gradient_bytes;
  reduce({"fsdp_reduce_scatter", CollectiveKind::reduce_scatter, GroupRole::shard, CommCategory::fsdp, dense_bytes});
  // Hybrid sharding: the reduced shard is all-reduced across the replicas (FSDP HYBRID_SHARD).
  reduce({"fsdp_all_reduce_replicate", CollectiveKind::all_reduce, GroupRole::replicate, CommCategory::fsdp,
          dense_bytes / layout_.group_size(GroupRole::shard)});
  reduce({"fsdp_reduce_scatter_expert", CollectiveKind::reduce_scatter, GroupRole::expert_data, CommCategory::fsdp,
          unit_expert_parameters(unit) * sizes_.gradient_bytes});

  // After the reduce-scatter, on its stream (in stream order).
  if (runtime == FsdpImplementation::fsdp1 && shard_group / predivide > 1.0)
    fsdp_kernel(kFsdpReduceStream, std::nullopt, "fsdp_grad_postdivide", KernelClass::elementwise,
                ElementwisePath::vectorized, elements.sharded, 2.0 * reduced, 1.0);
  if (runtime != FsdpImplementation::megatron && micro_batch_ > 0)
    fsdp_kernel(kFsdpReduceStream, std::nullopt, "fsdp_grad_accumulate", KernelClass::elementwise,
                ElementwisePath::vectorized, elements.sharded, 3.0 * reduced, 1.0);
}

}  // namespace chopsim::detail
