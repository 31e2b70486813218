#pragma once
// One simulation on SimGrid 3.32 in the calling process. SimGrid allows one s4u::Engine per process (and engines
// created one after another carry state over; ../shared/docs/simgrid-3.32-notes.md), so this runs at most once per
// process: in the forked child, or in-process when the caller opted out of isolation.

#include "chopsim/sim/engine.hpp"
#include "event_stream.hpp"
#include "prepared_workload.hpp"

namespace chopsim::sim_detail {

/// Simulates `prepared` and reports events to `sink` in time order. Throws EngineError on deadlock (naming the stuck
/// ranks, streams and ops) or when SimGrid was already used in this process; rethrows what `sink` throws.
SimulationStats run_simgrid(const PreparedWorkload& prepared, const EngineOptions& options, EventSink& sink);

}  // namespace chopsim::sim_detail
