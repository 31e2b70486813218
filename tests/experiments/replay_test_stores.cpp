#include "replay_test_stores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "chopsim/traces/ingest.hpp"
#include "chopsim/traces/kernel_store.hpp"

namespace chopsim::test {

void ingest_store(const std::vector<std::filesystem::path>& traces, const std::filesystem::path& store) {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  IngestOptions options;
  options.inputs = traces;
  options.output = store;
  (void)ingest_traces(options, formats);
}

StoreFacts store_facts(const std::filesystem::path& path) {
  const KernelStore store = KernelStore::open(path);
  StoreFacts facts;
  double first = std::numeric_limits<double>::infinity(), last = -first;
  std::set<int> ranks;
  std::int64_t base = std::numeric_limits<std::int64_t>::max();
  for (const auto& s : store.sources()) base = std::min(base, s.time_origin_ns);
  for (const KernelRecord& k : store.kernels()) {
    const double start = static_cast<double>(store.sources()[k.source].time_origin_ns - base) * 1e-9 + k.start_s;
    first = std::min(first, start);
    last = std::max(last, start + k.duration_s);
    ++facts.records;
    facts.communication_records += k.kernel_class == KernelClass::communication ? 1 : 0;
    facts.busy_s[static_cast<std::size_t>(k.kernel_class)] += k.duration_s;
    ranks.insert(k.rank);
  }
  facts.ranks = ranks.size();
  facts.span_s = facts.records > 0 ? last - first : 0.0;
  return facts;
}

void write_store(const std::filesystem::path& path, const std::vector<SyntheticKernel>& kernels,
                 const std::string& gpu_name, int world_size) {
  std::map<int, std::vector<const SyntheticKernel*>> by_rank;
  for (const auto& k : kernels) by_rank[k.rank].push_back(&k);
  KernelStoreWriter writer(path);
  std::vector<SourceInfo> sources;
  for (const auto& [rank, list] : by_rank) {
    writer.begin_source(static_cast<std::uint32_t>(sources.size()));
    SourceInfo source;
    source.path = "synthetic_rank" + std::to_string(rank) + ".json";
    source.format = "kineto";
    source.gpu_name = gpu_name;
    source.rank = rank;
    source.world_size = world_size;
    source.time_origin_clock = "unix_epoch";
    for (const SyntheticKernel* k : list) {
      KernelRecord r;
      r.rank = rank;
      r.device = rank;
      r.stream = k->stream;
      r.name = writer.intern(k->name);
      r.kernel_class = k->kernel_class;
      r.start_s = k->start_s;
      r.duration_s = k->duration_s;
      if (k->flops >= 0.0) r.flops = k->flops;
      if (k->bytes >= 0.0) r.bytes = k->bytes;
      r.collective = k->collective;
      if (k->collective_bytes >= 0.0) r.collective_bytes = k->collective_bytes;
      r.group = writer.intern(k->group);
      writer.add_kernel(r);
      ++source.kernel_count;
    }
    sources.push_back(source);
  }
  writer.finish(sources);
}

}  // namespace chopsim::test
