// placeholder: the collective algorithms are being written; the registration keeps the build linking.
#include "chopsim/models/collective.hpp"

namespace chopsim {
void register_builtin_collective_models(CollectiveModelRegistry& registry) {
  registry.add("nccl", "NCCL/RCCL-like (not implemented yet)",
               [](const CollectiveParams&) -> std::unique_ptr<CollectiveModel> { throw ModelError("nccl: not implemented yet"); });
}
}  // namespace chopsim
