#pragma once
// Private to chopsim_models: the generator of one pipeline stage's program. workload_stage.cpp holds the
// schedule, pipeline point-to-point and data-parallel communication; workload_trainer.cpp the optimizer step and the
// trainer's metrics; workload_fsdp.cpp FSDP's units;
// workload_layers.cpp the kernels and tensor/context/expert-parallel collectives of the model's layers.
// workload_moe.cpp those of mixture-of-experts sublayers, workload_mamba.cpp of Mamba-2 mixers, workload_lora.cpp
// LoRA's adapters beside the linears of a dense layer, workload_fp8.cpp the fp8 casts by scaling recipe.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopsim/models/workload.hpp"
#include "workload_plan.hpp"
#include "workload_program.hpp"

namespace chopsim::detail {

/// PyTorch FSDP1's division of the gradients before its reduce-scatter over `world_size` ranks (and by world_size /
/// factor after it): f doubled from 1 while it divides world_size and world_size / f > f (8 ranks: 4, 128: 16)
/// (torch/distributed/fsdp/_init_utils.py, _get_gradient_predivide_factor; workload_fsdp.cpp).
[[nodiscard]] double fsdp1_gradient_predivide_factor(int world_size);

/// A count of host launches or grouped problems as an IssueStep / Op field holds it: at least 1, at most 65,535.
[[nodiscard]] inline std::uint16_t launch_count(double count) {
  return static_cast<std::uint16_t>(std::clamp(count, 1.0, double{UINT16_MAX}));
}

// Conventions of the generated programs (what the engine may rely on):
//  * Stream 0 is "compute". Collectives placed on it block compute; collectives on a side stream overlap
//    and depend on the compute op that produced their input (and on any collective result compute has
//    not consumed yet); the compute op that needs their result depends on them.
//  * Every collective's group has more than one member and lies inside one pipeline stage (roles tp, cp,
//    ep, data, expert_data, shard, replicate), so all members run the same program and meet it at the same
//    (stream, op index).
//  * Pipeline point-to-point uses four FIFO streams, one per direction and neighbour: sends wait for the
//    op producing the tensor; receives have no dependencies (posted as early as their stream allows) and
//    the consuming compute op depends on them. Both ends list a channel's transfers in the same order;
//    tags are unique per (micro-batch, virtual-stage boundary, direction).
//  * Ops never depend on a later op of their own stream; dependencies per op are contiguous in
//    Program::dependencies, at most one per producer stream (the latest).

/// Stream names (the engine treats every stream alike; these say what runs on them).
inline constexpr std::string_view kComputeStream = "compute";
inline constexpr std::string_view kTpStream = "tp";
inline constexpr std::string_view kCpStream = "cp";
inline constexpr std::string_view kEpStream = "ep";
inline constexpr std::string_view kDpStream = "dp";
inline constexpr std::string_view kDpParamGatherStream = "dp_ag";
inline constexpr std::string_view kFsdpGatherStream = "fsdp_ag";
inline constexpr std::string_view kFsdpReduceStream = "fsdp_rs";
inline constexpr std::string_view kPpSendNextStream = "pp_send_next";
inline constexpr std::string_view kPpSendPrevStream = "pp_send_prev";
inline constexpr std::string_view kPpRecvPrevStream = "pp_recv_prev";
inline constexpr std::string_view kPpRecvNextStream = "pp_recv_next";
/// overlap.ep_1f1b: the backward of each merged forward/backward pair computes here, beside the forward on "compute".
inline constexpr std::string_view kMergedBackwardStream = "compute_merged_backward";

class StageGenerator {
 public:
  StageGenerator(const TransformerSpec& model, const ParallelismSpec& parallelism, const TrainingSpec& training,
                 const KernelFacts& kernels, const RankLayout& layout, NameTable& names, int stage);

  [[nodiscard]] Program generate();

