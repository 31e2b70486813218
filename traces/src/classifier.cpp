#include "chopsim/traces/classifier.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "chopsim/common/text.hpp"

namespace chopsim {

namespace {

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view needle) { return text.find(needle) != std::string_view::npos; });
}

// The rules are checked in this order; the first match wins. Each list cites where the names come from.
KernelClass classify_lower(std::string_view n) {
  // GPU activities that are not kernels (Kineto "Memcpy HtoD (Pinned -> Device)", "Memset (Device)"), and the
  // copy/fill kernels ROCm's runtime (rocclr) launches for hipMemcpy/hipMemset (rocprofv3 MI350X trace).
  if (n.starts_with("memcpy") || n.starts_with("memset") || contains_any(n, {"rocclr_copybuffer", "rocclr_fillbuffer"}))
    return KernelClass::memcpy;
  // NCCL: ncclKernel_* (NCCL <= 2.18), ncclDevKernel_* (NCCL >= 2.19, and RCCL, which keeps NCCL's names).
  if (contains_any(n, {"nccl", "rccl", "msccl", "cross_device_reduce", "one_shot_all_reduce", "two_shot_all_reduce"}))
    return KernelClass::communication;
  // vLLM writes the KV cache with reshape_and_cache(_flash): a copy, not attention.
  if (n.find("reshape_and_cache") != std::string_view::npos) return KernelClass::memcpy;
  // Fused optimizers: apex/PyTorch multi_tensor_apply (AdamFunctor, foreach ops), fused Adam/AdamW/LAMB, fbgemm's
  // fused embedding backward + row-wise Adagrad.
  if (contains_any(n, {"multi_tensor_apply", "adam", "lamb_", "adagrad", "sgd_", "optimizer"}))
    return KernelClass::optimizer;
  // Attention: FlashAttention (flash_fwd_kernel, pytorch_flash::), cuDNN/TRT-LLM fmha (fmhaSm100a*), xformers
  // fmha_cutlass, Composable Kernel fmha (ck_tile fmha), Triton/aotriton attn_fwd and bwd_kernel_fuse, vLLM
  // paged_attention.
  if (contains_any(n, {"flash", "fmha", "attn", "attention", "sdpa", "mha_fwd", "mha_bwd", "bwd_kernel_fuse"}))
    return KernelClass::attention;
  // Norms: ATen layer_norm/batch_norm kernels, cuDNN bn_fw/bn_bw, apex/PyTorch cuComputePartGradGammaBeta
  // (LayerNorm backward), vLLM rms_norm.
  if (contains_any(n, {"layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "group_norm",
                       "groupnorm", "instance_norm", "cudnn::bn_", "bn_fw_", "bn_bw_", "gammabeta"}))
    return KernelClass::norm;
  // cuBLAS split-K reduction runs after the GEMM's partial products: a reduction, not more FLOPs.
  if (n.find("splitkreduce") != std::string_view::npos) return KernelClass::reduction;
  // GEMM and convolution (implicit GEMM): cuBLAS sm90_xmma_gemm_*, nvjet_*, ampere/volta_sgemm_*, gemv*, CUTLASS
  // cutlass_*/tensorop, rocBLAS/Tensile Cijk_*, hipBLASLt, MIOpen igemm_*, cuDNN scudnn/implicit_gemm/winograd,
  // TensorRT-LLM bmm_*, Triton mm templates.
  if (contains_any(n, {"gemm", "gemv", "xmma", "nvjet", "cutlass", "cijk_", "hipblaslt", "cublas", "tensorop", "scudnn",
                       "winograd", "wgrad_alg", "dgrad", "conv2d", "convolution", "triton_mm", "triton_tem_fused_mm",
                       "matmul"}) ||
      n.starts_with("bmm_"))
    return KernelClass::gemm;
  // Reductions: ATen reduce_kernel, softmax, cross-entropy/NLL, pooling, cub reductions, grad-norm (lpnorm).
  if (contains_any(n, {"reduce", "softmax", "cross_entropy", "nll_loss", "logsumexp", "argmax", "argmin", "topk",
                       "lpnorm", "pool", "triton_red", "triton_per"}))
    return KernelClass::reduction;
  // Element-wise and data movement: ATen vectorized/unrolled elementwise_kernel, dropout, activations, rotary
  // embeddings, cat/copy/index/gather/scatter, layout transposes, quantisation, Triton pointwise.
  if (contains_any(n, {"elementwise", "triton_poi", "pointwise", "dropout", "gelu",    "silu",      "relu",
                       "rotary",      "copy",       "index",     "gather",  "scatter", "embedding", "transpose",
                       "nchwtonhwc",  "nhwctonchw", "permute",   "quant",   "fill",    "cast",      "activation"}))
    return KernelClass::elementwise;
  return KernelClass::other;
}

}  // namespace

