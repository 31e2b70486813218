// Input detection and reading: kernel stores, the published tables (csv_tables.cpp) and every trace or telemetry
// format of traces/ (read in memory with the same readers `chopsim ingest` uses).

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "chopsim/calibration/measurements.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/traces/classifier.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "chopsim/traces/reader.hpp"
#include "csv_tables.hpp"

namespace chopsim {

using calibration_detail::CsvTable;

std::string_view to_string(LinkScope scope) { return scope == LinkScope::intra_node ? "intra-node" : "inter-node"; }

std::string file_sha256(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path.string()}, "", "cannot open the file", "check the path");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw ModelError("SHA-256: OpenSSL could not initialise a digest");
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    if (in.gcount() > 0) EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

namespace {

std::vector<std::string> trace_format_names() {
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  return formats.names();
}

std::string supported_list() {
  std::string text = "tables: ";
  bool first = true;
  for (const auto& kind : calibration_detail::table_kind_descriptions()) {
    text += (first ? "" : "; ") + kind;
    first = false;
  }
  text += "; kernel stores from chopsim ingest (HDF5); traces and telemetry chopsim ingest reads: ";
  first = true;
  for (const auto& name : trace_format_names()) {
    text += (first ? "" : ", ") + name;
    first = false;
  }
  return text;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(SourceLocation{path.string()}, "", "cannot open the file", "check the path");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

/// The first line of a file (at most 64 KiB), for recognising a table by its header.
std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const auto newline = head.find('\n');
  return newline == std::string::npos ? head : head.substr(0, newline + 1);
}

bool is_hdf5(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 8> magic{};
  in.read(magic.data(), magic.size());
  return in.gcount() == 8 && std::string(magic.data(), 8) == "\x89HDF\r\n\x1a\n";
}

/// The memory-bound classes whose efficiency a trace's byte counts fit.
bool is_fitted_memory_class(KernelClass c) {
  return c == KernelClass::elementwise || c == KernelClass::norm || c == KernelClass::reduction ||
         c == KernelClass::memcpy || c == KernelClass::optimizer;
}

/// Turns one trace's records into samples, gaps and telemetry readings.
class RecordCollector {
 public:
  RecordCollector(std::size_t input, const LoadOptions& options, MeasurementSet& set)
      : input_(input), options_(options), set_(set) {}

  void kernels(std::span<const KernelRecord> records, const StringTable& strings,
               const std::vector<SourceInfo>& sources) {
    for (const KernelRecord& k : records) {
      if (!(k.duration_s > 0.0)) continue;
      if (k.source < sources.size() && sources[k.source].time_origin_clock == "unix_epoch") {
        const double origin = static_cast<double>(sources[k.source].time_origin_ns) * 1e-9;
        span_start_ = std::min(span_start_, origin + k.start_s);
        span_end_ = std::max(span_end_, origin + k.start_s + k.duration_s);
      }
      streams_[{k.source, k.rank, k.device, k.stream}].push_back({k.start_s, k.start_s + k.duration_s});
      if (std::isfinite(k.launch_start_s) && std::isfinite(k.launch_end_s))
        launch_threads_[{k.source, k.launch_thread}].push_back(
            {k.launch_start_s, k.launch_end_s, k.start_s, k.start_s + k.duration_s});
      // Kernels only: copies and memsets run on copy engines (and vary with the memory they touch).
      if (k.kind == ActivityKind::kernel)
        gpus_[{k.source, k.rank, k.device}].push_back(
            {k.start_s, k.start_s + k.duration_s, k.name, k.grid, k.block, k.kernel_class,
             k.kernel_class == KernelClass::communication || k.collective.has_value()});
      if (k.collective && std::isfinite(k.collective_bytes) && k.collective_bytes > 0.0 && k.group_size >= 2) {
        CollectiveSample c;
        c.kind = *k.collective;
        c.group_size = k.group_size;
        c.bytes = k.collective_bytes;
        c.duration_s = k.duration_s;
        c.input = input_;
        c.scope = scope_of(strings.at(k.group), k.group_size);
        // A NCCL/RCCL kernel starts when its rank arrives and ends when the last peer has: in a trace its duration
        // includes waiting for late ranks. The fastest call of a size is the closest to the transfer time
        // (TraceLens removes the skew the same way: nccl_summary_implicit_sync).
        auto [it, inserted] = fastest_.try_emplace({c.scope, c.kind, c.group_size, c.bytes}, c);
        if (!inserted) it->second.duration_s = std::min(it->second.duration_s, c.duration_s);
        ++collective_calls_;
        continue;
      }
      const bool compute = k.kernel_class == KernelClass::gemm || k.kernel_class == KernelClass::attention;
      // Memory-bound kernels count when the trace gave their bytes (a Kineto trace with shapes: op_traffic.hpp in
      // traces/); memcpy and memset records run on copy engines (and may cross PCIe): not fitted.
      const bool memory_bound = !compute && k.kind == ActivityKind::kernel && is_fitted_memory_class(k.kernel_class) &&
                                std::isfinite(k.bytes) && k.bytes > 0.0;
      if (!memory_bound && (!compute || !std::isfinite(k.flops) || k.flops <= 0.0)) {
        ++unfitted_;
        continue;
      }
      KernelSample s;
      s.kernel_class = k.kernel_class;
      s.flops = compute ? k.flops : 0.0;
      s.bytes = std::isfinite(k.bytes) && k.bytes > 0.0 ? k.bytes : 0.0;
      s.duration_s = k.duration_s;
      s.input = input_;
      s.label = strings.at(k.name).substr(0, 60);
      if (k.kernel_class == KernelClass::elementwise || k.kernel_class == KernelClass::reduction)
        s.path = classify_elementwise_path(strings.at(k.name));
      if (k.kernel_class == KernelClass::attention) s.head_dim = k.attention_head_dim;
      s.dtype = compute ? dtype_from_kernel_name(strings.at(k.name)) : std::string();
      if (compute && s.dtype.empty()) {
        s.dtype = options_.default_dtype;
        ++assumed_dtype_;
      }
      set_.kernels.push_back(std::move(s));
    }
  }

