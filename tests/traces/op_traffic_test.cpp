// HBM bytes of memory-bound PyTorch ops from their recorded shapes (traces/src/op_traffic.hpp): each rule against
// the count of bytes a bandwidth-bound kernel must read and write, worked out by hand for the shapes below.
#include "op_traffic.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace chopsim::detail {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

OpTensor tensor(std::vector<std::int64_t> dims, double element_bytes) {
  return OpTensor{std::move(dims), element_bytes};
}
OpTensor scalar() { return OpTensor{{}, kNone}; }
std::optional<double> bytes_of(std::string_view op, const std::vector<OpTensor>& inputs) {
  return memory_bound_op_bytes(op, inputs);
}

TEST(OpTraffic, OutOfPlaceElementwiseReadsInputsAndWritesTheBroadcastResultInTheWidestType) {
  // RMSNorm's x * rsqrt(var): [4, 4096, 2048] fp32 times [4, 4096, 1] fp32 -> [4, 4096, 2048] fp32.
  const double n = 4.0 * 4096 * 2048;
  const std::vector<OpTensor> scale{tensor({4, 4096, 2048}, 4), tensor({4, 4096, 1}, 4)};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::mul", scale), 4 * n + 4 * 4096.0 * 4 + 4 * n);
  // Rotary's q * cos: bf16 [4, 32, 4096, 64] times fp32 [1, 1, 4096, 64] -> fp32 (PyTorch's promotion).
  const double q = 4.0 * 32 * 4096 * 64;
  const std::vector<OpTensor> rotary{tensor({4, 32, 4096, 64}, 2), tensor({1, 1, 4096, 64}, 4)};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::mul", rotary), 2 * q + 4 * 4096.0 * 64 + 4 * q);
  // A Scalar operand moves nothing: pow(x, 2) on fp32 reads and writes x.
  EXPECT_DOUBLE_EQ(*bytes_of("aten::pow", {tensor({1024}, 4), scalar()}), 8.0 * 1024);
}

TEST(OpTraffic, InPlaceOpsReadAndWriteTheirFirstInputButCopiesAndFillsOnlyWriteIt) {
  const std::vector<OpTensor> add{tensor({1000}, 4), tensor({1000}, 4), scalar()};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::add_", add), 12.0 * 1000);
  // copy_(dst bf16, src fp32): the autocast cast, 2 + 4 bytes per element.
  EXPECT_DOUBLE_EQ(*bytes_of("aten::copy_", {tensor({1000}, 2), tensor({1000}, 4), scalar()}), 6000.0);
  EXPECT_DOUBLE_EQ(*bytes_of("aten::fill_", {tensor({1000}, 4), scalar()}), 4000.0);
}

TEST(OpTraffic, ReductionsSoftmaxAndNorms) {
  EXPECT_DOUBLE_EQ(*bytes_of("aten::mean", {tensor({8, 512}, 4), scalar()}), 4.0 * 8 * 512);
  // log_softmax reads the fp32 logits and writes the fp32 log-probabilities; its backward reads the gradient and
  // the output and writes the input gradient.
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_log_softmax", {tensor({16, 100}, 4), scalar(), scalar()}), 12800.0);
  EXPECT_DOUBLE_EQ(
      *bytes_of("aten::_log_softmax_backward_data", {tensor({16, 100}, 4), tensor({16, 100}, 4), scalar(), scalar()}),
      19200.0);
  // A fused LayerNorm reads x (and the weight) and writes y.
  EXPECT_DOUBLE_EQ(
      *bytes_of("aten::native_layer_norm", {tensor({10, 64}, 2), scalar(), tensor({64}, 2), tensor({64}, 2), scalar()}),
      2.0 * 640 + 256 + 2.0 * 640);
}

TEST(OpTraffic, SoftmaxOverRowsTooLongForSharedMemoryReadsTheRowThreeTimes) {
  // The H200 probe's loss: log_softmax over 16,384 rows of 128,256 fp32 logits (501 KiB per row, past the 48 KiB a
  // block's shared memory holds): PyTorch's cunn_SoftMaxForward reads each row for its maximum, for the sum of
  // exponentials and for the output it writes; cunn_SoftMaxBackward reads the output gradient for its sum and again
  // with the output for the result.
  const double n = 16384.0 * 128256;
  const std::vector<OpTensor> logits{tensor({16384, 128256}, 4), scalar(), scalar()};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_log_softmax", logits), (3 * 4 + 4) * n);
  const std::vector<OpTensor> backward{tensor({16384, 128256}, 4), tensor({16384, 128256}, 4), scalar(), scalar()};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_log_softmax_backward_data", backward), (2 * 4 + 4 + 4) * n);
  // Rows of 8,192 fp32 (32 KiB) fit in shared memory: one read and one write; so do 2,048 bf16 attention scores.
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_softmax", {tensor({64, 8192}, 4), scalar(), scalar()}), 8.0 * 64 * 8192);
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_softmax", {tensor({64, 2048}, 2), scalar(), scalar()}), 4.0 * 64 * 2048);
  // 16,384 bf16 (32 KiB) still do; 16,384 fp32 (64 KiB) do not.
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_softmax", {tensor({8, 16384}, 2), scalar(), scalar()}), 4.0 * 8 * 16384);
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_softmax", {tensor({8, 16384}, 4), scalar(), scalar()}), 16.0 * 8 * 16384);
}

TEST(OpTraffic, FusedAdamNeedsItsListShapesAndAssumesFp32State) {
  OpTensor params{{}, kNone, 1000.0};
  EXPECT_DOUBLE_EQ(*bytes_of("aten::_fused_adamw_", {params, params, params, params}), 28000.0);
  // PyTorch 2.11 records no dims for TensorLists: nothing to say.
  EXPECT_FALSE(bytes_of("aten::_fused_adamw_", {OpTensor{{}, kNone, 0.0}}).has_value());
}

TEST(OpTraffic, UnknownOpsAndOpsWithoutTensorsGiveNothing) {
  EXPECT_FALSE(has_memory_bound_rule("aten::index_select"));
  EXPECT_FALSE(bytes_of("aten::index_select", {tensor({10}, 4)}).has_value());
  EXPECT_FALSE(bytes_of("aten::mul", {scalar(), scalar()}).has_value());
  EXPECT_TRUE(has_memory_bound_rule("aten::mul_"));  // the in-place form of a known op
  EXPECT_FALSE(has_memory_bound_rule("aten::mm"));
}

}  // namespace
}  // namespace chopsim::detail
