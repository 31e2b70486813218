#pragma once
// Shared by the trace fuzz targets (issue 16, docs/reliability.md): the fuzzed bytes become a file (readers take
// paths and stream them), read by one format's reader with every record range-checked, as `chopsim ingest --format`
// reads it. chopsim's typed errors are the expected answer to bad input; anything else (another exception, a crash,
// a sanitizer report, a hang) is a finding.

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/reader.hpp"
#include "fuzz_input.hpp"

namespace chopsim::fuzz {

/// Reads `path` as `format`; a typed chopsim error is a correct answer, anything else aborts (a finding).
inline int read_file_as(const char* format, const std::filesystem::path& path) {
  static const TraceFormatRegistry formats = [] {
    TraceFormatRegistry registry;
    register_builtin_trace_formats(registry);
    return registry;
  }();
  try {
    VectorSink sink;
    (void)read_trace_checked(formats.get(format), path, sink);
  } catch (const Error&) {
    // the expected answer to bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s: untyped exception: %s\n", format, e.what());
    std::abort();
  }
  return 0;
}

/// Writes the input to a file and reads it as `format`.
inline int read_as(const char* format, const char* extension, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = input_file(extension);
  write_input(path, data, size);
  return read_file_as(format, path);
}

}  // namespace chopsim::fuzz
