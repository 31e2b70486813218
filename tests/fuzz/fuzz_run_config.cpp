// libFuzzer target: a run config (chopsim run CONFIG), decoded and validated against the shipped hardware, models and
// clusters (CHOPSIM_CONFIGS_DIR) and, when it is valid, its memory estimated and its workload built: what chopsim run
// does before simulating. InputError and the other typed errors are the expected answers.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/models/memory.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto registries = chopsim::ModelRegistries::with_builtins();
  static const chopsim::ConfigSearchPath search{{CHOPSIM_CONFIGS_DIR}};
  const auto path = chopsim::fuzz::input_file(".yaml");
  chopsim::fuzz::write_input(path, data, size);
  try {
    const chopsim::RunSpec run = chopsim::load_run_config(path, search, registries);
    // Bounded work only: a valid config may describe a cluster of 10^6 GPUs, or a real job whose workload takes
    // seconds to build under ASan (Llama-3-70B, TP 8, 129 micro-batches: a 1-hour run's 10 s "timeout", 2026-11-27).
    // The programs built grow with tp x micro-batches x layers.
    const double program_size =
        static_cast<double>(run.parallelism.tp) * run.training.micro_batches(run.parallelism) * run.model.layers;
    if (run.cluster.gpu_count() <= 4096 && program_size <= 50000) {
      (void)chopsim::estimate_peak_memory(run.model, run.parallelism, run.training, run.hardware);
      (void)chopsim::build_run_workload(run);
    }
  } catch (const chopsim::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: run config: untyped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
