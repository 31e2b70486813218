// The roofline's two limits (Williams et al., CACM 2009): compute-bound kernels take F / (peak * eta),
// memory-bound kernels B / (BW * eta), and only the compute limit moves with the core clock.

#include "chopsim/models/compute_model.hpp"

#include <gtest/gtest.h>

namespace chopsim {
namespace {

ComputeParams h100_like() {
  ComputeParams params;
  params.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] = 989.4e12;  // H100 SXM dense bf16
  params.peak_flops_per_s[static_cast<std::size_t>(Precision::fp32)] = 66.9e12;
  params.hbm_bandwidth_bytes_per_s = 3.35e12;
  params.boost_clock_hz = 1.98e9;
  for (auto& e : params.efficiency) e = {1.0, 1.0, 0.0};
  return params;
}

std::unique_ptr<ComputeModel> roofline(const ComputeParams& params) {
  ComputeModelRegistry registry("compute model");
  register_builtin_compute_models(registry);
  return registry.create("roofline", params);
}

TEST(Roofline, ComputeBoundKernelTakesFlopsOverPeak) {
  const auto model = roofline(h100_like());
  // 8192^3 GEMM: 2*M*N*K FLOPs, 3 bf16 matrices -> arithmetic intensity ~2700 FLOP/byte, far above the ridge (~295).
  const double n = 8192;
  const KernelWork gemm{KernelClass::gemm, Precision::bf16, 2 * n * n * n, 3 * n * n * 2};
  const auto timing = model->timing(gemm, 1.98e9);
  EXPECT_FALSE(timing.memory_bound);
  EXPECT_DOUBLE_EQ(timing.duration_s, gemm.flops / 989.4e12);
  EXPECT_DOUBLE_EQ(timing.ideal_s, timing.duration_s);
}

TEST(Roofline, MemoryBoundKernelTakesBytesOverBandwidth) {
  const auto model = roofline(h100_like());
  const KernelWork add{KernelClass::elementwise, Precision::fp32, 1e9, 12e9};  // 1 FLOP per 12 bytes
  const auto timing = model->timing(add, 1.98e9);
  EXPECT_TRUE(timing.memory_bound);
  EXPECT_DOUBLE_EQ(timing.duration_s, 12e9 / 3.35e12);
}

TEST(Roofline, OnlyTheComputeLimitScalesWithClock) {
  const auto model = roofline(h100_like());
  const KernelWork gemm{KernelClass::gemm, Precision::bf16, 1e12, 1e6};
  const KernelWork copy{KernelClass::memcpy, Precision::bf16, 0, 1e9};
  EXPECT_NEAR(model->duration_s(gemm, 0.99e9) / model->duration_s(gemm, 1.98e9), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(model->duration_s(copy, 0.99e9), model->duration_s(copy, 1.98e9));
}

TEST(Roofline, EfficienciesAndLaunchOverheadApply) {
  auto params = h100_like();
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.7, 0.8, 0.0};
  params.launch_overhead_s = 5e-6;
  const auto model = roofline(params);
  const KernelWork gemm{KernelClass::gemm, Precision::bf16, 1e12, 1e6};
  const auto timing = model->timing(gemm, 1.98e9);
  EXPECT_DOUBLE_EQ(timing.duration_s, 1e12 / (989.4e12 * 0.7) + 5e-6);
  EXPECT_DOUBLE_EQ(timing.launch_s, 5e-6);
  EXPECT_DOUBLE_EQ(timing.ideal_s, 1e12 / 989.4e12);
}

TEST(Roofline, SmallGemmsReachLessOfThePeak) {
  auto params = h100_like();
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.8, 1.0, 1e10};
  const auto model = roofline(params);
  const KernelWork small{KernelClass::gemm, Precision::bf16, 1e10, 1};
  const KernelWork large{KernelClass::gemm, Precision::bf16, 1e14, 1};
  // At F = half_efficiency_flops the efficiency is half of its maximum.
  EXPECT_NEAR(small.flops / model->duration_s(small, 1.98e9), 0.4 * 989.4e12, 1e3);
  EXPECT_GT(large.flops / model->duration_s(large, 1.98e9), 0.79 * 989.4e12);
}