 private:
  // --- sizes of one micro-batch on one rank -------------------------------------------------------
  struct Sizes {
    double tokens = 0;            ///< T = micro_batch * seq_len / cp: rows of every GEMM on this rank
    double norm_tokens = 0;       ///< T / tp with sequence parallelism, else T: norms, residuals, p2p
    double sequence = 0;          ///< s: keys each query can see (all CP chunks)
    double hidden = 0;            ///< h
    double ffn_local = 0;         ///< a dense layer's MLP width / tp
    double shared_ffn_local = 0;  ///< an MoE layer's shared experts' width / tp
    double vocab_local = 0;       ///< V / tp
    double head_dim = 0;          ///< d
    double qk_dim = 0;            ///< width of one head's query and key (d, + the rotary part under MLA)
    double v_dim = 0;             ///< width of one head's value and output (d, or v_head_dim under MLA)
    double query_heads = 0;       ///< a / tp
    double kv_heads = 0;          ///< a_kv / tp (at least 1)
    /// MoE: token copies this rank's router sends and its unpermute sums, norm_tokens * top_k (* the padded capacity,
    /// or less a capacity below 1 drops: TrainingSpec::moe_sent_load).
    double routed_tokens = 0;
    /// MoE: the copies the busiest expert-parallel rank receives, norm_tokens * top_k times its load over the mean
    /// (TrainingSpec::moe_busiest_rank_load: the padded capacity, or the load imbalance). Every rank is timed as that
    /// rank: the all-to-alls carry this many rows.
    double received_tokens = 0;
    /// MoE: rows of this rank's expert GEMMs: the copies it receives, gathered over the expert tensor-parallel group
    /// with SP (etp = tp: tokens * top_k * load).
    double expert_tokens = 0;
    double expert_ffn_local = 0;  ///< MoE: f / etp
    double mamba_heads = 0;       ///< Mamba-2 heads / tp
    double mamba_groups = 0;      ///< Mamba-2 B and C groups / tp
    double mamba_inner = 0;       ///< the rank's scan width: mamba_heads x head_dim
    double mamba_channels = 0;    ///< the convolution's channels: x, B and C
    double mamba_in_width = 0;    ///< in_proj's output: z, x, B, C and dt
    double mamba_states = 0;      ///< state elements per token (heads x head_dim x state_dim, one state per chunk)
    double activation_bytes = 2;  ///< bytes of a stored activation element
    double gradient_bytes = 2;    ///< bytes of a gradient element as kept, reduced and read by the optimizer
    /// Bytes of a weight-gradient element as the backward kernels write it: the gradient buffer's (fp32
    /// main_grad) with ZeRO 0-2, the parameter's dtype with FSDP (which casts to fp32 for reduction if asked).
    double weight_grad_bytes = 2;
  };
  struct Gemm {
    double m = 0, n = 0, k = 0;  ///< Y[m x n] = X[m x k] * W[k x n]
    double weights = 1;          ///< distinct weight matrices (grouped expert GEMMs)
    /// A Transformer Engine module's GEMM: fp8 in fp8 runs, with TE's casts. False for the plain PyTorch linears
    /// that fp8 recipes keep in bf16: the LM head (Megatron's output_layer, a tied embedding) and the MoE router.
    bool transformer_engine = true;
  };
  struct Comm {
    std::string_view name;
    CollectiveKind kind = CollectiveKind::all_reduce;
    GroupRole group = GroupRole::world;
    CommCategory category = CommCategory::none;
    double bytes = 0;
  };

