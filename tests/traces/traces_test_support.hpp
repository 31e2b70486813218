#pragma once
// Shared helpers of the trace tests: read one file with a named reader into memory.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "chopsim/traces/reader.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim::test {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(CHOPSIM_TRACES_FIXTURES) / name;
}

struct ReadResult {
  VectorSink sink;
  SourceInfo info;
};

/// Reads `path` with the reader its content is detected as, every record range-checked (read_trace_checked);
/// checks that detection gives `expected_format`.
inline ReadResult read_trace(const std::filesystem::path& path, const std::string& expected_format) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  const TraceFormat& format = formats.detect(read_preview(path));
  EXPECT_EQ(format.name, expected_format) << path;
  ReadResult result;
  result.info = read_trace_checked(format, path, result.sink);
  return result;
}

inline std::map<KernelClass, std::size_t> count_by_class(const VectorSink& sink) {
  std::map<KernelClass, std::size_t> counts;
  for (const auto& k : sink.kernels) ++counts[k.kernel_class];
  return counts;
}

inline double total_duration(const VectorSink& sink) {
  double total = 0.0;
  for (const auto& k : sink.kernels) total += k.duration_s;
  return total;
}

inline const KernelRecord* find_kernel(const VectorSink& sink, const std::string& name_prefix, double start_s,
                                       double tolerance_s = 1e-9) {
  for (const auto& k : sink.kernels)
    if (sink.strings.at(k.name).starts_with(name_prefix) && std::fabs(k.start_s - start_s) <= tolerance_s) return &k;
  return nullptr;
}

}  // namespace chopsim::test
