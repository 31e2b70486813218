#include <iostream>

#include "chopsim/config/registries.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_describe(const std::vector<std::string>& raw) {
  const Arguments args(raw, {});
  if (!args.positional().empty()) throw argument_error("describe takes no arguments", "write chopsim describe");
  const auto registries = ModelRegistries::with_builtins();
  auto list = [](const auto& registry) {
    std::cout << registry.kind() << ":\n";
    for (const auto& [name, entry] : registry.entries()) std::cout << "  " << name << "  " << entry.description << "\n";
  };
  list(registries.compute);
  list(registries.collective);
  list(registries.node_topology);
  list(registries.fabric_topology);
  list(registries.engine);
  list(registries.power);
  list(registries.thermal);
  list(registries.governor);
  return kExitOk;
}

}  // namespace chopsim::cli
