#pragma once
// Classes of equivalent ranks (docs/design.md, "Symmetry"): the fast engine simulates one representative per class
// and lets it stand for the others.
//
// The classes are the orbits of a shift of the data-parallel coordinate by k (sigma_k: dp -> dp + k mod dp), for the
// smallest k dividing dp under which the whole input is invariant:
//   * every rank runs the program of its image (programs are per pipeline stage, so this holds unless a workload
//     maps ranks to programs otherwise, e.g. a replayed trace);
//   * every group of every role a collective uses maps onto a group of the same role, member by member in group
//     order (so a member's collective plan is its image's; hybrid sharding needs k to be a multiple of the shard
//     group size);
//   * inlet and initial temperatures are equal (the slot in the node is the same: front/rear slots stay apart);
//   * power packages (MI250/MI250X's two dies) map onto packages die by die, and a representative's package holds
//     representatives only.
// Workloads with explicit groups (replayed traces) have no classes. The representatives are the ranks whose dp
// coordinate is below k; rank r stands in the class of the rank with dp coordinate dp(r) mod k.

#include <cstdint>
#include <string>
#include <vector>

#include "chopsim/models/parallelism.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim::sim_detail {

class RankClasses {
 public:
  /// Every rank its own class.
  explicit RankClasses(int world_size);
  /// The coarsest DP-shift classes `input` allows (see above).
  [[nodiscard]] static RankClasses of(const SimulationInput& input);

  [[nodiscard]] int world_size() const { return static_cast<int>(representative_.size()); }
  /// Ranks per class (1: no reduction).
  [[nodiscard]] int class_size() const { return class_size_; }
  [[nodiscard]] bool reduced() const { return class_size_ > 1; }
  [[nodiscard]] std::uint32_t representative(int rank) const { return representative_[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] bool is_representative(int rank) const {
    return representative(rank) == static_cast<std::uint32_t>(rank);
  }
  /// Per rank: the rank that stands for it.
  [[nodiscard]] const std::vector<std::uint32_t>& representatives_of_ranks() const { return representative_; }
  /// The simulated ranks, ascending.
  [[nodiscard]] const std::vector<int>& representatives() const { return representatives_; }
  /// sigma_k applied `times` times to `rank` (the image of `rank` in the `times`-th member of its class).
  [[nodiscard]] int image(int rank, int times) const;
  /// Why the classes are not coarser ("" when every replica is one class).
  [[nodiscard]] const std::string& limit() const { return limit_; }

 private:
  std::vector<std::uint32_t> representative_;
  std::vector<int> representatives_;
  RankLayout layout_;
  int shift_ = 0;  ///< k (0: no classes)
  int class_size_ = 1;
  std::string limit_;
};

}  // namespace chopsim::sim_detail