TEST(Roofline, AGroupedGemmTakesAsLongAsItsGemmsOneAfterAnother) {
  // 16 experts' GEMMs in one grouped kernel: as long as 16 GEMMs of a sixteenth of the work back to back (without
  // their launch overheads), compute-bound or memory-bound; and slower than one GEMM of all the work, whose size
  // the efficiency would overrate.
  auto params = h100_like();
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.8, 0.9, 8e9};
  params.launch_overhead_s = 3e-6;
  const auto model = roofline(params);
  for (const double bytes : {4e8, 4e11}) {
    KernelWork grouped{KernelClass::gemm, Precision::bf16, 2.06e11, bytes};
    grouped.problems = 16;
    const KernelWork one_expert{KernelClass::gemm, Precision::bf16, 2.06e11 / 16, bytes / 16};
    const KernelTiming g = model->timing(grouped, 1.98e9);
    const KernelTiming e = model->timing(one_expert, 1.98e9);
    EXPECT_NEAR(g.duration_s - g.launch_s, 16 * (e.duration_s - e.launch_s), 1e-12 * g.duration_s) << bytes;
  }
  KernelWork grouped{KernelClass::gemm, Precision::bf16, 2.06e11, 4e8};
  const double as_one = model->duration_s(grouped, 1.98e9);
  grouped.problems = 16;
  // eta(12.9 GFLOP) / eta(206 GFLOP) = (12.9 / 20.9) / (206 / 214): 1.56x as long.
  EXPECT_NEAR((model->duration_s(grouped, 1.98e9) - 3e-6) / (as_one - 3e-6),
              (2.06e11 / (2.06e11 + 8e9)) / (2.06e11 / 16 / (2.06e11 / 16 + 8e9)), 1e-9);
}

TEST(Roofline, UnalignedGemmsSlowOnlyTheArithmeticLimit) {
  auto params = h100_like();
  params.unaligned_gemm_slowdown = 3.0;
  const auto model = roofline(params);
  KernelWork gemm{KernelClass::gemm, Precision::bf16, 1e12, 1e6};
  const KernelTiming aligned = model->timing(gemm, 1.98e9);
  gemm.unaligned = true;
  const KernelTiming unaligned = model->timing(gemm, 1.98e9);
  EXPECT_DOUBLE_EQ(unaligned.duration_s, 3.0 * aligned.duration_s);
  EXPECT_DOUBLE_EQ(unaligned.ideal_s, aligned.ideal_s);  // the fallback's extra time is efficiency loss
  // A memory-bound kernel stays at its bandwidth limit while 3x its arithmetic time still fits under it.
  KernelWork copy_like{KernelClass::gemm, Precision::bf16, 1e9, 1e10, true};
  EXPECT_DOUBLE_EQ(model->duration_s(copy_like, 1.98e9), 1e10 / 3.35e12);
  params.unaligned_gemm_slowdown = 0.5;
  EXPECT_THROW((void)roofline(params), ModelError);
}

