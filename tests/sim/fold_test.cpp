// Steady-state folds in the fast engine (engine.hpp, FoldPlan): a program whose micro-batches repeat exactly, folded,
// ends when the full program does, every time reported after the fold is later by the span it stands for, and a plan
// the engine cannot carry out is refused.

#include <gtest/gtest.h>

#include <algorithm>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

constexpr int kRanks = 2;
constexpr int kOpsPerMicroBatch = 2;
constexpr double kMiB = 1024.0 * 1024.0;

/// Every micro-batch: a 1 ms GEMM, then a 4 MiB all-reduce over both ranks, on one stream.
Workload micro_batches(int count) {
  Program program;
  program.streams.push_back({"compute", {}});
  for (int mb = 0; mb < count; ++mb) {
    Op gemm = compute_op(1e-3);
    gemm.micro_batch = mb;
    Op reduce = collective_op(CollectiveKind::all_reduce, 4 * kMiB);
    reduce.micro_batch = mb;
    program.streams[0].ops.push_back(gemm);
    program.streams[0].ops.push_back(reduce);
  }
  return same_program_everywhere(kRanks, program);
}

/// Records events and the folds it is told of.
class FoldingRecorder final : public SimulationObserver {
 public:
  void on_op_event(const OpEvent& event) override { events.push_back(event); }
  [[nodiscard]] bool folds() const override { return true; }
  void on_fold_window_begin(double time_s) override { window_begins.push_back(time_s); }
  void on_fold(double time_s, double span_s) override { folds_at.push_back({time_s, span_s}); }
  std::vector<OpEvent> events;
  std::vector<double> window_begins;
  std::vector<std::pair<double, double>> folds_at;
};

/// Window: micro-batches 2..5 of 8 simulated (ops 4..11); the run has 20, so the 12 left out are 3 windows.
FoldPlan plan_for_twenty() {
  FoldPlan plan;
  plan.rank = 0;
  plan.stream = 0;
  plan.window_begin_op = 2 * kOpsPerMicroBatch;
  plan.window_end_op = 6 * kOpsPerMicroBatch;
  plan.repeats = 3.0;
  return plan;
}

struct Models {
  Topology topology = uniform_star(kRanks, 100e9, 2e-6);
  std::unique_ptr<ComputeModel> compute = roofline(test_compute_params());
  std::unique_ptr<CollectiveModel> collectives = nccl();
};

/// The input that folds 8 simulated micro-batches into 20 (plan_for_twenty).
SimulationInput folded_input(const Workload& folded, const Models& m) {
  SimulationInput input = simulation_input(folded, m.topology, *m.compute, *m.collectives);
  input.fold = plan_for_twenty();
  return input;
}

TEST(FastEngineFold, AnExactlyPeriodicProgramEndsWhenTheFullOneDoes) {
  const Models m;
  for (const int iterations : {1, 2}) {
    const Workload full = micro_batches(20);
    SimulationInput full_input = simulation_input(full, m.topology, *m.compute, *m.collectives);
    full_input.iterations = iterations;
    FoldingRecorder full_events;
    const SimulationStats full_stats = engine_named("fast")->run(full_input, full_events);

    const Workload folded = micro_batches(8);
    SimulationInput input = folded_input(folded, m);
    input.iterations = iterations;
    input.fold.lead_begin_op = 1 * kOpsPerMicroBatch;  // micro-batch 1 leads into the window (no power: no warming)
    input.fold.lead_share = 0.25;
    FoldingRecorder recorder;
    const SimulationStats stats = engine_named("fast")->run(input, recorder);

    ASSERT_EQ(stats.folds, static_cast<std::uint32_t>(iterations));
    ASSERT_EQ(recorder.folds_at.size(), static_cast<std::size_t>(iterations));
    ASSERT_EQ(recorder.window_begins.size(), static_cast<std::size_t>(iterations));
    double spans = 0.0;
    for (int i = 0; i < iterations; ++i) {
      const auto [fold_s, span_s] = recorder.folds_at[static_cast<std::size_t>(i)];
      // The span is `repeats` windows.
      EXPECT_NEAR(span_s, 3.0 * (fold_s - recorder.window_begins[static_cast<std::size_t>(i)]), 1e-12);
      spans += span_s;
    }
    EXPECT_NEAR(stats.folded_s, spans, 1e-12);
    // Every micro-batch lasts the same: folded or not, the iterations end at the same times.
    ASSERT_EQ(stats.iteration_end_s.size(), full_stats.iteration_end_s.size());
    for (std::size_t i = 0; i < stats.iteration_end_s.size(); ++i)
      EXPECT_NEAR(stats.iteration_end_s[i], full_stats.iteration_end_s[i], 1e-9 * full_stats.makespan_s);
    EXPECT_NEAR(stats.makespan_s, full_stats.makespan_s, 1e-9 * full_stats.makespan_s);
    // The last op of the last iteration ends when the full run's does, and the events stay in time order.
    EXPECT_NEAR(recorder.events.back().time_s, full_events.events.back().time_s, 1e-9 * full_stats.makespan_s);
    EXPECT_TRUE(std::is_sorted(recorder.events.begin(), recorder.events.end(),
                               [](const OpEvent& a, const OpEvent& b) { return a.time_s < b.time_s; }));
    // The folded run simulates 8 micro-batches per iteration, not 20.
    EXPECT_EQ(recorder.events.size() * 20, full_events.events.size() * 8);
  }
}

