#pragma once
// An untimed executor of a Workload: runs every rank's program symbolically and reports deadlocks.
// Semantics are the engine's (docs/design.md): an op starts once its stream predecessor and its
// dependencies have ended; a send and the receive with the same (source, destination, tag) complete
// together once both are posted (rendezvous); a collective completes once every member of the group has
// posted it. Everything else completes as soon as it starts.

#include "chopsim/models/workload.hpp"

namespace chopsim {

/// Throws ModelError when some op can never run (naming the stuck ops and what they wait for), when a
/// send or receive has no partner or a duplicate tag, when the members of a collective run different
/// programs, when a dependency points outside its program, or for collectives over explicit groups (Op::group_index:
/// replayed traces, whose matching the engine checks).
void check_workload_completes(const Workload& workload);

}  // namespace chopsim
