// NCCL/RCCL-like collective algorithms, decomposed into point-to-point steps per member.
//
// Cost model: the alpha-beta model of the NCCL tuner (NCCL src/graph/tuning.cc) and of Thakur, Rabenseifner, Gropp,
// "Optimization of Collective Communication Operations in MPICH" (IJHPCA 2005). With n members, buffer S, per-step
// latency alpha (route latency + CollectiveParams::step_latency_s) and bandwidth B:
//   ring all-reduce        2(n-1)/n * S/B + 2(n-1) alpha     (reduce-scatter then all-gather, 2(n-1) steps of S/n)
//   ring all-gather / RS    (n-1)/n * S/B +  (n-1) alpha
//   double binary tree AR        2 * S/B + 2 D alpha       (D = tree depth; NCCL 2.4, src/graph/trees.cc)
//   pairwise all-to-all     (n-1)/n * S/B +  (n-1) alpha     (n-1 synchronised steps, one peer each)
//   grouped all-to-all      max over links of (bytes crossing it)/B + alpha   (every peer at once, NCCL's)
//   ring broadcast                  S/B +  (n-1) alpha     (pipelined chain from member 0)
//
// Channels. NCCL runs several rings at once ("channels") and splits the buffer over them; chopsim does the same where
// it changes the bandwidth:
// * Groups spanning several nodes with L > 1 members on each node: every node contributes the same segment (its
//   members in some order) to a ring, and every other node's segment is reversed ("boustrophedon"), so each ring
//   leaves and enters every node through GPUs with the same position in the node: rail-aligned NIC pairs, as NCCL's
//   ring search prefers. NVSwitch nodes: L rings whose segments start at the k-th member, so that every NIC carries one
//   ring per direction. Mesh nodes: one ring per intra-node ring of the mesh (below), so the intra-node hops of
//   different rings stay on different links, their segments starting evenly spaced around it so that the rings leave
//   and enter through every member's NIC. Over exactly two nodes each channel runs both ways (full_ring).
// * A node whose members are all directly linked (xGMI full mesh, MI300X): the complete graph is split into
//   edge-disjoint Hamiltonian cycles (Walecki's construction, see hamiltonian_cycles()), each used in both directions,
//   so nearly every link carries traffic, as RCCL's many channels do on MI300X. Partial meshes (MI250X): a Hamiltonian
//   cycle of the direct links and its reverse.
// * Otherwise (one NVSwitch: every GPU one non-blocking port) one ring that alternates the node's front and rear
//   slots (switch_ring: every order loads the ports alike; this one lets the fast engine fold peers by slot kind).
//
// Pipelined rings (CollectiveParams::pipelined_rings): the k = (n-1) or 2(n-1) synchronised steps of a ring become one
// step in which every member sends k*S/(n*C) to its successor on each channel; the flows then run concurrently as the
// chunks of NCCL's pipeline do. Every chunk crosses every hop, so the ring is as fast as its slowest flow: the members
// end the step together (CollectiveStep::sync_members) when the last flow ends, then wait the rest of the latency term
// k*alpha (the flows already paid one hop latency). The time equals the formula above with far fewer simulated
// events. The double binary tree and the broadcast chain are pipelined the same way.

#include "chopsim/models/collective.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/models/topology.hpp"
#include "collective_algorithms.hpp"
#include "collective_rings.hpp"

namespace chopsim {

double token_reach_probability(int experts, int top_k, int held) {
  if (held >= experts) return 1.0;
  if (held <= 0) return 0.0;
  // C(experts - held, top_k) / C(experts, top_k) as a product, exact for the small integers involved.
  double none = 1.0;
  for (int i = 0; i < top_k; ++i) none *= static_cast<double>(experts - held - i) / static_cast<double>(experts - i);
  return 1.0 - std::max(none, 0.0);
}

std::string_view to_string(CollectiveKind kind) { return collective_kind_name(kind); }

namespace {

// The algorithms' plan and estimate parts: collective_algorithms.hpp.
using namespace collective_detail;

class NcclModel final : public CollectiveModel {
 public:
  explicit NcclModel(const CollectiveParams& params) : params_(params) {
    check("all_reduce", params_.all_reduce, {"auto", "ring", "tree", "hierarchical"});
    check("all_gather", params_.all_gather, {"auto", "ring", "hierarchical"});
    check("reduce_scatter", params_.reduce_scatter, {"auto", "ring", "hierarchical"});
    check("all_to_all", params_.all_to_all, {"grouped", "pairwise"});
    if (!(params_.step_latency_s >= 0.0)) throw ModelError("collectives: step_latency_s must be >= 0");
    if (params_.mesh_channels < 0) throw ModelError("collectives: mesh_channels must be >= 0");
  }

