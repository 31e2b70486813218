#pragma once
// Per-class kernel counts and bytes of a Kineto trace, read with chopsim's trace reader. A translation unit of its
// own: the traces library and the engine each define a TelemetrySample, so no file may include both.

#include <filesystem>
#include <map>
#include <vector>

#include "chopsim/common/kernel_class.hpp"

namespace chopsim::test {

struct TraceClassTotals {
  double kernels = 0.0;
  double bytes = 0.0;  ///< of the kernels whose bytes the trace's shapes give
};

/// Totals over the trace's kernels (memcpy and memset records left out), divided by `steps`.
[[nodiscard]] std::map<KernelClass, TraceClassTotals> kineto_class_totals(const std::filesystem::path& trace,
                                                                          double steps);

/// One measured kernel's work and time.
struct TraceKernel {
  double flops = 0.0;
  double bytes = 0.0;
  double duration_s = 0.0;
};

/// The trace's kernels of `kernel_class` with a FLOP count (from their ops' shapes).
[[nodiscard]] std::vector<TraceKernel> kineto_kernels_with_flops(const std::filesystem::path& trace,
                                                                 KernelClass kernel_class);

/// The same over the elementwise class's kernels, by the TensorIterator path their names show.
[[nodiscard]] std::map<ElementwisePath, TraceClassTotals> kineto_elementwise_path_totals(
    const std::filesystem::path& trace, double steps);

}  // namespace chopsim::test
