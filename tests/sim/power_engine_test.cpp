// The SimGrid engine with power dynamics: a fixed clock reproduces the engine without power exactly, a governing
// clock without a binding cap matches it to rounding (the re-timing path), a locked clock gives the roofline time,
// a throttled kernel's progress integrates to exactly one kernel over the clocks it ran at (compute-bound kernels
// stretch, memory-bound ones do not), telemetry arrives in time order per GPU, and the governor costs a bounded
// number of decisions per kernel.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "chopsim/models/governor.hpp"
#include "chopsim/models/power.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/thermal.hpp"
#include "chopsim/sim/observer_thread.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

CHOPSIM_ENGINE_SUITE(PowerEngine);

constexpr double kGB = 1e9;

/// Records op events and telemetry in arrival order.
class Recorder final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent& event) override {
    events.push_back(event);
    order.push_back({event.time_s, event.rank, false});
  }
  void on_telemetry(const GpuStateSample& sample) override {
    samples.push_back(sample);
    order.push_back({sample.time_s, sample.gpu, true});
  }
  const OpEvent* end_of(std::uint32_t rank, std::uint16_t stream, std::uint32_t op) const {
    for (const OpEvent& e : events)
      if (e.is_end && e.rank == rank && e.stream == stream && e.op == op) return &e;
    return nullptr;
  }
  struct Item {
    double time_s;
    std::uint32_t rank;
    bool sample;
  };
  std::vector<OpEvent> events;
  std::vector<GpuStateSample> samples;
  std::vector<Item> order;
};

/// Power models for the test GPU (test_compute_params: 1 PFLOP/s bf16 and 1 TB/s at 1 GHz).
struct Power {
  std::unique_ptr<PowerModel> power;
  std::unique_ptr<ThermalModel> thermal;
  std::unique_ptr<Governor> governor;
  PowerInput input;

  Power(const std::string& governor_name, int ranks, double cap_w, double ceiling_hz = 1e9) {
    PowerParams p;
    p.idle_w = 50.0;
    p.dynamic_w = 500.0;
    p.hbm_w = 50.0;
    p.max_clock_hz = 1e9;
    p.voltage = {0.65e9, 1.4, 2.5};
    PowerModelRegistry power_registry("power model");
    register_builtin_power_models(power_registry);
    ThermalModelRegistry thermal_registry("thermal model");
    register_builtin_thermal_models(thermal_registry);
    GovernorRegistry governor_registry("governor");
    register_builtin_governors(governor_registry);
    GovernorParams g;
    g.window_s = 2e-3;
    g.response_s = 0.5e-3;
    g.clock_step_hz = 10e6;
    power = power_registry.create("cv2f", p);
    thermal = thermal_registry.create("rc", ThermalParams{0.1, 50.0, 200.0});
    governor = governor_registry.create(governor_name, g);
    input.power = power.get();
    input.thermal = thermal.get();
    input.governor = governor.get();
    input.cap_w_per_gpu = cap_w;
    input.ceiling_hz = ceiling_hz;
    input.floor_hz = 0.2e9;
    input.inlet_c.assign(static_cast<std::size_t>(ranks), 25.0);
    input.initial_c.assign(static_cast<std::size_t>(ranks), 40.0);
  }
};

struct Case {
  Workload workload;
  Topology topology;
  std::unique_ptr<ComputeModel> compute;
  std::unique_ptr<CollectiveModel> collectives;
  SimulationInput input(const PowerInput* power = nullptr, int iterations = 1) const {
    SimulationInput in;
    in.workload = &workload;
    in.topology = &topology;
    in.compute = compute.get();
    in.collectives = collectives.get();
    in.iterations = iterations;
    in.power = power;
    return in;
  }
};

/// Two ranks: stream 0 runs kernels (compute- and memory-bound), stream 1 an all-reduce that overlaps them.
Case overlapped(double slowdown) {
  Program program;
  Op copy = compute_op(0.0);
  copy.kernel_class = KernelClass::elementwise;
  copy.flops = 1e6;
  copy.bytes = 2e9;  // 2 ms at 1 TB/s
  program.streams.push_back({"compute", {compute_op(3e-3), copy, compute_op(1e-3), compute_op(5e-3)}});
  program.streams.push_back({"comm", {collective_op(CollectiveKind::all_reduce, 256e6)}});
  Case c{same_program_everywhere(2, program), uniform_star(2, 50 * kGB, 2e-6), roofline(test_compute_params(slowdown)),
         nccl()};
  return c;
}

Recorder run(const Case& c, const PowerInput* power, int iterations = 1, SimulationStats* stats = nullptr) {
  Recorder r;
  const SimulationStats s = engine_under_test()->run(c.input(power, iterations), r);
  if (stats != nullptr) *stats = s;
  return r;
}

TEST_P(PowerEngine, FixedClockReproducesTheEngineWithoutPowerExactly) {
  const Case c = overlapped(0.25);
  const Recorder plain = run(c, nullptr, 2);
  Power fixed("fixed", 2, 300.0);
  const Recorder with_power = run(c, &fixed.input, 2);
  EXPECT_TRUE(same_events(plain.events, with_power.events));
  EXPECT_TRUE(plain.samples.empty());
  EXPECT_FALSE(with_power.samples.empty());
  for (const auto& s : with_power.samples) EXPECT_EQ(s.clock_hz, 1e9);
}

