#pragma once
// The engines behind the registry (register_builtin_engines in engines.cpp).

#include <memory>

#include "chopsim/sim/engine.hpp"

namespace chopsim::sim_detail {

/// SimGrid 3.32 (simgrid_engine.cpp): one actor per GPU stream, each run in a forked child process by default.
[[nodiscard]] std::unique_ptr<Engine> make_simgrid_engine(const EngineOptions& options);
/// chopsim's event loop (fast_simulation.cpp): the same semantics without actors, in the calling thread.
[[nodiscard]] std::unique_ptr<Engine> make_fast_engine(const EngineOptions& options);

}  // namespace chopsim::sim_detail
