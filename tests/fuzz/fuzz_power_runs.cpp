// libFuzzer target: a power-fit runs file (chopsim calibrate --power-runs RUNS), decoded with its times and run
// config paths checked. The runs file is written beside a copy of a shipped run config named mb1.yaml, so that
// `config: mb1.yaml` (the seeds') resolves.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/experiments/power_fit.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path folder = [] {
    const auto dir = chopsim::fuzz::input_file(".power_runs");
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(CHOPSIM_CONFIGS_DIR "/validation/h200-llama3.2-1b-eager-mb1.yaml", dir / "mb1.yaml",
                               std::filesystem::copy_options::overwrite_existing);
    return dir;
  }();
  const auto path = folder / "runs.yaml";
  chopsim::fuzz::write_input(path, data, size);
  try {
    for (const chopsim::PowerFitRun& run : chopsim::load_power_fit_runs(path).runs)
      if (!(run.to_s > run.from_s)) std::abort();  // the decoder promises from < to
  } catch (const chopsim::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: power_runs: untyped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