TEST_P(PowerEngine, GovernedClockWithoutBindingCapMatchesToRounding) {
  for (const double slowdown : {0.0, 0.25}) {
    const Case c = overlapped(slowdown);
    const Recorder plain = run(c, nullptr, 2);
    Power firmware("firmware", 2, 1e6);  // never binds: kernels are re-timed but never stretched
    const Recorder governed = run(c, &firmware.input, 2);
    ASSERT_EQ(plain.events.size(), governed.events.size());
    for (std::size_t i = 0; i < plain.events.size(); ++i) {
      EXPECT_NEAR(governed.events[i].time_s, plain.events[i].time_s, 1e-12 * std::max(1.0, plain.events[i].time_s));
      EXPECT_EQ(governed.events[i].op, plain.events[i].op);
    }
  }
}

TEST_P(PowerEngine, LockedClockGivesTheRooflineTimeExactly) {
  Program program;
  Op copy = compute_op(0.0);
  copy.kernel_class = KernelClass::elementwise;
  copy.flops = 1e6;
  copy.bytes = 1e9;
  program.streams.push_back({"compute", {compute_op(1e-3), copy}});
  const Case c{same_program_everywhere(1, program), uniform_star(1, kGB, 0.0), roofline(test_compute_params()), nccl()};
  for (const char* governor : {"firmware", "fixed"}) {
    SCOPED_TRACE(governor);
    Power locked(governor, 1, 1e6, 0.6e9);
    const Recorder r = run(c, &locked.input);
    const OpEvent* gemm = r.end_of(0, 0, 0);
    const OpEvent* mem = r.end_of(0, 0, 1);
    ASSERT_TRUE(gemm != nullptr && mem != nullptr);
    // 1e12 FLOP at 1 PFLOP/s x 0.6 GHz / 1 GHz; the copy is bound by HBM, which the core clock does not move.
    EXPECT_NEAR(gemm->time_s - gemm->start_s, 1e12 / (1e15 * 0.6), 1e-15);
    EXPECT_NEAR(mem->time_s - mem->start_s, 1e9 / 1e12, 1e-15);
  }
}

TEST_P(PowerEngine, ThrottledKernelsStretchByTheClockTheyRanAt) {
  Program program;
  Op copy = compute_op(0.0);
  copy.kernel_class = KernelClass::elementwise;
  copy.flops = 1e6;
  copy.bytes = 50e9;  // 50 ms, memory-bound
  program.streams.push_back({"compute", {compute_op(100e-3), copy}});
  const Case c{same_program_everywhere(1, program), uniform_star(1, kGB, 0.0), roofline(test_compute_params()), nccl()};
  Power capped("firmware", 1, 350.0);  // a GEMM at 1 GHz draws 50 + 500 + 5 = 555 W; a copy ~250 W
  const Recorder r = run(c, &capped.input);
  const OpEvent* gemm = r.end_of(0, 0, 0);
  const OpEvent* mem = r.end_of(0, 0, 1);
  ASSERT_TRUE(gemm != nullptr && mem != nullptr);
  EXPECT_GT(gemm->time_s - gemm->start_s, 100e-3 * 1.1) << "the cap must stretch the compute-bound kernel";
  // Progress integrates to one kernel: sum over clock segments of dt / d(f), d(f) = 100 ms x 1 GHz / f.
  double progress = 0.0;
  double previous_t = gemm->start_s, previous_f = 0.0;
  bool seen = false;
  for (const auto& s : r.samples) {
    if (s.time_s <= gemm->start_s) {
      previous_f = s.clock_hz;
      seen = true;
      continue;
    }
    if (s.time_s > gemm->time_s) break;
    progress += (s.time_s - previous_t) * previous_f / (100e-3 * 1e9);
    previous_t = s.time_s;
    previous_f = s.clock_hz;
  }
  ASSERT_TRUE(seen);
  progress += (gemm->time_s - previous_t) * previous_f / (100e-3 * 1e9);
  EXPECT_NEAR(progress, 1.0, 1e-9);
  // The memory-bound kernel under the same cap keeps its duration.
  EXPECT_NEAR(mem->time_s - mem->start_s, 50e-3, 1e-12);
}

/// Four ranks running 200 kernels (compute- and memory-bound) beside two collectives: a load the governor re-decides
/// at every kernel.
Case many_kernels() {
  Program program;
  std::vector<Op> ops;
  for (int i = 0; i < 200; ++i) {
    Op op = compute_op(i % 3 == 0 ? 2e-3 : 0.3e-3);
    if (i % 3 == 2) {
      op.kernel_class = KernelClass::elementwise;
      op.flops = 1e6;
      op.bytes = 0.5e9;
    }
    ops.push_back(op);
  }
  program.streams.push_back({"compute", ops});
  program.streams.push_back(
      {"comm", {collective_op(CollectiveKind::all_reduce, 2e9), collective_op(CollectiveKind::all_gather, 4e9)}});
  return Case{same_program_everywhere(4, program), uniform_star(4, 50 * kGB, 2e-6), roofline(test_compute_params(0.1)),
              nccl()};
}

