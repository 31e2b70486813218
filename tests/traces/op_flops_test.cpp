// FLOPs and bytes of GEMM and attention ops from their recorded shapes (traces/src/op_flops.hpp), against the counts
// worked out by hand: 2·M·N·K per GEMM, and FlashAttention's convention for attention (4·B·H·Sq·Sk·D forward, half
// of it causal, 2.5 times the forward for the backward).
#include "op_flops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace chopsim::detail {
namespace {

OpTensor tensor(std::vector<std::int64_t> dims, double element_bytes) {
  return OpTensor{std::move(dims), element_bytes};
}

TEST(OpFlops, GemmsCountTwoFlopsPerMultiplyAddAndEachOperandOnce) {
  // aten::mm [4096, 2048] x [2048, 8192] in bf16.
  const double m = 4096, k = 2048, n = 8192;
  const auto mm = gemm_cost("aten::mm", std::vector{tensor({4096, 2048}, 2), tensor({2048, 8192}, 2)});
  ASSERT_TRUE(mm.has_value());
  EXPECT_DOUBLE_EQ(mm->flops, 2 * m * n * k);
  EXPECT_DOUBLE_EQ(mm->bytes, 2 * (m * k + k * n + m * n));
  // aten::linear(x [2, 1024, 2048], weight [8192, 2048], bias [8192]): M = 2 * 1024 rows, the bias read too.
  const auto linear =
      gemm_cost("aten::linear", std::vector{tensor({2, 1024, 2048}, 2), tensor({8192, 2048}, 2), tensor({8192}, 2)});
  ASSERT_TRUE(linear.has_value());
  EXPECT_DOUBLE_EQ(linear->flops, 2 * 2048.0 * 8192 * 2048);
  EXPECT_DOUBLE_EQ(linear->bytes, 2 * (2048.0 * 2048 + 2048.0 * 8192 + 2048.0 * 8192 + 8192));
  // aten::bmm: a batch of 16 [128, 64] x [64, 128].
  const auto bmm = gemm_cost("aten::bmm", std::vector{tensor({16, 128, 64}, 4), tensor({16, 64, 128}, 4)});
  ASSERT_TRUE(bmm.has_value());
  EXPECT_DOUBLE_EQ(bmm->flops, 2 * 16.0 * 128 * 128 * 64);
  // The element type not recorded: FLOPs still, bytes unknown.
  const auto untyped = gemm_cost("aten::mm", std::vector{tensor({8, 8}, std::nan("")), tensor({8, 8}, std::nan(""))});
  ASSERT_TRUE(untyped.has_value());
  EXPECT_TRUE(std::isnan(untyped->bytes));
}

TEST(OpFlops, ShapesThatDoNotGiveMNAndKGiveNothing) {
  EXPECT_FALSE(gemm_cost("aten::mm", std::vector{tensor({4096}, 2), tensor({4096, 8}, 2)}).has_value());
  EXPECT_FALSE(gemm_cost("aten::mm", std::vector{tensor({4096, 0}, 2), tensor({0, 8}, 2)}).has_value());
  EXPECT_FALSE(gemm_cost("aten::add", std::vector{tensor({8, 8}, 2), tensor({8, 8}, 2)}).has_value());
  EXPECT_FALSE(is_gemm_op("aten::add"));
  EXPECT_TRUE(is_gemm_op("aten::addmm"));
}

TEST(OpFlops, AttentionFollowsFlashAttentionsConvention) {
  // SDPA flash forward, (batch, heads, sequence, head dim) = (2, 32, 4096, 128), bf16; is_causal is input 4.
  const AttentionSignature* forward = attention_signature("aten::_scaled_dot_product_flash_attention");
  ASSERT_NE(forward, nullptr);
  const OpTensor q = tensor({2, 32, 4096, 128}, 2);
  const std::vector<OpTensor> qkv{q, q, q};
  const double full = 4.0 * 2 * 32 * 4096 * 4096 * 128;
  const std::vector<std::string> not_causal{"", "", "", "0.0", "False"}, causal{"", "", "", "0.0", "True"};
  const auto dense = attention_cost(*forward, qkv, not_causal);
  ASSERT_TRUE(dense.has_value());
  EXPECT_DOUBLE_EQ(dense->flops, full);
  EXPECT_DOUBLE_EQ(dense->head_dim, 128.0);
  const double elements = 2.0 * 32 * 4096 * 128;
  EXPECT_DOUBLE_EQ(dense->bytes, 2 * (2 * elements + elements + elements));  // q, k, v read, the output written
  EXPECT_DOUBLE_EQ(attention_cost(*forward, qkv, causal)->flops, full / 2);
  // Its backward takes grad_out first, then q, k, v: 2.5 times the forward, causal halved.
  const AttentionSignature* backward = attention_signature("aten::_scaled_dot_product_flash_attention_backward");
  ASSERT_NE(backward, nullptr);
  std::vector<std::string> backward_causal(12, "");
  backward_causal[11] = "True";
  const auto grad = attention_cost(*backward, std::vector{q, q, q, q}, backward_causal);
  ASSERT_TRUE(grad.has_value());
  EXPECT_DOUBLE_EQ(grad->flops, 2.5 * full / 2);
  EXPECT_DOUBLE_EQ(grad->bytes, 2 * (4 * elements + 2 * elements + 2 * elements));
  // Too few 4-D inputs: nothing.
  EXPECT_FALSE(attention_cost(*forward, std::vector{q, q}, not_causal).has_value());
  EXPECT_EQ(attention_signature("aten::softmax"), nullptr);
}

}  // namespace
}  // namespace chopsim::detail
