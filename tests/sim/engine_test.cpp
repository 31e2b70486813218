// The engines against physics they must reproduce: roofline kernel durations, the stated comm/compute slowdown, the
// 1F1B bubble (p-1)/(m+p-1) (Narayanan et al., SC'21), send/recv matching, plus determinism, deadlock reports and
// process isolation. Collectives and link sharing: engine_network_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(Engine);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

TEST_P(Engine, ComputeOpTakesTheComputeModelsDuration) {
  ComputeParams params = test_compute_params();
  params.launch_overhead_s = 4e-6;
  params.efficiency[static_cast<std::size_t>(KernelClass::gemm)] = {0.7, 0.8, 1e12};
  const auto compute = roofline(params);
  Program program;
  Op gemm = compute_op(0.0);
  gemm.flops = 3.3e13;
  gemm.bytes = 2e9;
  program.streams.push_back({"compute", {gemm}});
  const Workload w = same_program_everywhere(1, program);
  const Topology t = uniform_star(1, kGB, 0.0);
  const auto model = nccl();
  for (const double clock : {1e9, 0.6e9}) {
    SimulationInput input = simulation_input(w, t, *compute, *model);
    input.clock_hz = clock;
    const RecordedRun r = run_recorded(input);
    const OpEvent* end = r.observer.end_of(0, 0, 0);
    ASSERT_NE(end, nullptr);
    const double expected = compute->duration_s({KernelClass::gemm, Precision::bf16, gemm.flops, gemm.bytes}, clock);
    EXPECT_NEAR(end->time_s - end->start_s, expected, 1e-9 * expected);
  }
}

/// Rank programs: stream 0 a kernel of `kernel_s`, stream 1 an all-reduce of `bytes` over 2 ranks; both start at 0.
RecordedRun overlap(double kernel_s, double bytes, double slowdown) {
  Program program;
  program.streams.push_back({"compute", {compute_op(kernel_s)}});
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, bytes)}});
  const Workload w = same_program_everywhere(2, program);
  const Topology t = uniform_star(2, 50 * kGB, 2e-6);
  const auto compute = roofline(test_compute_params(slowdown));
  const auto model = nccl();
  return run_recorded(w, t, *compute, *model);
}

TEST_P(Engine, CommunicationSlowsAnOverlappedKernelByTheStatedFactor) {
  for (const double f : {0.1, 0.25, 0.6}) {
    SCOPED_TRACE(f);
    // Kernel entirely under the collective: it runs at (1 - f) of the GPU.
    const double kernel = 1e-3;
    const RecordedRun inside = overlap(kernel, kGiB, f);
    const OpEvent* k = inside.observer.end_of(0, 0, 0);
    ASSERT_NE(k, nullptr);
    EXPECT_NEAR(k->time_s - k->start_s, kernel / (1 - f), 1e-9);
    // Kernel longer than the collective c: during c it does c (1 - f) of its work, so it ends at kernel + c f.
    const double long_kernel = 50e-3;
    const RecordedRun partial = overlap(long_kernel, 64e6, f);
    const OpEvent* c = partial.observer.end_of(0, 1, 0);
    const OpEvent* k2 = partial.observer.end_of(0, 0, 0);
    ASSERT_TRUE(c != nullptr && k2 != nullptr);
    EXPECT_LT(c->time_s, k2->time_s);
    EXPECT_NEAR(k2->time_s, long_kernel + (c->time_s - c->start_s) * f, 1e-9);
  }
  // No slowdown configured: the kernel keeps its time.
  const RecordedRun none = overlap(1e-3, kGiB, 0.0);
  EXPECT_NEAR(none.observer.end_of(0, 0, 0)->time_s, 1e-3, 1e-12);
}

