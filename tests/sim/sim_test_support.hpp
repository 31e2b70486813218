#pragma once
// Small workloads and topologies built directly in tests (Workload, Program, Stream and Op are plain structs).

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "chopsim/models/collective.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/topology.hpp"
#include "chopsim/models/workload.hpp"
#include "chopsim/sim/engine.hpp"

namespace chopsim::test {

/// Dense bf16 peak of the test GPU: a compute op of F FLOPs lasts F / kPeak seconds (efficiency 1, no launch cost).
inline constexpr double kPeak = 1e15;

inline ComputeParams test_compute_params(double slowdown = 0.0) {
  ComputeParams p;
  p.peak_flops_per_s[static_cast<std::size_t>(Precision::bf16)] = kPeak;
  p.hbm_bandwidth_bytes_per_s = 1e12;
  p.boost_clock_hz = 1e9;
  for (auto& e : p.efficiency) e = {1.0, 1.0, 0.0};
  p.comm_compute_slowdown = slowdown;
  return p;
}

inline std::unique_ptr<ComputeModel> roofline(const ComputeParams& params) {
  ComputeModelRegistry registry("compute model");
  register_builtin_compute_models(registry);
  return registry.create("roofline", params);
}

inline std::unique_ptr<CollectiveModel> nccl(const CollectiveParams& params = {}) {
  CollectiveModelRegistry registry("collective model");
  register_builtin_collective_models(registry);
  return registry.create("nccl", params);
}

inline std::unique_ptr<Engine> simgrid(bool isolate = true) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.isolate_in_child_process = isolate;
  return registry.create("simgrid", options);
}

/// The engine `name` simulating every rank: these tests check each rank's events (symmetry_test.cpp tests the
/// fast engine's classes).
inline std::unique_ptr<Engine> engine_named(const std::string& name, bool use_symmetry = false) {
  EngineRegistry registry("engine");
  register_builtin_engines(registry);
  EngineOptions options;
  options.use_symmetry = use_symmetry;
  return registry.create(name, options);
}

/// The engines every engine test runs on: both must reproduce the same physics.
inline const std::vector<std::string> kEngines{"fast", "simgrid"};

/// The engine under test: the running parametrised test's parameter (an engine name), else SimGrid.
inline std::unique_ptr<Engine> engine_under_test() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info != nullptr && info->value_param() != nullptr ? info->value_param() : "simgrid";
  name.erase(std::remove(name.begin(), name.end(), '"'), name.end());
  return engine_named(name);
}

/// A parametrised suite over kEngines: CHOPSIM_ENGINE_SUITE(Name) then TEST_P(Name, ...).
#define CHOPSIM_ENGINE_SUITE(suite)                                       \
  class suite : public ::testing::TestWithParam<std::string> {};          \
  INSTANTIATE_TEST_SUITE_P(Engines, suite, ::testing::ValuesIn(kEngines), \
                           [](const ::testing::TestParamInfo<std::string>& p) { return p.param; })

/// n GPUs on one switch, each by a link of `bandwidth` per direction and latency route_latency / 2: every route has
/// bandwidth `bandwidth` and latency `route_latency`, and no two GPUs share a link direction.
inline Topology uniform_star(int n, double bandwidth, double route_latency) {
  Topology t;
  const int sw = t.add_vertex({VertexKind::switch_, "switch", -1, -1});
  for (int i = 0; i < n; ++i) {
    const int g = t.add_vertex({VertexKind::gpu, "gpu" + std::to_string(i), i, 0});
    t.add_link({g, sw, bandwidth, route_latency / 2, LinkClass::fabric, "link" + std::to_string(i)});
  }
  return t;
}

inline Op compute_op(double seconds) {
  Op op;
  op.kind = OpKind::compute;
  op.kernel_class = KernelClass::gemm;
  op.flops = seconds * kPeak;
  return op;
}

inline Op collective_op(CollectiveKind kind, double bytes, GroupRole group = GroupRole::world) {
  Op op;
  op.kind = OpKind::collective;
  op.kernel_class = KernelClass::communication;
  op.collective = kind;
  op.group = group;
  op.bytes = bytes;
  return op;
}

