// The time breakdown charges every instant of every GPU to exactly one bucket, so the buckets sum to
// the simulated time; these tests drive the observer with hand-made event sequences.

#include <gtest/gtest.h>

#include <algorithm>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/models/collective.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim/sim/engine.hpp"
#include "chopsim_test_paths.hpp"
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

/// `two_stream_workload` whose communication stream holds a pipeline receive instead of a collective.
Workload receiving_workload(int pp) {
  Workload workload = two_stream_workload(pp, CommCategory::pp);
  for (Program& program : workload.programs) {
    Op& recv = program.streams[1].ops[0];
    recv.kind = OpKind::recv;
    recv.collective = CollectiveKind::send_recv;
    recv.peer_offset = -1;
  }
  return workload;
}

TEST(BreakdownObserver, PipelineIdleTimeIsBubbleAndRanksAreAveraged) {
  const Workload workload = receiving_workload(2);
  detail::BreakdownObserver observer(workload);
  // rank 0 computes [0,2] and is then done; rank 1 waits for its receive, which starts when rank 0 sends at 2 and
  // takes no time, then computes [2,4]; two iterations' worth of time = 4.
  observer.on_op_event(event(0.0, 0, 0, 0, false));
  observer.on_op_event(event(2.0, 0, 0, 0, true, 0.0));
  observer.on_op_event(event(2.0, 1, 1, 0, false));
  observer.on_op_event(event(2.0, 1, 1, 0, true, 2.0));
  observer.on_op_event(event(2.0, 1, 0, 0, false));
  observer.on_op_event(event(4.0, 1, 0, 0, true, 2.0));
  const auto breakdown = observer.finish(4.0, 2);
  // Per rank: 2 s compute + 2 s bubble (rank 1's wait for the receive, rank 0's drain) over 4 s; per iteration
  // (2 iterations) half of that.
  EXPECT_DOUBLE_EQ(breakdown.compute_s, 1.0);
  EXPECT_DOUBLE_EQ(breakdown.pipeline_bubble_s, 1.0);
  EXPECT_DOUBLE_EQ(breakdown.idle_s, 0.0);
  EXPECT_DOUBLE_EQ(breakdown.total_s(), 2.0);
}

