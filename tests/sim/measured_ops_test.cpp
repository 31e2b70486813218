// Ops of replayed traces (docs/design.md "Programs"): fixed-duration kernels, delays (host gaps), collectives over
// explicit groups, and measured collectives whose members meet and then last the measured time.

#include <gtest/gtest.h>

#include <cmath>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(MeasuredOps);

RecordedRun simulate(const Workload& workload, int gpus, double slowdown = 0.0, double bandwidth = 100e9) {
  const Topology topology = uniform_star(gpus, bandwidth, 2e-6);
  const auto compute = roofline(test_compute_params(slowdown));
  const auto collectives = nccl();
  return run_recorded(simulation_input(workload, topology, *compute, *collectives));
}

Op fixed_op(double seconds, double flops = 0.0) {
  Op op = compute_op(flops / kPeak);
  op.duration_s = seconds;
  return op;
}

Op delay_op(double seconds) {
  Op op;
  op.kind = OpKind::delay;
  op.duration_s = seconds;
  return op;
}

Op measured_collective(int group_index, double seconds) {
  Op op = collective_op(CollectiveKind::all_reduce, 1e6);
  op.group_index = group_index;
  op.duration_s = seconds;
  return op;
}

/// One program per rank (explicit groups join ranks that run different programs).
Workload per_rank(std::vector<Program> programs) {
  ParallelismSpec p;
  p.dp = static_cast<int>(programs.size());
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"op"};
  for (std::size_t r = 0; r < programs.size(); ++r) w.program_of_rank.push_back(static_cast<std::uint32_t>(r));
  w.programs = std::move(programs);
  return w;
}

TEST_P(MeasuredOps, FixedKernelsLastTheirDurationWhateverTheirWorkAndTheirNeighbours) {
  // The roofline would give 1 s for 1e15 FLOPs; the fixed duration wins. Two fixed kernels on two streams overlap
  // fully: an Exec pair would share the GPU and each take twice as long.
  Program program;
  program.streams.push_back({"a", {fixed_op(2e-3, 1e15), fixed_op(1e-3)}});
  program.streams.push_back({"b", {fixed_op(3e-3)}});
  const RecordedRun r = simulate(same_program_everywhere(1, program), 1, 0.5);
  EXPECT_DOUBLE_EQ(r.observer.end_of(0, 0, 0)->time_s, 2e-3);
  EXPECT_DOUBLE_EQ(r.observer.end_of(0, 0, 1)->time_s, 3e-3);
  EXPECT_DOUBLE_EQ(r.observer.end_of(0, 1, 0)->time_s, 3e-3);
  EXPECT_DOUBLE_EQ(r.stats.makespan_s, 3e-3);

  // A modelled kernel next to a fixed one still takes the whole GPU (the fixed one is a measurement, not a load).
  Program mixed;
  mixed.streams.push_back({"a", {compute_op(1e-3)}});
  mixed.streams.push_back({"b", {fixed_op(1e-3)}});
  const RecordedRun m = simulate(same_program_everywhere(1, mixed), 1);
  EXPECT_NEAR(m.observer.end_of(0, 0, 0)->time_s, 1e-3, 1e-12);
}

TEST_P(MeasuredOps, DelaysHoldTheirStreamAndChainWithDependencies) {
  // Stream 0: kernel 1 ms. Stream 1: a delay of 0.25 ms that waits for stream 0's kernel, then a kernel of 0.5 ms.
  // The delay starts when the kernel it depends on has ended (1 ms), so the next kernel starts at 1.25 ms: a kernel
  // that started 0.25 ms after the event it waited on.
  Program program;
  program.streams.push_back({"compute", {fixed_op(1e-3)}});
  program.streams.push_back({"side", {delay_op(0.25e-3), fixed_op(0.5e-3)}});
  depend(program, 1, 0, 0, 0);
  const RecordedRun r = simulate(same_program_everywhere(1, program), 1);
  const OpEvent* kernel = r.observer.end_of(0, 1, 1);
  ASSERT_NE(kernel, nullptr);
  EXPECT_DOUBLE_EQ(kernel->start_s, 1.25e-3);
  EXPECT_DOUBLE_EQ(kernel->time_s, 1.75e-3);
  // A leading delay places the first kernel of a stream at its measured start.
  Program lead;
  lead.streams.push_back({"s", {delay_op(4e-3), fixed_op(1e-3)}});
  const RecordedRun l = simulate(same_program_everywhere(1, lead), 1);
  EXPECT_DOUBLE_EQ(l.observer.end_of(0, 0, 1)->start_s, 4e-3);
  EXPECT_DOUBLE_EQ(l.stats.makespan_s, 5e-3);
}