inline Op p2p_op(OpKind kind, int peer_offset, std::uint32_t tag, double bytes) {
  Op op;
  op.kind = kind;
  op.kernel_class = KernelClass::communication;
  op.peer_offset = static_cast<std::int8_t>(peer_offset);
  op.tag = tag;
  op.bytes = bytes;
  return op;
}

/// Makes op `op` of `stream` wait for op `dep_op` of stream `dep_stream`.
inline void depend(Program& program, std::size_t stream, std::size_t op, std::uint16_t dep_stream,
                   std::uint32_t dep_op) {
  Op& o = program.streams[stream].ops[op];
  if (o.dependency_count == 0) o.first_dependency = static_cast<std::uint32_t>(program.dependencies.size());
  // Dependencies of one op are contiguous: add them right after creating the op's other dependencies.
  program.dependencies.push_back({dep_stream, dep_op});
  ++o.dependency_count;
}

/// Every rank runs `program`; groups follow dp = world (so world and dp groups are all ranks in order).
inline Workload same_program_everywhere(int world, Program program) {
  ParallelismSpec p;
  p.dp = world;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"op"};
  w.programs.push_back(std::move(program));
  w.program_of_rank.assign(static_cast<std::size_t>(world), 0);
  return w;
}

/// Two pipeline stages (pp 2): rank 0 runs `first` and rank 1 `second` (a sender and its receiver).
inline Workload two_stages(Program first, Program second) {
  ParallelismSpec p;
  p.pp = 2;
  Workload w;
  w.layout = RankLayout(p);
  w.names = {"x"};
  w.programs = {std::move(first), std::move(second)};
  w.program_of_rank = {0, 1};
  return w;
}

/// The engine's input for one run of `workload` over `topology` with these models (one iteration, no power).
inline SimulationInput simulation_input(const Workload& workload, const Topology& topology, const ComputeModel& compute,
                                        const CollectiveModel& collectives) {
  SimulationInput input;
  input.workload = &workload;
  input.topology = &topology;
  input.compute = &compute;
  input.collectives = &collectives;
  return input;
}

class RecordingObserver final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent& event) override { events.push_back(event); }
  std::vector<OpEvent> events;

  /// The end event of (rank, stream, op, iteration); fails the test if missing.
  [[nodiscard]] const OpEvent* end_of(std::uint32_t rank, std::uint16_t stream, std::uint32_t op,
                                      std::uint32_t iteration = 0) const {
    for (const OpEvent& e : events)
      if (e.is_end && e.rank == rank && e.stream == stream && e.op == op && e.iteration == iteration) return &e;
    return nullptr;
  }
};

/// One run of the engine under test: its statistics and every op event, in order.
struct RecordedRun {
  SimulationStats stats;
  RecordingObserver observer;
};

/// Runs `input` on the engine under test (kEngines' parameter), recording its events.
inline RecordedRun run_recorded(const SimulationInput& input) {
  RecordedRun r;
  r.stats = engine_under_test()->run(input, r.observer);
  return r;
}

/// One iteration (or `iterations`) of `workload` over `topology` with these models on the engine under test.
inline RecordedRun run_recorded(const Workload& workload, const Topology& topology, const ComputeModel& compute,
                                const CollectiveModel& collectives, int iterations = 1) {
  SimulationInput input = simulation_input(workload, topology, compute, collectives);
  input.iterations = iterations;
  return run_recorded(input);
}

inline bool same_event(const OpEvent& a, const OpEvent& b) {
  return a.time_s == b.time_s && a.start_s == b.start_s && a.rank == b.rank && a.op == b.op &&
         a.iteration == b.iteration && a.stream == b.stream && a.is_end == b.is_end;
}

/// Exact equality of two event streams (same order, bit-identical times).
inline bool same_events(const std::vector<OpEvent>& a, const std::vector<OpEvent>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_event(a[i], b[i])) return false;
  return true;
}

}  // namespace chopsim::test