TEST(BreakdownObserver, APipelineStageWaitingForItsHostIsIdleNotBubble) {
  // A host-bound stage of a pipeline: its kernels start when the host launches them, with gaps between them. Those
  // gaps are idle (the host), only the wait that a pipeline receive ends is bubble. Before, every gap of a pipelined
  // run was bubble: a host-bound MoE pipeline read as half bubble.
  const Workload workload = receiving_workload(2);
  detail::BreakdownObserver observer(workload);
  // rank 1: waits for its receive until 1 (bubble), receives [1, 1.5] (exposed), computes [1.5, 2], waits for its
  // host until 3 (idle), computes [3, 4].
  observer.on_op_event(event(1.0, 1, 1, 0, false));
  observer.on_op_event(event(1.5, 1, 1, 0, true, 1.0));
  observer.on_op_event(event(1.5, 1, 0, 0, false));
  observer.on_op_event(event(2.0, 1, 0, 0, true, 1.5));
  observer.on_op_event(event(3.0, 1, 0, 1, false));
  observer.on_op_event(event(4.0, 1, 0, 1, true, 3.0));
  // rank 0 computes [0, 4].
  observer.on_op_event(event(0.0, 0, 0, 0, false));
  observer.on_op_event(event(4.0, 0, 0, 0, true, 0.0));
  const auto breakdown = observer.finish(4.0, 1);
  // Mean over the two ranks of 4 s each.
  EXPECT_DOUBLE_EQ(breakdown.compute_s, (1.5 + 4.0) / 2);
  EXPECT_DOUBLE_EQ(breakdown.pipeline_bubble_s, 1.0 / 2);
  EXPECT_DOUBLE_EQ(breakdown.exposed_comm_s[static_cast<std::size_t>(CommCategory::pp)], 0.5 / 2);
  EXPECT_DOUBLE_EQ(breakdown.idle_s, 1.0 / 2);
  EXPECT_DOUBLE_EQ(breakdown.total_s(), 4.0);
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

TEST(BreakdownObserver, AReceiveWaitingForItsSenderIsBubbleNotExposedCommunication) {
  // Simulated end to end: stage 0 computes 4 ms, then sends S to stage 1; stage 1 posted its receive at t = 0 (a
  // receive stream, as the workload generator does) and its compute waits for it. Stage 1's wait until the sender
  // sends is pipeline bubble; only the transfer (latency + S / B) is exposed pipeline communication.
  const double compute_s = 4e-3, bytes = 100e6, bandwidth = 50e9, latency = 2e-6;
  ParallelismSpec parallelism;
  parallelism.pp = 2;
  Workload workload;
  workload.layout = RankLayout(parallelism);
  workload.names = {"gemm", "send", "recv"};
  Op gemm;
  gemm.kind = OpKind::compute;
  gemm.kernel_class = KernelClass::gemm;
  gemm.flops = compute_s * 1e15;
  Op send;
  send.kind = OpKind::send;
  send.kernel_class = KernelClass::communication;
  send.category = CommCategory::pp;
  send.collective = CollectiveKind::send_recv;
  send.group = GroupRole::pp;
  send.peer_offset = 1;
  send.bytes = bytes;
  send.name = 1;
  Op recv = send;
  recv.kind = OpKind::recv;
  recv.peer_offset = -1;
  recv.name = 2;
  Program stage0;
  stage0.streams = {{"compute", {gemm}}, {"pp_send_next", {send}}};
  stage0.streams[1].ops[0].first_dependency = 0;
  stage0.streams[1].ops[0].dependency_count = 1;
  stage0.dependencies = {{0, 0}};
  Program stage1;
  stage1.streams = {{"compute", {gemm}}, {"pp_recv_prev", {recv}}};
  stage1.streams[0].ops[0].first_dependency = 0;
  stage1.streams[0].ops[0].dependency_count = 1;
  stage1.dependencies = {{1, 0}};
  workload.programs = {stage0, stage1};
  workload.program_of_rank = {0, 1};

  Topology topology;
  const int sw = topology.add_vertex({VertexKind::switch_, "switch", -1, -1});
  for (int i = 0; i < 2; ++i) {
    const int g = topology.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, 0});
    topology.add_link({g, sw, bandwidth, latency / 2, LinkClass::fabric, "link" + std::to_string(i)});
  }
  ComputeParams params;
  params.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] = 1e15;
  params.hbm_bandwidth_bytes_per_s = 1e12;
  params.boost_clock_hz = 1e9;
  for (auto& e : params.efficiency) e = {1.0, 1.0, 0.0};
  params.comm_compute_slowdown = 0.1;
  ComputeModelRegistry computes("compute model");
  register_builtin_compute_models(computes);
  CollectiveModelRegistry collectives("collective model");
  register_builtin_collective_models(collectives);
  EngineRegistry engines("engine");
  register_builtin_engines(engines);
  const auto compute = computes.create("roofline", params);
  const auto collective = collectives.create("nccl", CollectiveParams{});
  SimulationInput input;
  input.workload = &workload;
  input.topology = &topology;
  input.compute = compute.get();
  input.collectives = collective.get();
  detail::BreakdownObserver observer(workload);
  const SimulationStats stats = engines.create("simgrid", EngineOptions{})->run(input, observer);
  const double transfer = latency + bytes / bandwidth;
  EXPECT_NEAR(stats.makespan_s, 2 * compute_s + transfer, 1e-9);
  const TimeBreakdown b = observer.finish(stats.makespan_s, 1);
  // Mean over the two ranks: each computes 4 ms; stage 0 also sends (exposed, nothing overlaps it) and then idles
  // while stage 1 computes; stage 1 waits 4 ms for the sender (bubble), receives (exposed), computes.
  EXPECT_NEAR(b.compute_s, compute_s, 1e-9);
  EXPECT_NEAR(b.exposed_comm_s[static_cast<std::size_t>(CommCategory::pp)], transfer, 1e-9);
  EXPECT_NEAR(b.pipeline_bubble_s, compute_s, 1e-9);
  EXPECT_NEAR(b.total_s(), stats.makespan_s, 1e-9);
}

