#include "eager_h200_trace.hpp"

#include <cmath>
#include <stdexcept>

#include "chopsim/traces/reader.hpp"

namespace chopsim::test {

std::map<KernelClass, TraceClassTotals> kineto_class_totals(const std::filesystem::path& trace, double steps) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  const TraceFormat& format = formats.detect(read_preview(trace));
  if (format.name != "kineto") throw std::runtime_error(trace.string() + " is not a Kineto trace");
  VectorSink sink;
  (void)format.create()->read(trace, sink);
  std::map<KernelClass, TraceClassTotals> totals;
  for (const KernelRecord& k : sink.kernels) {
    if (k.kind != ActivityKind::kernel) continue;
    auto& t = totals[k.kernel_class];
    t.kernels += 1.0 / steps;
    if (std::isfinite(k.bytes)) t.bytes += k.bytes / steps;
  }
  return totals;
}

}  // namespace chopsim::test
