// The time breakdown charges every instant of every GPU to exactly one bucket, so the buckets sum to
// the simulated time; these tests drive the observer with hand-made event sequences.

#include <gtest/gtest.h>

#include "observers.hpp"  // private header of chopsim_experiments

namespace chopsim {
namespace {

/// One rank (or `pp` ranks), one compute stream and one communication stream with the given ops.
Workload two_stream_workload(int pp, CommCategory category) {
  ParallelismSpec parallelism;
  parallelism.pp = pp;
  Workload workload;
  workload.layout = RankLayout(parallelism);
  workload.names = {"gemm", "collective"};
  Program program;
  Stream compute{"compute", {}};
  Op gemm;
  gemm.kind = OpKind::compute;
  compute.ops = {gemm, gemm};
  Stream comm{"comm", {}};
  Op collective;
  collective.kind = OpKind::collective;
  collective.category = category;
  collective.name = 1;
  comm.ops = {collective};
  program.streams = {compute, comm};
  workload.programs.assign(static_cast<std::size_t>(pp), program);
  for (int rank = 0; rank < pp; ++rank) workload.program_of_rank.push_back(static_cast<std::uint32_t>(rank));
  return workload;
}

OpEvent event(double time, std::uint32_t rank, std::uint16_t stream, std::uint32_t op, bool is_end, double start = 0) {
  OpEvent e;
  e.time_s = time;
  e.start_s = start;
  e.rank = rank;
  e.stream = stream;
  e.op = op;
  e.is_end = is_end;
  return e;
}

TEST(BreakdownObserver, OverlappedCommunicationIsHiddenAndTheRestExposed) {
  const Workload workload = two_stream_workload(1, CommCategory::fsdp);
  detail::BreakdownObserver observer(workload);
  // compute [0,1], communication [0.5, 2.5], compute [2.5, 3], idle until 4.
  observer.on_op_event(event(0.0, 0, 0, 0, false));
  observer.on_op_event(event(0.5, 0, 1, 0, false));
  observer.on_op_event(event(1.0, 0, 0, 0, true, 0.0));
  observer.on_op_event(event(2.5, 0, 1, 0, true, 0.5));
  observer.on_op_event(event(2.5, 0, 0, 1, false));
  observer.on_op_event(event(3.0, 0, 0, 1, true, 2.5));
  const auto breakdown = observer.finish(4.0, 1);
  EXPECT_DOUBLE_EQ(breakdown.compute_s, 1.5);
  EXPECT_DOUBLE_EQ(breakdown.exposed_comm_s[static_cast<std::size_t>(CommCategory::fsdp)], 1.5);
  EXPECT_DOUBLE_EQ(breakdown.idle_s, 1.0);
  EXPECT_DOUBLE_EQ(breakdown.pipeline_bubble_s, 0.0);
  EXPECT_DOUBLE_EQ(breakdown.total_s(), 4.0);
}

TEST(BreakdownObserver, PipelineIdleTimeIsBubbleAndRanksAreAveraged) {
  const Workload workload = two_stream_workload(2, CommCategory::pp);
  detail::BreakdownObserver observer(workload);
  // rank 0 computes [0,2]; rank 1 waits for it, then computes [2,4]; two iterations' worth of time = 4.
  observer.on_op_event(event(0.0, 0, 0, 0, false));
  observer.on_op_event(event(2.0, 0, 0, 0, true, 0.0));
  observer.on_op_event(event(2.0, 1, 0, 0, false));
  observer.on_op_event(event(4.0, 1, 0, 0, true, 2.0));
  const auto breakdown = observer.finish(4.0, 2);
  // Per rank: 2 s compute + 2 s bubble over 4 s; per iteration (2 iterations) half of that.
  EXPECT_DOUBLE_EQ(breakdown.compute_s, 1.0);
  EXPECT_DOUBLE_EQ(breakdown.pipeline_bubble_s, 1.0);
  EXPECT_DOUBLE_EQ(breakdown.total_s(), 2.0);
}

TEST(BreakdownObserver, ConcurrentCategoriesSplitExposedTimeEvenly) {
  Workload workload = two_stream_workload(1, CommCategory::tp);
  Op other = workload.programs[0].streams[1].ops[0];
  other.category = CommCategory::ep;
  workload.programs[0].streams[1].ops.push_back(other);
  detail::BreakdownObserver observer(workload);
  observer.on_op_event(event(0.0, 0, 1, 0, false));
  observer.on_op_event(event(0.0, 0, 1, 1, false));
  observer.on_op_event(event(1.0, 0, 1, 0, true, 0.0));
  observer.on_op_event(event(1.0, 0, 1, 1, true, 0.0));
  const auto breakdown = observer.finish(1.0, 1);
  EXPECT_DOUBLE_EQ(breakdown.exposed_comm_s[static_cast<std::size_t>(CommCategory::tp)], 0.5);
  EXPECT_DOUBLE_EQ(breakdown.exposed_comm_s[static_cast<std::size_t>(CommCategory::ep)], 0.5);
  EXPECT_DOUBLE_EQ(breakdown.exposed_comm_total_s(), 1.0);
}

}  // namespace
}  // namespace chopsim
