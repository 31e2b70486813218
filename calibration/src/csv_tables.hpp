#pragma once
// The published measurement tables calibration reads directly (../shared/data/README.md):
//   tracelens-gemm / -sdpa / -elementwise / -reduce   TraceLens per-op perf report CSVs (GEMM.csv, SDPA_fwd.csv,
//                                                     SDPA_bwd.csv, BinaryElementwise.csv, UnaryElementwise.csv,
//                                                     Reduce_fwd.csv): FLOPs, bytes moved, median kernel time
//   vidur-mlp                                         Vidur's profiling/compute/.../mlp.csv: per-op times vs tokens
//                                                     and tensor-parallel degree for one transformer's shapes
//   vidur-collective                                  Vidur's profiling/network/.../{all_reduce,send_recv}.csv
//   tracelens-nccl-summary                            TraceLens nccl_summary_implicit_sync.csv (skew removed)
// Each kind is recognised by the columns of its header.

#include <string>
#include <vector>

#include "chopsim/calibration/measurements.hpp"

namespace chopsim::calibration_detail {

/// A parsed CSV file: RFC 4180 quoting ("" inside quoted fields), CRLF or LF, a UTF-8 byte-order mark ignored.
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  ///< 1-based line of each row in the file
};

[[nodiscard]] CsvTable parse_csv(const std::string& content, const std::string& path);

/// The table kind of `table` ("" if none matches).
[[nodiscard]] std::string table_kind(const CsvTable& table);

/// One line per table kind: its name and the header columns that identify it.
[[nodiscard]] std::vector<std::string> table_kind_descriptions();

/// Appends what `table` (of `kind`) holds to `set`, tagging samples with input index `input`. Throws InputError
/// naming the file, line and column for missing columns, bad numbers and tables without usable rows.
void read_table(const CsvTable& table, const std::string& kind, std::size_t input, const LoadOptions& options,
                MeasurementSet& set);

/// "bf16", "fp16", "fp32", "fp8", "tf32" from the spellings the tables use ("matrix_bf16", "c10::BFloat16",
/// "BFloat16", "Half", "float", "Float"); "" if unknown.
[[nodiscard]] std::string normalise_dtype(const std::string& text);

}  // namespace chopsim::calibration_detail