TEST_P(Engine, APipelineTransferStartsWhenBothSidesArePosted) {
  // Rank 1 posts its receive at t = 0 (its own stream, no dependency) and runs a 10 ms kernel meanwhile; rank 0
  // computes 2 ms and then sends S. The receive starts when the data starts flowing, at 2 ms, and only the
  // transfer itself slows rank 1's kernel (by f): the wait is not communication.
  const double f = 0.5, bw = 50 * kGB, latency = 2e-6, s = 0.25 * kGiB, before = 2e-3, kernel = 10e-3;
  Program sender, receiver;
  sender.streams = {{"compute", {compute_op(before)}}, {"send", {p2p_op(OpKind::send, 1, 3, s)}}};
  depend(sender, 1, 0, 0, 0);
  receiver.streams = {{"compute", {compute_op(kernel)}}, {"recv", {p2p_op(OpKind::recv, -1, 3, s)}}};
  const Workload w = two_stages(sender, receiver);
  const Topology t = uniform_star(2, bw, latency);
  const auto compute = roofline(test_compute_params(f));
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  const double transfer = latency + s / bw;
  const OpEvent* recv = r.observer.end_of(1, 1, 0);
  const OpEvent* send = r.observer.end_of(0, 1, 0);
  ASSERT_TRUE(recv != nullptr && send != nullptr);
  EXPECT_NEAR(recv->start_s, before, 1e-12);
  EXPECT_NEAR(send->start_s, before, 1e-12);
  EXPECT_NEAR(recv->time_s, before + transfer, 1e-9);
  // The kernel loses f of its speed during the transfer only: it ends at kernel + transfer * f.
  const OpEvent* k = r.observer.end_of(1, 0, 0);
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(k->time_s, kernel + transfer * f, 1e-9);
  // The start event is emitted at the match, in time order with the other events.
  for (std::size_t i = 1; i < r.observer.events.size(); ++i)
    EXPECT_LE(r.observer.events[i - 1].time_s, r.observer.events[i].time_s);
}

TEST_P(Engine, ASendPostedFirstWaitsForItsReceiverWithoutCommunicating) {
  // The mirror case: rank 0 posts its send at t = 0; rank 1 computes 3 ms before its receive (same stream).
  const double bw = 50 * kGB, latency = 2e-6, s = 64e6, before = 3e-3;
  Program sender, receiver;
  sender.streams = {{"compute", {compute_op(1e-3)}}, {"send", {p2p_op(OpKind::send, 1, 0, s)}}};
  receiver.streams = {{"compute", {compute_op(before), p2p_op(OpKind::recv, -1, 0, s)}}};
  const Workload w = two_stages(sender, receiver);
  const Topology t = uniform_star(2, bw, latency);
  const auto compute = roofline(test_compute_params(0.5));
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  const OpEvent* send = r.observer.end_of(0, 1, 0);
  ASSERT_NE(send, nullptr);
  EXPECT_NEAR(send->start_s, before, 1e-12);
  EXPECT_NEAR(send->time_s, before + latency + s / bw, 1e-9);
  // Rank 0's 1 ms kernel ran while the send waited: not slowed.
  EXPECT_NEAR(r.observer.end_of(0, 0, 0)->time_s, 1e-3, 1e-12);
}

/// Stage s of a 1F1B pipeline (PipeDream-flush; Narayanan et al., SC'21): p - s - 1 warm-up forwards, then one
/// forward / one backward, then the remaining backwards. Activations go to the next stage on stream 1, gradients to
/// the previous on stream 2 (one stream per direction, as Megatron's separate send/recv calls); receives sit on the
/// compute stream because the kernel needs their data.
Program one_f_one_b(int p, int s, int m, double forward_s, double backward_s, double message_bytes) {
  Program program;
  program.streams = {{"compute", {}}, {"send_next", {}}, {"send_prev", {}}};
  auto& compute = program.streams[0].ops;
  auto forward = [&](int k) {
    if (s > 0) compute.push_back(p2p_op(OpKind::recv, -1, static_cast<std::uint32_t>(k), message_bytes));
    compute.push_back(compute_op(forward_s));
    if (s < p - 1) {
      program.streams[1].ops.push_back(p2p_op(OpKind::send, 1, static_cast<std::uint32_t>(k), message_bytes));
      depend(program, 1, program.streams[1].ops.size() - 1, 0, static_cast<std::uint32_t>(compute.size() - 1));
    }
  };
  auto backward = [&](int k) {
    if (s < p - 1) compute.push_back(p2p_op(OpKind::recv, 1, 1000u + static_cast<std::uint32_t>(k), message_bytes));
    compute.push_back(compute_op(backward_s));
    if (s > 0) {
      program.streams[2].ops.push_back(p2p_op(OpKind::send, -1, 1000u + static_cast<std::uint32_t>(k), message_bytes));
      depend(program, 2, program.streams[2].ops.size() - 1, 0, static_cast<std::uint32_t>(compute.size() - 1));
    }
  };
  const int warmup = std::min(p - s - 1, m);
  for (int k = 0; k < warmup; ++k) forward(k);
  for (int i = 0; i < m - warmup; ++i) {
    forward(warmup + i);
    backward(i);
  }
  for (int i = m - warmup; i < m; ++i) backward(i);
  return program;
}

