#include <iostream>

#include "chopsim/traces/ingest.hpp"
#include "cli.hpp"
#include "progress.hpp"

namespace chopsim::cli {

int command_ingest(const std::vector<std::string>& raw) {
  const Arguments args(raw, kIngestOptions);
  if (args.positional().empty())
    throw argument_error("ingest needs at least one TRACE file",
                         "write chopsim ingest trace.json.gz -o store.h5 (see chopsim --help)");
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  IngestOptions options;
  for (const auto& input : args.positional()) options.inputs.emplace_back(input);
  if (const auto out = args.option("--out")) options.output = *out;
  if (const auto out = args.option("-o")) options.output = *out;
  options.format = args.option("--format").value_or("");
  if (!options.format.empty()) (void)formats.get(options.format);  // unknown names fail before any reading
  if (const auto top = args.positive_int("--top")) options.top_kernels = static_cast<std::size_t>(*top);
  const bool summary = args.has_switch("--summary");
  if (!options.output && !summary)
    throw argument_error("ingest needs -o STORE.h5, --summary or both", "write chopsim ingest TRACE -o store.h5");

  Progress progress("chopsim ingest", "inputs", args.has_switch("--quiet"));
  options.on_input = [&](std::size_t done, std::size_t total, const std::filesystem::path& input) {
    progress.update(done, total, input.string());
  };
  const IngestResult result = ingest_traces(options, formats);
  for (const auto& source : result.sources) {
    if (args.has_switch("--quiet")) break;
    std::cerr << "chopsim ingest: " << source.path << " (" << source.format;
    if (!source.gpu_name.empty()) std::cerr << ", " << source.gpu_name;
    if (source.rank >= 0) std::cerr << ", rank " << source.rank;
    std::cerr << "): " << source.kernel_count << " GPU records, " << source.telemetry_count << " telemetry samples, "
              << source.annotation_count << " annotations\n";
  }
  if (summary) print_summary(std::cout, result.summary);
  if (options.output) std::cout << "wrote " << options.output->string() << "\n";
  return kExitOk;
}

}  // namespace chopsim::cli