TEST_P(PowerEngine, TelemetryIsInTimeOrderPerGpuAndBoundedPerKernel) {
  const Case c = many_kernels();
  Power capped("firmware", 4, 400.0);
  SimulationStats stats;
  const Recorder r = run(c, &capped.input, 3, &stats);
  std::map<std::uint32_t, double> last;
  for (const auto& item : r.order) {
    auto [it, first] = last.emplace(item.rank, item.time_s);
    if (!first) {
      EXPECT_GE(item.time_s, it->second) << "GPU " << item.rank << (item.sample ? " sample" : " op event");
      it->second = item.time_s;
    }
  }
  const std::uint64_t ops = stats.op_events / 2;
  EXPECT_EQ(stats.telemetry_samples, r.samples.size());
  EXPECT_GT(stats.governor_timed_events, 0U) << "the cap must bind";
  // A small constant per op: one decision per start and end, plus at most two timed ones per kernel.
  EXPECT_LE(stats.governor_decisions, 4 * ops + 8);
  EXPECT_LE(stats.telemetry_samples, 4 * ops + 8);
  for (const auto& s : r.samples) {
    EXPECT_GE(s.clock_hz, 0.2e9);
    EXPECT_LE(s.clock_hz, 1e9);
  }
}

TEST_P(PowerEngine, AnObserverThreadSeesEveryCallInTheEnginesOrder) {
  // chopsim run's observers run on a second thread (ObserverThread): they must see what a direct observer sees, in
  // the same order, bit for bit. Three iterations under a binding cap: thousands of events and samples, many chunks.
  const Case c = many_kernels();
  Power capped("firmware", 4, 400.0);
  const Recorder direct = run(c, &capped.input, 3);
  Recorder threaded;
  {
    ObserverThread concurrent(threaded);
    (void)engine_under_test()->run(c.input(&capped.input, 3), concurrent);
    concurrent.drain();
  }
  ASSERT_GT(direct.order.size(), 2 * ObserverThread::kChunkCalls);
  EXPECT_TRUE(same_events(direct.events, threaded.events));
  ASSERT_EQ(direct.samples.size(), threaded.samples.size());
  for (std::size_t i = 0; i < direct.samples.size(); ++i) {
    const GpuStateSample& a = direct.samples[i];
    const GpuStateSample& b = threaded.samples[i];
    ASSERT_TRUE(a.time_s == b.time_s && a.gpu == b.gpu && a.power_w == b.power_w && a.clock_hz == b.clock_hz &&
                a.temperature_c == b.temperature_c && a.filtered_power_w == b.filtered_power_w && a.flags == b.flags)
        << "sample " << i;
  }
  ASSERT_EQ(direct.order.size(), threaded.order.size());
  for (std::size_t i = 0; i < direct.order.size(); ++i)
    ASSERT_EQ(direct.order[i].sample, threaded.order[i].sample)
        << "call " << i << ": events and samples interleave alike";
}

TEST_P(PowerEngine, PipelineWithPowerMatchesWithoutItAtAFixedClock) {
  // The pipeline path (send/recv, waits) with the fixed governor: identical events.
  ParallelismSpec spec;
  spec.pp = 4;
  Program program;
  program.streams.push_back({"compute", {}});
  Workload w;
  w.layout = RankLayout(spec);
  w.names = {"x"};
  for (int s = 0; s < 4; ++s) {
    Program p;
    p.streams.push_back({"compute", {}});
    p.streams.push_back({"send", {}});
    auto& compute = p.streams[0].ops;
    for (int k = 0; k < 4; ++k) {
      if (s > 0) compute.push_back(p2p_op(OpKind::recv, -1, static_cast<std::uint32_t>(k), 1e8));
      compute.push_back(compute_op(1e-3));
      if (s < 3) {
        p.streams[1].ops.push_back(p2p_op(OpKind::send, 1, static_cast<std::uint32_t>(k), 1e8));
        depend(p, 1, p.streams[1].ops.size() - 1, 0, static_cast<std::uint32_t>(compute.size() - 1));
      }
    }
    w.programs.push_back(p);
    w.program_of_rank.push_back(static_cast<std::uint32_t>(s));
  }
  const Case c{w, uniform_star(4, 50 * kGB, 2e-6), roofline(test_compute_params(0.2)), nccl()};
  const Recorder plain = run(c, nullptr);
  Power fixed("fixed", 4, 300.0);
  EXPECT_TRUE(same_events(plain.events, run(c, &fixed.input).events));
  Power firmware("firmware", 4, 1e6);
  const Recorder governed = run(c, &firmware.input);
  ASSERT_EQ(governed.events.size(), plain.events.size());
  for (std::size_t i = 0; i < plain.events.size(); ++i)
    EXPECT_NEAR(governed.events[i].time_s, plain.events[i].time_s, 1e-12);
}

}  // namespace
}  // namespace chopsim::test
