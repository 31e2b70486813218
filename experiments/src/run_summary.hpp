#pragma once
// summary.json and the figures it shares with the run (private to chopsim_experiments).

#include <ostream>

#include "chopsim/config/run_spec.hpp"
#include "chopsim/experiments/run.hpp"

namespace chopsim::detail {

/// summary.json: the run, its predictions and the time and memory breakdowns (deterministic bytes:
/// no wall time, no host names, no dates).
void write_summary_json(std::ostream& out, const RunSpec& run, const RunReport& report);

/// The dense peak FLOP/s of `run`'s GPU at its training precision (what MFU divides by).
[[nodiscard]] double peak_flops(const RunSpec& run);

}  // namespace chopsim::detail