  // --- emission primitives (workload_stage.cpp) ---------------------------------------------------
  /// Appends to the compute stream: the op waits for everything awaited so far.
  OpRef append_to_compute_stream(const Op& op);
  [[nodiscard]] Op collective_op(const Comm& comm) const;
  OpRef compute(std::string_view name, KernelClass kernel_class, Precision precision, double flops, double bytes,
                bool unaligned = false);
  /// The op compute() appends, for a caller that sets more of it first.
  [[nodiscard]] Op compute_op(std::string_view name, KernelClass kernel_class, Precision precision, double flops,
                              double bytes, bool unaligned = false) const;
  /// On the compute stream: compute waits for it. Skipped (nullopt) for a group of one rank.
  std::optional<OpRef> blocking(const Comm& comm);
  /// On `stream`, after `after` (the op that produced its input); the consumer must await() it.
  std::optional<OpRef> overlapped(std::string_view stream, const Comm& comm, std::optional<OpRef> after);
  /// overlapped(stream, comm, last compute op) if `overlap` (also after the collectives compute is still to
  /// await, whose results may be its input), else blocking(comm).
  std::optional<OpRef> communicate(bool overlap, std::string_view stream, const Comm& comm);
  /// The next compute-stream op waits for `producer`.
  void await(std::optional<OpRef> producer);
  /// The next compute-stream op waits for the last op on `stream` so far (nothing when the stream has none).
  void await_stream(std::string_view stream);
  [[nodiscard]] std::optional<OpRef> last_compute() const;
  [[nodiscard]] Op base_op(std::string_view name) const;

  // --- layers (workload_layers.cpp) ---------------------------------------------------------------
  /// Where an fp8 cast's scale comes from under current scaling (training.fp8_recipe: current; workload_fp8.cpp).
  enum class CastScale : std::uint8_t {
    own_amax,        ///< an amax pass over the tensor, then the scale
    amax_from_norm,  ///< the norm that wrote the tensor computed its amax (TE's fused norm-amax): the scale only
    known,           ///< a later chunk of a tensor already scaled
  };
  /// `input_scale`: how the input's fp8 scale is found; `weight_cast`: in fp8 runs, the first forward casts the
  /// weights (false for a later chunk of the same GEMM).
  OpRef gemm(std::string_view name, const Gemm& shape, CastScale input_scale = CastScale::own_amax,
             bool weight_cast = true);
  /// The GEMM's arithmetic precision: the run's, or bf16 for a GEMM that is not Transformer Engine's in an fp8 run.
  [[nodiscard]] Precision precision_of(const Gemm& shape) const;
  /// Transformer Engine's cast of `elements` bf16 values to fp8 ahead of an fp8 GEMM (see workload_fp8.cpp).
  void fp8_cast(const std::string& name, double elements, CastScale scale = CastScale::own_amax);
  /// Current scaling's all-reduce of a sequence-parallel shard's amax over tp before its cast (workload_fp8.cpp).
  void fp8_amax_reduction(const std::string& name);
  /// The norms of each head's query and key (TransformerSpec::qk_norm), forward or backward.
  void qk_norm(bool backward);
  /// `gradient_scale`: how the output gradient's fp8 scale is found (known for a later chunk of a split dgrad).
  OpRef gemm_dgrad(std::string_view name, const Gemm& shape, CastScale gradient_scale = CastScale::own_amax);
  OpRef gemm_wgrad(std::string_view name, const Gemm& shape);
  /// The GEMM kernel of `shape`, 2 m n k FLOPs (its `weights` equal GEMMs grouped in one kernel:
  /// KernelWork::problems).
  OpRef gemm_kernel(std::string_view name, const Gemm& shape, Precision precision, double bytes, bool unaligned);
  /// A GEMM result's row length (a weight matrix's feature dimension) that is not a multiple of 16 bytes of result
  /// elements (see workload_layers.cpp).
  [[nodiscard]] bool unaligned(double features) const;
  /// Under deterministic mode with fill_uninitialized_memory: the NaN fill of a `bytes`-byte output that
  /// Transformer Engine allocates for the op `name` (see workload_layers.cpp). Nothing otherwise.
  void fill_output(std::string_view name, double bytes);
  /// Bytes of the deterministic attention backward's workspace over `keys` keys per query (one kernel call).
  [[nodiscard]] double deterministic_workspace_bytes(double keys) const;
  OpRef norm(std::string_view name, bool backward);
  /// With training.attention_mask_in_dataloader: the micro-batch's attention mask copied to the GPU and broadcast
  /// over the tensor-parallel group (on the chunks that load data: the first and the last virtual stage).
  void load_attention_mask();
  /// With linear biases: the gradient of a bias added outside its GEMM, summed over `elements` / width tokens.
  void bias_gradient(std::string_view name, double elements);
  OpRef elementwise(std::string_view name, double elements, double flops_per_element, double bytes_per_element,
                    KernelClass kernel_class = KernelClass::elementwise);
  /// Before a column-parallel GEMM: the sequence-parallel all-gather of its input.
  std::optional<OpRef> gather_for_column_parallel();
  /// After a row-parallel GEMM: tensor-parallel all-reduce, or reduce-scatter with sequence parallelism; `share` of
  /// its bytes (a split of userbuffers' pipelined reduce-scatter).
  std::optional<OpRef> reduce_after_row_parallel(double share = 1.0);
  /// Transformer Engine's userbuffers overlap (training.overlap.tp with sequence parallelism): see
  /// workload_tensor_parallel.cpp.
  [[nodiscard]] bool userbuffers_overlap() const;
  /// A ring-exchange GEMM's rows: the (tp - 1)/tp that run while its all-gather is in flight, and the last 1/tp.
  [[nodiscard]] std::pair<Gemm, Gemm> ring_exchange_chunks(const Gemm& shape) const;
  /// A Transformer Engine column-parallel GEMM (QKV, fc1) behind its sequence-parallel all-gather. `after_norm`: the
  /// norm before it is fused into it (TE's LayerNormColumnParallelLinear), which finds the input's fp8 amax.
  OpRef column_parallel_gemm(std::string_view name, const Gemm& shape, bool after_norm);
  /// A Transformer Engine row-parallel GEMM (output projection, fc2) and the reduction of its output over tp.
  OpRef row_parallel_gemm(std::string_view name, const Gemm& shape);
  /// Backward of a column-parallel GEMM (QKV, MLP fc1, logits): input re-gather for wgrad (SP), dgrad,
  /// reduction of the input gradient over tp, wgrad. The next compute op awaits the reduction.
  void column_parallel_backward(std::string_view dgrad_name, std::string_view wgrad_name, const Gemm& shape,
                                double gradient_elements, bool expert);
  /// Backward of a row-parallel GEMM (output projection, MLP fc2).
  void row_parallel_backward(std::string_view dgrad_name, std::string_view wgrad_name, const Gemm& shape,
                             double gradient_elements);