TEST(FastEngineFold, EventsAfterTheFoldComeTheSpanLater) {
  const Models m;
  const Workload folded = micro_batches(8);
  SimulationInput input = folded_input(folded, m);
  FoldingRecorder recorder;
  engine_named("fast")->run(input, recorder);
  ASSERT_EQ(recorder.folds_at.size(), 1U);
  const auto [fold_s, span_s] = recorder.folds_at.front();
  for (const OpEvent& e : recorder.events) {
    // Rank 0's window-closing op starts at the fold: it and every op after it are reported the span later.
    if (e.rank == 0 && e.op >= input.fold.window_end_op) {
      EXPECT_GE(e.time_s, fold_s + span_s - 1e-12) << "op " << e.op;
      if (e.is_end) {
        EXPECT_GE(e.start_s, fold_s + span_s - 1e-12) << "op " << e.op;
      }
    }
    if (e.rank == 0 && e.op < input.fold.window_end_op && !e.is_end) {
      EXPECT_LE(e.time_s, fold_s) << "op " << e.op;
    }
  }
}

TEST(FastEngineFold, APlanTheEngineCannotCarryOutIsRefused) {
  const Models m;
  const Workload folded = micro_batches(8);
  SimulationInput input = folded_input(folded, m);
  // An observer that would not extrapolate its figures.
  RecordingObserver plain;
  EXPECT_THROW(engine_named("fast")->run(input, plain), EngineError);
  FoldingRecorder recorder;
  input.fold.rank = kRanks;  // no such GPU
  EXPECT_THROW(engine_named("fast")->run(input, recorder), EngineError);
  input.fold = plan_for_twenty();
  input.fold.window_end_op = input.fold.window_begin_op;  // an empty window
  EXPECT_THROW(engine_named("fast")->run(input, recorder), EngineError);
  input.fold = plan_for_twenty();
  input.fold.stream = 3;
  EXPECT_THROW(engine_named("fast")->run(input, recorder), EngineError);
  input.fold = plan_for_twenty();
  input.fold.repeats = -1.0;
  EXPECT_THROW(engine_named("fast")->run(input, recorder), EngineError);
  input.fold = plan_for_twenty();
  input.fold.lead_share = 0.25;
  input.fold.lead_begin_op = input.fold.window_begin_op;  // a lead-in that does not lead in
  EXPECT_THROW(engine_named("fast")->run(input, recorder), EngineError);
  // The reference engine simulates every micro-batch.
  input.fold = plan_for_twenty();
  EXPECT_FALSE(engine_named("simgrid")->folds());
  EXPECT_TRUE(engine_named("fast")->folds());
  EXPECT_THROW(engine_named("simgrid")->run(input, recorder), EngineError);
}

}  // namespace
}  // namespace chopsim::test
