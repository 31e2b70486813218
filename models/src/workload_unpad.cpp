// llm-foundry's flash-attn 2 path around the fused attention kernel (TrainingSpec::unpad_attention), private to the
// StageGenerator.
//
// llm-foundry's flash_attn_fn (llmfoundry/models/layers/attention.py; attn_impl: flash, which its large-scale H100
// benchmark ran with flash-attn 2.4.2) calls flash-attn's varlen kernel on unpadded rows whether or not any token is
// padding. flash-attn's bert_padding.py (v2.4.2) does, for each of Q, K and V, unpad_input:
//   seqlens = mask.sum(-1); indices = torch.nonzero(mask.flatten()); max_seqlen = seqlens.max().item();
//   cu_seqlens = F.pad(torch.cumsum(seqlens), (1, 0)); index_first_axis(hidden, indices)   (a torch.gather)
// torch.nonzero sizes its output on the host and .item() reads a value: the host waits for the GPU twice per call,
// six times per layer, before the GPU can be given more work. After the kernel, pad_input scatters the output back:
// index_put_first_axis, torch.zeros of the padded shape and output[indices] = values. Autograd runs the mirror image:
// pad_input's backward gathers the output gradient (grad_output[indices]) before the attention backward, and each
// gather's backward (IndexFirstAxis.backward) writes torch.zeros and scatters the gradient into them after it.
// Per layer that moves 9 (forward) and 11 (backward) times the bytes of one [tokens, heads x head_dim] tensor. The
// index tensors the gathers and scatters read are stride-0 expansions of one int64 per row (einops repeat): their
// reads are not counted. Grouped-query K and V repeated to every query head (should_repeat_kv_for_gqa) are not
// modelled: MPT's heads are all key-value heads.

#include <array>
#include <string>

#include "workload_stage.hpp"

namespace chopsim::detail {
namespace {

/// Q, K or V: its name and its width on this rank (heads x head dim).
struct UnpaddedTensor {
  const char* name;
  double width;
};

/// Q, K and V in the order the forward unpads them.
std::array<UnpaddedTensor, 3> unpadded_tensors(double query_heads, double kv_heads, double qk_dim, double v_dim) {
  return {UnpaddedTensor{"q", query_heads * qk_dim}, UnpaddedTensor{"k", kv_heads * qk_dim},
          UnpaddedTensor{"v", kv_heads * v_dim}};
}

}  // namespace

void StageGenerator::unpad_attention_inputs() {
  if (!training_.unpad_attention) return;
  const Sizes& s = sizes_;
  const double micro_batch = training_.micro_batch;
  for (const UnpaddedTensor t : unpadded_tensors(s.query_heads, s.kv_heads, s.qk_dim, s.v_dim)) {
    const std::string name(t.name);
    // The mask's row sums and torch.nonzero's indices (reads a byte per token, writes an int64 per token); the host
    // blocks until nonzero has run, to size its output.
    const OpRef index = elementwise("unpad_index_" + name, s.tokens, 1.0, 9.0, KernelClass::reduction);
    builder_.set_host_issue(index, 2, true);
    // seqlens.max().item(): the host blocks again until the maximum is known.
    const OpRef longest = elementwise("unpad_max_" + name, micro_batch, 1.0, 4.0, KernelClass::reduction);
    builder_.set_host_issue(longest, 1, true);
    // cu_seqlens: cumsum and F.pad.
    const OpRef offsets = elementwise("unpad_offsets_" + name, micro_batch, 1.0, 8.0, KernelClass::reduction);
    builder_.set_host_issue(offsets, 2, false);
    // index_first_axis: a torch.gather of every row (reads and writes the tensor).
    (void)compute("unpad_gather_" + name, KernelClass::memcpy, Precision::fp32, 0.0,
                  2.0 * s.tokens * t.width * s.activation_bytes);
  }
}

void StageGenerator::pad_attention_output() {
  if (!training_.unpad_attention) return;
  const Sizes& s = sizes_;
  const double output = s.tokens * s.query_heads * s.v_dim * s.activation_bytes;
  (void)compute("pad_output_zeros", KernelClass::memcpy, Precision::fp32, 0.0, output);
  (void)compute("pad_output_index_put", KernelClass::memcpy, Precision::fp32, 0.0, 2.0 * output);
}

void StageGenerator::pad_attention_output_backward() {
  if (!training_.unpad_attention) return;
  const Sizes& s = sizes_;
  // grad_output[indices]: the output gradient's rows gathered.
  (void)compute("pad_output_bwd_gather", KernelClass::memcpy, Precision::fp32, 0.0,
                2.0 * s.tokens * s.query_heads * s.v_dim * s.activation_bytes);
}

void StageGenerator::unpad_attention_inputs_backward() {
  if (!training_.unpad_attention) return;
  const Sizes& s = sizes_;
  // Autograd reaches the gathers in the reverse order of the forward: V, K, Q. Each: torch.zeros, then scatter_.
  const std::array<UnpaddedTensor, 3> tensors = unpadded_tensors(s.query_heads, s.kv_heads, s.qk_dim, s.v_dim);
  for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
    const std::string name(t->name);
    const double bytes = s.tokens * t->width * s.activation_bytes;
    (void)compute("unpad_bwd_zeros_" + name, KernelClass::memcpy, Precision::fp32, 0.0, bytes);
    (void)compute("unpad_bwd_scatter_" + name, KernelClass::memcpy, Precision::fp32, 0.0, 2.0 * bytes);
  }
}

}  // namespace chopsim::detail
