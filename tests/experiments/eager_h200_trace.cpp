#include "eager_h200_trace.hpp"

#include <cmath>
#include <stdexcept>

#include "chopsim/traces/classifier.hpp"
#include "chopsim/traces/reader.hpp"

namespace chopsim::test {

namespace {
VectorSink read_kineto(const std::filesystem::path& trace) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  const TraceFormat& format = formats.detect(read_preview(trace));
  if (format.name != "kineto") throw std::runtime_error(trace.string() + " is not a Kineto trace");
  VectorSink sink;
  (void)format.create()->read(trace, sink);
  return sink;
}
}  // namespace

std::vector<TraceKernel> kineto_kernels_with_flops(const std::filesystem::path& trace, KernelClass kernel_class) {
  const VectorSink sink = read_kineto(trace);
  std::vector<TraceKernel> kernels;
  for (const KernelRecord& k : sink.kernels)
    if (k.kind == ActivityKind::kernel && k.kernel_class == kernel_class && std::isfinite(k.flops) && k.flops > 0.0)
      kernels.push_back({k.flops, std::isfinite(k.bytes) ? k.bytes : 0.0, k.duration_s});
  return kernels;
}

std::map<ElementwisePath, TraceClassTotals> kineto_elementwise_path_totals(const std::filesystem::path& trace,
                                                                           double steps) {
  const VectorSink sink = read_kineto(trace);
  std::map<ElementwisePath, TraceClassTotals> totals;
  for (const KernelRecord& k : sink.kernels) {
    if (k.kind != ActivityKind::kernel || k.kernel_class != KernelClass::elementwise) continue;
    auto& t = totals[classify_elementwise_path(sink.strings.at(k.name))];
    t.kernels += 1.0 / steps;
    if (std::isfinite(k.bytes)) t.bytes += k.bytes / steps;
  }
  return totals;
}

std::map<KernelClass, TraceClassTotals> kineto_class_totals(const std::filesystem::path& trace, double steps) {
  const VectorSink sink = read_kineto(trace);
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
