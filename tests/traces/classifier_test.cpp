// Kernel names below are copied from the traces in ../shared/data/traces (Kineto A100/H100/B200/MI300X,
// rocprofv3 MI350X, nsys A100); each must land in the class the compute model uses for it.
#include "chopsim/traces/classifier.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace chopsim {
namespace {

struct Case {
  const char* name;
  KernelClass expected;
};

// What ctest lists for each case (instead of "16-byte object <...>"): the kernel name, shortened, and its class.
void PrintTo(const Case& c, std::ostream* os) {
  const std::string name = c.name;
  *os << (name.size() > 48 ? name.substr(0, 45) + "..." : name) << " -> " << kernel_class_name(c.expected);
}

class ClassifierTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClassifierTest, ClassifiesRealKernelNames) {
  const Case& c = GetParam();
  EXPECT_EQ(kernel_class_name(classify_kernel_name(c.name)), kernel_class_name(c.expected)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    RealNames, ClassifierTest,
    ::testing::Values(
        // GEMM: cuBLAS, CUTLASS, Tensile, nvjet, TRT-LLM, MIOpen/cuDNN convolutions (implicit GEMM)
        Case{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
             "kernel__5x_cublas",
             KernelClass::gemm},
        Case{"nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", KernelClass::gemm},
        Case{"ampere_sgemm_128x64_nn", KernelClass::gemm}, Case{"volta_sgemm_64x64_nt", KernelClass::gemm},
        Case{"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align1>(cutlass_80_tensorop_"
             "s1688gemm_256x128_32x3_nt_align1::Params)",
             KernelClass::gemm},
        Case{"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256_MI16x16x1_SN_LDSB0_AFC0_AFEM1_AFEM1_ASEM1",
             KernelClass::gemm},
        Case{"bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut",
             KernelClass::gemm},
        Case{"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>()",
             KernelClass::gemm},
        Case{"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", KernelClass::gemm},
        Case{"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2", KernelClass::gemm},
        // attention
        Case{"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4>>()",
             KernelClass::attention},
        Case{"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
             KernelClass::attention},
        Case{"attn_fwd", KernelClass::attention}, Case{"bwd_kernel_fuse.kd", KernelClass::attention},
        // elementwise
        Case{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
             "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
             KernelClass::elementwise},
        Case{"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<"
             "float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
             "{lambda(int)#1})",
             KernelClass::elementwise},
        Case{"fused_dropout_kernel_vec", KernelClass::elementwise},
        Case{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>()", KernelClass::elementwise},
        Case{"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>()",
             KernelClass::elementwise},
        // norm
        Case{"vectorized_layer_norm_kernel", KernelClass::norm}, Case{"cuComputePartGradGammaBeta", KernelClass::norm},
        Case{"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>()", KernelClass::norm},
        Case{"void vllm::rms_norm_kernel<c10::BFloat16>()", KernelClass::norm},
        // reduction
        Case{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
             "float, float>, unsigned int, float, 4> >()",
             KernelClass::reduction},
        Case{"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false>()",
             KernelClass::reduction},
        Case{"lpnorm_cleanup", KernelClass::reduction},
        // communication
        Case{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
             KernelClass::communication},
        Case{"ncclDevKernel_Generic_1", KernelClass::communication},
        Case{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelClass::communication},
        // memcpy / memset
        Case{"Memcpy HtoD (Pinned -> Device)", KernelClass::memcpy}, Case{"Memset (Device)", KernelClass::memcpy},
        Case{"__amd_rocclr_copyBuffer.kd", KernelClass::memcpy},
        Case{"__amd_rocclr_fillBufferAligned.kd", KernelClass::memcpy},
        Case{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16>()", KernelClass::memcpy},
        // optimizer
        Case{"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>()",
             KernelClass::optimizer},
        Case{"multi_tensor_apply_kernel", KernelClass::optimizer},
        // other
        Case{"void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800>()",
             KernelClass::other},
        Case{"triton__0d1d2d3d", KernelClass::other}, Case{"par_ranged2d_kernel", KernelClass::other}));

TEST(Classifier, UnknownKernelLaunchedByGemmOpIsGemm) {
  EXPECT_EQ(classify_kernel("gemmk1_kernel_weird_name_xyz", ""), KernelClass::gemm);  // "gemm" in the name
  EXPECT_EQ(classify_kernel("Kernel2", ""), KernelClass::other);
  EXPECT_EQ(classify_kernel("Kernel2", "aten::mm"), KernelClass::gemm);
  EXPECT_EQ(classify_kernel("Kernel2", "aten::_scaled_dot_product_flash_attention"), KernelClass::attention);
  // The op only decides for names that say nothing: an elementwise kernel under aten::addmm stays elementwise.
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4>()", "aten::addmm"),
            KernelClass::elementwise);
}

// PyTorch's elementwise kernels by TensorIterator path, names as Kineto shows them on H200 (CUDA) and MI300X (ROCm)
// (../shared/data/measured/h200_llama32_1b, traces/kineto/tracelens_mi300x_qwen05b.json.gz).
TEST(Classifier, ElementwisePathFromPytorchKernelNames) {
  EXPECT_EQ(
      classify_elementwise_path("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_"
                                "cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >"),
      ElementwisePath::vectorized);
  EXPECT_EQ(
      classify_elementwise_path("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
                                "at::TensorIteratorBase&)::{lambda()#3}::operator()() const"),
      ElementwisePath::unrolled);
  EXPECT_EQ(classify_elementwise_path("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
                                      "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::"
                                      "MulFunctor<float> > >(at::TensorIteratorBase&, ...)"),
            ElementwisePath::strided);
  EXPECT_EQ(
      classify_elementwise_path("void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_"
                                "impl_nocast<at::native::BinaryFunctor<c10::BFloat16> >"),
      ElementwisePath::strided);
  // Kernels of their own: a cat, Transformer Engine's fused RMSNorm, a Triton kernel.
  EXPECT_EQ(
      classify_elementwise_path("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int>"),
      ElementwisePath::fused);
  EXPECT_EQ(classify_elementwise_path("void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel<...>"),
            ElementwisePath::fused);
  EXPECT_EQ(classify_elementwise_path("triton_poi_fused_add_mul_0"), ElementwisePath::fused);
  // PyTorch's multi-pass softmax over a vocabulary's rows (the H200 trace's loss) streams as vectorized kernels do;
  // its on-chip variants for shorter rows are kernels of their own.
  EXPECT_EQ(classify_elementwise_path("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, "
                                      "float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, "
                                      "float const*, int)"),
            ElementwisePath::vectorized);
  EXPECT_EQ(classify_elementwise_path("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, "
                                      "float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, "
                                      "float const*, float const*, long)"),
            ElementwisePath::vectorized);
  EXPECT_EQ(classify_elementwise_path("void at::native::(anonymous namespace)::cunn_SoftMaxForwardSmem<8, "
                                      "c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::"
                                      "SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)"),
            ElementwisePath::fused);
}

TEST(Classifier, CollectiveKindFromKernelAndOpNames) {
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"),
            CollectiveKind::all_reduce);
  EXPECT_EQ(collective_from_kernel_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            CollectiveKind::all_gather);
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            CollectiveKind::send_recv);
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)"),
            CollectiveKind::broadcast);
  EXPECT_FALSE(collective_from_kernel_name("ncclDevKernel_Generic_1").has_value());
  EXPECT_FALSE(collective_from_kernel_name("vectorized_elementwise_kernel").has_value());
  EXPECT_EQ(collective_from_op_name("allreduce"), CollectiveKind::all_reduce);
  EXPECT_EQ(collective_from_op_name("_allgather_base"), CollectiveKind::all_gather);
  EXPECT_EQ(collective_from_op_name("reduce_scatter_tensor_coalesced"), CollectiveKind::reduce_scatter);
  EXPECT_EQ(collective_from_op_name("all_to_all"), CollectiveKind::all_to_all);
  EXPECT_EQ(collective_from_op_name("broadcast"), CollectiveKind::broadcast);
  EXPECT_EQ(collective_from_op_name("send"), CollectiveKind::send_recv);
  EXPECT_EQ(collective_from_op_name("barrier"), CollectiveKind::all_reduce);
  EXPECT_FALSE(collective_from_op_name("wait").has_value());
}

}  // namespace
}  // namespace chopsim
