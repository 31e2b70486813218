// The engine's host (docs/design.md "Programs, streams and dependencies"): one launching thread per rank issues the
// ops of Program::issue_order SimulationInput::host_launch_s per launch apart, and blocks after an op it waits for
// until that op has completed. Kernels cannot start before their launch.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(HostIssue);

RecordedRun simulate(const Workload& workload, double host_launch_s, int iterations = 1) {
  const Topology topology = uniform_star(static_cast<int>(workload.program_of_rank.size()), 100e9, 2e-6);
  const auto compute = roofline(test_compute_params());
  const auto collectives = nccl();
  SimulationInput input = simulation_input(workload, topology, *compute, *collectives);
  input.iterations = iterations;
  input.host_launch_s = host_launch_s;
  return run_recorded(input);
}

/// Issue order = stream 0's ops, then stream 1's, ... (each op one launch, no waits).
void issue_in_stream_order(Program& program) {
  for (std::size_t s = 0; s < program.streams.size(); ++s)
    for (std::size_t k = 0; k < program.streams[s].ops.size(); ++k)
      program.issue_order.push_back({static_cast<std::uint32_t>(k), static_cast<std::uint16_t>(s), 1, false});
}

constexpr double kLaunch = 40e-6;

TEST_P(HostIssue, SmallKernelsRunAtTheHostsLaunchRate) {
  // 100 kernels of 10 us on one stream: the GPU needs 1 ms, the host 100 x 40 us = 4 ms to launch them. Kernel k
  // starts at its launch, (k + 1) x 40 us, so the last one ends at 4 ms + 10 us.
  Program program;
  program.streams.push_back({"compute", std::vector<Op>(100, compute_op(10e-6))});
  issue_in_stream_order(program);
  const Workload w = same_program_everywhere(1, program);
  const RecordedRun host_bound = simulate(w, kLaunch);
  EXPECT_NEAR(host_bound.stats.makespan_s, 100 * kLaunch + 10e-6, 1e-12);
  EXPECT_NEAR(host_bound.observer.end_of(0, 0, 41)->start_s, 42 * kLaunch, 1e-12);
  // Without a host time the kernels run back to back; without an issue order the host is not modelled.
  EXPECT_NEAR(simulate(w, 0.0).stats.makespan_s, 100 * 10e-6, 1e-12);
  Program unordered = program;
  unordered.issue_order.clear();
  EXPECT_NEAR(simulate(same_program_everywhere(1, unordered), kLaunch).stats.makespan_s, 100 * 10e-6, 1e-12);
}

TEST_P(HostIssue, AGpuBoundStreamPaysOnlyTheFirstLaunch) {
  // Kernels of 1 ms, launched 40 us apart: the host runs ahead, and only the first kernel waits for its launch.
  Program program;
  program.streams.push_back({"compute", std::vector<Op>(20, compute_op(1e-3))});
  issue_in_stream_order(program);
  EXPECT_NEAR(simulate(same_program_everywhere(1, program), kLaunch).stats.makespan_s, kLaunch + 20e-3, 1e-12);
}

TEST_P(HostIssue, AHostWaitDrainsTheGpuAndTheNextKernelWaitsForItsLaunch) {
  // Kernel 0 (1 ms) is followed by a host wait (.item()): the host, which launched it at 40 us, resumes when it ends
  // at 1.04 ms and launches kernel 1 at 1.08 ms; the GPU is idle for one launch. Without the wait, kernel 1 would
  // follow kernel 0 at once.
  Program program;
  program.streams.push_back({"compute", {compute_op(1e-3), compute_op(1e-3)}});
  issue_in_stream_order(program);
  program.issue_order[0].host_waits = true;
  const RecordedRun r = simulate(same_program_everywhere(1, program), kLaunch);
  EXPECT_NEAR(r.observer.end_of(0, 0, 1)->start_s, 1e-3 + 2 * kLaunch, 1e-12);
  EXPECT_NEAR(r.stats.makespan_s, 2e-3 + 2 * kLaunch, 1e-12);
  program.issue_order[0].host_waits = false;
  EXPECT_NEAR(simulate(same_program_everywhere(1, program), kLaunch).stats.makespan_s, 2e-3 + kLaunch, 1e-12);
}

TEST_P(HostIssue, AnOpOfManyLaunchesCompletesWithTheLastAndHoldsBackTheHost) {
  // A Python loop of 50 launches whose GPU work totals 0.1 ms: the GPU work ends at 0.14 ms (its end event), the op
  // completes with the last launch at 2 ms, and the next op is launched 40 us later.
  Program program;
  program.streams.push_back({"compute", {compute_op(0.1e-3), compute_op(1e-3)}});
  issue_in_stream_order(program);
  program.issue_order[0].launches = 50;
  const RecordedRun r = simulate(same_program_everywhere(1, program), kLaunch);
  EXPECT_NEAR(r.observer.end_of(0, 0, 0)->time_s, kLaunch + 0.1e-3, 1e-12);
  EXPECT_NEAR(r.observer.end_of(0, 0, 1)->start_s, 51 * kLaunch, 1e-12);
  EXPECT_NEAR(r.stats.makespan_s, 51 * kLaunch + 1e-3, 1e-12);
}

