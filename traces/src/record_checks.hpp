#pragma once
// The range checks of every record, whether it comes from a reader (read_trace_checked) or from a kernel store.

#include <string>

#include "chopsim/traces/records.hpp"

namespace chopsim::detail {

/// Throws InputError naming `file`, the record (`what`: "GPU record 3 ('ampere_sgemm')", "row 17 of /kernels") and
/// the value when a record's numbers are out of range (reader.hpp, read_trace_checked, lists the bounds).
class RecordChecker {
 public:
  explicit RecordChecker(std::string file);
  void kernel(const KernelRecord& record, const std::string& what) const;
  void telemetry(const TelemetrySample& sample, const std::string& what) const;
  void annotation(const AnnotationRecord& annotation, const std::string& what) const;
  [[noreturn]] void fail(const std::string& what, const std::string& problem) const;

 private:
  void time(const std::string& what, const char* field, double t) const;
  void duration(const std::string& what, double d) const;
  void index(const std::string& what, const char* field, double value) const;
  /// A count that may be unknown (NaN) but is otherwise finite and >= 0.
  void optional_amount(const std::string& what, const char* field, double value) const;
  void reading(const std::string& what, const char* field, double value, double low, double high) const;

  std::string file_;
};

}  // namespace chopsim::detail