  void telemetry(std::span<const TelemetrySample> samples, const std::vector<SourceInfo>& sources) {
    for (const TelemetrySample& t : samples) {
      TelemetryReading r;
      r.input = input_;
      r.gpu = "device " + std::to_string(t.device);
      const double origin = t.source < sources.size() ? static_cast<double>(sources[t.source].time_origin_ns) : 0.0;
      r.time_s = origin * 1e-9 + t.time_s;
      r.power_w = t.power_w;
      r.util = t.util_gpu;
      r.gfx_clock_hz = t.gfx_clock_hz;
      r.temp_edge_c = t.temp_edge_c;
      r.temp_junction_c = t.temp_junction_c;
      set_.telemetry.push_back(r);
    }
  }

  /// Gaps per stream, in stream order of (source, rank, device, stream).
  void finish(InputFile& file, const StringTable& strings) {
    if (span_end_ > span_start_) set_.kernel_spans.push_back({input_, span_start_, span_end_});
    overlap_groups(file, strings);
    host_launches(file);
    for (const auto& [key, sample] : fastest_) set_.collectives.push_back(sample);
    if (collective_calls_ > fastest_.size())
      file.notes.push_back(std::to_string(collective_calls_) +
                           " collective calls reduced to the fastest call of each " +
                           "(kind, group size, size): " + std::to_string(fastest_.size()) + " points");
    for (auto& [key, intervals] : streams_) {
      if (intervals.size() < 2) continue;
      std::sort(intervals.begin(), intervals.end());
      LaunchGaps gaps;
      gaps.input = input_;
      gaps.stream = "rank " + std::to_string(std::get<1>(key)) + " device " + std::to_string(std::get<2>(key)) +
                    " stream " + std::to_string(std::get<3>(key));
      double end = intervals.front().second;
      for (std::size_t i = 1; i < intervals.size(); ++i) {
        gaps.gaps_s.push_back(std::max(0.0, intervals[i].first - end));
        end = std::max(end, intervals[i].second);
      }
      set_.gaps.push_back(std::move(gaps));
    }
    if (assumed_dtype_ > 0)
      file.notes.push_back(std::to_string(assumed_dtype_) +
                           " GEMM/attention kernels whose names do not say their "
                           "element type were taken as " +
                           options_.default_dtype);
    if (unfitted_ > 0)
      file.notes.push_back(std::to_string(unfitted_) +
                           " records without FLOPs, bytes or collective sizes (memory-bound kernels of a trace "
                           "without shapes, copy-engine transfers, ops whose traffic the shapes do not give) are used "
                           "for gaps only");
  }

