// A Mamba-2 mixer's kernels as Megatron-Core's MambaMixer runs them on its memory-efficient path (mamba_mixer.py,
// _ssm_training) through mamba_ssm's mamba_split_conv1d_scan_combined (ops/triton/ssd_combined.py). Checked against
// what follows from that code: the launches of the forward (the parameter transforms, the convolution, the five scan
// kernels of _mamba_chunk_scan_combined_fwd, the RMSNorm after the gate) and of the backward (the recomputation, the
// gradient kernels of _mamba_chunk_scan_combined_bwd in their order, the decay-gradient bookkeeping between them), the
// transposes that a micro-batch of more than one sequence copies, and the backward scan kernels' tensor-core FLOPs,
// each kernel's tl.dot products.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "chopsim/models/workload.hpp"
#include "tiny_models.hpp"

namespace chopsim {
namespace {

constexpr double kHeads = 8, kHeadDim = 16, kState = 16, kGroups = 2, kChunk = 64;
constexpr int kSeqLen = 256;

/// One Mamba-2 layer and one MLP layer on one GPU, `micro_batch` sequences per micro-batch, one micro-batch.
test::TinyRun mamba_run(int micro_batch) {
  test::TinyRun r;
  r.model.name = "tiny-mamba";
  r.model.layers = 2;
  r.model.hybrid_pattern = "M-";
  r.model.mamba_heads = static_cast<int>(kHeads);
  r.model.mamba_head_dim = static_cast<int>(kHeadDim);
  r.model.mamba_state_dim = static_cast<int>(kState);
  r.model.mamba_groups = static_cast<int>(kGroups);
  r.model.mamba_chunk_size = static_cast<int>(kChunk);
  r.training.micro_batch = micro_batch;
  r.training.seq_len = kSeqLen;
  r.training.global_batch = micro_batch;
  return r;
}

/// The mixer's own kernels: its ops but the projections (in_proj, out_proj and their gradients) and the layer's
/// residual add.
bool is_mixer_kernel(std::string_view name) {
  return name.starts_with("mamba_") && !name.starts_with("mamba_in_proj_d") && !name.starts_with("mamba_in_proj_w") &&
         !name.starts_with("mamba_out_proj") && !name.starts_with("mamba_residual") && name != "mamba_in_proj";
}

struct MixerCost {
  double launches = 0.0;
  double scan_flops = 0.0;  ///< GEMM-class (tensor-core) FLOPs
  int copies = 0;           ///< the transposes' memcpy kernels
};

MixerCost mixer_cost(const test::TinyRun& run, Pass pass) {
  const Workload workload = build_workload(run.model, run.parallelism, run.training);
  const Program& program = workload.program(0);
  MixerCost cost;
  for (const IssueStep& step : program.issue_order) {
    const Op& op = program.streams[step.stream].ops[step.op];
    if (op.kind != OpKind::compute || op.pass != pass || !is_mixer_kernel(workload.name(op))) continue;
    cost.launches += step.launches;
    if (op.kernel_class == KernelClass::gemm) cost.scan_flops += op.flops;
    if (op.kernel_class == KernelClass::memcpy) ++cost.copies;
  }
  return cost;
}

// Forward: A_log's cast, exp and negation and dt_bias's cast (4), causal_conv1d_fwd (1), _chunk_cumsum_fwd,
// _chunk_state_fwd, _state_passing_fwd, _bmm_chunk_fwd, _chunk_scan_fwd (5), the RMSNorm (1).
// Backward: the RMSNorm's gradient and the sum of its weight's partial gradients (2); causal_conv1d_fwd again (1);
// dt.clone(), _chunk_cumsum_fwd, _bmm_chunk_fwd, _chunk_state_fwd, _state_passing_fwd (5); _chunk_scan_bwd_dz,
// _chunk_scan_bwd_dstates, _state_passing_bwd, _chunk_scan_chunk_state_bwd_dx, _chunk_state_bwd_db,
// _chunk_scan_bwd_dC, _chunk_scan_bwd_dcb (7); _bmm_chunk_bwd into dB and into dC (2); the decay gradient's
// +=, flip, cumsum, flip and the two adds (6); _chunk_scan_bwd_ddAcs_stable, _chunk_cumsum_bwd (2);
// causal_conv1d_bwd (1); autograd through the four parameter transforms (4).
TEST(Mamba, TheMixerLaunchesTheCombinedScansKernels) {
  EXPECT_DOUBLE_EQ(mixer_cost(mamba_run(1), Pass::forward).launches, 4 + 1 + 5 + 1);
  EXPECT_DOUBLE_EQ(mixer_cost(mamba_run(1), Pass::backward).launches, 2 + 1 + 5 + 7 + 2 + 6 + 2 + 1 + 4);
  EXPECT_EQ(mixer_cost(mamba_run(1), Pass::forward).copies, 0);
}

// rearrange("l b d -> b l d").contiguous() of in_proj's output and back for the scan's output are views for one
// sequence and copies for more; the backward copies their gradients.
TEST(Mamba, AMicroBatchOfSeveralSequencesCopiesTheTransposes) {
  EXPECT_EQ(mixer_cost(mamba_run(2), Pass::forward).copies, 2);
  EXPECT_EQ(mixer_cost(mamba_run(2), Pass::backward).copies, 2 + 1);  // and dt.clone()
  EXPECT_EQ(mixer_cost(mamba_run(1), Pass::backward).copies, 1);
  EXPECT_DOUBLE_EQ(mixer_cost(mamba_run(2), Pass::forward).launches,
                   mixer_cost(mamba_run(1), Pass::forward).launches + 2);
}

// The backward's tensor-core work per token, kernel by kernel (Q chunk, N state, P head dim, H heads, G groups):
// the recomputed C B^T (2QNG) and chunk states (2NPH); the states' gradient (2NPH); x's (2QPH within the chunk +
// 2NPH from the states); B's (2NPH); C's (2NPH); C B^T's (2QPH); its products into B and C (2 x 2QNG); the decays'
// within the chunk (2QPH). The forward does 2QNG + 2QPH + 4NPH.
TEST(Mamba, TheBackwardScanKernelsDoTheirProducts) {
  const double tokens = kSeqLen;
  const double qng = 2.0 * kChunk * kState * kGroups, nph = 2.0 * kState * kHeadDim * kHeads,
               qph = 2.0 * kChunk * kHeadDim * kHeads;
  EXPECT_NEAR(mixer_cost(mamba_run(1), Pass::forward).scan_flops, tokens * (qng + qph + 2.0 * nph), 1e-6);
  EXPECT_NEAR(mixer_cost(mamba_run(1), Pass::backward).scan_flops, tokens * (3.0 * qng + 5.0 * nph + 3.0 * qph), 1e-6);
}

}  // namespace
}  // namespace chopsim