  // --- LoRA adapters (TrainingSpec::lora; workload_lora.cpp) -------------------------------------
  /// Whether the base weights are frozen (LoRA): no weight gradients, nothing reduced or stepped but the adapters.
  [[nodiscard]] bool frozen_base() const { return training_.lora.enabled(); }
  /// A recomputed layer's forward under PyTorch's early stop (TrainingSpec::recompute_early_stop) leaves out the
  /// layer's tail: the ops after the last one that saves a tensor for the backward.
  [[nodiscard]] bool recompute_stops_early() const {
    return pass_ == Pass::recompute && training_.recompute_early_stop;
  }
  /// Under early stop, whether the dense MLP's fc2 GEMM is part of that tail: it saves its input and weight before
  /// it runs and nothing saves its output, unless a residual dropout after it keeps its mask or an fc2 adapter runs
  /// after it.
  [[nodiscard]] bool recompute_skips_fc2() const {
    return recompute_stops_early() && !model_.dropout && !(frozen_base() && training_.lora.fc2);
  }
  /// The adapter beside the base linear `base` (its GEMM on this rank), column-parallel (QKV, fc1) or row-parallel
  /// (output projection, fc2): its forward after the base GEMM, its backward before the base's.
  void lora_forward(std::string_view name, const Gemm& base, bool column_parallel);
  /// The adapter's A and B GEMMs on this rank beside the base linear's GEMM `base`.
  [[nodiscard]] std::pair<Gemm, Gemm> lora_matrices(const Gemm& base, bool column_parallel) const;
  void lora_backward(std::string_view name, const Gemm& base, bool column_parallel);

