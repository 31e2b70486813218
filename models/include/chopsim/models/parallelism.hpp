#pragma once
// How a training run is split over GPUs (parallelism) and what one iteration processes (training),
// and the mapping from global rank to its position in every parallel group.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopsim/models/hardware.hpp"

namespace chopsim {

enum class PipelineSchedule : std::uint8_t {
  one_f_one_b,  ///< PipeDream-flush 1F1B (Narayanan et al., SC'21)
  interleaved,  ///< interleaved 1F1B with `virtual_stages` model chunks per pipeline rank
};

enum class RecomputePolicy : std::uint8_t {
  none,       ///< keep all activations
  selective,  ///< recompute attention internals only (Korthikanti et al. 2022); free with flash attention
  full,       ///< keep each layer's input, recompute the whole layer forward during backward
};

struct ParallelismSpec {
  int dp = 1;  ///< data-parallel replicas (including the FSDP shard dimension)
  int tp = 1;  ///< tensor parallel
  int pp = 1;  ///< pipeline stages
  int cp = 1;  ///< context parallel (sequence split across ranks for attention)
  int ep = 1;  ///< expert parallel (MoE); see `etp` for the ranks it is carved out of
  /// Expert tensor parallel (Megatron-Core's --expert-tensor-parallel-size); 0 = tp, the default. The MoE layers
  /// lay the ranks of a pipeline stage out again as etp x ep x expert-data (etp fastest), "MoE parallel folding"
  /// (Liu et al., arXiv 2504.14960): with etp = tp the ep groups sit inside the data group (dp x cp), with etp = 1
  /// they may span the tensor-parallel ranks too (ep up to tp x cp x dp).
  int etp = 0;
  bool sequence_parallel = false;  ///< Megatron SP: TP all-reduce becomes reduce-scatter + all-gather
  PipelineSchedule pp_schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;  ///< model chunks per pipeline rank (interleaved schedule)
  /// Sharding of training state across the data group: 0 plain DP, 1 optimizer states (ZeRO-1 /
  /// distributed optimizer), 2 + gradients, 3 + weights (FSDP FULL_SHARD / ZeRO-3).
  int zero_stage = 0;
  /// Hybrid sharding (FSDP HYBRID_SHARD, ZeRO++ hpZ): shard within groups of this many data ranks and
  /// replicate across groups. 0 = shard over the whole data group.
  int shard_group_size = 0;
  /// Transformer layers of each pipeline stage, first to last (pp entries summing to the model's layers), for a
  /// stage split that is not even: a last stage with fewer layers to make room for the output head and the loss
  /// (Megatron-LM's --decoder-last-pipeline-num-layers, Merak's custom partition). Empty: layers / pp each.
  /// 1F1B only: the interleaved schedule needs equal chunks.
  std::vector<int> stage_layers;
  /// Megatron's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split: the split
  /// counts the input embedding (and the output layer with the loss) as one more layer of the first (last) virtual
  /// stage, which then holds one transformer layer less. Llama 3.1 405B's 126 layers over pp 8 x vp 8 and Qwen3
  /// 235B's 94 over pp 8 run so in Megatron-Bridge's recipes.
  bool account_for_embedding_in_split = false;
  bool account_for_loss_in_split = false;

