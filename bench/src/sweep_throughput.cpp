// Sweep throughput: how many points per minute one process predicts when it runs points in parallel in its own
// address space (TBB, one run_simulation per point, each with its own registries, models and engine), as the sweep
// command will. Usage: chopsim_sweep_throughput CONFIG [--configs DIR] [--threads N] [--points N] [--as-is] [--fold]
// [--observer-thread] (--fold: every point with simulation.fold on; --observer-thread: each point's observers on a
// thread of their own, as `chopsim run` does).
// The points vary training.micro_batch over the values that divide the run's batch per data-parallel rank, in turn.
// Prints points, threads, wall seconds, points per minute and whether every repeat of a point gave the same
// iteration time bit for bit (it must: the engine has no global state).

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"

constexpr const char* kUsage =
    "usage: chopsim_sweep_throughput CONFIG [--configs DIR] [--threads N] [--points N] [--as-is] [--fold] "
    "[--observer-thread]\n";

int main(int argc, char** argv) {
  try {
    std::filesystem::path config;
    std::filesystem::path configs_dir;
    int threads = 2;
    int points = 8;
    bool as_is = false;
    bool fold = false;
    bool observer_thread = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if ((arg == "--configs" || arg == "--threads" || arg == "--points") && i + 1 < argc) {
        const std::string value = argv[++i];
        if (arg == "--configs") configs_dir = value;
        if (arg == "--threads") threads = std::stoi(value);
        if (arg == "--points") points = std::stoi(value);
      } else if (arg == "--as-is") {
        as_is = true;
      } else if (arg == "--fold") {
        fold = true;
      } else if (arg == "--observer-thread") {
        observer_thread = true;
      } else if (config.empty() && arg.rfind("--", 0) != 0) {
        config = arg;
      } else {
        std::cerr << kUsage;
        return 2;
      }
    }
    if (config.empty() || threads < 1 || points < 1) {
      std::cerr << kUsage;
      return 2;
    }
    const auto registries = chopsim::ModelRegistries::with_builtins();
    const chopsim::ConfigSearchPath search = chopsim::default_search_path(config, configs_dir);
    chopsim::RunSpec base = chopsim::load_run_config(config, search, registries);
    if (fold) base.fold = true;
    // Micro-batch sizes that divide the batch per data-parallel rank.
    const int per_rank = base.training.global_batch / base.parallelism.dp;
    std::vector<int> micro_batches;
    if (as_is) {
      micro_batches.push_back(base.training.micro_batch);
    } else {
      for (int m = 1; m <= per_rank && micro_batches.size() < 4; m *= 2)
        if (per_rank % m == 0) micro_batches.push_back(m);
    }

    std::vector<double> iteration_times(static_cast<std::size_t>(points), 0.0);
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    tbb::parallel_for(0, points, [&](int p) {
      chopsim::RunSpec run = base;
      run.training.micro_batch = micro_batches[static_cast<std::size_t>(p) % micro_batches.size()];
      const auto own = chopsim::ModelRegistries::with_builtins();  // a point shares nothing with another
      chopsim::RunOptions options;
      options.observer_thread = observer_thread;
      iteration_times[static_cast<std::size_t>(p)] = chopsim::run_simulation(run, own, options).iteration_time_s;
    });
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool repeatable = true;
    std::map<int, double> first;
    for (int p = 0; p < points; ++p) {
      const int m = micro_batches[static_cast<std::size_t>(p) % micro_batches.size()];
      const auto [it, inserted] = first.emplace(m, iteration_times[static_cast<std::size_t>(p)]);
      if (!inserted && it->second != iteration_times[static_cast<std::size_t>(p)]) repeatable = false;
    }
    std::cout << "points " << points << ", threads " << threads << ", wall " << wall << " s, " << (points / wall * 60.0)
              << " points/min, repeats identical: " << (repeatable ? "yes" : "NO") << "\n";
    return repeatable ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "chopsim_sweep_throughput: " << error.what() << "\n";
    return 1;
  }
}