TEST_P(MeasuredOps, MeasuredCollectiveWaitsForTheLastMemberThenLastsItsTime) {
  // Ranks 0, 1, 2 of 4 meet in explicit group {2, 0, 1}; they arrive at 1, 3 and 2 ms and the collective lasts
  // 0.5 ms after the last arrival: all end at 3.5 ms. Rank 3 is not in the group and runs alone.
  std::vector<Program> programs(4);
  const double arrive[] = {1e-3, 3e-3, 2e-3};
  for (int r = 0; r < 3; ++r)
    programs[static_cast<std::size_t>(r)].streams.push_back(
        {"comm", {delay_op(arrive[r]), measured_collective(0, 0.5e-3)}});
  programs[3].streams.push_back({"comm", {fixed_op(1e-3)}});
  Workload w = per_rank(programs);
  w.groups = {{2, 0, 1}};
  const RecordedRun r = simulate(w, 4);
  for (std::uint32_t rank = 0; rank < 3; ++rank) {
    const OpEvent* end = r.observer.end_of(rank, 0, 1);
    ASSERT_NE(end, nullptr);
    EXPECT_NEAR(end->time_s, 3.5e-3, 1e-12) << rank;
    EXPECT_NEAR(end->start_s, arrive[rank], 1e-12) << rank;  // the wait is part of the op, as NCCL kernels show it
  }
  EXPECT_DOUBLE_EQ(r.observer.end_of(3, 0, 0)->time_s, 1e-3);
  // A one-member group keeps its measured time on its own.
  std::vector<Program> alone(1);
  alone[0].streams.push_back({"comm", {delay_op(1e-3), measured_collective(0, 0.7e-3)}});
  Workload single = per_rank(alone);
  single.groups = {{0}};
  EXPECT_NEAR(simulate(single, 1).stats.makespan_s, 1.7e-3, 1e-12);
}

TEST_P(MeasuredOps, ExplicitGroupOfAllRanksSimulatesLikeTheWorldRole) {
  // A re-simulated collective over an explicit group equal to the world group takes the collective model's time.
  Program by_role;
  by_role.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, 256e6)}});
  const RecordedRun role = simulate(same_program_everywhere(4, by_role), 4);
  std::vector<Program> programs(4);
  for (auto& p : programs) {
    Op op = collective_op(CollectiveKind::all_reduce, 256e6);
    op.group_index = 0;
    p.streams.push_back({"comm", {op}});
  }
  Workload w = per_rank(programs);
  w.groups = {{0, 1, 2, 3}};
  const RecordedRun expl = simulate(w, 4);
  EXPECT_GT(role.stats.makespan_s, 2.0 * 3.0 / 4.0 * 256e6 / 100e9);  // at least the ring's bandwidth term
  EXPECT_NEAR(expl.stats.makespan_s, role.stats.makespan_s, 1e-12);
}

TEST_P(MeasuredOps, BadMeasuredOpsAreEngineErrors) {
  Program no_duration;
  no_duration.streams.push_back({"s", {delay_op(-1.0)}});
  EXPECT_THROW((void)simulate(same_program_everywhere(1, no_duration), 1), EngineError);

  std::vector<Program> programs(2);
  for (auto& p : programs) p.streams.push_back({"comm", {measured_collective(3, 1e-3)}});
  Workload out_of_range = per_rank(programs);
  out_of_range.groups = {{0, 1}};
  EXPECT_THROW((void)simulate(out_of_range, 2), EngineError);

  Workload not_member = per_rank(programs);
  not_member.groups = {{1}, {1}, {1}, {0, 1}};
  not_member.programs[0].streams[0].ops[0].group_index = 0;  // rank 0 in group {1}
  EXPECT_THROW((void)simulate(not_member, 2), EngineError);
}

}  // namespace
}  // namespace chopsim::test
