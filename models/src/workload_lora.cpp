// LoRA's adapters (TrainingSpec::lora) beside the linears of a transformer layer (an MoE layer's attention only),
// private to the StageGenerator.
//
// Megatron-Bridge wraps each targeted linear in a LoRALinear whose forward is base(x) + adapter(x), the adapter a
// ParallelLinearAdapter (src/megatron/bridge/peft/lora.py, lora_layers.py, utils.py): linear_in (A, in -> rank) and
// linear_out (B, rank -> out) are Megatron-Core's own ColumnParallelLinear / RowParallelLinear, not Transformer
// Engine's, so they run in bf16 in fp8 runs, and their tensor-parallel collectives are plain blocking NCCL calls on the
// compute stream (megatron/core/tensor_parallel/mappings.py), outside the userbuffers overlap. The adapter scales its
// output by alpha / rank (one elementwise pass) and LoRALinear adds it to the base output (another). Per side:
//  * column-parallel base (QKV, fc1; TELayerNormColumnParallelLinear): A = ColumnParallelLinear(in, rank,
//    gather_output=True) (rank / tp columns here, then an all-gather of the T x rank result), B =
//    ColumnParallelLinear(rank, out) (out / tp columns, no gather). Under sequence parallelism the adapter needs the
//    whole sequence of the norm's output: Transformer Engine hands it over gathered (return_layernorm_output_gathered)
//    unless userbuffers overlap the base's gather, in which case the adapter gathers it itself
//    (get_adapter_attributes_from_linear: disable_sequence_parallel_comm stays False when ub_overlap_ag), and its
//    backward reduce-scatters the input gradient. Without SP, A's backward all-reduces its input gradient
//    (ColumnParallelLinear; disable_grad_reduce only under SP).
//  * row-parallel base (output projection, fc2; TERowParallelLinear): A = RowParallelLinear(in, rank,
//    input_is_parallel=True) (its T x rank partial sums all-reduced over tp: the adapter turns SP off for itself),
//    B = ColumnParallelLinear(rank, out, gather_output=True) (an all-gather of the T x out result), and under SP a
//    scatter back to the sequence shard (a slice; its backward all-gathers the output gradient).
// Autograd runs the adapter's backward before the base's (it was recorded later), then adds the two input gradients.
// Their activation memory (what the adapters keep, the frozen linears' inputs no longer kept) is memory.cpp's.

#include <string>
#include <utility>

#include "workload_stage.hpp"

namespace chopsim::detail {

std::pair<StageGenerator::Gemm, StageGenerator::Gemm> StageGenerator::lora_matrices(const Gemm& base,
                                                                                    bool column_parallel) const {
  const double tp = parallelism_.tp;
  const double rank = training_.lora.rank;
  const double tokens = sizes_.tokens;
  // Column-parallel base (T x out/tp from in = k): A has rank/tp columns here, B all out/tp of the base's.
  // Row-parallel base (T x out from this rank's in/tp = k): A all rank columns, B out/tp.
  const Gemm a{.m = tokens, .n = column_parallel ? rank / tp : rank, .k = base.k, .transformer_engine = false};
  const Gemm b{.m = tokens, .n = column_parallel ? base.n : base.n / tp, .k = rank, .transformer_engine = false};
  return {a, b};
}

void StageGenerator::lora_forward(std::string_view name, const Gemm& base, bool column_parallel) {
  if (!frozen_base()) return;
  const Sizes& s = sizes_;
  const std::string prefix(name);
  const auto [a, b] = lora_matrices(base, column_parallel);
  const double bytes = s.activation_bytes;
  const double low_rank_bytes = s.tokens * training_.lora.rank * bytes;  // T x rank, whole
  if (column_parallel) {
    if (userbuffers_overlap())  // the norm's output of the whole sequence
      await(blocking({"lora_sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp,
                      s.tokens * base.k * bytes}));
    (void)gemm(prefix + "_a", a);
    await(blocking({"lora_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, low_rank_bytes}));
    (void)gemm(prefix + "_b", b);
    (void)elementwise(prefix + "_scale", s.tokens * base.n, 1.0, 2.0 * bytes);
    (void)elementwise(prefix + "_add", s.tokens * base.n, 1.0, 3.0 * bytes);
    return;
  }
  (void)gemm(prefix + "_a", a);
  await(blocking({"lora_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp, low_rank_bytes}));
  (void)gemm(prefix + "_b", b);
  await(blocking(
      {"lora_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, s.tokens * base.n * bytes}));
  if (parallelism_.sequence_parallel) (void)elementwise(prefix + "_scatter", s.norm_tokens * base.n, 0.0, 2.0 * bytes);
  (void)elementwise(prefix + "_scale", s.norm_tokens * base.n, 1.0, 2.0 * bytes);
  (void)elementwise(prefix + "_add", s.norm_tokens * base.n, 1.0, 3.0 * bytes);
}

void StageGenerator::lora_backward(std::string_view name, const Gemm& base, bool column_parallel) {
  if (!frozen_base()) return;
  const Sizes& s = sizes_;
  const std::string prefix(name);
  const auto [a, b] = lora_matrices(base, column_parallel);
  const double bytes = s.activation_bytes;
  // The output gradient's elements on this rank (before the adapter's own collectives).
  const double output_elements = column_parallel ? s.tokens * base.n : s.norm_tokens * base.n;
  (void)elementwise(prefix + "_scale_bwd", output_elements, 1.0, 2.0 * bytes);
  if (!column_parallel) {
    if (parallelism_.sequence_parallel)  // backward of the scatter to the sequence shard
      await(blocking({"lora_sp_all_gather_grad", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp,
                      s.tokens * base.n * bytes}));
    // Backward of B's output gather: this rank's columns of the gradient, copied out.
    if (parallelism_.tp > 1) (void)elementwise(prefix + "_split_bwd", s.tokens * b.n, 0.0, 2.0 * bytes);
  }
  (void)gemm_dgrad(prefix + "_b_dgrad", b);
  (void)gemm_wgrad(prefix + "_b_wgrad", b);
  // B is column-parallel: its input gradient (T x rank) is summed over tp.
  await(blocking({"lora_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp,
                  s.tokens * training_.lora.rank * bytes}));
  (void)gemm_dgrad(prefix + "_a_dgrad", a);
  // The adapter's two matrices on this rank are complete after A's weight gradient.
  bucket_gradient(a.n * a.k + b.n * b.k, false, gemm_wgrad(prefix + "_a_wgrad", a));
  double input_elements = s.tokens * base.k;  // A's input gradient on this rank
  if (column_parallel) {
    if (userbuffers_overlap()) {
      // Backward of the adapter's own gather of the norm's output.
      await(blocking({"lora_sp_reduce_scatter", CollectiveKind::reduce_scatter, GroupRole::tp, CommCategory::tp,
                      s.tokens * base.k * bytes}));
      input_elements = s.norm_tokens * base.k;
    } else if (!parallelism_.sequence_parallel) {
      // ColumnParallelLinear all-reduces its input gradient (a group of one: nothing).
      await(blocking({"lora_input_all_reduce", CollectiveKind::all_reduce, GroupRole::tp, CommCategory::tp,
                      s.tokens * base.k * bytes}));
    }
  }
  // Autograd adds the adapter's input gradient to the base's.
  (void)elementwise(prefix + "_grad_add", input_elements, 1.0, 3.0 * bytes);
}

}  // namespace chopsim::detail