 private:
  /// A kernel of one GPU's timeline, as the interference groups need it.
  struct TimedKernel {
    double start_s = 0.0, end_s = 0.0;
    StringId name = kNoString;
    std::array<std::uint32_t, 3> grid{}, block{};
    KernelClass kernel_class = KernelClass::other;
    bool communication = false;  ///< an NCCL/RCCL kernel
  };

  /// Compute kernels timed with and without a communication kernel running on the same GPU (on any stream): for
  /// each kernel (name, grid, block) of one GPU, the runs that communication covered for at least 90 % of their
  /// time and the runs it did not touch (partial overlaps are left out). Same name, grid and block is the closest a
  /// trace comes to "the same work": traces give no shapes for most kernels.
  void overlap_groups(InputFile& file, const StringTable& strings) {
    constexpr double kOverlappedShare = 0.9;
    const std::size_t before = set_.overlaps.size();
    for (const auto& [gpu, kernels] : gpus_) {
      std::vector<std::pair<double, double>> busy;  // communication intervals, merged
      for (const TimedKernel& k : kernels)
        if (k.communication) busy.emplace_back(k.start_s, k.end_s);
      if (busy.empty()) continue;
      std::sort(busy.begin(), busy.end());
      std::vector<std::pair<double, double>> merged{busy.front()};
      for (const auto& interval : busy) {
        if (interval.first <= merged.back().second)
          merged.back().second = std::max(merged.back().second, interval.second);
        else
          merged.push_back(interval);
      }
      const auto covered = [&](double start, double end) {
        auto it = std::lower_bound(merged.begin(), merged.end(), start,
                                   [](const std::pair<double, double>& i, double t) { return i.second <= t; });
        double sum = 0.0;
        for (; it != merged.end() && it->first < end; ++it)
          sum += std::min(end, it->second) - std::max(start, it->first);
        return sum;
      };
      std::map<std::tuple<StringId, std::array<std::uint32_t, 3>, std::array<std::uint32_t, 3>>, OverlapGroup> groups;
      for (const TimedKernel& k : kernels) {
        if (k.communication) continue;
        const double duration = k.end_s - k.start_s;
        const double share = covered(k.start_s, k.end_s) / duration;
        if (share > 0.0 && share < kOverlappedShare) continue;
        OverlapGroup& group = groups[{k.name, k.grid, k.block}];
        (share > 0.0 ? group.overlapped_s : group.isolated_s).push_back(duration);
        group.kernel_class = k.kernel_class;
      }
      for (auto& [key, group] : groups) {
        if (group.isolated_s.empty() || group.overlapped_s.empty()) continue;
        const auto& [name, grid, block] = key;
        const auto dims = [](const std::array<std::uint32_t, 3>& d) {
          return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
        };
        group.input = input_;
        group.label = strings.at(name).substr(0, 60) + " grid " + dims(grid) + " block " + dims(block);
        set_.overlaps.push_back(std::move(group));
      }
    }
    if (set_.overlaps.size() > before)
      file.notes.push_back(std::to_string(set_.overlaps.size() - before) +
                           " kernels (name, grid, block) timed both with and without a communication kernel running "
                           "on their GPU (interference fit)");
  }

  /// Launch intervals per CPU thread where the GPU waited for the host (HostLaunches).
  void host_launches(InputFile& file) {
    std::size_t waited = 0;
    for (auto& [key, calls] : launch_threads_) {
      if (calls.size() < 2) continue;
      std::sort(calls.begin(), calls.end(),
                [](const LaunchCall& a, const LaunchCall& b) { return a.start_s < b.start_s; });
      HostLaunches h;
      h.input = input_;
      h.thread = "thread " + std::to_string(std::get<1>(key));
      h.launches = calls.size();
      for (std::size_t i = 1; i < calls.size(); ++i) {
        const LaunchCall& before = calls[i - 1];
        const LaunchCall& call = calls[i];
        const bool gpu_waited =
            call.gpu_start_s - call.end_s < HostLaunches::kWaitedWithin && before.gpu_end_s <= call.end_s;
        if (gpu_waited) h.waited_intervals_s.push_back(call.start_s - before.start_s);
      }
      waited += h.waited_intervals_s.size();
      set_.host_launches.push_back(std::move(h));
    }
    if (waited > 0)
      file.notes.push_back(std::to_string(waited) +
                           " intervals between kernel launches on one CPU thread where the GPU waited for the host "
                           "(host launch time)");
  }

