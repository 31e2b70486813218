// placeholder: the SimGrid engine is being written; the registration keeps the build linking.
#include "chopsim/sim/engine.hpp"

namespace chopsim {
void register_builtin_engines(EngineRegistry& registry) {
  registry.add("simgrid", "SimGrid 3.32 (not implemented yet)",
               [](const EngineOptions&) -> std::unique_ptr<Engine> { throw EngineError("simgrid: not implemented yet"); });
}
}  // namespace chopsim
