#pragma once
// One training iteration as per-rank programs: ordered ops on streams, like CUDA streams.
// An op starts when the op before it on its stream has finished and its cross-stream dependencies
// (events) have completed. Ranks in the same pipeline stage run the same program; groups are named by
// role and resolved per rank through the RankLayout, so a 16k-GPU workload stores pp programs, not 16k.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/hardware.hpp"
#include "chopsim/models/parallelism.hpp"
#include "chopsim/models/transformer.hpp"

namespace chopsim {

enum class OpKind : std::uint8_t {
  compute,     ///< a kernel: flops and bytes
  collective,  ///< a collective over `group`: bytes per CollectiveKind's convention
  send,        ///< point-to-point to the pipeline neighbour `peer_offset` away
  recv,        ///< point-to-point from the pipeline neighbour `peer_offset` away
  delay,       ///< holds its stream for `duration_s` with no GPU work: a measured host gap (replayed traces)
};
[[nodiscard]] std::string_view to_string(OpKind kind);

/// What exposed communication is charged to in the time breakdown.
enum class CommCategory : std::uint8_t { none, tp, cp, dp, fsdp, pp, ep };
inline constexpr std::size_t kCommCategoryCount = 7;
[[nodiscard]] std::string_view to_string(CommCategory category);

enum class Pass : std::uint8_t { forward, backward, recompute, optimizer, other };
[[nodiscard]] std::string_view to_string(Pass pass);

/// Wait until op `op` of stream `stream` of the same rank (same iteration) has completed.
struct OpDependency {
  std::uint16_t stream = 0;
  std::uint32_t op = 0;
};

struct Op {
  OpKind kind = OpKind::compute;
  KernelClass kernel_class = KernelClass::other;  ///< communication for non-compute ops
  Precision precision = Precision::bf16;
  CommCategory category = CommCategory::none;
  Pass pass = Pass::other;
  CollectiveKind collective = CollectiveKind::all_reduce;  ///< kind == collective
  GroupRole group = GroupRole::world;                      ///< kind == collective: whose group
  std::int8_t peer_offset = 0;  ///< send/recv: +1 next pipeline stage, -1 previous (modulo pp)
  /// compute GEMM: its result has a feature dimension that is not a multiple of 16 bytes (KernelWork::unaligned).
  bool unaligned : 1 = false;
  /// compute attention backward under training.deterministic (KernelWork::deterministic).
  bool deterministic : 1 = false;
  /// compute attention with dropout on its probabilities (KernelWork::dropout).
  bool dropout : 1 = false;
  /// compute: a copy from host memory over PCIe (KernelWork::host_to_device).
  bool host_to_device : 1 = false;
  /// compute: one of PyTorch's own elementwise kernels and its TensorIterator path (KernelWork::elementwise_path).
  ElementwisePath elementwise_path = ElementwisePath::fused;
  /// compute GEMM: the equal GEMMs one grouped kernel runs (KernelWork::problems), e.g. the local experts.
  std::uint16_t gemm_problems = 1;
  std::uint32_t tag = 0;    ///< send/recv: equal on the matching send and recv of a pair of ranks
  std::uint32_t name = 0;   ///< index into Workload::names
  std::int32_t layer = -1;  ///< global transformer layer, -1 for none
  std::int32_t micro_batch = -1;
  /// collective: index into Workload::groups, an explicit member list used instead of `group`'s role; -1 = by role.
  std::int32_t group_index = -1;
  double flops = 0.0;  ///< compute: FLOPs
  double bytes = 0.0;  ///< compute: HBM bytes moved; communication: message size
  /// A fixed duration (s) when >= 0, for measured ops (replayed traces): a compute op lasts exactly this instead of
  /// the compute model's time, not stretched by clocks or communication (a measured kernel already includes both);
  /// the members of a collective meet and then it lasts this instead of the collective model's plan; a delay lasts
  /// this (required). < 0: modelled.
  double duration_s = -1.0;
  std::uint32_t first_dependency = 0;  ///< into Program::dependencies
  std::uint32_t dependency_count = 0;
};
// Ops are the bulk of a large workload's memory (tens of millions on 2,048 GPUs): keep the layout at 64 bytes.
static_assert(sizeof(Op) == 64, "Op grew: reorder its fields or mind the workload's memory");

/// What the compute model needs of a compute op.
[[nodiscard]] inline KernelWork kernel_work(const Op& op) {
  return KernelWork{op.kernel_class,    op.precision,      op.flops,
                    op.bytes,           op.unaligned,      op.deterministic,
                    op.dropout,         op.host_to_device, static_cast<double>(op.gemm_problems),
                    op.elementwise_path};
}

struct Stream {
  std::string name;  ///< "compute", "fsdp_ag", "pp_send", ...
  std::vector<Op> ops;
};

/// One op as the host (the training process's launching thread) issues it. A kernel cannot start before the host
/// has launched it; the host launches ops one after another in program order, each costing `launches` times the
/// run's per-launch host time, and after an op with `host_waits` it blocks until that op has completed (a
/// `.item()` or `torch.cuda.synchronize()`), so the GPU runs dry and waits for the host to refill it.
struct IssueStep {
  std::uint32_t op = 0;
  std::uint16_t stream = 0;
  /// Kernel launches the host makes for this op: 1 for one kernel; a Python loop over tensors (Megatron's
  /// count_zeros_fp32, the main-to-model parameter copies) makes one or more per tensor. 0: none (a collective's
  /// second phase launched with the first).
  std::uint16_t launches = 1;
  bool host_waits = false;
};

struct Program {
  std::vector<Stream> streams;
  std::vector<OpDependency> dependencies;
  /// Every op of `streams` in the order the host issues them; every op comes after the ops it depends on and after
  /// the op before it on its stream. Empty: no host model (replayed traces, whose delays are the measured host).
  std::vector<IssueStep> issue_order;

