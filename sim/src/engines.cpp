#include "engines.hpp"

#include <string>

#include "chopsim/common/error.hpp"
#include "event_stream.hpp"
#include "fast_simulation.hpp"
#include "prepared_workload.hpp"
#include "symmetry.hpp"

namespace chopsim {
namespace sim_detail {
namespace {

class FastEngine final : public Engine {
 public:
  explicit FastEngine(const EngineOptions& options) : use_symmetry_(options.use_symmetry) {
    // The flow network implements CM02's sharing (without cross traffic or the TCP window bound); the other SimGrid
    // models exist to mimic TCP over wide-area links (docs/design.md).
    if (options.network_model != "CM02")
      throw EngineError("fast: network_model '" + options.network_model +
                        "' is SimGrid's; the fast engine shares links as CM02 does (use engine: simgrid for " +
                        options.network_model + ")");
  }

  SimulationStats run(const SimulationInput& input, SimulationObserver& observer) override {
    ObserverSink sink(observer);
    if (input.workload == nullptr) throw EngineError("simulation input is incomplete: no workload");
    if (input.fold.enabled() && !observer.folds())
      throw EngineError("fast: a steady-state fold needs an observer that extrapolates its figures (folds())");
    const RankClasses classes =
        use_symmetry_ ? RankClasses::of(input) : RankClasses(static_cast<int>(input.workload->program_of_rank.size()));
    const PreparedWorkload prepared(input, classes.representatives());  // every rank when there are no classes
    SimulationStats stats = run_fast(prepared, classes, sink);
    stats.simulated_ranks = static_cast<std::uint32_t>(classes.representatives().size());
    stats.symmetry_limit = use_symmetry_ ? classes.limit() : "symmetry off";
    return stats;
  }

  [[nodiscard]] bool folds() const override { return true; }

 private:
  bool use_symmetry_;
};

}  // namespace

std::unique_ptr<Engine> make_fast_engine(const EngineOptions& options) { return std::make_unique<FastEngine>(options); }

}  // namespace sim_detail

void register_builtin_engines(EngineRegistry& registry) {
  registry.add("fast",
               "chopsim's event loop: the SimGrid engine's semantics (CM02 max-min sharing, power dynamics, the host) "
               "without actors; runs in the calling thread, many at once per process",
               [](const EngineOptions& options) { return sim_detail::make_fast_engine(options); });
  registry.add(
      "simgrid",
      "SimGrid 3.32 s4u (CM02, max-min sharing): one actor per GPU stream, each run in a forked child process; the "
      "reference engine",
      [](const EngineOptions& options) { return sim_detail::make_simgrid_engine(options); });
}

}  // namespace chopsim
