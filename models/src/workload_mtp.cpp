// The StageGenerator's multi-token prediction modules (DeepSeek-V3 report, Sec. 2.2; Megatron-Core
// MultiTokenPredictionLayer): on the last virtual stage, after the model's own head.

#include "workload_stage.hpp"

namespace chopsim::detail {

// Forward of module `depth`, as Megatron-Core's MultiTokenPredictionLayer runs it: the embedding of the tokens one step
// further (the stage's copy of the table), RMSNorms of it and of the hidden state, their concatenation, eh_proj (a
// column-parallel 2h -> h linear whose output is all-gathered over tp and, with SP, sliced back to the sequence
// shard), one transformer layer of the model's last kind, then the module's final norm, the shared output head and a
// loss of its own. Its layer's ops carry layer index layers + depth.
void StageGenerator::mtp_forward(int depth) {
  const Sizes& s = sizes_;
  const int layer = model_.layers + depth;
  const double tp = layout_.group_size(GroupRole::tp);
  const double e = s.activation_bytes;
  layer_ = layer;
  embedding_forward();
  (void)norm("mtp_embedding_norm", false);
  (void)norm("mtp_hidden_norm", false);
  (void)elementwise("mtp_concat", s.norm_tokens * 2.0 * s.hidden, 0.0, 2.0 * e, KernelClass::memcpy);
  if (parallelism_.sequence_parallel)
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, 2.0 * s.tokens * s.hidden * e}));
  (void)gemm("mtp_eh_proj", {s.tokens, s.hidden / tp, 2.0 * s.hidden});
  if (tp > 1)
    await(blocking({"mtp_eh_proj_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp,
                    s.tokens * s.hidden * e}));
  layer_forward(layer);
  head_forward(false);
}

// Backward in reverse: the module's loss through the shared head (whose weight gradient the model's own head reports
// with the rest of it), the layer, eh_proj (with SP the slice's backward all-gathers the sequence), the two norms and
// the lookup. The module's projection and norms are reported to the data-parallel buckets here, its layer's
// weights by the layer, the embedding copy's gradient by the lookup (on a single stage the table's own backward
// reports it).
void StageGenerator::mtp_backward(int depth) {
  const Sizes& s = sizes_;
  const int layer = model_.layers + depth;
  const double tp = layout_.group_size(GroupRole::tp);
  const double e = s.activation_bytes;
  layer_ = layer;
  head_backward(false);
  layer_backward(layer);
  if (parallelism_.sequence_parallel)
    await(communicate(
        training_.overlap.tp, kTpStream,
        {"sp_all_gather", CollectiveKind::all_gather, GroupRole::tp, CommCategory::tp, s.tokens * s.hidden * e}));
  column_parallel_backward("mtp_eh_proj_dgrad", "mtp_eh_proj_wgrad", {s.tokens, s.hidden / tp, 2.0 * s.hidden},
                           local_.mtp_projection, false);
  (void)elementwise("mtp_concat_bwd", s.norm_tokens * 2.0 * s.hidden, 0.0, 2.0 * e, KernelClass::memcpy);
  (void)norm("mtp_hidden_norm_bwd", true);
  gradient_ready(local_.mtp_norms, false, norm("mtp_embedding_norm_bwd", true));
  embedding_backward(local_.mtp_embedding_copy);
}

}  // namespace chopsim::detail