  void layer_forward(int layer);
  void layer_backward(int layer);
  /// One multi-token prediction module (workload_mtp.cpp): after the output head on the last virtual stage.
  void mtp_forward(int depth);
  void mtp_backward(int depth);
  void attention_forward();
  /// Multi-latent attention's projections (DeepSeek-V2/V3): down to the query and key-value latents on this rank's
  /// tokens (duplicated over tp), the latents' norms, with SP an all-gather of the latents, and the column-parallel
  /// up projections to the rank's heads; the rotary embedding of the queries' and the shared key's rotary parts.
  void mla_projections_forward();
  void mla_projections_backward();
  /// The up projections from the latents to the rank's queries, keys and values and the rotary embedding (the part
  /// of mla_projections_forward that the mla_up_proj recompute module re-runs).
  void mla_up_projections();
  void attention_backward();
  /// training.unpad_attention (workload_unpad.cpp): before the fused kernel, unpad_input of Q, K and V; after it,
  /// pad_input of the output; and their backward around the kernel's.
  void unpad_attention_inputs();
  void pad_attention_output();
  void pad_attention_output_backward();
  void unpad_attention_inputs_backward();
  /// PyTorch's unfused attention (TrainingSpec::attention == kEagerAttention).
  void eager_attention_forward();
  void eager_attention_backward();
  /// A tensor-parallel MLP of width ffn_local per rank: a dense layer's ("mlp") or an MoE layer's shared experts.
  void mlp_forward(std::string_view name, double ffn_local);
  /// The share of a causal attention kernel's (query, key) pairs the current layer computes: below 1 for a
  /// sliding-window layer shorter than the sequence.
  [[nodiscard]] double window_share() const;
  void mlp_backward(std::string_view name, double ffn_local);
  /// The MLP activation's kernel name ("swiglu", "gelu", "squared_relu") and vector FLOPs per element.
  [[nodiscard]] std::string activation_name() const;
  [[nodiscard]] double activation_flops() const;
  /// A Mamba-2 mixer (workload_mamba.cpp): in_proj, the causal convolution, the chunked scan, the gated norm and
  /// out_proj of the rank's heads.
  void mamba_forward();
  void mamba_backward();
  /// The scan's input kernels that the backward runs again (workload_mamba.cpp, MambaScanInput), named `name`.
  enum class MambaScanInput { conv1d, chunk_cumsum, chunk_state, state_passing, bmm_chunk };
  void mamba_scan_input(MambaScanInput kernel, const char* name);
  /// Host launches of Megatron-Core's router and token-dispatcher kernels in one MoE layer (workload_moe.cpp says
  /// where each count comes from); 0 where an op is not launched.
  struct MoeRouterLaunches {
    std::uint16_t topk_forward = 1;
    std::uint16_t topk_backward = 1;
    std::uint16_t aux_forward = 0;
    std::uint16_t aux_backward = 0;
    std::uint16_t counts_forward = 1;
    std::uint16_t permute_forward = 1;
    std::uint16_t permute_backward = 1;
    std::uint16_t sort_forward = 0;
    std::uint16_t unsort_forward = 0;
    std::uint16_t sort_backward = 0;
    std::uint16_t gating_casts_backward = 4;
    std::uint16_t router_gemms_backward = 1;  ///< each of the gating's dgrad and wgrad
  };
  [[nodiscard]] MoeRouterLaunches moe_router_launches() const;
  void sort_chunks(std::string_view name, std::uint16_t launches);
  void moe_forward();
  void moe_backward();
  /// A mixture-of-experts sublayer's forward: the routed experts (moe_forward) and the shared ones added to them.
  void moe_layer_forward();
  /// The routed experts' activation kernel (forward), on the rank's expert rows.
  void expert_activation_forward();
  /// The routed experts' fc2 biases (TransformerSpec::linear_bias), added expert by expert (workload_moe.cpp).
  void expert_fc2_bias_forward();
  void expert_fc2_bias_backward();
  /// Selective recomputation by module (TrainingSpec::recompute_modules): before a sublayer's backward, the forward
  /// kernels of its modules that were not kept run again (Pass::recompute).
  void recompute_sublayer(const LayerKind& kind, bool mlp_side);
  void embedding_forward();
  /// `reported` elements of the table's gradient are handed to the data-parallel buckets (an MTP module's lookup on
  /// the last stage reports the stage's copy, or nothing when the stage's own embedding reports it).
  void embedding_backward(double reported);
  void embedding_backward() { embedding_backward(local_.embedding); }
  /// The final norm, logits and loss. `main`: the model's own loss (its NaN check, its head's and final norm's
  /// gradients); false for a multi-token prediction module's, whose norm is its own and whose head is shared.
  void head_forward(bool main = true);
  void head_backward(bool main = true);

