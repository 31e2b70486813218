#pragma once
// The pages of `chopsim report`, by what the folder holds.

#include <filesystem>

namespace chopsim::report_detail {

/// A `chopsim run --out` folder (summary.json, ops.h5).
void write_run_page(const std::filesystem::path& run_dir, const std::filesystem::path& html);
/// A `chopsim sweep --out` folder (results.csv).
void write_sweep_page(const std::filesystem::path& sweep_dir, const std::filesystem::path& html);

}  // namespace chopsim::report_detail
