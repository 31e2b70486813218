// libFuzzer target: a sweep file (chopsim sweep SWEEP), decoded, expanded (bounded) and its constraints evaluated on
// every point; the base config named in it is the quick start's whatever the input says (written in front of it).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/experiments/sweep.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = chopsim::fuzz::input_file(".sweep.yaml");
  const std::string base = "base: " CHOPSIM_CONFIGS_DIR "/llama3-8b-fsdp.yaml\n";
  std::string text = base + std::string(reinterpret_cast<const char*>(data), size);
  chopsim::fuzz::write_input(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  try {
    const chopsim::SweepSpec spec = chopsim::load_sweep(path);
    std::size_t points = 1;
    for (const auto& axis : spec.axes) points *= axis.values.size();
    if (points <= 4096)
      for (const auto& point : chopsim::expand_sweep(spec))
        for (const auto& constraint : spec.constraints) (void)chopsim::meets_constraint(constraint, point);
  } catch (const chopsim::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: sweep: untyped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