  // --- eager PyTorch (Framework::pytorch_eager; workload_eager.cpp) --------------------------------
  /// One of PyTorch's own kernels, on the TensorIterator path its operands' layout and dtypes take (ElementwisePath;
  /// `fused` for one that is not a TensorIterator kernel: a reduction, a cat).
  OpRef eager_elementwise(std::string_view name, double elements, double bytes_per_element, ElementwisePath path,
                          KernelClass kernel_class = KernelClass::elementwise);
  /// An nn.Linear under autocast: the weight's cast, the input's cast if it is fp32, the GEMM.
  OpRef eager_linear(std::string_view name, const Gemm& shape, bool fp32_input);
  /// Its backward: wgrad, dgrad, the input gradient's cast (and its addition to an earlier reader's), the weight
  /// gradient's cast into fp32 .grad (and accumulation after the first micro-batch).
  void eager_linear_backward(std::string_view name, const Gemm& shape, bool fp32_input,
                             bool input_gradient_accumulates);
  void eager_norm_forward(std::string_view name);
  OpRef eager_norm_backward(std::string_view name, bool on_residual_stream);
  void eager_rotary_forward(std::string_view name, double elements);
  void eager_rotary_backward(std::string_view name, double elements);
  void eager_layer_forward(int layer);
  void eager_layer_backward(int layer);
  void eager_embedding_forward();
  void eager_embedding_backward();
  void eager_head_forward();
  void eager_head_backward();
  [[nodiscard]] bool eager() const { return training_.framework == Framework::pytorch_eager; }

  // --- pipeline, data parallelism, FSDP, optimizer (workload_stage.cpp) ---------------------------
  void forward_pass(int micro_batch, int chunk);
  void backward_pass(int micro_batch, int chunk);
  /// overlap.ep_1f1b: a steady-state forward and the backward beside it as Megatron-Core's combined 1F1B runs them.
  void merged_passes(const PipelineAction& forward, const PipelineAction& backward);
  /// In a merged pair: the host's issue order may switch to the other pass here (a unit's start, an expert
  /// all-to-all: where Megatron-Core's schedule plan switches between the passes' sub-modules).
  void cut_issue();
  [[nodiscard]] std::uint32_t pipeline_tag(int micro_batch, int virtual_stage, bool gradient) const;
  OpRef pipeline_send(bool gradient, int virtual_stage);
  OpRef pipeline_recv(bool gradient, int virtual_stage_of_sender);

  /// FSDP units: 0 = embedding, 1 + layer, layers + 1 = output head with the final norm, layers + 2 + depth = a
  /// multi-token prediction module.
  [[nodiscard]] int embedding_unit() const { return 0; }
  [[nodiscard]] int layer_unit(int layer) const { return 1 + layer; }
  [[nodiscard]] int head_unit() const { return 1 + model_.layers; }
  [[nodiscard]] int mtp_unit(int depth) const { return 2 + model_.layers + depth; }
  [[nodiscard]] bool is_mtp_unit(int unit) const { return unit >= 2 + model_.layers; }
  [[nodiscard]] double unit_dense_parameters(int unit) const;
  [[nodiscard]] double unit_expert_parameters(int unit) const;
  /// The parameters of a unit this rank's FSDP runtime gathers and reduces (those of groups of more than one rank):
  /// before sharding, and this rank's shard of them.
  struct UnitElements {
    double unsharded = 0;
    double sharded = 0;
  };
  [[nodiscard]] UnitElements unit_elements(int unit) const;
  /// FSDP units (workload_fsdp.cpp): the unit's all-gathers (and its runtime's kernels around them) before its
  /// forward or backward, its reduce-scatters after its backward.
  void begin_unit(int unit, bool backward);
  void end_unit(bool backward);
  /// A kernel of the FSDP runtime: on `stream` after `after` with training.overlap.fsdp, in line on the compute stream
  /// without it (or for kComputeStream). Nothing for no elements.
  void fsdp_kernel(std::string_view stream, std::optional<OpRef> after, std::string_view name, KernelClass kernel_class,
                   ElementwisePath path, double elements, double bytes_per_element, double flops_per_element = 0.0);

