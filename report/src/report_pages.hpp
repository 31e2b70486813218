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

/// The validation.csv that `chopsim validate` writes beside its Markdown page.
void write_validation_page(const std::filesystem::path& csv_file, const std::filesystem::path& html);

/// The fields of one CSV line (RFC 4180 quoting, as chopsim's results.csv files write them).
[[nodiscard]] std::vector<std::string> split_csv_line(const std::string& line);

/// A results.csv read whole: its header and rows, every row as wide as the header.
struct ResultsCsv {
  std::filesystem::path file;
  std::string writer;  ///< "chopsim sweep", "chopsim study": named in errors
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  /// The index of column `name`; InputError naming the file when it has none.
  [[nodiscard]] std::size_t column(const std::string& name) const;
};

/// Reads `file` (InputError naming the file and line for an empty file or a row of another width).
[[nodiscard]] ResultsCsv read_results_csv(const std::filesystem::path& file, const std::string& writer);

}  // namespace chopsim::report_detail
