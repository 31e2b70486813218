#pragma once
// Everything the engine derives from a SimulationInput before simulating, without SimGrid: kernel durations,
// the groups and collective plans of every rank, pipeline peers, and the GPU pairs that communicate (whose routes
// the platform must hold before it is sealed).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim::sim_detail {

/// A collective as it appears in a program: who (role), what and how much. Ranks of one program share signatures.
struct CollectiveSignature {
  GroupRole role = GroupRole::world;
  std::int32_t group_index = -1;  ///< Op::group_index: an explicit group of Workload::groups instead of `role`
  CollectiveKind kind = CollectiveKind::all_reduce;
  double bytes = 0.0;
  double duration_s = -1.0;  ///< Op::duration_s: >= 0, the members meet and the op lasts this (no transfers)
  TokenRouting routing{};    ///< Workload::routing_of(op)
};

/// A collective as one rank executes it.
struct RankCollective {
  const CollectivePlan* plan = nullptr;
  const std::vector<int>* members = nullptr;  ///< global ranks in group order
  int group = -1;                             ///< index of the group, equal for all its members
};

/// The power packages of a run (docs/design.md, "Power dynamics"): `dies_per_package` consecutive ranks share one
/// power limit, the per-GPU cap times their count. Element k is package k, its dies the ranks k*n ... k*n+n-1 in order.
[[nodiscard]] std::vector<PowerDomainSettings> power_packages(const PowerInput& power, int world_size,
                                                              double comm_compute_slowdown);

class PreparedWorkload {
 public:
  /// Validates the input (throws EngineError naming the problem) and computes plans; plans are cached by
  /// (group, kind, bytes, member) so that ranks sharing them (and repeated ops) cost one plan() call.
  explicit PreparedWorkload(const SimulationInput& input);
  /// The same for the ranks `ranks` only (the representatives of symmetry classes): collective plans, pipeline peers
  /// and communicating pairs of those ranks; collective() answers for them only.
  PreparedWorkload(const SimulationInput& input, const std::vector<int>& ranks);

  [[nodiscard]] const SimulationInput& input() const { return input_; }
  [[nodiscard]] const Workload& workload() const { return *input_.workload; }
  [[nodiscard]] int world_size() const { return world_size_; }
  [[nodiscard]] double clock_hz() const { return clock_hz_; }

  /// Duration of compute or delay op `op` of `stream` in `program` (0 for other ops): Op::duration_s where it is
  /// fixed, else the compute model's.
  [[nodiscard]] double duration_s(std::size_t program, std::size_t stream, std::size_t op) const {
    return durations_[program][stream][op];
  }
  /// The collective op `op` of `stream` as rank `rank` executes it.
  [[nodiscard]] RankCollective collective(int rank, std::size_t stream, std::size_t op) const;
  /// The rank `offset` pipeline stages from `rank` (send/recv peer).
  [[nodiscard]] int pipeline_peer(int rank, int offset) const;

  /// Ordered (source, destination) GPU pairs that exchange data, sorted (with a subset of ranks: the pairs those ranks
  /// send on).
  [[nodiscard]] const std::vector<std::pair<int, int>>& communicating_pairs() const { return pairs_; }
  [[nodiscard]] std::size_t plan_count() const { return plans_.size(); }

  /// A readable description of an op for error messages: "rank 3 stream 1 'compute' op 17 'fwd.qkv' (compute)".
  [[nodiscard]] std::string describe(int rank, std::size_t stream, std::size_t op) const;

 private:
  const SimulationInput& input_;
  int world_size_ = 0;
  double clock_hz_ = 0.0;
  std::vector<std::vector<std::vector<double>>> durations_;        // [program][stream][op]
  std::vector<std::vector<std::vector<std::int32_t>>> signature_;  // [program][stream][op] -> index or -1
  std::vector<std::vector<CollectiveSignature>> signatures_;       // [program]
  std::vector<std::vector<RankCollective>> rank_collectives_;      // [rank][signature]
  std::vector<std::unique_ptr<std::vector<int>>> groups_;
  std::vector<std::unique_ptr<CollectivePlan>> plans_;
  std::vector<std::pair<int, int>> pairs_;
};

}  // namespace chopsim::sim_detail
