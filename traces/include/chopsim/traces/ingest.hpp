#pragma once
// `chopsim ingest`: read traces and telemetry into one HDF5 kernel store (docs/traces.md).

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/traces/reader.hpp"
#include "chopsim/traces/summary.hpp"

namespace chopsim {

struct IngestOptions {
  std::vector<std::filesystem::path> inputs;
  /// The store to write; none = only summarise.
  std::optional<std::filesystem::path> output;
  /// Format name for every input; empty = detect per file.
  std::string format;
  std::size_t top_kernels = 10;
  /// Told after each input is read: inputs done, inputs in all, the input's path.
  std::function<void(std::size_t done, std::size_t total, const std::filesystem::path& input)> on_input;
};

struct IngestResult {
  std::vector<SourceInfo> sources;
  TraceSummary summary;
};

/// Reads every input and writes the store through a temporary file renamed into place only when everything was
/// read and checked: on any error no store (and no partial file) is left. Throws InputError naming the file and the
/// problem for unreadable, unknown, malformed or empty inputs, for the same file given twice, and for kernel traces
/// whose ranks are ambiguous together (two traces claiming one rank, a trace that does not say its rank next to
/// others, traces of different world sizes).
IngestResult ingest_traces(const IngestOptions& options, const TraceFormatRegistry& formats);

}  // namespace chopsim