KernelClass classify_kernel_name(std::string_view name) { return classify_lower(to_lower(name)); }

ElementwisePath classify_elementwise_path(std::string_view name) {
  // The template names of aten/src/ATen/native/cuda/CUDALoops.cuh (PyTorch 2.x, CUDA and ROCm builds), demangled as
  // profilers show them: "void at::native::vectorized_elementwise_kernel<4, ...>". The vectorized and unrolled names
  // contain "elementwise_kernel" too, so they are checked first.
  if (name.find("vectorized_elementwise_kernel") != std::string_view::npos) return ElementwisePath::vectorized;
  if (name.find("unrolled_elementwise_kernel") != std::string_view::npos) return ElementwisePath::unrolled;
  if (name.find("at::native::elementwise_kernel") != std::string_view::npos) return ElementwisePath::strided;
  // PyTorch's multi-pass softmax kernels (aten/src/ATen/native/cuda/SoftMax.cu, rows too long to keep on chip;
  // common/pytorch_softmax.hpp) stream each pass with 16-byte vector loads as vectorized_elementwise_kernel does. The
  // on-chip variants (cunn_SoftMaxForwardSmem<, ...Reg<, cunn_SoftMaxBackwardSmem<) are not matched.
  if (name.find("cunn_SoftMaxForward<") != std::string_view::npos ||
      name.find("cunn_SoftMaxBackward<") != std::string_view::npos)
    return ElementwisePath::vectorized;
  return ElementwisePath::fused;
}

KernelClass classify_kernel(std::string_view name, std::string_view op) {
  const KernelClass by_name = classify_kernel_name(name);
  if (by_name != KernelClass::other || op.empty()) return by_name;
  const std::string o = to_lower(op);
  if (contains_any(o, {"attention", "flash", "sdpa"})) return KernelClass::attention;
  static constexpr std::array<std::string_view, 10> kGemmOps = {
      "aten::mm",     "aten::addmm",      "aten::bmm",         "aten::baddbmm",           "aten::matmul",
      "aten::linear", "aten::_scaled_mm", "aten::convolution", "aten::cudnn_convolution", "aten::addbmm"};
  if (std::find(kGemmOps.begin(), kGemmOps.end(), o) != kGemmOps.end()) return KernelClass::gemm;
  return by_name;
}

std::optional<CollectiveKind> collective_from_kernel_name(std::string_view name) {
  const std::string n = to_lower(name);
  if (!contains_any(n, {"nccl", "rccl", "msccl"})) return std::nullopt;
  if (n.find("allreduce") != std::string::npos) return CollectiveKind::all_reduce;
  if (n.find("allgather") != std::string::npos) return CollectiveKind::all_gather;
  if (n.find("reducescatter") != std::string::npos) return CollectiveKind::reduce_scatter;
  if (n.find("alltoall") != std::string::npos) return CollectiveKind::all_to_all;
  if (n.find("broadcast") != std::string::npos) return CollectiveKind::broadcast;
  if (contains_any(n, {"sendrecv", "_send", "_recv"})) return CollectiveKind::send_recv;
  return std::nullopt;  // ncclDevKernel_Generic: the kind is only in record_param_comms
}

std::optional<CollectiveKind> collective_from_op_name(std::string_view name) {
  std::string n;
  for (char c : to_lower(name))
    if (c != '_' && c != ' ') n += c;
  // c10d names as PyTorch's record_param_comms records them (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp).
  if (n.starts_with("allreduce") || n == "barrier") return CollectiveKind::all_reduce;  // barrier: 1-element all-reduce
  if (n.starts_with("allgather")) return CollectiveKind::all_gather;
  if (n.starts_with("reducescatter")) return CollectiveKind::reduce_scatter;
  if (n.starts_with("alltoall")) return CollectiveKind::all_to_all;
  if (n.starts_with("broadcast")) return CollectiveKind::broadcast;
  if (n == "send" || n == "recv" || n == "sendrecv" || n.starts_with("batchisendirecv"))
    return CollectiveKind::send_recv;
  return std::nullopt;
}

}  // namespace chopsim
