#pragma once
// `chopsim report` (issue 19; docs/report.md): one HTML file that opens offline (Chart.js inlined, no network request)
// with the plots of a run: headline figures, time breakdown, loss waterfall, memory against capacity, per-GPU power,
// clock and temperature over time, throttled share per GPU.

#include <filesystem>

namespace chopsim {

/// Writes the report of a `chopsim run --out DIR` folder (summary.json, and ops.h5 for the traces over time) to
/// `html`, atomically. InputError naming the folder when summary.json is missing or not chopsim's, or when Chart.js
/// (Debian's libjs-chart.js) was not found at build time.
void write_run_report(const std::filesystem::path& run_dir, const std::filesystem::path& html);

/// The page `folder` calls for: a run's (summary.json) or a sweep's (results.csv: the best points, each point's
/// throughput, the Pareto front of throughput against energy per token, power peaks and memory per point).
void write_report(const std::filesystem::path& folder, const std::filesystem::path& html);

}  // namespace chopsim