  CollectivePlan plan(const CollectiveCall& call, int me, const Topology& topology) const override {
    validate(call);
    const int n = static_cast<int>(call.members.size());
    if (me < 0 || me >= n) throw ModelError("collective: member index " + std::to_string(me) + " outside the group");
    std::vector<CollectivePlan> plans = plans_of(call, topology, me, me + 1);
    return std::move(plans.front());
  }

  std::vector<CollectivePlan> plan_all(const CollectiveCall& call, const Topology& topology) const override {
    validate(call);
    return plans_of(call, topology, 0, static_cast<int>(call.members.size()));
  }

  double estimate_time_s(const CollectiveCall& call, const Topology& topology) const override {
    validate(call);
    const Context ctx{call, topology, params_};
    return estimate(ctx, algorithm(ctx));
  }

  const CollectiveParams& params() const override { return params_; }

 private:
  static void check(const char* kind, const std::string& value, std::initializer_list<const char*> valid) {
    for (const char* name : valid)
      if (value == name) return;
    throw ModelError(std::string("collectives: unknown ") + kind + " algorithm '" + value + "' (valid: " + join(valid) +
                     ")");
  }

  static void validate(const CollectiveCall& call) {
    if (call.members.empty()) throw ModelError("collective: empty group");
    if (!(call.bytes >= 0.0)) throw ModelError("collective: negative or NaN size");
    if (call.routing.experts > 0) {
      const auto n = static_cast<int>(call.members.size());
      if (call.kind != CollectiveKind::all_to_all) throw ModelError("collective: only an all_to_all dispatches tokens");
      if (call.routing.experts % n != 0 || call.routing.top_k < 1 || call.routing.top_k > call.routing.experts)
        throw ModelError("collective: a token dispatch needs experts divisible by its " + std::to_string(n) +
                         " members and 1 <= top_k <= experts (got " + std::to_string(call.routing.experts) +
                         " experts, top_k " + std::to_string(call.routing.top_k) + ")");
    }
  }

