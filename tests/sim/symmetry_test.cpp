// Symmetry classes of the fast engine (sim/src/symmetry.hpp): which data-, tensor- and context-parallel shifts leave
// a simulation invariant, and what breaks them.

#include "symmetry.hpp"

#include <gtest/gtest.h>

#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

using sim_detail::RankClasses;

/// tp x dp ranks (Megatron order: tp fastest), one program of one collective over `role`.
Workload grid(int tp, int dp, GroupRole role) {
  ParallelismSpec p;
  p.tp = tp;
  p.dp = dp;
  Program program;
  program.streams.push_back({"compute", {compute_op(1e-3), collective_op(CollectiveKind::all_reduce, 1e6, role)}});
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"op"};
  w.programs.push_back(std::move(program));
  w.program_of_rank.assign(static_cast<std::size_t>(tp * dp), 0);
  return w;
}

struct Case {
  Case(Workload w, Topology t, const CollectiveParams& params = {})
      : workload(std::move(w)), topology(std::move(t)), collectives(nccl(params)) {}
  Workload workload;
  Topology topology;
  std::unique_ptr<ComputeModel> compute = roofline(test_compute_params());
  std::unique_ptr<CollectiveModel> collectives;
  PowerInput power;
  SimulationInput input() const {
    SimulationInput in = simulation_input(workload, topology, *compute, *collectives);
    if (power.power != nullptr || !power.inlet_c.empty()) in.power = &power;
    return in;
  }
};

TEST(Symmetry, DataParallelReplicasFormOneClassEach) {
  // The tp ranks sit in slots of different inlet temperature, so only the data-parallel shift is a symmetry.
  Case s{grid(2, 4, GroupRole::dp), uniform_star(8, 1e10, 1e-6)};
  s.power.inlet_c = {25, 30, 25, 30, 25, 30, 25, 30};
  s.power.initial_c = s.power.inlet_c;
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_EQ(classes.class_size(), 4);
  EXPECT_EQ(classes.representatives(), (std::vector<int>{0, 1}));  // the tp ranks of replica 0
  for (int r = 0; r < 8; ++r) EXPECT_EQ(classes.representative(r), static_cast<std::uint32_t>(r % 2)) << r;
  EXPECT_EQ(classes.image(1, 3), 7);  // tp 1, dp 0 -> dp 3
  EXPECT_EQ(classes.limit(), "tp: ranks 0 and 1 have different inlet temperatures");
}

TEST(Symmetry, TensorParallelPeersFoldWithTheReplicas) {
  // Equal slots: the tp shift is a symmetry too, and the tp group's ring maps onto itself rotated. One GPU stands
  // for all eight; image t moves dp by t mod 4 and tp by t / 4.
  Case s{grid(2, 4, GroupRole::tp), uniform_star(8, 1e10, 1e-6)};
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_EQ(classes.class_size(), 8);
  EXPECT_EQ(classes.representatives(), (std::vector<int>{0}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(classes.representative(r), 0u) << r;
  std::vector<int> images;
  for (int t = 0; t < 8; ++t) images.push_back(classes.image(0, t));
  EXPECT_EQ(images, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));  // rank = tp + 2 dp
  EXPECT_EQ(classes.image(3, 5), 4);                              // (tp 1, dp 1) -> (tp 0, dp 2)
  EXPECT_TRUE(classes.limit().empty()) << classes.limit();
}

TEST(Symmetry, HotterRearSlotsKeepFrontAndRearApart) {
  // One node of 8 slots, the rear half (4-7) warmer: replicas 0 and 1 sit in front, 2 and 3 at the rear. The
  // data-parallel ring on the switch alternates front and rear slots (dp 0, 2, 1, 3), so moving every replica two
  // ring steps on keeps front and rear apart: two classes of replicas; the two tp ranks of a replica share a slot
  // temperature, so they fold.
  Case s{grid(2, 4, GroupRole::dp), uniform_star(8, 1e10, 1e-6)};
  s.power.inlet_c = {25, 25, 25, 25, 30, 30, 30, 30};
  s.power.initial_c = s.power.inlet_c;
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_EQ(classes.class_size(), 4);
  EXPECT_EQ(classes.representatives(), (std::vector<int>{0, 4}));  // replica 0 (front) and replica 2 (rear)
  EXPECT_EQ(classes.representative(2), 0u);                        // replica 1 stands with replica 0
  EXPECT_EQ(classes.representative(7), 4u);                        // replica 3 with replica 2
  EXPECT_NE(classes.limit().find("different inlet"), std::string::npos) << classes.limit();
}

TEST(Symmetry, ATreeRootedAtOneMemberBreaksIt) {
  // A tree all-reduce is not the same seen from every member: no class may stand for the others.
  CollectiveParams tree;
  tree.all_reduce = "tree";
  Case s{grid(1, 8, GroupRole::dp), uniform_star(8, 1e10, 1e-6), tree};
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_FALSE(classes.reduced());
  EXPECT_NE(classes.limit().find("plans"), std::string::npos) << classes.limit();
}

TEST(Symmetry, ExplicitGroupsAndDistinctProgramsHaveNoClasses) {
  Case s{grid(1, 4, GroupRole::dp), uniform_star(4, 1e10, 1e-6)};
  EXPECT_TRUE(RankClasses::of(s.input()).reduced());
  s.workload.groups.push_back({0, 1, 2, 3});
  EXPECT_FALSE(RankClasses::of(s.input()).reduced());
  s.workload.groups.clear();
  s.workload.programs.push_back(s.workload.programs.front());
  s.workload.program_of_rank[3] = 1;
  EXPECT_FALSE(RankClasses::of(s.input()).reduced());
}

TEST(Symmetry, ATensorParallelRingFoldedGivesTheFullSimulationsTimes) {
  // On a uniform star every GPU is alike: both the tp ring and the dp ring fold into one GPU, whose transfers stand
  // for all eight GPUs' images, and its events equal rank 0's in the simulation of every rank, to rounding.
  Case s{grid(4, 2, GroupRole::tp), uniform_star(8, 1e10, 1e-6)};
  s.workload.programs.front().streams.front().ops.push_back(
      collective_op(CollectiveKind::all_reduce, 4e6, GroupRole::dp));
  const SimulationInput input = s.input();
  RecordingObserver full, reduced;
  const SimulationStats a = engine_named("fast", false)->run(input, full);
  const SimulationStats b = engine_named("fast", true)->run(input, reduced);
  EXPECT_EQ(b.simulated_ranks, 1u);
  EXPECT_NEAR(b.makespan_s, a.makespan_s, 1e-12 * a.makespan_s);
  ASSERT_FALSE(reduced.events.empty());
  for (const OpEvent& e : reduced.events) {
    ASSERT_EQ(e.rank, 0u);
    const OpEvent* same = full.end_of(e.rank, e.stream, e.op, e.iteration);
    ASSERT_NE(same, nullptr);
    if (e.is_end) {
      EXPECT_NEAR(e.time_s, same->time_s, 1e-12 * same->time_s);
    }
  }
}

}  // namespace
}  // namespace chopsim::test
