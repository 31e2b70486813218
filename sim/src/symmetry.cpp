#include "symmetry.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/workload.hpp"

namespace chopsim::sim_detail {

namespace {

/// The layout's extent along `axis` (tp, cp or dp ranks).
int extent(const RankLayout& layout, RankAxis axis) {
  const ParallelismSpec& p = layout.parallelism();
  switch (axis) {
    case RankAxis::tp:
      return p.tp;
    case RankAxis::cp:
      return p.cp;
    case RankAxis::dp:
      return p.dp;
  }
  return 1;
}

int& coordinate(RankCoordinates& c, RankAxis axis) {
  switch (axis) {
    case RankAxis::tp:
      return c.tp;
    case RankAxis::cp:
      return c.cp;
    case RankAxis::dp:
      break;
  }
  return c.dp;
}

int coordinate_of(const RankLayout& layout, int rank, RankAxis axis) {
  RankCoordinates c = layout.coordinates(rank);
  return coordinate(c, axis);
}

/// `rank`'s position along `axis` (its coordinate in the axis' shift order).
int position_of(const RankLayout& layout, const AxisOrders& orders, int rank, RankAxis axis) {
  RankCoordinates c = layout.coordinates(rank);
  return orders.position_of(axis, coordinate(c, axis));
}

/// sigma_{axis,k}: `rank` with its `axis` position moved on by k (mod the axis' extent).
int shifted(const RankLayout& layout, const AxisOrders& orders, int rank, RankAxis axis, int k) {
  RankCoordinates c = layout.coordinates(rank);
  int& x = coordinate(c, axis);
  x = orders.coordinate_at(axis, (orders.position_of(axis, x) + k) % extent(layout, axis));
  return layout.rank_of(c);
}

/// Largest group whose permuted members' plans are compared (all members' plans are computed, in time linear in
/// the group's size: CollectiveModel::plan_all).
constexpr std::size_t kLargestPermutedGroup = 65536;

/// True when the member that `permutation` sends member i to plans what member i plans with every peer p replaced by
/// permutation[p]: the same steps, sizes, channels, latencies and synchronisation counts. A step's transfers are
/// compared as a set: both engines post them at once and each (peer, channel) has its own mailbox, so their order in
/// the plan does not matter (a grouped all-to-all lists its node's peers from the member's own position on, so a
/// shift that swaps neighbours within a node reorders the list without changing it).
bool equivariant(const SimulationInput& input, const CollectiveCall& call, const std::vector<int>& permutation) {
  const std::vector<CollectivePlan> plans = input.collectives->plan_all(call, *input.topology);
  if (plans.size() != permutation.size()) return false;
  using Key = std::tuple<int, double, int>;  // (peer, bytes, channel)
  std::vector<Key> mapped, expected;
  auto same = [&](const std::vector<Transfer>& mine, const std::vector<Transfer>& theirs) {
    if (mine.size() != theirs.size()) return false;
    mapped.clear();
    expected.clear();
    for (std::size_t t = 0; t < mine.size(); ++t) {
      mapped.emplace_back(permutation[static_cast<std::size_t>(mine[t].peer)], mine[t].bytes, mine[t].channel);
      expected.emplace_back(theirs[t].peer, theirs[t].bytes, theirs[t].channel);
    }
    if (mapped == expected) return true;  // the usual case: the same order
    std::sort(mapped.begin(), mapped.end());
    std::sort(expected.begin(), expected.end());
    // Two transfers on one (peer, channel) match in plan order: then the order matters, and it differs.
    for (std::size_t t = 1; t < mapped.size(); ++t)
      if (std::get<0>(mapped[t]) == std::get<0>(mapped[t - 1]) && std::get<2>(mapped[t]) == std::get<2>(mapped[t - 1]))
        return false;
    return mapped == expected;
  };
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const CollectivePlan& mine = plans[i];
    const CollectivePlan& theirs = plans[static_cast<std::size_t>(permutation[i])];
    if (mine.steps.size() != theirs.steps.size()) return false;
    for (std::size_t k = 0; k < mine.steps.size(); ++k) {
      const CollectiveStep& a = mine.steps[k];
      const CollectiveStep& b = theirs.steps[k];
      if (a.latency_s != b.latency_s || a.sync_members != b.sync_members || !same(a.sends, b.sends) ||
          !same(a.receives, b.receives))
        return false;
    }
  }
  return true;
}

/// The (kind, size) of every collective of the workload, by the role of its group.
using Signatures = std::map<GroupRole, std::set<std::tuple<CollectiveKind, double, TokenRouting>>>;

Signatures collective_signatures(const Workload& workload) {
  Signatures signatures;
  for (const Program& program : workload.programs)
    for (const Stream& stream : program.streams)
      for (const Op& op : stream.ops)
        if (op.kind == OpKind::collective)
          signatures[op.group].emplace(op.collective, op.bytes, workload.routing_of(op));
  return signatures;
}

/// Why sigma_{axis,k} does not leave `input` (whose collectives are `signatures`) invariant, or "" if it does.
std::string breaks_symmetry(const SimulationInput& input, const Signatures& signatures, const AxisOrders& orders,
                            RankAxis axis, int k) {
  const Workload& workload = *input.workload;
  const RankLayout& layout = workload.layout;
  const int world = layout.world_size();
  for (int r = 0; r < world; ++r) {
    const int image = shifted(layout, orders, r, axis, k);
    if (workload.program_of_rank[static_cast<std::size_t>(r)] !=
        workload.program_of_rank[static_cast<std::size_t>(image)])
      return "ranks " + std::to_string(r) + " and " + std::to_string(image) + " run different programs";
    if (const PowerInput* power = input.power) {
      const auto a = static_cast<std::size_t>(r), b = static_cast<std::size_t>(image);
      if (power->inlet_c[a] != power->inlet_c[b] || power->initial_c[a] != power->initial_c[b])
        return "ranks " + std::to_string(r) + " and " + std::to_string(image) + " have different inlet temperatures";
      const int per = power->dies_per_package;
      if (image % per != r % per || shifted(layout, orders, r - r % per, axis, k) / per != image / per)
        return "the shift splits power packages";
      // Representatives have their position below k on every shifted axis: a package is wholly on one side on
      // each axis, hence also of their conjunction.
      const bool representative = position_of(layout, orders, r, axis) < k;
      for (int die = r - r % per; die < r - r % per + per && die < world; ++die)
        if ((position_of(layout, orders, die, axis) < k) != representative)
          return "a power package spans several classes";
    }
  }
  // Groups map onto groups of the same role: member by member, or (a group of one class, such as the data-parallel
  // group) onto itself with its members permuted, which needs every collective on it to be planned alike by the
  // permuted members (rings and pairwise all-to-all are; a tree rooted at member 0 is not).
  for (const auto& [role, calls] : signatures) {
    std::vector<char> seen(static_cast<std::size_t>(world), 0);
    for (int r = 0; r < world; ++r) {
      const int id = layout.group_id(r, role);
      if (seen[static_cast<std::size_t>(id)]) continue;
      seen[static_cast<std::size_t>(id)] = 1;
      const std::vector<int> members = layout.group(r, role);
      std::vector<int> images(members.size());
      for (std::size_t i = 0; i < members.size(); ++i) images[i] = shifted(layout, orders, members[i], axis, k);
      const std::vector<int> image_group = layout.group(images.front(), role);
      if (image_group == images) continue;
      std::vector<int> sorted_members = members, sorted_images = images;
      std::sort(sorted_members.begin(), sorted_members.end());
      std::sort(sorted_images.begin(), sorted_images.end());
      if (sorted_members != sorted_images)
        return "the shift does not map " + std::string(to_string(role)) + " groups onto " +
               std::string(to_string(role)) + " groups";
      if (members.size() > kLargestPermutedGroup)
        return std::string(to_string(role)) + " groups of " + std::to_string(members.size()) +
               " ranks are too large to check";
      std::unordered_map<int, int> index_of;
      index_of.reserve(members.size());
      for (std::size_t i = 0; i < members.size(); ++i) index_of.emplace(members[i], static_cast<int>(i));
      std::vector<int> permutation(members.size());  // member i's image is member permutation[i]
      for (std::size_t i = 0; i < members.size(); ++i) permutation[i] = index_of.at(images[i]);
      for (const auto& [kind, bytes, routing] : calls)
        if (!equivariant(input, CollectiveCall{kind, bytes, members, routing}, permutation))
          return "the " + std::string(to_string(kind)) + " plans of " + std::string(to_string(role)) +
                 " groups differ between the members the shift exchanges";
    }
  }
  return "";
}

GroupRole role_of(RankAxis axis) {
  switch (axis) {
    case RankAxis::tp:
      return GroupRole::tp;
    case RankAxis::cp:
      return GroupRole::cp;
    case RankAxis::dp:
      break;
  }
  return GroupRole::dp;
}

/// The ring of `axis`' groups: if every collective of those groups is planned as a ring whose members send their first
/// transfer to the same successor, one cycle through all members, the order of their coordinates along it from 0
/// (position -> coordinate); otherwise empty. The collective model may order a ring on one switch as it likes (every
/// order loads each port alike) and alternates the node's front and rear slots (collective.cpp, switch_ring), so a
/// shift by two ring steps keeps them apart and the peers of each slot kind fold.
std::vector<int> ring_order(const SimulationInput& input, const Signatures& signatures, RankAxis axis) {
  const RankLayout& layout = input.workload->layout;
  const auto calls = signatures.find(role_of(axis));
  if (calls == signatures.end() || extent(layout, axis) < 3) return {};
  const std::vector<int> members = layout.group(0, role_of(axis));
  const auto n = members.size();
  for (std::size_t i = 0; i < n; ++i)
    if (coordinate_of(layout, members[i], axis) != static_cast<int>(i)) return {};
  std::vector<int> successor;
  for (const auto& [kind, bytes, routing] : calls->second) {
    const std::vector<CollectivePlan> plans =
        input.collectives->plan_all(CollectiveCall{kind, bytes, members, routing}, *input.topology);
    if (plans.size() != n) return {};
    std::vector<int> next(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      if (plans[i].steps.empty() || plans[i].steps.front().sends.empty()) return {};
      next[i] = plans[i].steps.front().sends.front().peer;
    }
    if (successor.empty()) successor = next;
    if (next != successor) return {};
  }
  std::vector<int> order{0};
  std::vector<char> seen(n, 0);
  seen[0] = 1;
  while (order.size() < n) {
    const int following = successor[static_cast<std::size_t>(order.back())];
    if (following < 0 || following >= static_cast<int>(n) || seen[static_cast<std::size_t>(following)]) return {};
    seen[static_cast<std::size_t>(following)] = 1;
    order.push_back(following);
  }
  if (successor[static_cast<std::size_t>(order.back())] != 0) return {};
  return order;
}

}  // namespace