TEST(Roofline, Fp8GemmsReachTheRatioOfTheBf16ShareOfTheirPeak) {
  // H100: the best measured fp8 matmul reaches 70.9 % of the 1,978.9 TFLOP/s fp8 peak where bf16 reaches 80.3 % of
  // 989.4 (stas00/ml-engineering MAMF table): an fp8 GEMM 2 x 0.883 = 1.77x as fast as a bf16 one, not 2x.
  auto params = h100_like();
  params.peak_flops_per_s[static_cast<std::size_t>(Precision::fp8)] = 1978.9e12;
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.80, 1.0, 0.0};
  params.fp8_gemm_efficiency_ratio = 0.883;
  const auto model = roofline(params);
  const double n = 8192;  // compute-bound at either precision
  const KernelWork bf16_gemm{KernelClass::gemm, Precision::bf16, 2 * n * n * n, 3 * n * n * 2};
  const KernelWork fp8_gemm{KernelClass::gemm, Precision::fp8, 2 * n * n * n, 3 * n * n};
  const KernelTiming bf16 = model->timing(bf16_gemm, 1.98e9);
  const KernelTiming fp8 = model->timing(fp8_gemm, 1.98e9);
  EXPECT_NEAR(bf16.duration_s / fp8.duration_s, 1978.9 / 989.4 * 0.883, 1e-9);
  EXPECT_DOUBLE_EQ(fp8.duration_s, fp8_gemm.flops / (1978.9e12 * 0.80 * 0.883));
  EXPECT_DOUBLE_EQ(fp8.ideal_s, fp8_gemm.flops / 1978.9e12);  // the shortfall is efficiency loss
  // Only GEMMs: an fp8 attention kernel keeps its class's efficiency.
  const KernelWork fp8_attention{KernelClass::attention, Precision::fp8, 2 * n * n * n, 3 * n * n};
  EXPECT_DOUBLE_EQ(model->duration_s(fp8_attention, 1.98e9), fp8_attention.flops / 1978.9e12);
  // A GPU without fp8 units runs fp8 GEMMs as bf16 ones, at the bf16 efficiency.
  params.peak_flops_per_s[static_cast<std::size_t>(Precision::fp8)] = 0.0;
  EXPECT_DOUBLE_EQ(roofline(params)->duration_s(fp8_gemm, 1.98e9), bf16.duration_s);
  params.fp8_gemm_efficiency_ratio = 1.2;
  EXPECT_THROW((void)roofline(params), ModelError);
}

TEST(Roofline, DeterministicAttentionBackwardTakesTheHardwaresFactorLonger) {
  auto params = h100_like();
  params.deterministic_attention.backward_slowdown = 1.5;
  const auto model = roofline(params);
  KernelWork backward{KernelClass::attention, Precision::bf16, 1e12, 1e6};
  const KernelTiming free_order = model->timing(backward, 1.98e9);
  backward.deterministic = true;
  const KernelTiming ordered = model->timing(backward, 1.98e9);
  EXPECT_DOUBLE_EQ(ordered.duration_s, 1.5 * free_order.duration_s);
  EXPECT_DOUBLE_EQ(ordered.ideal_s, free_order.ideal_s);  // counted as efficiency loss
  // The factor is the kernel's, whichever limit binds: a memory-bound call (short sequences) also takes 1.5x.
  KernelWork short_sequences{KernelClass::attention, Precision::bf16, 1e9, 1e10, false, true};
  EXPECT_DOUBLE_EQ(model->duration_s(short_sequences, 1.98e9), 1.5 * 1e10 / 3.35e12);
  // Only attention kernels have a deterministic variant with a cost; a flagged GEMM is unchanged.
  KernelWork gemm{KernelClass::gemm, Precision::bf16, 1e12, 1e6, false, true};
  EXPECT_DOUBLE_EQ(model->duration_s(gemm, 1.98e9), 1e12 / 989.4e12);
  params.deterministic_attention.backward_slowdown = 0.9;
  EXPECT_THROW((void)roofline(params), ModelError);
}

TEST(Roofline, AttentionWithDropoutTakesTheHardwaresFactorLonger) {
  auto params = h100_like();
  params.attention_dropout_slowdown = 1.034;
  const auto model = roofline(params);
  KernelWork attention{KernelClass::attention, Precision::bf16, 1e12, 1e6};
  const KernelTiming plain = model->timing(attention, 1.98e9);
  attention.dropout = true;
  const KernelTiming dropped = model->timing(attention, 1.98e9);
  EXPECT_DOUBLE_EQ(dropped.duration_s, 1.034 * plain.duration_s);
  EXPECT_DOUBLE_EQ(dropped.ideal_s, plain.ideal_s);  // counted as efficiency loss
  // Memory-bound calls too, and on top of the deterministic backward's factor.
  params.deterministic_attention.backward_slowdown = 1.5;
  KernelWork short_sequences{KernelClass::attention, Precision::bf16, 1e9, 1e10, false, true, true};
  EXPECT_DOUBLE_EQ(roofline(params)->duration_s(short_sequences, 1.98e9), 1.5 * 1.034 * 1e10 / 3.35e12);
  // Dropout elsewhere is its own elementwise kernel: a flagged GEMM is unchanged.
  KernelWork gemm{KernelClass::gemm, Precision::bf16, 1e12, 1e6, false, false, true};
  EXPECT_DOUBLE_EQ(model->duration_s(gemm, 1.98e9), 1e12 / 989.4e12);
  params.attention_dropout_slowdown = 0.97;
  EXPECT_THROW((void)roofline(params), ModelError);
}