  LinkScope scope_of(const std::string& group, int group_size) const {
    const auto ranks = process_group_ranks(group);
    if (ranks.empty()) return group_size <= options_.gpus_per_node ? LinkScope::intra_node : LinkScope::inter_node;
    const int node = ranks.front() / options_.gpus_per_node;
    for (const int r : ranks)
      if (r / options_.gpus_per_node != node) return LinkScope::inter_node;
    return LinkScope::intra_node;
  }

  std::size_t input_;
  const LoadOptions& options_;
  MeasurementSet& set_;
  std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t, std::int64_t>, std::vector<std::pair<double, double>>>
      streams_;
  std::map<std::tuple<LinkScope, CollectiveKind, int, double>, CollectiveSample> fastest_;
  std::map<std::tuple<std::uint32_t, std::int32_t, std::int32_t>, std::vector<TimedKernel>> gpus_;
  /// A GPU record's launch call and its time on the GPU.
  struct LaunchCall {
    double start_s = 0.0, end_s = 0.0, gpu_start_s = 0.0, gpu_end_s = 0.0;
  };
  std::map<std::tuple<std::uint32_t, std::int64_t>, std::vector<LaunchCall>> launch_threads_;  // (source, thread)
  std::size_t collective_calls_ = 0;
  double span_start_ = std::numeric_limits<double>::infinity();
  double span_end_ = -std::numeric_limits<double>::infinity();
  std::size_t assumed_dtype_ = 0;
  std::size_t unfitted_ = 0;
};

void read_store(const std::filesystem::path& path, std::size_t input, const LoadOptions& options, MeasurementSet& set) {
  const KernelStore store = KernelStore::open(path);
  RecordCollector collector(input, options, set);
  store.for_each_kernel(
      [&](std::span<const KernelRecord> chunk) { collector.kernels(chunk, store.strings(), store.sources()); });
  collector.telemetry(store.telemetry(), store.sources());
  InputFile& file = set.inputs[input];
  for (const SourceInfo& source : store.sources())
    file.notes.push_back("store source " + source.path + " (" + source.format +
                         (source.gpu_name.empty() ? "" : ", " + source.gpu_name) + ") sha256 " + source.sha256);
  collector.finish(file, store.strings());
}

void read_trace(const std::filesystem::path& path, const TraceFormat& format, std::size_t input,
                const LoadOptions& options, MeasurementSet& set) {
  VectorSink sink;
  SourceInfo info = read_trace_checked(format, path, sink);
  RecordCollector collector(input, options, set);
  // A trace read alone is source 0; its time origin puts telemetry logs of one run on one clock.
  const std::vector<SourceInfo> sources{info};
  collector.kernels(sink.kernels, sink.strings, sources);
  collector.telemetry(sink.telemetry, sources);
  InputFile& file = set.inputs[input];
  if (!info.gpu_name.empty()) file.notes.push_back("GPU: " + info.gpu_name);
  collector.finish(file, sink.strings);
}

}  // namespace

// cuBLAS/CUTLASS spell the element type (sm90_xmma_gemm_bf16bf16_..., ampere_fp16_s16816gemm_..., ..._sgemm_...);
// Tensile/hipBLASLt put a type letter after the index tokens (Cijk_Alik_Bljk_B_... bf16, _H_ fp16, _S_ fp32, _F8_ fp8).
std::string dtype_from_kernel_name(const std::string& name) {
  const std::string lower = to_lower(name);
  if (name.starts_with("Cijk_")) {
    std::vector<std::string> tokens;
    std::stringstream stream(name);
    for (std::string token; std::getline(stream, token, '_');) tokens.push_back(token);
    if (tokens.size() > 3) {
      const std::string& t = tokens[3];
      if (t == "B" || t == "BBS" || t == "BB") return "bf16";
      if (t == "H" || t == "HHS" || t == "HH") return "fp16";
      if (t == "S" || t == "SS") return "fp32";
      if (t.starts_with("F8")) return "fp8";
    }
    return "";
  }
  if (lower.find("bf16") != std::string::npos || lower.find("bfloat16") != std::string::npos) return "bf16";
  if (lower.find("e4m3") != std::string::npos || lower.find("fp8") != std::string::npos) return "fp8";
  if (lower.find("fp16") != std::string::npos || lower.find("f16f16") != std::string::npos ||
      lower.find("half") != std::string::npos)
    return "fp16";
  if (lower.find("tf32") != std::string::npos) return "tf32";
  if (lower.find("sgemm") != std::string::npos) return "fp32";
  return "";
}