  [[nodiscard]] int world_size() const { return dp * tp * pp * cp; }
  /// The expert layers' tensor-parallel size: etp when set, else tp.
  [[nodiscard]] int expert_tp() const { return etp > 0 ? etp : tp; }
  /// Model chunks per pipeline stage: virtual_stages with the interleaved schedule, else 1.
  [[nodiscard]] int chunks() const { return pp_schedule == PipelineSchedule::interleaved ? virtual_stages : 1; }
  /// Transformer layers of each virtual pipeline stage (pp * chunks() entries, in Megatron's virtual rank order:
  /// chunk c of stage i is entry c*pp + i), for a model of `layers` layers. Entries may be 0 or the split may not
  /// cover the model when the configuration is invalid; validate_training_setup rejects those.
  [[nodiscard]] std::vector<int> virtual_stage_layers(int layers) const;
  /// Transformer layers of pipeline stage `stage` (all its chunks).
  [[nodiscard]] int layers_of_stage(int layers, int stage) const;
};

/// Which communication may run concurrently with compute (false: compute waits for it).
struct OverlapSpec {
  bool dp = true;  ///< gradient all-reduce / reduce-scatter overlapped with backward
  /// ZeRO-1/2 (distributed optimizer): the updated parameters' all-gather runs during the next iteration's forward,
  /// each bucket before the first layer that needs it (Megatron --overlap-param-gather); off: right after the
  /// optimizer step, on the compute stream.
  bool param_gather = true;
  bool fsdp = true;  ///< FSDP parameter all-gather prefetch and gradient reduce-scatter on side streams
  bool tp = false;   ///< TP/SP collectives overlapped with GEMMs (userbuffers / TE comm overlap)
  /// The backward of a column-parallel linear layer runs its input-gradient all-reduce (reduce-scatter with SP)
  /// during the weight-gradient GEMM and, with SP, the all-gather of its input during the input-gradient GEMM:
  /// Megatron-Core's LinearWithGradAccumulationAndAsyncCommunication and Transformer Engine's Linear /
  /// LayerNormLinear issue them with async_op=True (the reason Megatron sets CUDA_DEVICE_MAX_CONNECTIONS=1).
  bool tp_backward = true;
  bool pp = true;   ///< pipeline send/recv on their own streams
  bool cp = true;   ///< context-parallel KV exchange overlapped with attention
  bool ep = false;  ///< MoE all-to-all overlapped with expert compute
  /// Megatron-Core's batch-level EP overlap (--overlap-moe-expert-parallel-comm; Megatron-Bridge's moe_a2a_overlap):
  /// every steady-state forward of the pipeline schedule runs merged with the backward beside it (combined 1F1B,
  /// megatron/core/models/common/model_chunk_schedule_plan.py), so one micro-batch's expert all-to-alls run while the
  /// other's layers compute. Modelled as the two passes on two compute streams that share the GPU, the host issuing
  /// their layers in alternation (forward layer i beside backward layer n-1-i), switching at each expert all-to-all.
  bool ep_1f1b = false;
};

/// training.attention for PyTorch's unfused "math" attention (Hugging Face eager attention, e.g. GPT2Attention._attn):
/// the scores are materialised, scaled, masked, soft-maxed and dropped out by separate kernels between two batched
/// GEMMs, and the probabilities are kept for backward.
inline constexpr std::string_view kEagerAttention = "eager";

/// The auxiliary load-balancing loss a Megatron-Core router computes in training (--moe-router-load-balancing-type
/// with --moe-aux-loss-coeff > 0; the coefficient's default 0 turns it off).
enum class MoeAuxLoss : std::uint8_t {
  none,             ///< no auxiliary loss (Megatron's default coefficient 0, or "none")
  aux_loss,         ///< the Switch Transformer loss over the micro-batch
  seq_aux_loss,     ///< the same per sequence (DeepSeek-V3)
  global_aux_loss,  ///< the same over the global batch
};
inline constexpr std::array<std::pair<std::string_view, MoeAuxLoss>, 4> kMoeAuxLossNames{{
    {"none", MoeAuxLoss::none},
    {"aux_loss", MoeAuxLoss::aux_loss},
    {"seq_aux_loss", MoeAuxLoss::seq_aux_loss},
    {"global_aux_loss", MoeAuxLoss::global_aux_loss},
}};
[[nodiscard]] std::string_view to_string(MoeAuxLoss loss);

/// The parts of a step Megatron-Core captures in CUDA graphs (--cuda-graph-impl transformer_engine with
/// --cuda-graph-scope): each captured region's kernels are replayed by one graph launch forward and one backward,
/// so the host launches the region once instead of kernel by kernel. Only the MoE scopes are modelled.
struct CudaGraphScope {
  bool moe_router = false;      ///< the router (gating GEMM, top-k, auxiliary loss)
  bool moe_preprocess = false;  ///< with moe_router: the token dispatcher's preprocessing too (counts, permutation)
};
inline constexpr std::array<std::pair<std::string_view, bool CudaGraphScope::*>, 2> kCudaGraphScopeNames{{
    {"moe_router", &CudaGraphScope::moe_router},
    {"moe_preprocess", &CudaGraphScope::moe_preprocess},
}};

/// A mixture of experts' token dispatcher (Megatron-Core's --moe-token-dispatcher-type).
enum class MoeDispatcher : std::uint8_t {
  /// NCCL all-to-all (MoEAlltoAllTokenDispatcher): every routed copy of a token is a row of the exchange, so a token
  /// sent to two experts on one GPU travels twice, and every copy bound for another node crosses the fabric.
  alltoall,
  /// The flex dispatcher with DeepEP or HybridEP (MoEFlexTokenDispatcher, --moe-flex-dispatcher-backend): a token
  /// travels once to each GPU holding one of its experts and crosses the fabric once per destination node, where
  /// NVLink forwards it (TokenRouting). Megatron-Bridge's MoE recipes select it on Hopper and Blackwell
  /// (apply_flex_dispatcher_backend).
  flex,
};
[[nodiscard]] std::string_view to_string(MoeDispatcher dispatcher);

/// Transformer Engine's FP8 scaling recipe: how each GEMM operand's scale is found before its cast (with precision
/// fp8).
enum class Fp8Recipe : std::uint8_t {
  /// DelayedScaling (TE's default): the scale comes from the amax history, and the cast records the new amax in the
  /// same pass: one kernel per cast.
  delayed,
  /// Float8CurrentScaling (Megatron-Bridge's fp8_cs): the tensor's own amax first (a reduction that reads it), its
  /// scale, then the cast: three kernels per cast, and with sequence parallelism the amax of a column-parallel input
  /// and of a row-parallel output gradient is all-reduced over the tensor-parallel group (the shards are gathered
  /// in fp8 and must share a scale). TransformerEngine pytorch/csrc/quantizer.cpp,
  /// Float8CurrentScalingQuantizer::quantize_impl; module/linear.py, set_quantizer_amax_reduction_group.
  current,
  /// MXFP8 block scaling (Blackwell; Megatron-Bridge's fp8_mx): a scale per 32 elements found in the cast's own
  /// pass: one kernel per cast, as delayed (the scales add 1/32 byte per element, not counted).
  mxfp8,
};
/// The recipes' names (training.fp8_recipe), the one table the config decoder and to_string read.
inline constexpr std::array<std::pair<std::string_view, Fp8Recipe>, 3> kFp8RecipeNames{{
    {"delayed", Fp8Recipe::delayed},
    {"current", Fp8Recipe::current},
    {"mxfp8", Fp8Recipe::mxfp8},
}};
[[nodiscard]] std::string_view to_string(Fp8Recipe recipe);

/// How a step is implemented, which decides the kernels it launches besides the GEMMs and attention
/// (StageGenerator) and what it keeps in memory (memory.cpp).
enum class Framework : std::uint8_t {
  /// Megatron-Core with Transformer Engine (and NeMo, Megatron-Bridge on top of it): fused norms, fused
  /// bias-activation and bias-dropout-add kernels, bf16 weights with fp32 main gradients and main parameters
  /// inside the (distributed) optimizer. The inventory every validation row before issue 20 used.
  megatron_te,
  /// Eager PyTorch with Hugging Face transformers' Llama-family modules under torch.autocast(bf16/fp16): fp32 master
  /// weights cast to the autocast dtype at every use, the fp32 residual stream, LlamaRMSNorm as six unfused fp32
  /// kernels, rotary embeddings by elementwise ops, SiLU and the product as two kernels, the logits upcast to fp32
  /// for the loss, fused AdamW, gradients set to None (not zeroed) between steps. Measured kernel by kernel in
  /// ../shared/data/measured/h200_llama32_1b (PyTorch 2.11, transformers 5.17): docs/frameworks.md.
  pytorch_eager,
};
[[nodiscard]] std::string_view to_string(Framework framework);

/// The runtime that shards a ZeRO-3 run's parameters (training.fsdp_implementation), which decides the kernels it
/// launches around its all-gathers and reduce-scatters (models/src/workload_fsdp.cpp).
enum class FsdpImplementation : std::uint8_t {
  /// Megatron-Core's own sharding (Megatron-FSDP): parameters are gathered into their bucket buffers in place and the
  /// weight-gradient GEMMs accumulate into the main-gradient buffer that is reduce-scattered: no kernel besides the
  /// collectives.
  megatron,
  /// PyTorch's FullyShardedDataParallel with one FlatParameter per unit (FSDP1; llm-foundry, Composer, Accelerate):
  /// the mixed-precision cast of the local shard before each all-gather; after each unit's backward the cat of its
  /// gradients into the flat gradient, the cast to the reduce dtype, the pre-division, and after the reduce-scatter
  /// the post-division and the accumulation of the sharded gradient (torch/distributed/fsdp/_runtime_utils.py).
  fsdp1,
  /// PyTorch's fully_shard (FSDP2; torchtitan): the all-gather's copy-in of the cast shards and its copy-out into the
  /// unsharded parameters on the compute stream after each all-gather; before each reduce-scatter the copy of the
  /// gradients into its input in the reduce dtype (reduced with NCCL's average: no division kernels for bf16 or
  /// fp32), and the accumulation of the sharded gradient (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py).
  fsdp2,
};
/// The implementations' names (training.fsdp_implementation), the one table the config decoder and to_string read.
inline constexpr std::array<std::pair<std::string_view, FsdpImplementation>, 3> kFsdpImplementationNames{{
    {"megatron", FsdpImplementation::megatron},
    {"fsdp1", FsdpImplementation::fsdp1},
    {"fsdp2", FsdpImplementation::fsdp2},
}};
[[nodiscard]] std::string_view to_string(FsdpImplementation implementation);

/// The optimizer's implementation (training.optimizer): AdamW either way, which decides the kernels of its step.
enum class Optimizer : std::uint8_t {
  /// One fused pass per step over the shard (Apex/Transformer Engine FusedAdam, multi_tensor_apply; PyTorch's
  /// AdamW(fused=True)): reads the parameter, both moments and the gradient, writes the parameter and both moments.
  fused_adamw,
  /// Composer's DecoupledAdamW (composer/optim/decoupled_weight_decay.py, llm-foundry's `decoupled_adamw`): a Python
  /// loop over the parameter tensors, eight unfused kernels per tensor (two for each moment, sqrt, division, eps,
  /// addcdiv), after a `.item()` of the tensor's step counter, which Composer keeps on the GPU: the host waits for the
  /// GPU before each tensor's kernels.
  decoupled_adamw,
};
/// The optimizers' names (training.optimizer), the one table the config decoder and to_string read.
inline constexpr std::array<std::pair<std::string_view, Optimizer>, 2> kOptimizerNames{{
    {"fused_adamw", Optimizer::fused_adamw},
    {"decoupled_adamw", Optimizer::decoupled_adamw},
}};
[[nodiscard]] std::string_view to_string(Optimizer optimizer);

/// A metric the trainer updates from the logits after every micro-batch's backward (Composer's Trainer,
/// _eval_train_metrics, with the model's train metrics: llm-foundry's causal LMs unless use_train_metrics is false).
enum class TrainMetric : std::uint8_t {
  /// torchmetrics-style LanguageCrossEntropy (composer/metrics/nlp.py, llmfoundry/metrics): an unfused
  /// torch.nn.CrossEntropyLoss over the logits under autocast, so in fp32: the logits' cast, log_softmax, nll_loss.
  language_cross_entropy,
  /// LanguagePerplexity: a LanguageCrossEntropy (it computes the same cross entropy again).
  language_perplexity,
  /// llm-foundry's TokenAccuracy: argmax over the logits, then a boolean-mask selection, whose size the host waits
  /// for (nonzero).
  token_accuracy,
};
/// The metrics' names (training.train_metrics): llm-foundry's registry names.
inline constexpr std::array<std::pair<std::string_view, TrainMetric>, 3> kTrainMetricNames{{
    {"language_cross_entropy", TrainMetric::language_cross_entropy},
    {"language_perplexity", TrainMetric::language_perplexity},
    {"token_accuracy", TrainMetric::token_accuracy},
}};
[[nodiscard]] std::string_view to_string(TrainMetric metric);

/// Megatron-Core's selective recomputation by module (--recompute-granularity selective --recompute-modules ...;
/// TransformerConfig.recompute_modules): with recompute: selective and any module set, each listed sublayer re-runs its
/// forward right before its backward (Pass::recompute) and keeps only its input. None set: recompute: selective is
/// Korthikanti et al.'s recomputation of the attention internals (nothing to redo with a fused attention kernel).
struct RecomputeModules {
  bool core_attn = false;       ///< the attention kernel: its saved output statistics (log-sum-exp) are not kept
  bool layernorm = false;       ///< the pre-norms: their outputs (the next GEMM's input) are not kept
  bool mlp = false;             ///< a dense MLP: its intermediates
  bool moe = false;             ///< a whole mixture of experts: router, dispatch, experts, combine, shared experts
  bool moe_act = false;         ///< the routed experts' activation: its output
  bool shared_experts = false;  ///< the shared experts' MLP: its intermediates
  /// Multi-latent attention's up projections and rotary embedding (Megatron-Core's recompute_up_proj): the queries,
  /// keys and values they make, which the attention kernel would keep, are dropped after it and made again before
  /// its backward.
  bool mla_up_proj = false;
  [[nodiscard]] bool any() const {
    return core_attn || layernorm || mlp || moe || moe_act || shared_experts || mla_up_proj;
  }
};
/// Megatron's --recompute-modules names and the RecomputeModules field each sets, in the order outputs list them: the
/// one table the config decoder and the run summary read.
inline constexpr std::array<std::pair<std::string_view, bool RecomputeModules::*>, 7> kRecomputeModuleNames{{
    {"core_attn", &RecomputeModules::core_attn},
    {"layernorm", &RecomputeModules::layernorm},
    {"mla_up_proj", &RecomputeModules::mla_up_proj},
    {"mlp", &RecomputeModules::mlp},
    {"moe", &RecomputeModules::moe},
    {"moe_act", &RecomputeModules::moe_act},
    {"shared_experts", &RecomputeModules::shared_experts},
}};
/// The modules `m` re-runs, by Megatron's names, in kRecomputeModuleNames' order.
[[nodiscard]] inline std::vector<std::string> recompute_module_names(const RecomputeModules& m) {
  std::vector<std::string> names;
  for (const auto& [name, field] : kRecomputeModuleNames)
    if (m.*field) names.emplace_back(name);
  return names;
}

/// Low-rank adaptation (LoRA; Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022) as
/// Megatron-Bridge's LoRA PEFT runs it (src/megatron/bridge/peft/lora.py, utils.py ParallelLinearAdapter): every base
/// weight is frozen (no weight gradient, no optimizer state, nothing reduced over dp) and each targeted linear of
/// every layer gets two trainable matrices, A (in x rank) and B (rank x out), whose product, scaled by alpha / rank,
/// is added to the linear's output. Bridge's defaults: rank (dim) 32, all four linears.
struct LoraSpec {
  int rank = 0;  ///< 0: no LoRA, every weight trains
  bool qkv = true;
  bool proj = true;
  bool fc1 = true;
  bool fc2 = true;
  [[nodiscard]] bool enabled() const { return rank > 0; }
};

/// LoRA targets by their YAML name, in chopsim's order (Megatron-Bridge's linear_qkv, linear_proj, linear_fc1,
/// linear_fc2).
inline constexpr std::array<std::pair<std::string_view, bool LoraSpec::*>, 4> kLoraTargetNames{{
    {"qkv", &LoraSpec::qkv},
    {"proj", &LoraSpec::proj},
    {"fc1", &LoraSpec::fc1},
    {"fc2", &LoraSpec::fc2},
}};

struct TrainingSpec {
  Framework framework = Framework::megatron_te;
  int global_batch = 1;                   ///< sequences per iteration (optimizer step)
  int micro_batch = 1;                    ///< sequences per micro-batch on one data-parallel rank
  int seq_len = 2048;                     ///< tokens per sequence
  Precision precision = Precision::bf16;  ///< matmul precision (weights and activations in bf16 for fp8 runs)
  /// LoRA fine-tuning (frozen base weights, low-rank adapters); rank 0 = full training.
  LoraSpec lora;
  RecomputePolicy recompute = RecomputePolicy::none;
  /// With full recompute: the transformer layers of each model chunk (virtual pipeline stage) that are recomputed,
  /// the chunk's first ones (Megatron --recompute-method block --recompute-num-layers N; NeMo
  /// activations_checkpoint_method block); the others keep every activation. 0 = every layer (uniform, one
  /// layer per checkpoint). A chunk with fewer layers recomputes all of them.
  int recompute_layers = 0;
  /// With recompute: selective, the modules recomputed (Megatron's --recompute-modules); none: the attention internals.
  RecomputeModules recompute_modules;
  /// With full recompute: the recomputed forward stops once it has rebuilt every tensor the layer's backward reads,
  /// as PyTorch's non-reentrant checkpoint does from 2.1 (torch.utils.checkpoint, early stop on by default since
  /// pytorch/pytorch#96866; torch.utils.checkpoint.set_checkpoint_early_stop): autograd saves an op's inputs before
  /// the op runs, so the layer's last projection (the MLP's fc2 GEMM, which saves its input and weight and whose
  /// output nothing keeps) and the residual add after it are not run again. Megatron's recompute (its own
  /// CheckpointFunction) and PyTorch's reentrant checkpoint re-run the whole layer: false.
  bool recompute_early_stop = false;
  /// The modules a pass recomputes: recompute_modules under selective recomputation, none otherwise.
  [[nodiscard]] RecomputeModules recomputed_modules() const {
    return recompute == RecomputePolicy::selective ? recompute_modules : RecomputeModules{};
  }
  /// Transformer layers of a chunk of `chunk_layers` that are recomputed in the backward.
  [[nodiscard]] int recomputed_layers(int chunk_layers) const {
    if (recompute != RecomputePolicy::full) return 0;
    return recompute_layers > 0 ? std::min(recompute_layers, chunk_layers) : chunk_layers;
  }
  OverlapSpec overlap;
  int fsdp_prefetch = 1;  ///< FSDP units gathered ahead of the one computing
  /// The FSDP runtime of a zero_stage 3 run; unset: the framework's (fsdp_runtime()).
  std::optional<FsdpImplementation> fsdp_implementation;
  /// fsdp_implementation, or the framework's own: FSDP2 for eager PyTorch (torchtitan, PyTorch's recommended
  /// fully_shard), Megatron-FSDP for Megatron-Core.
  [[nodiscard]] FsdpImplementation fsdp_runtime() const {
    if (fsdp_implementation) return *fsdp_implementation;
    return framework == Framework::pytorch_eager ? FsdpImplementation::fsdp2 : FsdpImplementation::megatron;
  }
  double dp_bucket_bytes = 40.0 * 1024 * 1024;  ///< gradient bucket size for DP all-reduce (bytes)
  /// MoE capacity factor (Megatron --moe-expert-capacity-factor): an expert takes at most capacity * tokens * top_k
  /// / experts rows, the tokens above it dropped. Unset: dropless (Megatron's default), each expert takes the tokens
  /// routed to it.
  std::optional<double> moe_capacity_factor;
  /// With a capacity factor: every expert's rows padded up to its capacity (Megatron
  /// --moe-pad-expert-input-to-capacity), so each takes exactly its capacity whatever the routing. False: an expert
  /// takes what is routed to it up to its capacity.
  bool moe_pad_to_capacity = true;
  /// The routed token copies the busiest expert-parallel rank receives in a layer over the mean (>= 1; 1 = balanced
  /// routing, as benchmark runs force it: Megatron's --moe-router-force-load-balancing). Every MoE layer waits for
  /// that rank (the combine all-to-all needs its experts' output), so each rank is timed as it.
  double moe_load_imbalance = 1.0;
  /// The routed copies per token the busiest expert-parallel rank's experts take, over top_k / ep of them: the
  /// padded capacity; else the load imbalance (at ep = 1 one rank holds every expert: 1), capped by the capacity
  /// (tokens above it dropped; exact when the rank's experts are alike, an upper bound otherwise).
  [[nodiscard]] double moe_busiest_rank_load(int ep) const {
    if (moe_capacity_factor && moe_pad_to_capacity) return *moe_capacity_factor;
    const double routed = ep > 1 ? moe_load_imbalance : 1.0;
    return moe_capacity_factor ? std::min(routed, *moe_capacity_factor) : routed;
  }
  /// The routed copies per token a rank sends over top_k: its tokens padded to the capacity, or with those above a
  /// capacity below 1 dropped (balanced routing), or all of them.
  [[nodiscard]] double moe_sent_load() const {
    if (!moe_capacity_factor) return 1.0;
    return moe_pad_to_capacity ? *moe_capacity_factor : std::min(1.0, *moe_capacity_factor);
  }
  /// The largest moe_load_imbalance there is: a token reaches a rank at most once per expert there and goes to top_k
  /// distinct experts, so the busiest of ep ranks takes at most min(ep, experts / top_k) times the mean (1 without
  /// experts).
  [[nodiscard]] static double largest_moe_load_imbalance(int experts, int top_k, int ep) {
    if (experts <= 1 || top_k < 1) return 1.0;
    return std::max(1.0, std::min<double>(ep, static_cast<double>(experts) / top_k));
  }
  /// How a mixture of experts moves its tokens to the experts and back (Megatron-Core --moe-token-dispatcher-type).
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// Megatron-Core's fused router (--moe-router-fusion: Transformer Engine's fused top-k with the score function, and
  /// with an auxiliary loss its fused scores and loss): one kernel where the unfused router launches several.
  bool moe_router_fusion = false;
  /// The router's auxiliary load-balancing loss (its kernels forward and backward, one more launch each).
  MoeAuxLoss moe_aux_loss = MoeAuxLoss::none;
  /// Aux-loss-free balancing (--moe-router-enable-expert-bias: DeepSeek-V3, Nemotron-H): the router adds a per-expert
  /// bias to the scores it ranks and counts each expert's tokens for the bias update.
  bool moe_expert_bias = false;
  /// Regions captured in CUDA graphs (Megatron-Core's --cuda-graph-scope; only the MoE scopes are modelled).
  CudaGraphScope cuda_graph_scope;
  /// How FP8 GEMM operands are scaled (precision fp8 only).
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  /// Attention kernel implementation: a key of the hardware's kernels.attention_implementations ("cudnn",
  /// "flash2", ...); empty = the hardware's default attention efficiency; kEagerAttention = no fused kernel.
  std::string attention;
  /// Deterministic execution (PyTorch torch.use_deterministic_algorithms(True), Transformer Engine
  /// NVTE_ALLOW_NONDETERMINISTIC_ALGO=0, Megatron --deterministic-mode): attention backward kernels run their
  /// deterministic variant, at the hardware's DeterministicAttention cost. GEMMs and elementwise kernels are
  /// deterministic already (with a pinned cuBLAS workspace), as is the eager attention's backward.
  bool deterministic = false;
  /// With `deterministic`: PyTorch's torch.utils.deterministic.fill_uninitialized_memory (default True) fills every
  /// tensor allocated through at::empty with NaN before use. Transformer Engine allocates its outputs that way, so
  /// each of its GEMM, norm and attention outputs, and the deterministic attention workspace, is written once more
  /// (a fill op before the kernel). False: the run turned the setting off.
  bool fill_uninitialized_memory = true;
  /// PyTorch's cuBLAS workspace per (handle, stream) as CUBLAS_WORKSPACE_CONFIG sets it (bytes; Megatron's
  /// --deterministic-mode requires ":4096:8", 32 MiB); 0 = not set: the hardware's default
  /// (HardwareSpec::cublas_workspace_bytes).
  double cublas_workspace_bytes = 0.0;
  /// Megatron's gradient-accumulation fusion (default on; --no-gradient-accumulation-fusion turns it off): the
  /// weight-gradient GEMM accumulates into the fp32 main_grad in its epilogue. Off: the GEMM writes a bf16
  /// gradient and a separate kernel adds it to main_grad (reads 4 + 2 bytes, writes 4 per parameter). Applies to
  /// fp32 main gradients (zero_stage 0-2 in mixed precision).
  bool gradient_accumulation_fusion = true;
  /// A fused cross-entropy kernel (Megatron --cross-entropy-loss-fusion, flash-attn's xentropy, Liger): reads the
  /// logits and writes the fp32 softmax once. Off: Megatron's unfused vocab-parallel cross entropy, a chain of
  /// fp32 elementwise passes over the logits (megatron/core/tensor_parallel/cross_entropy.py).
  bool cross_entropy_fusion = true;
  /// llm-foundry's flash-attn 2 path (attn_impl: flash; llmfoundry/models/layers/attention.py, flash_attn_fn): Q, K
  /// and V go through flash-attn's unpad_input (a gather each and two host synchronisations each: torch.nonzero and
  /// max().item()) and the output through pad_input (zeros, then an index_put), whether or not any token is
  /// padding; their backward is the mirror image (workload_unpad.cpp). Needs cp 1.
  bool unpad_attention = false;
  /// With eager attention: Megatron-LM's fused scale-mask-softmax kernel (FusedScaleMaskSoftmax under
  /// --masked-softmax-fusion, its default; megatron/model/fused_softmax.py, the scaled_upper_triang_masked_softmax
  /// CUDA kernel for the causal mask): the scale, the causal mask and the softmax are one pass over the scores
  /// forward (reads and writes each score once) and one backward, where PyTorch runs three kernels each way.
  bool masked_softmax_fusion = false;
  /// Gradient clipping by global norm (Megatron --clip-grad, PyTorch clip_grad_norm_): one pass over this rank's
  /// gradients to compute the norm before the optimizer step, and under PyTorch's runtimes (eager, FSDP1, FSDP2) a
  /// second that multiplies them by the clamped coefficient, which PyTorch does unconditionally to avoid a host sync
  /// (torch.nn.utils.clip_grad_norm_, FullyShardedDataParallel.clip_grad_norm_); Megatron rescales only when the
  /// norm exceeds the threshold, which a converging run rarely does.
  bool grad_clip = true;
  /// The optimizer's implementation.
  Optimizer optimizer = Optimizer::fused_adamw;
  /// Metrics the trainer updates from the logits after every micro-batch (Composer), in the order listed.
  std::vector<TrainMetric> train_metrics;
  /// Megatron --log-num-zeros-in-grad: counts zeros in this rank's gradient shard every step (one pass).
  bool log_num_zeros_in_grad = false;
  /// Megatron --log-params-norm: the norm of this rank's fp32 main-parameter shard every step (one pass).
  bool log_params_norm = false;
  /// FSDP/ZeRO-3 gradient reduction in fp32 (PyTorch FSDP MixedPrecision(reduce_dtype=torch.float32), Composer's
  /// mixed_precision DEFAULT): gradients are cast to fp32, reduce-scattered and kept sharded in fp32.
  bool fsdp_reduce_fp32 = false;
  /// ZeRO 0-2: the data-parallel gradient buffer (Megatron's main_grad), its accumulation and its reduction in fp32.
  /// Megatron-LM turns it on for bf16 training (arguments.py: accumulate_allreduce_grads_in_fp32 unless
  /// --grad-reduce-in-bf16); Megatron-Core's DistributedDataParallelConfig.grad_reduce_in_fp32 defaults to off, and
  /// Megatron-Bridge's and NeMo's performance recipes set it off (scripts/performance: cfg.ddp.grad_reduce_in_fp32 =
  /// False; NeMo recipe.trainer.plugins.grad_reduce_in_fp32 = False): the buffer is then bf16, the reduce-scatter
  /// half the bytes. fp32 and tf32 runs keep fp32 gradients either way.
  bool grad_reduce_fp32 = true;
  /// Megatron-LM's --create-attention-mask-in-dataloader (its default; --no-create-attention-mask-in-dataloader turns
  /// it off): the data loader builds a [b, 1, s, s] boolean causal mask for every micro-batch, which get_batch copies
  /// to the GPU over PCIe and broadcasts over the tensor-parallel group, even when the fused attention kernel applies
  /// the causal mask itself and never reads it.
  bool attention_mask_in_dataloader = false;
  /// Megatron-LM's --check-for-nan-in-loss-and-grad (its default): before each gradient bucket's data-parallel
  /// collective, the bucket's norm is computed and tested for NaN (ZeRO 0-2).
  bool check_for_nan_in_grad = false;
  /// Host (CPU) time to launch one kernel (s): the framework's Python and dispatch plus the CUDA launch call, on the
  /// one thread that launches the step. The engine's host issues every op this far apart and waits where the
  /// framework synchronises (IssueStep), so small kernels, host-bound loops and synchronisations cost GPU time.
  /// Default: what eager PyTorch takes per launch when the GPU waits for it, as `chopsim calibrate` measures it in
  /// Kineto traces (HostLaunchFit: the interval between consecutive launch calls on one CPU thread where the later
  /// kernel started within 15 µs of its call and the earlier had ended). Per trace of ../shared/data/traces/kineto
  /// (median, intervals): hta_v100_ns_resolution 7.8 µs (162), tracelens_h100_qwen05b 29 (33),
  /// hta_a100_rank3of8_dlrm 34 (2,485), hta_a100_rank0of16 43 (111), tracelens_b200_eager 79 (778),
  /// hta_a100_rank0of128_sampled 86 (251), hta_a100_2rank_nccl 155 (2,746). The default is the median of the seven,
  /// each trace counted once; the spread is the framework's and the script's. Megatron-Core with Transformer Engine
  /// takes more, by host CPU: ClusterSpec::megatron_host_launch_s, which `chopsim import` sets here for Megatron-LM,
  /// NeMo and Megatron-Bridge jobs. 0: the host is never behind (CUDA graphs).
  double host_launch_s = 43e-6;

