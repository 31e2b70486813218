// The tensor- and sequence-parallel collectives around the column- and row-parallel GEMMs of a transformer layer,
// with Transformer Engine's userbuffers overlap, private to the StageGenerator: moved out of workload_layers.cpp.

#include <string>
#include <utility>

#include "workload_stage.hpp"

namespace chopsim::detail {

std::optional<OpRef> StageGenerator::gather_for_column_parallel() {
  if (!parallelism_.sequence_parallel) return std::nullopt;  // without SP the input is already replicated
  const double bytes = sizes_.tokens * sizes_.hidden * sizes_.activation_bytes;
  return communicate(training_.overlap.tp, kTpStream,
                     {"sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, bytes});
}

std::optional<OpRef> StageGenerator::reduce_after_row_parallel(double share) {
  const double bytes = sizes_.tokens * sizes_.hidden * sizes_.activation_bytes * share;
  if (parallelism_.sequence_parallel)
    return communicate(training_.overlap.tp, kTpStream,
                       {"sp_reduce_scatter", CollectiveKind::reduce_scatter, GroupRole::tp, CommCategory::tp, bytes});
  return communicate(training_.overlap.tp, kTpStream,
                     {"tp_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp, bytes});
}

// Transformer Engine's userbuffers (Megatron-LM --tp-comm-overlap, NeMo/Megatron-Bridge tp_comm_overlap:
// training.overlap.tp) need sequence parallelism and overlap the tensor-parallel collectives with the very GEMMs that
// consume or produce them (TransformerEngine transformer_engine/pytorch/module/linear.py; the decomposition of Wang
// et al., "Overlap Communication with Dependent Computation via Decomposition", ASPLOS 2023). The methods are those
// of NeMo's and Megatron-Bridge's userbuffers tables (megatron/bridge/training/comm_overlap.py, e.g.
// userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192):
//  * ring_exchange for the all-gather before a column-parallel GEMM (qkv_fprop, fc1_fprop) and for the all-gather of
//    the output gradient before a row-parallel dgrad (proj_dgrad, fc2_dgrad): the GEMM runs chunk by chunk on the
//    rows that have arrived, its local rows first, so all but the last 1/tp of it runs beside the gather and that
//    last chunk waits for the gather's end;
//  * pipeline, num_splits 4, for the reduce-scatter after a row-parallel GEMM (proj_fprop, fc2_fprop): each quarter
//    of the GEMM's rows is reduce-scattered while the next quarter computes, so three quarters of the bytes move
//    beside the GEMM and the last quarter after it.
// While they overlap, the engine slows the GEMM by comm_compute_slowdown (the SMs the communication kernels hold; the
// tables reserve 16-24 of H100's 132 for the pipelined reduce-scatter). The backward's bulk overlaps (the input
// re-gather and the input-gradient reduction beside dgrad / wgrad) are overlap.tp_backward's. Without userbuffers the
// GEMM waits for its all-gather and the next op for its reduce-scatter, even with the collective on the tp stream.
namespace {
/// Splits of the userbuffers pipelined reduce-scatter: num_splits 4 in every table of Megatron-Bridge's
/// comm_overlap.py (H100 and B200, bf16 and fp8).
constexpr double kUserbuffersPipelineSplits = 4.0;
}  // namespace

bool StageGenerator::userbuffers_overlap() const { return training_.overlap.tp && parallelism_.sequence_parallel; }

std::pair<StageGenerator::Gemm, StageGenerator::Gemm> StageGenerator::ring_exchange_chunks(const Gemm& shape) const {
  const double tp = parallelism_.tp;
  Gemm early = shape, last = shape;
  early.m = shape.m * (tp - 1.0) / tp;  // the rows that arrive while the ring runs (the local ones first)
  last.m = shape.m / tp;
  return {early, last};
}

OpRef StageGenerator::column_parallel_gemm(std::string_view name, const Gemm& shape, bool after_norm) {
  if (shape.transformer_engine) fp8_amax_reduction(std::string(name));
  const CastScale input_scale = after_norm ? CastScale::amax_from_norm : CastScale::own_amax;
  const std::optional<OpRef> gather = gather_for_column_parallel();
  if (!userbuffers_overlap() || !gather) {
    await(gather);
    return gemm(name, shape, input_scale);
  }
  const auto [early, last] = ring_exchange_chunks(shape);
  (void)gemm(name, early, input_scale);
  await(gather);
  return gemm(name, last, CastScale::known, false);
}

OpRef StageGenerator::row_parallel_gemm(std::string_view name, const Gemm& shape) {
  if (!userbuffers_overlap()) {
    const OpRef product = gemm(name, shape);
    await(reduce_after_row_parallel());
    return product;
  }
  // Issued with the GEMM (it follows the op before the GEMM): all splits but the last; the last follows the GEMM.
  const double last_share = 1.0 / kUserbuffersPipelineSplits;
  const std::optional<OpRef> beside = reduce_after_row_parallel(1.0 - last_share);
  const OpRef product = gemm(name, shape);
  const std::optional<OpRef> after = reduce_after_row_parallel(last_share);
  await(beside);
  await(after);
  return product;
}

void StageGenerator::column_parallel_backward(std::string_view dgrad_name, std::string_view wgrad_name,
                                              const Gemm& shape, double gradient_elements, bool expert) {
  const double input_bytes = shape.m * shape.k * sizes_.activation_bytes;
  // Megatron keeps only the sequence shard of the input and all-gathers it again for the weight gradient
  // (LinearWithGradAccumulationAndAsyncCommunication.backward), concurrently with the dgrad GEMM.
  const bool overlap = training_.overlap.tp || training_.overlap.tp_backward;
  std::optional<OpRef> input_gather;
  // A frozen weight (LoRA) has no weight gradient: only the dgrad, and no re-gather of the input.
  if (parallelism_.sequence_parallel && !frozen_base())
    input_gather =
        communicate(overlap, kTpStream,
                    {"sp_all_gather_input", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, input_bytes});
  (void)gemm_dgrad(dgrad_name, shape);
  // The input gradient is summed over tp (backward of the identity/all-gather before the GEMM): an
  // all-reduce, or a reduce-scatter with SP. With overlap it runs while the wgrad GEMM computes.
  const std::optional<OpRef> reduce =
      parallelism_.sequence_parallel
          ? communicate(
                overlap, kTpStream,
                {"sp_reduce_scatter", CollectiveKind::reduce_scatter, GroupRole::tp, CommCategory::tp, input_bytes})
          : communicate(overlap, kTpStream,
                        {"tp_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp, input_bytes});
  if (!frozen_base()) {
    await(input_gather);
    const OpRef wgrad = gemm_wgrad(wgrad_name, shape);
    gradient_ready(gradient_elements, expert, wgrad);
  }
  await(reduce);
}

void StageGenerator::row_parallel_backward(std::string_view dgrad_name, std::string_view wgrad_name, const Gemm& shape,
                                           double gradient_elements) {
  // Backward of the reduce-scatter after the GEMM: all-gather the output gradient (SP only; the
  // backward of an all-reduce is the identity).
  std::optional<OpRef> gather;
  if (parallelism_.sequence_parallel) {
    if (shape.transformer_engine) fp8_amax_reduction(std::string(dgrad_name));
    const double bytes = shape.m * shape.n * sizes_.activation_bytes;
    gather = communicate(training_.overlap.tp, kTpStream,
                         {"sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, bytes});
  }
  if (userbuffers_overlap() && gather) {
    // Ring exchange (see userbuffers_overlap): the dgrad's chunks run as the gradient's rows arrive, the last after
    // the gather's end; the wgrad needs it whole.
    const auto [early, last] = ring_exchange_chunks(shape);
    (void)gemm_dgrad(dgrad_name, early);
    await(gather);
    (void)gemm_dgrad(dgrad_name, last, CastScale::known);
  } else {
    await(gather);
    (void)gemm_dgrad(dgrad_name, shape);
  }
  if (frozen_base()) return;  // LoRA: no weight gradient
  const OpRef wgrad = gemm_wgrad(wgrad_name, shape);
  gradient_ready(gradient_elements, false, wgrad);
}

}  // namespace chopsim::detail