Workload pipeline(int p, int m, double forward_s, double backward_s, double message_bytes) {
  ParallelismSpec spec;
  spec.pp = p;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x"};
  for (int s = 0; s < p; ++s) {
    w.programs.push_back(one_f_one_b(p, s, m, forward_s, backward_s, message_bytes));
    w.program_of_rank.push_back(static_cast<std::uint32_t>(s));
  }
  return w;
}

TEST_P(Engine, OneFOneBBubbleFractionIsPMinusOneOverMPlusPMinusOne) {
  const double t = 1e-3;
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {4, 16}, {8, 8}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    const Workload w = pipeline(p, m, t, t, 1.0);
    const Topology topo = uniform_star(p, 100 * kGB, 1e-9);
    const auto compute = roofline(test_compute_params());
    const auto model = nccl();
    const RecordedRun r = run_recorded(w, topo, *compute, *model);
    const double busy = m * 2 * t;  // per stage
    const double bubble = 1.0 - busy / r.stats.makespan_s;
    const double expected = (p - 1.0) / (m + p - 1.0);
    EXPECT_NEAR(bubble, expected, 0.01 * expected);
  }
}

TEST_P(Engine, IterationsRunBackToBackWithoutAGlobalBarrier) {
  // Rank 0 computes 3 ms per iteration, rank 1 1 ms; no communication, so rank 1 runs ahead.
  ParallelismSpec spec;
  spec.pp = 2;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x"};
  Program slow, fast;
  slow.streams.push_back({"compute", {compute_op(3e-3)}});
  slow.streams.push_back({"side", {compute_op(0.5e-3)}});
  fast.streams.push_back({"compute", {compute_op(1e-3)}});
  w.programs = {slow, fast};
  w.program_of_rank = {0, 1};
  const Topology t = uniform_star(2, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model, 3);
  ASSERT_EQ(r.stats.iteration_end_s.size(), 3u);
  // Two kernels on one GPU share it until the short one ends: 0.5 ms of each at half speed, then the rest.
  const double slow_iteration = 3e-3 + 0.5e-3;
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(r.stats.iteration_end_s[static_cast<std::size_t>(i)], (i + 1) * slow_iteration, 1e-12);
  EXPECT_NEAR(r.observer.end_of(1, 0, 0, 2)->time_s, 3e-3, 1e-12);  // rank 1 finished iteration 2 early
  // The side stream's iteration-1 op waits for the compute stream's iteration 0 (per-rank barrier).
  EXPECT_NEAR(r.observer.end_of(0, 1, 0, 1)->start_s, slow_iteration, 1e-12);
  EXPECT_EQ(r.stats.op_events, 2u * (2 * 3 + 3));
  EXPECT_EQ(r.observer.events.size(), r.stats.op_events);
  EXPECT_GT(r.stats.activities, 0u);
  EXPECT_DOUBLE_EQ(r.stats.makespan_s, r.stats.iteration_end_s.back());
}

TEST_P(Engine, DependenciesDelayOpsOnOtherStreams) {
  Program program;
  program.streams.push_back({"compute", {compute_op(2e-3), compute_op(1e-3)}});
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_gather, 1e6)}});
  depend(program, 1, 0, 0, 0);  // the all-gather waits for the first kernel
  const Workload w = same_program_everywhere(2, program);
  const Topology t = uniform_star(2, 100 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  EXPECT_NEAR(r.observer.end_of(0, 1, 0)->start_s, 2e-3, 1e-12);
  // Events arrive in time order.
  for (std::size_t i = 1; i < r.observer.events.size(); ++i)
    EXPECT_LE(r.observer.events[i - 1].time_s, r.observer.events[i].time_s);
}

TEST_P(Engine, IdenticalInputsGiveIdenticalEventStreams) {
  const Workload w = pipeline(4, 6, 1e-3, 2e-3, 8e6);
  const Topology t = uniform_star(4, 25 * kGB, 2e-6);
  const auto compute = roofline(test_compute_params(0.1));
  const auto model = nccl();
  const RecordedRun a = run_recorded(w, t, *compute, *model, 2);
  const RecordedRun b = run_recorded(w, t, *compute, *model, 2);
  ASSERT_EQ(a.observer.events.size(), b.observer.events.size());
  EXPECT_TRUE(same_events(a.observer.events, b.observer.events));
  EXPECT_EQ(a.stats.activities, b.stats.activities);
  EXPECT_EQ(a.stats.iteration_end_s, b.stats.iteration_end_s);
}