TEST(BreakdownRun, AHostBoundPipelineKeepsItsScheduleBubbleAndIsIdleForTheRest) {
  // Megatron-LM's tiny GPT functional test, tp 2, pp 2 x 4 micro-batches of 1F1B: host-bound on DGX H100 at
  // Megatron-Core's 65 us per launch (tests/experiments/megatron_host_test.cpp). 1F1B's own bubble is
  // (pp - 1) / (m + pp - 1) = 1/5 of the pipeline's time whatever paces the stages. With the host pacing them, the
  // gaps between launches are idle, and the bubble stays near the schedule's share; before, every gap of a pipelined
  // run was bubble (81 % of this run's iteration at 65 us, 93 % at 200 us).
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "validation" / "megatron-gpt-tiny-tp2-pp2.yaml";
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  ASSERT_EQ(run.parallelism.pp, 2);
  const double schedule_share = 1.0 / (4 + 2 - 1);
  for (const double launch_s : {0.0, 65e-6, 200e-6}) {
    run.training.host_launch_s = launch_s;
    const RunReport report = run_simulation(run, registries);
    const TimeBreakdown& b = report.breakdown;
    SCOPED_TRACE("host launch " + std::to_string(launch_s * 1e6) + " us");
    EXPECT_NEAR(b.total_s(), report.iteration_time_s, 1e-9 * report.iteration_time_s);
    const double bubble_share = b.pipeline_bubble_s / report.iteration_time_s;
    EXPECT_GT(bubble_share, 0.8 * schedule_share);
    EXPECT_LT(bubble_share, 1.6 * schedule_share);
    if (launch_s == 0.0) {
      EXPECT_LT(b.idle_s, 1e-3 * report.iteration_time_s);  // nothing waits for a host
    } else {
      EXPECT_GT(b.idle_s, b.compute_s);  // host-bound: the gaps between launches are idle
    }
  }
}

TEST(BreakdownRun, TheHostsLaunchesAreAFloorUnderTheIteration) {
  // The host issues its launches one after another, so one iteration takes at least launches x host_launch_s; a
  // host-bound run takes little more. RunReport::host counts them on the host that launches most.
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "validation" / "megatron-gpt-tiny-tp2-pp2.yaml";
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  ASSERT_EQ(run.iterations, 1);
  const Workload workload = build_run_workload(run);
  double most = 0.0;
  for (const Program& program : workload.programs) {
    double launches = 0.0;
    for (const IssueStep& step : program.issue_order) launches += step.launches;
    most = std::max(most, launches);
  }
  ASSERT_GT(most, 1000.0);  // 12 layers x 4 micro-batches, forward and backward, and the optimizer's loops
  for (const double launch_s : {0.0, 20e-6, 65e-6, 200e-6}) {
    run.training.host_launch_s = launch_s;
    const RunReport report = run_simulation(run, registries);
    SCOPED_TRACE("host launch " + std::to_string(launch_s * 1e6) + " us");
    EXPECT_DOUBLE_EQ(report.host.launches_per_iteration, most);
    EXPECT_DOUBLE_EQ(report.host.launch_time_s, most * launch_s);
    EXPECT_GE(report.iteration_time_s, report.host.launch_time_s);
    if (launch_s >= 65e-6) {
      EXPECT_LT(report.iteration_time_s, 1.25 * report.host.launch_time_s);  // host-bound
    }
    // The verdict the terminal, summary.json and the sweep summary share.
    if (launch_s == 0.0) {
      EXPECT_FALSE(report.host.binds(report.iteration_time_s));
    }
    if (launch_s == 200e-6) {
      EXPECT_TRUE(report.host.binds(report.iteration_time_s));
      const std::string json = summary_json(run, report);
      const auto host = json.find("\"host\"");
      ASSERT_NE(host, std::string::npos);
      EXPECT_NE(json.find("\"bound\": true", host), std::string::npos) << json.substr(host, 200);
    }
  }
}

}  // namespace
}  // namespace chopsim
