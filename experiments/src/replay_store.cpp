// Reads a kernel store for `chopsim replay`: every GPU record on one clock, ranks, GPU names. The only replay file
// that sees traces/ types.

#include <algorithm>
#include <iterator>
#include <system_error>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "replay_internal.hpp"

namespace chopsim::replay_detail {

MeasuredTrace read_measured_trace(const std::filesystem::path& path) {
  const SourceLocation where{path.string()};
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw InputError(where, "", "kernel store not found",
                     "give the .h5 file written by `chopsim ingest TRACE... -o STORE.h5` (docs/traces.md)");
  const KernelStore store = KernelStore::open(path);
  const std::vector<KernelRecord> kernels = store.kernels();
  if (kernels.empty())
    throw InputError(where, "/kernels", "the store holds no GPU records (kernels, memcpys, memsets): nothing to replay",
                     "ingest a kernel trace (Kineto, rocprofv3, Nsight Systems) into the store; telemetry alone "
                     "cannot be replayed");
  const auto& sources = store.sources();
  MeasuredTrace trace;
  trace.names = store.strings().strings();
  bool first_source = true;
  for (const SourceInfo& s : sources) {
    if (s.kernel_count == 0) continue;  // telemetry logs
    if (!s.gpu_name.empty()) trace.gpu_names.insert(s.gpu_name);
    if (first_source) trace.world_size = s.world_size;
    trace.world_consistent = trace.world_consistent && s.world_size == trace.world_size;
    first_source = false;
  }

  // One clock: each source's records start at its time origin (Unix-epoch ns for Kineto with baseTimeNanoseconds,
  // nsys session start, ...); the earliest origin is the reference, the earliest record time 0.
  auto origin_of = [&](const KernelRecord& k) {
    return k.source < sources.size() ? sources[k.source].time_origin_ns : std::int64_t{0};
  };
  std::int64_t base_ns = origin_of(kernels.front());
  bool any_rank = false;
  std::set<std::int32_t> devices;
  for (const KernelRecord& k : kernels) {
    base_ns = std::min(base_ns, origin_of(k));
    any_rank = any_rank || k.rank >= 0;
    devices.insert(k.device);
  }
  trace.records.reserve(kernels.size());
  double earliest = 0.0;
  for (const KernelRecord& k : kernels) {
    MeasuredRecord m;
    // Stores without ranks (one process): each device is a rank.
    m.rank = any_rank ? std::max(k.rank, 0) : static_cast<int>(std::distance(devices.begin(), devices.find(k.device)));
    m.device = k.device;
    m.stream = k.stream;
    m.name = k.name;
    m.kernel_class = k.kernel_class;
    m.start_s = static_cast<double>(origin_of(k) - base_ns) * 1e-9 + k.start_s;
    m.end_s = m.start_s + std::max(k.duration_s, 0.0);
    m.flops = k.flops;
    m.bytes = k.bytes;
    m.collective = k.collective;
    m.collective_bytes = k.collective_bytes;
    m.group = k.group;
    earliest = trace.records.empty() ? m.start_s : std::min(earliest, m.start_s);
    trace.records.push_back(m);
  }
  for (MeasuredRecord& m : trace.records) {
    m.start_s -= earliest;
    m.end_s -= earliest;
  }
  return trace;
}

}  // namespace chopsim::replay_detail