/// Two pipeline stages that both receive before they send: a deadlock. With `side_streams`, each stage has a second
/// stream that finishes its op and then waits at the iteration barrier for the stuck one.
Workload receive_first_pipeline(bool side_streams) {
  ParallelismSpec spec;
  spec.pp = 2;
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x", "wait_for_activation", "wait_for_gradient"};
  Program first, second;
  first.streams.push_back({"compute", {p2p_op(OpKind::recv, 1, 1, 1e6), p2p_op(OpKind::send, 1, 2, 1e6)}});
  first.streams[0].ops[0].name = 2;
  second.streams.push_back({"compute", {p2p_op(OpKind::recv, -1, 2, 1e6), p2p_op(OpKind::send, -1, 1, 1e6)}});
  second.streams[0].ops[0].name = 1;
  if (side_streams)
    for (Program* program : {&first, &second}) program->streams.push_back({"side", {compute_op(1e-3)}});
  w.programs = {first, second};
  w.program_of_rank = {0, 1};
  return w;
}

TEST_P(Engine, DeadlockIsReportedWithTheStuckOps) {
  const Workload w = receive_first_pipeline(false);
  const Topology t = uniform_star(2, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  try {
    (void)run_recorded(w, t, *compute, *model);
    FAIL() << "expected a deadlock";
  } catch (const EngineError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0 stream 0 'compute' op 0 'wait_for_gradient' (recv"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 1 stream 0 'compute' op 0 'wait_for_activation' (recv"), std::string::npos) << message;
    EXPECT_NE(message.find("waiting for rank 1 to send"), std::string::npos) << message;
  }
}

TEST(EngineDeadlock, BothEnginesReportItInTheSameWords) {
  // Both engines share the report (sim/src/deadlock_report.cpp), so that a workload's error reads the same whichever
  // found it: a stuck receive and streams waiting at the iteration barrier for it.
  const Workload w = receive_first_pipeline(true);
  const Topology t = uniform_star(2, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  std::vector<std::string> messages;
  for (const std::string& name : kEngines) {
    SimulationInput input;
    input.workload = &w;
    input.topology = &t;
    input.compute = compute.get();
    input.collectives = model.get();
    RecordingObserver observer;
    try {
      (void)engine_named(name)->run(input, observer);
      ADD_FAILURE() << name << ": expected a deadlock";
    } catch (const EngineError& e) {
      messages.emplace_back(e.what());
    }
  }
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("4 of 4 streams never finished"), std::string::npos) << messages[0];
  EXPECT_NE(messages[0].find("at the iteration barrier, waiting for stream 0 'compute'"), std::string::npos)
      << messages[0];
}

TEST_P(Engine, CyclicDependencyIsReportedAsDeadlock) {
  Program program;
  program.streams.push_back({"a", {compute_op(1e-3)}});
  program.streams.push_back({"b", {compute_op(1e-3)}});
  depend(program, 0, 0, 1, 0);
  depend(program, 1, 0, 0, 0);
  const Workload w = same_program_everywhere(1, program);
  const Topology t = uniform_star(1, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  try {
    (void)run_recorded(w, t, *compute, *model);
    FAIL() << "expected a deadlock";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("waiting for op 0 of stream 1 'b'"), std::string::npos) << e.what();
  }
}

TEST_P(Engine, InvalidInputIsAnEngineError) {
  Program program;
  program.streams.push_back({"a", {compute_op(1e-3)}});
  program.streams[0].ops[0].dependency_count = 1;  // points past the (empty) dependency list
  const Workload w = same_program_everywhere(4, program);
  const Topology small = uniform_star(2, kGB, 0.0);  // and too few GPUs
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  EXPECT_THROW((void)run_recorded(w, small, *compute, *model), EngineError);
  const Topology enough = uniform_star(4, kGB, 0.0);
  EXPECT_THROW((void)run_recorded(w, enough, *compute, *model), EngineError);
}

TEST(SimGridEngine, UnknownNetworkModelIsRejectedBeforeSimGridStarts) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.network_model = "Constant";  // SimGrid's constant model has no links
  EXPECT_THROW((void)registry.create("simgrid", options), EngineError);
  options.network_model = "LV08";
  EXPECT_NO_THROW((void)registry.create("simgrid", options));
}