  /// Micro-batches each pipeline processes per iteration: global_batch / (dp * micro_batch).
  [[nodiscard]] int micro_batches(const ParallelismSpec& parallelism) const {
    return global_batch / (parallelism.dp * micro_batch);
  }
  [[nodiscard]] double tokens_per_iteration() const {
    return static_cast<double>(global_batch) * static_cast<double>(seq_len);
  }
};

/// The groups a rank communicates in.
enum class GroupRole : std::uint8_t {
  tp,    ///< tensor (and sequence) parallel
  cp,    ///< context parallel
  dp,    ///< data parallel (same tp, cp, pp coordinates)
  data,  ///< dp x cp: dense gradients are reduced over it
  pp,    ///< pipeline (same tp, cp, dp): stage order
  // The expert layers' groups lay a stage's tp x cp x dp ranks (index tp + TP*(cp + CP*dp)) out as etp x ep x
  // expert-data, etp fastest (Megatron-Core's expert rank order); with etp = tp, ep blocks of the data group.
  expert_tp,    ///< expert tensor parallel: consecutive blocks of etp ranks of the stage (the tp group when etp = tp)
  ep,           ///< expert parallel: every etp-th rank of consecutive blocks of etp x ep ranks of the stage
  expert_data,  ///< ranks holding the same experts: stage ranks / (etp x ep) (expert gradients reduced here)
  shard,        ///< FSDP/ZeRO shard group inside the data group (size shard_group_size)
  replicate,    ///< hybrid sharding: same shard position across shard groups
  world,
};
[[nodiscard]] std::string_view to_string(GroupRole role);

/// Position of a rank along each parallel dimension.
struct RankCoordinates {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
};

/// Megatron-LM rank order: tp varies fastest, then cp, then dp, then pp
/// (rank = tp + TP*(cp + CP*(dp + DP*pp))), so TP groups sit inside a node.
class RankLayout {
 public:
  RankLayout() = default;
  explicit RankLayout(const ParallelismSpec& parallelism);

  [[nodiscard]] int world_size() const { return world_size_; }
  [[nodiscard]] RankCoordinates coordinates(int rank) const;
  [[nodiscard]] int rank_of(const RankCoordinates& coordinates) const;

  /// Members of `rank`'s group for `role`, in group order.
  [[nodiscard]] std::vector<int> group(int rank, GroupRole role) const;
  /// Position of `rank` inside its own group for `role`.
  [[nodiscard]] int index_in_group(int rank, GroupRole role) const;
  /// A number that is equal for exactly the ranks sharing a group for `role` (0 <= id < world_size).
  [[nodiscard]] int group_id(int rank, GroupRole role) const;
  [[nodiscard]] int group_size(GroupRole role) const;

  [[nodiscard]] const ParallelismSpec& parallelism() const { return parallelism_; }

 private:
  ParallelismSpec parallelism_{};
  int world_size_ = 0;
  int shard_size_ = 1;
};

}  // namespace chopsim
