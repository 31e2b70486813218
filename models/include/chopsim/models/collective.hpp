#pragma once
// Collectives as NCCL/RCCL run them: an algorithm decomposes a collective into steps of point-to-point
// transfers for each member; the engine executes the transfers over the simulated network.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/kernel_class.hpp"
#include "chopsim/common/registry.hpp"

namespace chopsim {

class Topology;

// CollectiveKind (and the size convention of its bytes) lives in chopsim/common/kernel_class.hpp (shared with
// traces/).
[[nodiscard]] std::string_view to_string(CollectiveKind kind);

/// One point-to-point transfer seen from one member. `peer` is a member index (position in the group).
struct Transfer {
  int peer = 0;
  double bytes = 0.0;
  int channel = 0;  ///< parallel rings/trees use different channels; transfers match per (peer, channel)
};

/// The member posts all sends and receives of a step at once, waits for all of them, then waits
/// `latency_s` (protocol/synchronisation cost not carried by the network model) before the next step.
struct CollectiveStep {
  std::vector<Transfer> sends;
  std::vector<Transfer> receives;
  double latency_s = 0.0;
  /// Pipelined algorithms: the `sync_members` members that carry the same `sync_id` in this step end it together,
  /// when the last of them has finished its transfers (every chunk of a pipelined ring or tree crosses the slowest
  /// link, so no member is done earlier); then each waits `latency_s`. 0 = each member ends the step on its own.
  int sync_members = 0;
  int sync_id = 0;  ///< equal for exactly the members that synchronise (e.g. the smallest member index of a sub-ring)
};

struct CollectivePlan {
  std::string algorithm;  ///< e.g. "ring", "tree", "pairwise", "hierarchical_ring"
  std::vector<CollectiveStep> steps;
};

/// An all_to_all that carries a mixture of experts' tokens through a deduplicating dispatcher (Megatron-Core's flex
/// token dispatcher with DeepEP or HybridEP): a token routed to several experts travels once to each GPU that holds
/// one of them, and crosses the fabric once to each other node that does, where it is forwarded over NVLink (DeepEP's
/// normal kernels: "forwarding data from NVLink domain to RDMA domain", github.com/deepseek-ai/DeepEP README).
/// `experts` routed experts spread evenly over the group's members, each token sent to `top_k` of them; chopsim
/// takes the routing as balanced and uniform (the measured runs force-balance it), so a member holding e of the
/// experts receives a token with probability 1 - C(experts - e, top_k) / C(experts, top_k).
struct TokenRouting {
  int experts = 0;  ///< 0: not a token dispatch (a plain all-to-all of distinct parts)
  int top_k = 0;
  auto operator<=>(const TokenRouting&) const = default;
};

/// A collective call as the engine sees it.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::all_reduce;
  /// Bytes per CollectiveKind's convention. A token dispatch's (routing.experts > 0): each member's tokens times
  /// top_k times the bytes per token, what a plain all-to-all of every copy would send.
  double bytes = 0.0;
  std::span<const int> members;  ///< global ranks in group order
  TokenRouting routing{};        ///< all_to_all: deduplicated token dispatch (routing.experts > 0), else plain
};

/// The probability that a token routed uniformly to `top_k` distinct experts of `experts` reaches at least one of
/// `held` of them: 1 - C(experts - held, top_k) / C(experts, top_k) (held >= experts: 1).
[[nodiscard]] double token_reach_probability(int experts, int top_k, int held);

/// Parameters of the collective model (configs: `collectives:` in a run, defaults in docs/configs.md).
struct CollectiveParams {
  /// Algorithm per kind; "auto" lets the model choose by size and span as NCCL's tuner does.
  std::string all_reduce = "auto";      ///< ring | tree | hierarchical | auto
  std::string all_gather = "auto";      ///< ring | hierarchical | auto
  std::string reduce_scatter = "auto";  ///< ring | hierarchical | auto
  std::string all_to_all = "grouped";   ///< grouped (every peer at once, NCCL) | pairwise (n-1 rounds, MPI)
  /// Software latency per algorithm step (kernel-level synchronisation, protocol), seconds.
  /// NCCL's tuning model uses a few microseconds per step for the Simple protocol.
  double step_latency_s = 2e-6;
  /// Rings/channels used in parallel over full-mesh nodes (xGMI): traffic is split evenly.
  int mesh_channels = 0;  ///< 0: as many as the mesh allows
  /// Execute a ring as one pipelined step per member (bandwidth term 2(n-1)/n*S/B as concurrent flows that all
  /// members wait for, latency term added as step latency) instead of 2(n-1) synchronised steps. Same alpha-beta
  /// time, far fewer events at scale.
  bool pipelined_rings = true;
};

class CollectiveModel {
 public:
  virtual ~CollectiveModel() = default;
  /// The steps member `me` (index into call.members) executes. Every member of a call gets matching
  /// plans: for each send to peer p on channel c there is one receive at p from `me` on channel c, in
  /// the same order.
  [[nodiscard]] virtual CollectivePlan plan(const CollectiveCall& call, int me, const Topology& topology) const = 0;
  /// The plans of every member (element i: plan(call, i, topology)), computed once where members share work (the
  /// choice of algorithm, the ring order): what an engine needs to prepare a whole group.
  [[nodiscard]] virtual std::vector<CollectivePlan> plan_all(const CollectiveCall& call,
                                                             const Topology& topology) const {
    std::vector<CollectivePlan> plans;
    plans.reserve(call.members.size());
    for (std::size_t i = 0; i < call.members.size(); ++i) plans.push_back(plan(call, static_cast<int>(i), topology));
    return plans;
  }
  /// Closed-form alpha-beta time of the call on an idle network (for checks and reports).
  [[nodiscard]] virtual double estimate_time_s(const CollectiveCall& call, const Topology& topology) const = 0;
  [[nodiscard]] virtual const CollectiveParams& params() const = 0;
};

using CollectiveModelRegistry = Registry<CollectiveModel, const CollectiveParams&>;
/// "nccl": NCCL/RCCL-like choice of ring, tree, hierarchical and pairwise algorithms.
void register_builtin_collective_models(CollectiveModelRegistry& registry);

}  // namespace chopsim