// PyTorch's TensorIterator kernels move their bytes at their path's share of HBM (ElementwisePath): the same 1 GB at
// 0.89 vectorized and 0.43 strided (H200's measured shares) takes 2.07x as long; a fused kernel keeps the class's.
TEST(Roofline, PytorchKernelsMoveTheirBytesAtTheirPathsShare) {
  auto params = h100_like();
  params.efficiency[static_cast<std::size_t>(KernelClass::elementwise)] = {0.5, 0.8, 0.0};
  params.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::vectorized)] = 0.89;
  params.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::strided)] = 0.43;
  const auto model = roofline(params);
  KernelWork work{KernelClass::elementwise, Precision::fp32, 1e8, 1e9};
  EXPECT_DOUBLE_EQ(model->duration_s(work, 1.98e9), 1e9 / (3.35e12 * 0.8));
  work.elementwise_path = ElementwisePath::vectorized;
  EXPECT_DOUBLE_EQ(model->duration_s(work, 1.98e9), 1e9 / (3.35e12 * 0.89));
  work.elementwise_path = ElementwisePath::strided;
  const auto strided = model->timing(work, 1.98e9);
  EXPECT_DOUBLE_EQ(strided.duration_s, 1e9 / (3.35e12 * 0.43));
  // The ideal time stays the bytes at full bandwidth: the difference is kernel-efficiency loss.
  EXPECT_DOUBLE_EQ(strided.ideal_s, 1e9 / 3.35e12);
  // A path the GPU has no figure for keeps the class's efficiency.
  work.elementwise_path = ElementwisePath::unrolled;
  EXPECT_DOUBLE_EQ(model->duration_s(work, 1.98e9), 1e9 / (3.35e12 * 0.8));
  // Out of range is refused.
  params.elementwise_path_memory[static_cast<std::size_t>(ElementwisePath::unrolled)] = 1.2;
  EXPECT_THROW((void)roofline(params), ModelError);
}

TEST(Roofline, HostToDeviceCopiesRunAtTheHostLinkRate) {
  auto params = h100_like();
  params.host_to_device_bytes_per_s = 64e9;
  const auto model = roofline(params);
  KernelWork copy{KernelClass::memcpy, Precision::fp32, 0.0, 134217728.0};
  copy.host_to_device = true;
  // bytes / link, at any clock (a copy engine, not the SMs); all of it is ideal time.
  const KernelTiming fast = model->timing(copy, 1.98e9);
  EXPECT_DOUBLE_EQ(fast.duration_s, 134217728.0 / 64e9 + params.launch_overhead_s);
  EXPECT_DOUBLE_EQ(fast.ideal_s, 134217728.0 / 64e9);
  EXPECT_DOUBLE_EQ(model->timing(copy, 0.9e9).duration_s, fast.duration_s);
  // The same bytes from HBM take 1/50 of that.
  copy.host_to_device = false;
  EXPECT_LT(model->duration_s(copy, 1.98e9) * 40.0, fast.duration_s);
  copy.host_to_device = true;
  params.host_to_device_bytes_per_s = 0.0;
  EXPECT_THROW((void)roofline(params)->timing(copy, 1.98e9), ModelError);
}

TEST(Roofline, MissingPrecisionFallsBackOrFails) {
  auto params = h100_like();
  const auto model = roofline(params);
  // No fp8 rate given: fp8 kernels run at the bf16 rate.
  const KernelWork fp8{KernelClass::gemm, Precision::fp8, 1e12, 1};
  EXPECT_DOUBLE_EQ(model->duration_s(fp8, 1.98e9), 1e12 / 989.4e12);
  const KernelWork fp16{KernelClass::gemm, Precision::fp16, 1e12, 1};
  EXPECT_THROW((void)model->duration_s(fp16, 1.98e9), ModelError);
}

TEST(Roofline, RejectsParametersWithoutBandwidthOrClock) {
  ComputeParams params;
  EXPECT_THROW((void)roofline(params), ModelError);
}

}  // namespace
}  // namespace chopsim