RankClasses::RankClasses(int world_size) {
  representative_.resize(static_cast<std::size_t>(world_size));
  std::iota(representative_.begin(), representative_.end(), 0u);
  representatives_.resize(static_cast<std::size_t>(world_size));
  std::iota(representatives_.begin(), representatives_.end(), 0);
}

RankClasses RankClasses::of(const SimulationInput& input) {
  const Workload& workload = *input.workload;
  const int world = static_cast<int>(workload.program_of_rank.size());
  RankClasses classes(world);
  if (!workload.groups.empty()) {
    classes.limit_ = "explicit collective groups (a replayed trace)";
    return classes;
  }
  const RankLayout& layout = workload.layout;
  if (const PowerInput* power = input.power;
      power != nullptr && (power->inlet_c.size() != static_cast<std::size_t>(world) ||
                           power->initial_c.size() != static_cast<std::size_t>(world) || power->dies_per_package < 1)) {
    classes.limit_ = "incomplete power input";  // PreparedWorkload reports it
    return classes;
  }
  if (layout.world_size() != world) {
    classes.limit_ = "the workload's ranks are not its layout's";
    return classes;
  }
  // Each axis on its own: the smallest k dividing its extent whose shift leaves the input invariant. The shifts of
  // different axes commute, so the group they generate leaves it invariant too.
  const Signatures signatures = collective_signatures(workload);
  AxisOrders orders;
  std::vector<std::string> limits;
  for (const RankAxis axis : {RankAxis::dp, RankAxis::tp, RankAxis::cp}) {
    const int n = extent(layout, axis);
    if (n < 2) continue;
    // The coordinates' own order first, then the ring's: the first that folds most (the smallest k) is kept.
    std::vector<std::vector<int>> candidates{{}};
    if (std::vector<int> ring = ring_order(input, signatures, axis); !ring.empty()) {
      std::vector<int> identity(ring.size());
      std::iota(identity.begin(), identity.end(), 0);
      if (ring != identity) candidates.push_back(std::move(ring));
    }
    std::string first_problem;
    int best_k = 0;
    AxisOrders best = orders;
    for (const std::vector<int>& order : candidates) {
      AxisOrders trial = orders;
      trial.order[AxisOrders::index(axis)] = order;
      trial.position[AxisOrders::index(axis)].clear();
      if (!order.empty()) {
        trial.position[AxisOrders::index(axis)].assign(order.size(), 0);
        for (std::size_t p = 0; p < order.size(); ++p)
          trial.position[AxisOrders::index(axis)][static_cast<std::size_t>(order[p])] = static_cast<int>(p);
      }
      for (int k = 1; k < n && (best_k == 0 || k < best_k); ++k) {
        if (n % k != 0) continue;
        std::string problem = breaks_symmetry(input, signatures, trial, axis, k);
        if (problem.empty()) {
          best_k = k;
          best = trial;
          break;
        }
        if (first_problem.empty()) first_problem = std::move(problem);
      }
    }
    if (best_k > 0) {
      orders = best;
      classes.shifts_.push_back(AxisShift{axis, best_k, n / best_k});
    }
    if (best_k != 1 && !first_problem.empty()) limits.push_back(std::string(to_string(axis)) + ": " + first_problem);
  }
  if (classes.shifts_.empty() && limits.empty()) limits.emplace_back("no data, tensor or context parallelism");
  for (const std::string& limit : limits) classes.limit_ += (classes.limit_.empty() ? "" : "; ") + limit;
  if (classes.shifts_.empty()) return classes;

  classes.layout_ = layout;
  classes.orders_ = orders;
  classes.class_size_ = 1;
  for (const AxisShift& shift : classes.shifts_) classes.class_size_ *= shift.orbit;
  classes.representatives_.clear();
  for (int r = 0; r < world; ++r) {
    RankCoordinates c = layout.coordinates(r);
    bool representative = true;
    for (const AxisShift& shift : classes.shifts_) {
      int& x = coordinate(c, shift.axis);
      const int p = orders.position_of(shift.axis, x);
      representative = representative && p < shift.step;
      x = orders.coordinate_at(shift.axis, p % shift.step);
    }
    if (representative) classes.representatives_.push_back(r);
    classes.representative_[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>(layout.rank_of(c));
  }
  return classes;
}

int RankClasses::image(int rank, int times) const {
  if (shifts_.empty() || times == 0) return rank;
  RankCoordinates c = layout_.coordinates(rank);
  for (const AxisShift& shift : shifts_) {
    int& x = coordinate(c, shift.axis);
    const int p = orders_.position_of(shift.axis, x);
    x = orders_.coordinate_at(shift.axis, (p + shift.step * (times % shift.orbit)) % (shift.step * shift.orbit));
    times /= shift.orbit;
  }
  return layout_.rank_of(c);
}

std::string_view to_string(RankAxis axis) {
  switch (axis) {
    case RankAxis::tp:
      return "tp";
    case RankAxis::cp:
      return "cp";
    case RankAxis::dp:
      break;
  }
  return "dp";
}

}  // namespace chopsim::sim_detail