  static Order all_members(int n) {
    Order all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  [[nodiscard]] double estimate(const Context& ctx, const std::string& algorithm) const {
    const int n = static_cast<int>(ctx.call.members.size());
    if (n <= 1) return 0.0;
    if (algorithm == "ring") return full_ring(ctx, ring_factor(ctx.call.kind)).estimate(ctx);
    if (algorithm == "tree") return estimate_tree(ctx);
    if (algorithm == "hierarchical") return estimate_hierarchical(ctx, Hierarchy{by_node(ctx, all_members(n))});
    if (algorithm == "pairwise") return estimate_pairwise(ctx);
    if (algorithm == "grouped" || algorithm == "token_dispatch")
      return estimate_grouped(ctx, Hierarchy{by_node(ctx, all_members(n))});
    if (algorithm == "ring_broadcast") return estimate_broadcast(ctx);
    return estimate_shift(ctx);
  }

  /// The algorithm every member of the call uses (depends only on the call, never on the member).
  /// "auto" follows NCCL's tuner, which takes the algorithm with the lowest predicted time (src/graph/tuning.cc):
  /// inside one node always the ring (NCCL's intra-node tree is a chain and never wins there); across nodes the
  /// lower closed-form estimate of ring and double binary tree for an all-reduce, ties to the ring, and the ring for
  /// all-gather and reduce-scatter, the only algorithms NCCL's tuner prices for them without NVLink SHARP or an
  /// in-network reduction (NVLS, CollNet). chopsim's hierarchical form is not one of NCCL's algorithms and runs only
  /// when asked (it took all-gathers over hundreds of ranks at a sixth of a ring's step latencies). With the estimates
  /// above the tree wins for small all-reduces over many nodes: below S = n(n-1-D) alpha B for one member per node
  /// (about 44 MB for 16 nodes at alpha = 5 us, B = 50 GB/s).
  /// The plans of members [first, last): the algorithm, the ring and the node hierarchy are worked out once.
  std::vector<CollectivePlan> plans_of(const CollectiveCall& call, const Topology& topology, int first,
                                       int last) const {
    const int n = static_cast<int>(call.members.size());
    const Context ctx{call, topology, params_};
    std::vector<CollectivePlan> plans(static_cast<std::size_t>(last - first));
    const std::string chosen = algorithm(ctx);
    for (CollectivePlan& plan : plans) plan.algorithm = chosen;
    if (n == 1) return plans;
    if (chosen == "ring") {
      const auto ring = full_ring(ctx, ring_factor(call.kind));
      for (int me = first; me < last; ++me) ring.append(ctx, me, plans[static_cast<std::size_t>(me - first)]);
    } else if (chosen == "hierarchical") {
      const Hierarchy h{by_node(ctx, all_members(n))};
      for (int me = first; me < last; ++me)
        for (const RingPhase& phase : hierarchical_phases(ctx, h, me))
          phase.append(ctx, me, plans[static_cast<std::size_t>(me - first)]);
    } else if (chosen == "grouped" || chosen == "token_dispatch") {
      const Hierarchy h{by_node(ctx, all_members(n))};
      for (int me = first; me < last; ++me) append_grouped(ctx, h, me, plans[static_cast<std::size_t>(me - first)]);
    } else {
      for (int me = first; me < last; ++me) {
        CollectivePlan& plan = plans[static_cast<std::size_t>(me - first)];
        if (chosen == "tree")
          append_tree(ctx, me, plan);
        else if (chosen == "pairwise")
          append_pairwise(ctx, me, plan);
        else if (chosen == "ring_broadcast")
          append_broadcast(ctx, me, plan);
        else
          append_shift(ctx, me, plan);
      }
    }
    return plans;
  }

  [[nodiscard]] std::string algorithm(const Context& ctx) const {
    const CollectiveKind kind = ctx.call.kind;
    // A token dispatch is the dispatcher's own exchange (DeepEP, HybridEP), not NCCL's all-to-all.
    if (kind == CollectiveKind::all_to_all) return ctx.call.routing.experts > 0 ? "token_dispatch" : params_.all_to_all;
    if (kind == CollectiveKind::broadcast) return "ring_broadcast";
    if (kind == CollectiveKind::send_recv) return "shift";
    const int n = static_cast<int>(ctx.call.members.size());
    const std::string& wanted = kind == CollectiveKind::all_reduce   ? params_.all_reduce
                                : kind == CollectiveKind::all_gather ? params_.all_gather
                                                                     : params_.reduce_scatter;
    const Hierarchy h{by_node(ctx, all_members(n))};
    if (wanted == "hierarchical") return h.applies() ? "hierarchical" : "ring";
    if (wanted != "auto") return wanted;
    if (h.nodes.size() <= 1) return "ring";
    std::string best = "ring";
    double best_time = estimate(ctx, "ring");
    auto consider = [&](const char* name) {
      const double t = estimate(ctx, name);
      if (t < best_time) {
        best_time = t;
        best = name;
      }
    };
    if (kind == CollectiveKind::all_reduce) consider("tree");
    return best;
  }

  CollectiveParams params_;
};

}  // namespace

void register_builtin_collective_models(CollectiveModelRegistry& registry) {
  registry.add("nccl",
               "NCCL/RCCL-like: rings (multi-channel, rail-aligned), double binary tree, hierarchical, grouped or "
               "pairwise all-to-all",
               [](const CollectiveParams& params) -> std::unique_ptr<CollectiveModel> {
                 return std::make_unique<NcclModel>(params);
               });
}

}  // namespace chopsim
