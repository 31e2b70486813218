// libFuzzer target: a study file (chopsim study STUDY), decoded with its catalog, and every candidate priced from
// fixed figures through price_candidate, so that fuzzed prices, powers and rack sizes reach the cost arithmetic.
// The sweep named in it is the shipped Llama-3-70B search whatever the input says (written in front of it).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/experiments/study.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = chopsim::fuzz::input_file(".study.yaml");
  const std::string head = "sweep: " CHOPSIM_CONFIGS_DIR "/studies/llama3-70b-search.yaml\n";
  std::string text = head + std::string(reinterpret_cast<const char*>(data), size);
  chopsim::fuzz::write_input(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  try {
    const chopsim::StudySpec spec = chopsim::load_study(path);
    chopsim::PointResult best;
    best.figures.tokens_per_s = 1e5;
    best.figures.mean_power_w = 650.0;
    best.figures.peak_power_100ms_w = 720.0;
    for (const chopsim::StudyCandidate& candidate : spec.candidates) {
      if (!candidate.cost) continue;
      const chopsim::CandidateResult priced =
          chopsim::price_candidate(candidate.name, candidate.hardware, 64, 8, best, spec.tokens_to_train,
                                   *candidate.cost, spec.catalog.facility);
      if (std::isnan(priced.cost_usd) || priced.racks < 0) {
        std::fprintf(stderr, "fuzz: study: candidate '%s' priced at %g USD in %d racks\n", candidate.name.c_str(),
                     priced.cost_usd, priced.racks);
        std::abort();
      }
    }
  } catch (const chopsim::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: study: untyped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