  /// A gradient of `elements` parameters of the base model is complete after `producer` (final micro-batch only;
  /// nothing when the base is frozen).
  void gradient_ready(double elements, bool expert, OpRef producer);
  /// A trainable gradient into the data-parallel buckets (the base's, or LoRA's adapters').
  void bucket_gradient(double elements, bool expert, OpRef producer);
  /// The parameters this rank trains: the stage's (base) parameters, or under LoRA its adapters'.
  [[nodiscard]] StageParameters trainable_parameters() const;
  void close_bucket(bool expert);
  void reduce_bucket(std::size_t bucket, bool overlap);
  /// ZeRO 0-2: the memset of the gradient buffer at the start of the step.
  void zero_gradient_buffer();
  // --- the training loop around the layers (workload_trainer.cpp) ---------------------------------
  void optimizer_step();
  /// training.optimizer decoupled_adamw: Composer's per-tensor loop over this rank's `local_elements` parameters.
  void decoupled_adamw_step(double local_elements, const StageParameters& params);
  /// Whether gradient clipping is PyTorch's (eager, FSDP1, FSDP2), which always rescales the gradients.
  [[nodiscard]] bool pytorch_gradient_clipping() const;
  /// training.train_metrics: the trainer's metrics over the logits after a micro-batch's backward (loss stage).
  void train_metrics_update();

  // --- inputs -------------------------------------------------------------------------------------
  const TransformerSpec& model_;
  const ParallelismSpec& parallelism_;
  const TrainingSpec& training_;
  KernelFacts kernels_;
  const RankLayout& layout_;
  NameTable& names_;
  int stage_ = 0;
  PipelineShape shape_;
  LocalParameters local_;
  Sizes sizes_;
  Precision gemm_precision_ = Precision::bf16;  ///< the run's precision
  /// The run's precision, but bf16 in fp8 runs: the kernels Transformer Engine keeps out of fp8 (flash attention,
  /// plain PyTorch linears).
  Precision high_precision_ = Precision::bf16;

  // --- state while generating ----------------------------------------------------------------------
  ProgramBuilder builder_;
  std::vector<OpRef> awaited_;  ///< dependencies of the next compute-stream op
  /// The stream compute ops go to: 0 ("compute"), or kMergedBackwardStream's during a merged pair's backward.
  std::uint16_t compute_stream_ = 0;
  /// While a merged pair is generated: the host's issue position at the start of the pass and of each unit.
  std::vector<std::size_t>* issue_cuts_ = nullptr;
  int layer_ = -1;
  int micro_batch_ = -1;
  Pass pass_ = Pass::other;
  bool final_backward_ = false;  ///< the last micro-batch's backward of a chunk: gradients are complete

  struct UnitUse {
    int unit = 0;
    bool backward = false;
    int micro_batch = 0;
    std::optional<OpRef> last_compute;  ///< the use's last compute-stream op
  };
  std::vector<UnitUse> unit_uses_;                      ///< FSDP: units in the order compute uses them
  std::vector<std::optional<OpRef>> first_forward_op_;  ///< per unit: its first op in the iteration
  int record_first_op_of_unit_ = -1;

  struct Bucket {
    double elements = 0;
    bool expert = false;
    OpRef last_producer;
    std::vector<int> units;
  };
  std::vector<Bucket> buckets_;  ///< closed gradient buckets in the order they became ready
  Bucket open_dense_;
  Bucket open_expert_;
  int current_unit_ = -1;
};

}  // namespace chopsim::detail
