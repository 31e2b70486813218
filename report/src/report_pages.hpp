#pragma once
// The pages of `chopsim report`, by what the folder holds.

#include <filesystem>
#include <string>
#include <vector>

namespace chopsim::report_detail {

/// A `chopsim run --out` folder (summary.json, ops.h5).
void write_run_page(const std::filesystem::path& run_dir, const std::filesystem::path& html);
/// A `chopsim sweep --out` folder (results.csv).
void write_sweep_page(const std::filesystem::path& sweep_dir, const std::filesystem::path& html);
/// A `chopsim study --out` folder (results.csv with a `candidate` column).
void write_study_page(const std::filesystem::path& study_dir, const std::filesystem::path& html);

/// The fields of one CSV line (RFC 4180 quoting, as chopsim's results.csv files write them).
[[nodiscard]] std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace chopsim::report_detail