class ThrowingObserver final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent&) override {
    if (++seen == 3) throw std::runtime_error("observer failed");
  }
  int seen = 0;
};

TEST_P(Engine, ObserverExceptionReachesTheCaller) {
  const Workload w = pipeline(2, 4, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, kGB, 0.0);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  SimulationInput input{&w, &t, compute.get(), model.get(), 1, 0.0};
  ThrowingObserver observer;
  EXPECT_THROW((void)engine_under_test()->run(input, observer), std::runtime_error);
  EXPECT_EQ(observer.seen, 3);
}

TEST(SimGridEngine, ManySimulationsInOneProcess) {
  const Workload w = pipeline(2, 3, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun first = run_recorded(w, t, *compute, *model);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(run_recorded(w, t, *compute, *model).stats.makespan_s, first.stats.makespan_s);
  // From several threads at once (each simulation is its own child process).
  std::vector<double> makespans(4, 0.0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < makespans.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 5; ++k) makespans[i] = run_recorded(w, t, *compute, *model).stats.makespan_s;
    });
  for (auto& thread : threads) thread.join();
  for (const double m : makespans) EXPECT_EQ(m, first.stats.makespan_s);
}

TEST(SimGridEngine, RunsMoreActorsThanStackGuardPagesAllow) {
  // 5,000 GPUs of 8 streams: 40,000 actors. With a guard page per stack SimGrid needs two memory mappings per actor,
  // over Linux's 65,530 (vm.max_map_count), and aborts ("Failed to protect stack"); the engine drops the guards at
  // this size.
  constexpr int kRanks = 5000;
  Program program;
  for (int s = 0; s < 8; ++s) program.streams.push_back({"s" + std::to_string(s), {compute_op(1e-6)}});
  const Workload w = same_program_everywhere(kRanks, program);
  const Topology t = uniform_star(kRanks, kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun r = run_recorded(w, t, *compute, *model);
  EXPECT_NEAR(r.stats.makespan_s, 8e-6, 1e-12);  // eight 1 us kernels share each GPU
  EXPECT_EQ(r.observer.events.size(), std::size_t{kRanks} * 8 * 2);
}

TEST(FastEngine, ManyEnginesRunAtOnceInOneProcess) {
  // No global state: simulations in several threads of one process, each with its own engine, give the events of a
  // simulation run alone, bit for bit (tests/sim is also run under ThreadSanitizer).
  const Workload w = pipeline(4, 6, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(4, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params(0.2));
  const auto model = nccl();
  const SimulationInput input{&w, &t, compute.get(), model.get(), 2, 0.0};
  RecordingObserver alone;
  (void)engine_named("fast")->run(input, alone);
  std::vector<RecordingObserver> observers(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < observers.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 10; ++k) {
        observers[i].events.clear();
        (void)engine_named("fast")->run(input, observers[i]);
      }
    });
  for (auto& thread : threads) thread.join();
  for (const RecordingObserver& o : observers) EXPECT_TRUE(same_events(o.events, alone.events));
}

TEST(FastEngine, RefusesNetworkModelsOtherThanCM02) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.network_model = "LV08";
  EXPECT_THROW((void)registry.create("fast", options), EngineError);
}

/// In-process run (meant for a process of its own): 0 if it reproduces `expected` and a second run is refused.
int in_process_check(const SimulationInput& input, const RecordedRun& expected) {
  RecordingObserver observer;
  const SimulationStats stats = simgrid(false)->run(input, observer);
  const bool same =
      stats.makespan_s == expected.stats.makespan_s && same_events(observer.events, expected.observer.events);
  bool refused = false;
  try {
    RecordingObserver again;
    (void)simgrid(false)->run(input, again);
  } catch (const EngineError&) {
    refused = true;
  }
  return same && refused ? 0 : 1;
}

TEST(SimGridEngineDeathTest, InProcessRunsOnceAndMatchesTheChild) {
  const Workload w = pipeline(2, 3, 1e-3, 1e-3, 1e6);
  const Topology t = uniform_star(2, 10 * kGB, 1e-6);
  const auto compute = roofline(test_compute_params());
  const auto model = nccl();
  const RecordedRun child = run_recorded(w, t, *compute, *model);
  const SimulationInput input{&w, &t, compute.get(), model.get(), 1, 0.0};
  // In a process of its own: SimGrid keeps its engine for the rest of the process.
  EXPECT_EXIT(std::exit(in_process_check(input, child)), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace chopsim::test
