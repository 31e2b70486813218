#include "chopsim/traces/ingest.hpp"

#include <map>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "sha256.hpp"

namespace chopsim {

namespace {

/// Sends records to the store (if any) and the summary, stamps the source index, and counts per source.
class IngestSink final : public RecordSink {
 public:
  explicit IngestSink(KernelStoreWriter* writer) : writer_(writer) {}

  void begin_source(std::uint32_t index) {
    source_ = index;
    kernels = telemetry = annotations = 0;
    if (writer_) writer_->begin_source(index);
  }
  StringId intern(std::string_view text) override { return writer_ ? writer_->intern(text) : strings_.intern(text); }
  void add_kernel(const KernelRecord& record) override {
    KernelRecord r = record;
    r.source = source_;
    if (writer_) writer_->add_kernel(r);
    summary.add(r);
    ++kernels;
  }
  void add_telemetry(const TelemetrySample& sample) override {
    TelemetrySample s = sample;
    s.source = source_;
    if (writer_) writer_->add_telemetry(s);
    summary.add(s);
    ++telemetry;
  }
  void add_annotation(const AnnotationRecord& annotation) override {
    AnnotationRecord a = annotation;
    a.source = source_;
    if (writer_) writer_->add_annotation(a);
    summary.add_annotation();
    ++annotations;
  }
  const StringTable& strings() const { return writer_ ? writer_->strings() : strings_; }

  SummaryBuilder summary;
  std::uint64_t kernels = 0, telemetry = 0, annotations = 0;

 private:
  KernelStoreWriter* writer_;
  StringTable strings_;
  std::uint32_t source_ = 0;
};

/// Kernel traces ingested together must tell their ranks apart: replay and calibration key on (rank, stream).
void check_ranks(const std::vector<SourceInfo>& sources) {
  std::vector<const SourceInfo*> traces;
  for (const auto& s : sources)
    if (s.kernel_count > 0) traces.push_back(&s);
  if (traces.size() < 2) return;
  std::map<std::int32_t, const SourceInfo*> by_rank;
  for (const SourceInfo* s : traces) {
    if (s->rank < 0)
      throw InputError({s->path}, "rank",
                       "the trace does not say which rank it ran on (no distributedInfo / MPI rank), and " +
                           std::to_string(traces.size()) +
                           " kernel traces are ingested together: their kernels could not be told apart by rank",
                       "ingest this trace into a store of its own, or record it with torch.distributed initialised "
                       "(Kineto writes distributedInfo) or nsys --trace=mpi");
    auto [it, inserted] = by_rank.emplace(s->rank, s);
    if (!inserted)
      throw InputError({s->path}, "rank",
                       "rank " + std::to_string(s->rank) + " is also the rank of " + it->second->path +
                           ": two traces of one rank in one store are ambiguous (two runs or two captures mixed)",
                       "ingest one trace per rank of one run, or each capture into its own store");
    if (s->world_size > 0 && traces.front()->world_size > 0 && s->world_size != traces.front()->world_size)
      throw InputError({s->path}, "world_size",
                       "world size " + std::to_string(s->world_size) + " but " + traces.front()->path +
                           " has world size " + std::to_string(traces.front()->world_size) +
                           ": the traces come from different runs",
                       "ingest the traces of one run together");
  }
}

}  // namespace

IngestResult ingest_traces(const IngestOptions& options, const TraceFormatRegistry& formats) {
  if (options.inputs.empty())
    throw InputError({}, "", "no trace files given", "pass one or more trace or telemetry files");
  // Declared before the writer so that the writer (and its open file) is destroyed first and the temporary file
  // can then be removed.
  AtomicOutputSet output;
  std::unique_ptr<KernelStoreWriter> writer;
  if (options.output) {
    check_output_file(*options.output, "-o", options.inputs);
    writer = std::make_unique<KernelStoreWriter>(output.stage(*options.output));
  }
  IngestSink sink(writer.get());
  IngestResult result;
  std::map<std::string, std::string> seen_hashes;
  for (std::size_t i = 0; i < options.inputs.size(); ++i) {
    const auto& path = options.inputs[i];
    const FilePreview preview = read_preview(path);
    const TraceFormat& format = options.format.empty() ? formats.detect(preview) : formats.get(options.format);
    std::uint64_t size = 0;
    const std::string hash = detail::sha256_file(path, size);
    if (auto [it, inserted] = seen_hashes.emplace(hash, path.string()); !inserted)
      throw InputError({path.string()}, "", "the same content as " + it->second + " (SHA-256 " + hash + ")",
                       "pass each trace once");
    sink.begin_source(static_cast<std::uint32_t>(i));
    SourceInfo info = read_trace_checked(format, path, sink);
    info.path = path.string();
    info.format = format.name;
    info.sha256 = hash;
    info.size_bytes = size;
    info.kernel_count = sink.kernels;
    info.telemetry_count = sink.telemetry;
    info.annotation_count = sink.annotations;
    if (sink.kernels == 0 && sink.telemetry == 0)
      throw InputError({path.string()}, "",
                       "the " + format.name + " file holds no GPU kernels, memcpys, memsets or telemetry samples" +
                           (sink.annotations > 0 ? " (only CPU-side events)" : ""),
                       "record GPU activity (torch.profiler with ProfilerActivity.CUDA, nsys --trace=cuda, rocprofv3 "
                       "--kernel-trace) or pass a telemetry log with samples");
    result.sources.push_back(std::move(info));
    if (options.on_input) options.on_input(i + 1, options.inputs.size(), path);
  }
  check_ranks(result.sources);
  if (writer) {
    writer->finish(result.sources);
    output.commit();
  }
  result.summary = sink.summary.finish(sink.strings(), options.top_kernels);
  return result;
}

}  // namespace chopsim
