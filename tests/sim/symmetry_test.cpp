// Symmetry classes of the fast engine (sim/src/symmetry.hpp): which data-parallel shifts leave a simulation
// invariant, and what breaks them.

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
  Case s{grid(2, 4, GroupRole::dp), uniform_star(8, 1e10, 1e-6)};
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_EQ(classes.class_size(), 4);
  EXPECT_EQ(classes.representatives(), (std::vector<int>{0, 1}));  // the tp ranks of replica 0
  for (int r = 0; r < 8; ++r) EXPECT_EQ(classes.representative(r), static_cast<std::uint32_t>(r % 2)) << r;
  EXPECT_EQ(classes.image(1, 3), 7);  // tp 1, dp 0 -> dp 3
  EXPECT_TRUE(classes.limit().empty());
}

TEST(Symmetry, HotterRearSlotsKeepFrontAndRearApart) {
  // 4 GPUs per node, slots 2 and 3 warmer: shifting dp by 1 (2 ranks) moves front GPUs to the rear; by 2 it does not.
  Case s{grid(2, 4, GroupRole::dp), uniform_star(8, 1e10, 1e-6)};
  s.power.inlet_c = {25, 25, 30, 30, 25, 25, 30, 30};
  s.power.initial_c = s.power.inlet_c;
  const RankClasses classes = RankClasses::of(s.input());
  EXPECT_EQ(classes.class_size(), 2);
  EXPECT_EQ(classes.representatives(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(classes.limit().find("inlet"), std::string::npos) << classes.limit();
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
  s.workload.groups.push_back({0, 1, 2, 3});
  EXPECT_FALSE(RankClasses::of(s.input()).reduced());
  s.workload.groups.clear();
  s.workload.programs.push_back(s.workload.programs.front());
  s.workload.program_of_rank[3] = 1;
  EXPECT_FALSE(RankClasses::of(s.input()).reduced());
}

TEST(Symmetry, RepresentativesGiveTheFullSimulationsEventsOnAUniformNetwork) {
  // On a uniform star every replica is alike: each representative's events equal its own events in the simulation
  // of every rank, bit for bit or to rounding.
  Case s{grid(2, 4, GroupRole::dp), uniform_star(8, 1e10, 1e-6)};
  const SimulationInput input = s.input();
  RecordingObserver full, reduced;
  const SimulationStats a = engine_named("fast", false)->run(input, full);
  const SimulationStats b = engine_named("fast", true)->run(input, reduced);
  EXPECT_EQ(b.simulated_ranks, 2u);
  EXPECT_NEAR(b.makespan_s, a.makespan_s, 1e-12 * a.makespan_s);
  for (const OpEvent& e : reduced.events) {
    ASSERT_LT(e.rank, 2u);
    const OpEvent* same = full.end_of(e.rank, e.stream, e.op, e.iteration);
    ASSERT_NE(same, nullptr);
    if (e.is_end) {
      EXPECT_NEAR(e.time_s, same->time_s, 1e-12 * same->time_s);
    }
  }
}

}  // namespace
}  // namespace chopsim::test
