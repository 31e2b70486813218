#pragma once
// Max-min fair sharing of link capacity among concurrent flows, as SimGrid 3.32's lmm solver computes it for the
// CM02 network model (docs/design.md, "Engine semantics (fast)").
//
// A constraint is one direction of one link with a capacity in bytes/s. A flow crosses a set of constraints and has
// a weight: CM02 with network/weight-S = 0 gives each flow the sharing penalty of its route's latency (a flow whose
// route has no latency gets penalty 1), and lmm hands a flow λ / penalty on the constraint that limits it, so the
// weight here is 1 / penalty. Progressive filling: the constraint with the smallest share per unit weight
// (remaining capacity / sum of its unfixed flows' weights) saturates first and fixes its flows' rates; the others
// lose what those flows use; repeat.
//
// Incremental as lmm's modified set: adding or removing a flow marks its constraints, and solve() re-solves only the
// connected components (constraints joined by flows) that hold a marked constraint. Flow progress (bytes left) is
// brought up to date whenever a rate changes, so a flow's predicted end is last_update + remaining / rate.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace chopsim::sim_detail {

class FlowNetwork {
 public:
  using FlowId = std::uint32_t;

  /// One capacity (bytes/s, > 0) per constraint.
  explicit FlowNetwork(std::vector<double> capacities);

  /// A flow of `bytes` over `constraints` (distinct indices) with sharing `weight` (> 0) enters at `now_s`. Its rate
  /// is 0 until the next solve(). With no constraint it is not limited (rate +infinity).
  FlowId add(std::span<const std::uint32_t> constraints, double weight, double bytes, double now_s);
  /// The same for a flow that stands for several equal flows (a symmetry class, docs/design.md): it uses
  /// `uses[h]` (>= 1) times its rate of `constraints[h]`, one per flow of the class that crosses it.
  FlowId add(std::span<const std::uint32_t> constraints, std::span<const double> uses, double weight, double bytes,
             double now_s);
  /// The flow leaves (finished or abandoned); its id may be reused by a later add().
  void remove(FlowId flow);

  /// True when an add() or remove() has not been solved yet.
  [[nodiscard]] bool dirty() const { return !dirty_.empty(); }
  /// Re-solves the components touched since the last solve at `now_s`; appends every flow whose rate changed (new
  /// flows included) to `changed`.
  void solve(double now_s, std::vector<FlowId>& changed);

  [[nodiscard]] double rate(FlowId flow) const { return flows_[flow].rate; }
  /// When the flow ends at its present rate (+infinity at rate 0).
  [[nodiscard]] double end_s(FlowId flow) const;
  /// Bytes left at `now_s` at the present rate.
  [[nodiscard]] double remaining_bytes(FlowId flow, double now_s) const;
  [[nodiscard]] std::size_t active_flows() const { return active_; }
  [[nodiscard]] std::size_t constraint_count() const { return constraints_.size(); }
  /// Rate of the flows on constraint `c`, summed (for tests: never above its capacity).
  [[nodiscard]] double load(std::uint32_t c) const;

 private:
  struct Flow {
    std::vector<std::uint32_t> constraints;
    std::vector<std::uint32_t> slot;  ///< per constraint: this flow's index in that constraint's flow list
    std::vector<double> uses;         ///< per constraint: rate consumed per unit of the flow's rate (1 but in classes)
    double weight = 1.0;
    double remaining = 0.0;  ///< bytes at last_s
    double last_s = 0.0;
    double rate = 0.0;
    std::uint64_t stamp = 0;  ///< solve epoch that reached it
    bool fixed = false;
    bool active = false;
  };
  /// A flow on a constraint: which flow, which of its constraints this is, and how many times it uses it.
  struct Entry {
    FlowId flow = 0;
    std::uint32_t hop = 0;
    double uses = 1.0;
  };
  struct Constraint {
    double capacity = 0.0;
    std::vector<Entry> flows;
    std::uint64_t stamp = 0;    ///< solve epoch that reached it
    bool marked = false;        ///< in dirty_
    double remaining = 0.0;     ///< during a solve
    double usage = 0.0;         ///< during a solve: weights of the unfixed flows
    std::uint32_t unfixed = 0;  ///< during a solve: flows without a rate yet
    std::uint32_t version = 0;  ///< bumped whenever remaining or usage changes (stale heap entries are skipped)
  };

  void mark(std::uint32_t c);
  void bring_up_to_date(Flow& flow, double now_s) const;

  std::vector<Constraint> constraints_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_;
  std::vector<std::uint32_t> dirty_;
  std::size_t active_ = 0;
  std::uint64_t epoch_ = 0;
  // Scratch of solve(), kept to avoid reallocating.
  std::vector<std::uint32_t> component_;
  std::vector<FlowId> component_flows_;
  std::vector<double> old_rates_;
  struct Share {
    double per_weight;
    std::uint32_t constraint;
    std::uint32_t version;
  };
  std::vector<Share> heap_;
};

}  // namespace chopsim::sim_detail