TEST_P(HostIssue, OneHostIssuesEveryStreamInItsOrder) {
  // Two streams, issue order interleaved: s0 op 0, s1 op 0, s0 op 1. Kernels of 10 us: s1's kernel starts at its
  // launch (80 us), and s0's second kernel waits for its launch at 120 us although its stream is free from 50 us.
  Program program;
  program.streams.push_back({"compute", {compute_op(10e-6), compute_op(10e-6)}});
  program.streams.push_back({"side", {compute_op(10e-6)}});
  program.issue_order = {{0, 0, 1, false}, {0, 1, 1, false}, {1, 0, 1, false}};
  const RecordedRun r = simulate(same_program_everywhere(1, program), kLaunch);
  EXPECT_NEAR(r.observer.end_of(0, 1, 0)->start_s, 2 * kLaunch, 1e-12);
  EXPECT_NEAR(r.observer.end_of(0, 0, 1)->start_s, 3 * kLaunch, 1e-12);
}

TEST_P(HostIssue, AWaitOnOneStreamBlocksLaunchesOnEveryStream) {
  // s0: a 1 ms kernel the host waits for. s1: a kernel issued after it, although nothing on the GPU orders them:
  // the host launches it only after the wait, at 1.04 ms + 40 us.
  Program program;
  program.streams.push_back({"compute", {compute_op(1e-3)}});
  program.streams.push_back({"side", {compute_op(10e-6)}});
  program.issue_order = {{0, 0, 1, true}, {0, 1, 1, false}};
  const RecordedRun r = simulate(same_program_everywhere(1, program), kLaunch);
  EXPECT_NEAR(r.observer.end_of(0, 1, 0)->start_s, 1e-3 + 2 * kLaunch, 1e-12);
}

TEST_P(HostIssue, TheHostCarriesOnAcrossIterations) {
  // Two iterations of 10 host-bound kernels: the host never restarts, so the run lasts 20 launches.
  Program program;
  program.streams.push_back({"compute", std::vector<Op>(10, compute_op(5e-6))});
  issue_in_stream_order(program);
  const RecordedRun r = simulate(same_program_everywhere(1, program), kLaunch, 2);
  EXPECT_NEAR(r.stats.makespan_s, 20 * kLaunch + 5e-6, 1e-12);
  EXPECT_NEAR(r.stats.iteration_end_s[0], 10 * kLaunch + 5e-6, 1e-12);
}

TEST_P(HostIssue, ABadIssueOrderIsAnEngineError) {
  Program program;
  program.streams.push_back({"compute", {compute_op(1e-3), compute_op(1e-3)}});
  program.streams.push_back({"side", {compute_op(1e-3)}});
  depend(program, 1, 0, 0, 1);  // side waits for compute op 1
  const auto error_of = [&](std::vector<IssueStep> order) {
    Program p = program;
    p.issue_order = std::move(order);
    try {
      (void)simulate(same_program_everywhere(1, p), kLaunch);
    } catch (const EngineError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of({{0, 0, 1, false}, {1, 0, 1, false}}).find("issues 2 of 3 ops"), std::string::npos);
  EXPECT_NE(error_of({{0, 0, 1, false}, {0, 0, 1, false}, {1, 0, 1, false}}).find("issued twice"), std::string::npos);
  EXPECT_NE(error_of({{1, 0, 1, false}, {0, 0, 1, false}, {0, 1, 1, false}}).find("out of its order"),
            std::string::npos);
  EXPECT_NE(error_of({{0, 0, 1, false}, {0, 1, 1, false}, {5, 0, 1, false}}).find("does not exist"), std::string::npos);
  // Side's op issued before compute op 1, which it waits for: a host wait there could deadlock.
  EXPECT_NE(error_of({{0, 0, 1, false}, {0, 1, 1, false}, {1, 0, 1, false}}).find("that it waits for"),
            std::string::npos);
  EXPECT_EQ(error_of({{0, 0, 1, false}, {1, 0, 1, false}, {0, 1, 1, false}}), "");
}

TEST_P(HostIssue, ABadHostTimeIsAnEngineError) {
  Program program;
  program.streams.push_back({"compute", {compute_op(1e-3)}});
  issue_in_stream_order(program);
  const Workload w = same_program_everywhere(1, program);
  EXPECT_THROW((void)simulate(w, -1e-6), EngineError);
  EXPECT_THROW((void)simulate(w, 2.0), EngineError);
}

}  // namespace
}  // namespace chopsim::test
