#pragma once
// One simulation on chopsim's own event loop (the "fast" engine): no actors, no SimGrid, no global state, so many
// can run at once in one process. Same semantics as the SimGrid engine (docs/design.md).

#include "chopsim/sim/engine.hpp"
#include "event_stream.hpp"
#include "prepared_workload.hpp"
#include "symmetry.hpp"

namespace chopsim::sim_detail {

/// Simulates `prepared` and reports events to `sink` in time order. Throws EngineError on deadlock (naming the stuck
/// ranks, streams and ops); rethrows what `sink` throws. With reduced `classes` only their representatives are
/// simulated (`prepared` must hold them); the sink is told the classes first.
SimulationStats run_fast(const PreparedWorkload& prepared, const RankClasses& classes, EventSink& sink);

}  // namespace chopsim::sim_detail