  [[nodiscard]] std::size_t op_count() const;
};

/// Why `program`'s issue order cannot be run, or "" if it can (or is empty): every op issued exactly once, each
/// stream's ops in stream order, and every op after the ops it depends on (an op issued before something it waits
/// for could deadlock the host, which blocks after a host wait until that op completes).
[[nodiscard]] std::string issue_order_problem(const Program& program);

struct Workload {
  RankLayout layout;
  std::vector<std::string> names;              ///< op names; Op::name indexes this
  std::vector<Program> programs;               ///< one per pipeline stage
  std::vector<std::uint32_t> program_of_rank;  ///< world_size entries
  /// Explicit collective groups (global ranks in group order) for ops with group_index >= 0: measured groups of
  /// replayed traces, which need not be a parallelism role of `layout`.
  std::vector<std::vector<int>> groups;
  /// How the expert-parallel all-to-alls route their tokens through a deduplicating dispatcher (the model's routed
  /// experts and top_k under training.moe_dispatcher: flex); none: they are plain all-to-alls.
  TokenRouting token_routing{};
  double tokens_per_iteration = 0.0;
  /// Model FLOPs of one iteration over the whole cluster (training_flops_per_token * tokens).
  double model_flops_per_iteration = 0.0;

  [[nodiscard]] const Program& program(int rank) const { return programs[program_of_rank[rank]]; }
  [[nodiscard]] std::string_view name(const Op& op) const { return names[op.name]; }
  /// The routing `op`'s collective carries (CollectiveCall::routing): token_routing for an expert-parallel all-to-all
  /// (every one moves routed tokens: dispatch and combine, forward and backward), none for any other op.
  [[nodiscard]] TokenRouting routing_of(const Op& op) const {
    const bool expert_all_to_all = op.kind == OpKind::collective && op.collective == CollectiveKind::all_to_all &&
                                   op.group == GroupRole::ep && op.group_index < 0;
    return expert_all_to_all ? token_routing : TokenRouting{};
  }
  /// Executed FLOPs of one iteration summed over every rank (hardware FLOPs, recomputation included).
  [[nodiscard]] double executed_flops_per_iteration() const;
};

/// What the workload needs to know of the hardware's kernels: only facts that add ops or bytes (the compute model
/// times the ops later). kernel_facts_for() reads them from a hardware description.
struct KernelFacts {
  /// Bytes per (query, key) score of the workspace a deterministic attention backward allocates per kernel call
  /// (DeterministicAttention::workspace_bytes_per_score of the run's attention implementation).
  double deterministic_workspace_bytes_per_score = 0.0;
};

/// The KernelFacts of `hardware` for a run with `training`'s attention implementation.
[[nodiscard]] KernelFacts kernel_facts_for(const HardwareSpec& hardware, const TrainingSpec& training);

/// LoRA (TrainingSpec::lora): the adapters' parameters of one transformer layer, over all its tensor-parallel ranks:
/// rank x (in + out) per targeted linear (A is in x rank, B rank x out).
[[nodiscard]] double lora_layer_parameters(const TransformerSpec& model, const LoraSpec& lora);

/// Model FLOPs per token of one training step: model_training_flops_per_token, except that under LoRA a frozen matrix
/// costs its forward and its input gradient (4 x its parameters: no weight gradient) and the adapters train (6 x
/// theirs). Attention is counted as in full training (its backward has no weights).
[[nodiscard]] double training_flops_per_token(const TransformerSpec& model, const TrainingSpec& training);

/// Builds the programs of one training iteration. Inputs must have passed config validation
/// (divisibility of heads, layers, batch); violations throw ModelError.
[[nodiscard]] Workload build_workload(const TransformerSpec& model, const ParallelismSpec& parallelism,
                                      const TrainingSpec& training, const KernelFacts& kernels = {});

}  // namespace chopsim