std::vector<std::string> supported_input_kinds() {
  std::vector<std::string> kinds = calibration_detail::table_kind_descriptions();
  kinds.push_back("kernel-store (HDF5 written by chopsim ingest)");
  for (const auto& name : trace_format_names()) kinds.push_back(name + " (read as chopsim ingest reads it)");
  return kinds;
}

MeasurementSet load_measurements(const std::vector<std::filesystem::path>& paths, const LoadOptions& options) {
  if (paths.empty())
    throw InputError(SourceLocation{"command line"}, "", "no input files",
                     "give kernel stores, measurement tables or traces: " + supported_list());
  MeasurementSet set;
  TraceFormatRegistry formats;
  register_builtin_trace_formats(formats);
  for (const auto& path : paths) {
    const std::string name = path.string();
    if (!std::filesystem::is_regular_file(path))
      throw InputError(SourceLocation{name}, "", "input file not found", "check the path");
    for (const InputFile& earlier : set.inputs)
      if (earlier.path == name)
        throw InputError(SourceLocation{name}, "", "the same file is given twice", "give each input once");
    const std::size_t input = set.inputs.size();
    set.inputs.push_back(InputFile{name, "", file_sha256(path), {}, 0, 0, 0, 0});
    const std::size_t kernels_before = set.kernels.size(), collectives_before = set.collectives.size(),
                      gaps_before = set.gaps.size(), telemetry_before = set.telemetry.size();
    if (std::filesystem::file_size(path) == 0)
      throw InputError(SourceLocation{name}, "", "the file is empty", "give a file with measurements");
    if (is_hdf5(path)) {
      set.inputs[input].kind = "kernel-store";
      read_store(path, input, options, set);
    } else {
      // Tables first, recognised by their header line whatever the file is called; a CSV no table kind claims may
      // still be a telemetry log or a rocprofv3 CSV.
      std::string kind;
      try {
        kind = calibration_detail::table_kind(calibration_detail::parse_csv(first_line(path), name));
      } catch (const InputError&) {  // not CSV (binary or JSON with an open quote on its first line)
      }
      if (!kind.empty()) {
        set.inputs[input].kind = kind;
        calibration_detail::read_table(calibration_detail::parse_csv(read_all(path), name), kind, input, options, set);
      }
      if (set.inputs[input].kind.empty()) {
        const TraceFormat* format = nullptr;
        try {
          format = &formats.detect(read_preview(path));
        } catch (const InputError&) {
          std::string header = first_line(path);
          while (!header.empty() && (header.back() == '\n' || header.back() == '\r')) header.pop_back();
          if (header.size() > 100) header = header.substr(0, 100) + "...";
          const bool printable = std::all_of(header.begin(), header.end(), [](unsigned char ch) { return ch >= 32; });
          throw InputError(SourceLocation{name}, "",
                           "not a layout calibration reads" +
                               (printable && !header.empty() ? " (first line: '" + header + "')" : std::string()),
                           "give one of the supported inputs: " + supported_list());
        }
        set.inputs[input].kind = format->name;
        read_trace(path, *format, input, options, set);
      }
    }
    InputFile& file = set.inputs[input];
    file.kernels = set.kernels.size() - kernels_before;
    file.collectives = set.collectives.size() - collectives_before;
    file.telemetry = set.telemetry.size() - telemetry_before;
    for (std::size_t g = gaps_before; g < set.gaps.size(); ++g) file.gaps += set.gaps[g].gaps_s.size();
    if (file.kernels + file.collectives + file.gaps + file.telemetry == 0)
      throw InputError(SourceLocation{name}, "",
                       "nothing to fit in this " + file.kind +
                           " input: no kernels with FLOPs or bytes, no collectives, no kernel timeline, no telemetry",
                       "give a table or trace with measurements");
    if (options.on_input) options.on_input(set.inputs.size(), paths.size(), path);
  }
  return set;
}

}  // namespace chopsim
