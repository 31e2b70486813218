// rocprofv3 (ROCprofiler-SDK) output: the JSON results file (--output-format json) and the kernel trace CSV
// (--kernel-trace --output-format csv).
//
// JSON layout (rocprofiler-sdk's tool output, seen in ../shared/data/traces/rocprofv3):
//   {"rocprofiler-sdk-tool": [{"metadata": {pid, init_time, fini_time, node, ...},
//                              "agents": [{id.handle, type (1 CPU, 2 GPU), name (gfx950), product_name,
//                                          logical_node_type_id, gpu_index, cu_count, max_engine_clk_fcompute, ...}],
//                              "kernel_symbols": [{kernel_id, kernel_name, demangled_kernel_name, ...}],
//                              "buffer_records": {"kernel_dispatch": [{start_timestamp, end_timestamp,
//                                  correlation_id{internal,external}, thread_id,
//                                  dispatch_info{agent_id.handle, queue_id.handle, kernel_id, workgroup_size{x,y,z},
//                                                grid_size{x,y,z}}}],
//                                                 "memory_copy": [...], ...}}]}
// Timestamps are nanoseconds of the ROCprofiler-SDK clock (CLOCK_BOOTTIME-based, not the Unix epoch).
// HSA's grid_size counts work-items; KernelRecord::grid counts blocks (workgroups), so grid = ceil(grid/workgroup).
// Two streamed passes: symbols, agents and the earliest dispatch first; records second.

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "byte_source.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/traces/classifier.hpp"
#include "csv.hpp"
#include "json_stream.hpp"
#include "reader_util.hpp"

namespace chopsim::detail {

namespace {

using simdjson::ondemand::array;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

struct Agent {
  bool gpu = false;
  std::int32_t index = -1;
  std::string name;
  std::string properties;  ///< "256 CUs, 8 XCCs, wave 64, max engine clock 2200 MHz"
};

std::int64_t handle_of(value v) {
  for (auto field : v.get_object())
    if (field.unescaped_key().value_unsafe() == "handle") return json_int(field.value()).value_or(-1);
  return -1;
}

std::array<std::int64_t, 3> xyz_of(value v) {
  std::array<std::int64_t, 3> out{0, 0, 0};
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    const auto n = json_int(field.value()).value_or(0);
    if (key == "x") out[0] = n;
    if (key == "y") out[1] = n;
    if (key == "z") out[2] = n;
  }
  return out;
}

std::uint32_t blocks(std::int64_t grid_items, std::int64_t workgroup) {
  if (grid_items <= 0) return 0;
  if (workgroup <= 0) return static_cast<std::uint32_t>(grid_items);
  return static_cast<std::uint32_t>((grid_items + workgroup - 1) / workgroup);
}

bool is_tool_path(const JsonPath& path, std::size_t depth) {
  return path.size() >= depth && path[0] == "rocprofiler-sdk-tool" && path[1] == "*";
}

struct Dispatch {
  std::int64_t start = 0, end = 0, agent = -1, queue = -1, kernel_id = -1, correlation = -1;
  std::array<std::int64_t, 3> workgroup{}, grid{};
};

Dispatch read_dispatch(object record) {
  Dispatch d;
  for (auto field : record) {
    std::string_view key = field.unescaped_key();
    value v = field.value();
    if (key == "start_timestamp") {
      d.start = json_int(v).value_or(0);
    } else if (key == "end_timestamp") {
      d.end = json_int(v).value_or(0);
    } else if (key == "correlation_id") {
      for (auto c : v.get_object())
        if (c.unescaped_key().value_unsafe() == "internal") d.correlation = json_int(c.value()).value_or(-1);
    } else if (key == "dispatch_info") {
      for (auto info : v.get_object()) {
        std::string_view k = info.unescaped_key();
        if (k == "agent_id") d.agent = handle_of(info.value());
        if (k == "queue_id") d.queue = handle_of(info.value());
        if (k == "kernel_id") d.kernel_id = json_int(info.value()).value_or(-1);
        if (k == "workgroup_size") d.workgroup = xyz_of(info.value());
        if (k == "grid_size") d.grid = xyz_of(info.value());
      }
    }
  }
  return d;
}

class RocprofJsonPass final : public JsonStreamHandler {
 public:
  RocprofJsonPass(RecordSink& sink, bool emit) : sink_(sink), emit_(emit) {}

  JsonAction action(const JsonPath& path) override {
    if (path.empty()) return JsonAction::descend;
    if (path.size() == 1) return path[0] == "rocprofiler-sdk-tool" ? JsonAction::descend : JsonAction::skip;
    if (path.size() == 2) return JsonAction::descend;  // one entry per profiled process
    if (!is_tool_path(path, 3)) return JsonAction::skip;
    const auto& key = path[2];
    if (path.size() == 3) {
      saw_tool_ = true;
      if (!emit_ && (key == "metadata" || key == "agents")) return JsonAction::capture;
      if (!emit_ && key == "kernel_symbols") return JsonAction::stream;
      if (key == "buffer_records") return JsonAction::descend;
      return JsonAction::skip;
    }
    if (path.size() == 4 && key == "buffer_records" && (path[3] == "kernel_dispatch" || path[3] == "memory_copy"))
      return JsonAction::stream;
    return JsonAction::skip;
  }

  void captured(const JsonPath& path, value v) override {
    if (path[2] == "agents") {
      for (value a : v.get_array()) {
        std::int64_t handle = -1, type = 0, logical = -1, gpu_index = -1, cus = 0, xccs = 0, wave = 0, clock = 0;
        std::string name, product;
        for (auto field : a.get_object()) {
          std::string_view key = field.unescaped_key();
          value f = field.value();
          if (key == "id") handle = handle_of(f);
          if (key == "type") type = json_int(f).value_or(0);
          if (key == "logical_node_type_id") logical = json_int(f).value_or(-1);
          if (key == "gpu_index") gpu_index = json_int(f).value_or(-1);
          if (key == "name") name = std::string(json_string(f).value_or(""));
          if (key == "product_name") product = std::string(json_string(f).value_or(""));
          if (key == "cu_count") cus = json_int(f).value_or(0);
          if (key == "num_xcc") xccs = json_int(f).value_or(0);
          if (key == "wave_front_size") wave = json_int(f).value_or(0);
          if (key == "max_engine_clk_fcompute") clock = json_int(f).value_or(0);
        }
        Agent agent;
        agent.gpu = type == 2;  // rocprofiler_agent_type_t: 1 CPU, 2 GPU
        agent.index = static_cast<std::int32_t>(gpu_index >= 0 ? gpu_index : logical);
        agent.name = product.empty() ? name : product + " (" + name + ")";
        agent.properties = std::to_string(cus) + " CUs, " + std::to_string(xccs) + " XCCs, wavefront " +
                           std::to_string(wave) + ", max engine clock " + std::to_string(clock) + " MHz";
        agents[handle] = agent;
      }
    } else if (path[2] == "metadata") {
      for (auto field : v.get_object()) {
        std::string_view key = field.unescaped_key();
        if (key == "pid") pid = json_int(field.value()).value_or(-1);
        if (key == "node")
          for (auto n : field.value().get_object())
            if (n.unescaped_key().value_unsafe() == "hostname")
              hostname = std::string(json_string(n.value()).value_or(""));
      }
    }
  }

  void batch(const JsonPath& path, array elements) override {
    const auto& list = path.back();
    if (path.size() == 3 && path[2] == "kernel_symbols") {
      for (value element : elements) {
        std::int64_t id = -1;
        std::string_view demangled, plain;
        for (auto field : element.get_object()) {
          std::string_view key = field.unescaped_key();
          if (key == "kernel_id") id = json_int(field.value()).value_or(-1);
          if (key == "demangled_kernel_name") demangled = json_string(field.value()).value_or("");
          if (key == "kernel_name") plain = json_string(field.value()).value_or("");
        }
        const std::string_view name = demangled.empty() ? plain : demangled;
        const StringId name_id = sink_.intern(name);
        symbols[id] = name_id;
        classes[name_id] = {classify_kernel_name(name), collective_from_kernel_name(name)};
      }
      return;
    }
    if (list == "kernel_dispatch") {
      for (value element : elements) {
        const Dispatch d = read_dispatch(element.get_object());
        ++dispatches;
        if (!emit_) {
          min_start = std::min(min_start, d.start);
          if (first_agent < 0) first_agent = d.agent;
          continue;
        }
        emit_kernel(d);
      }
    } else if (list == "memory_copy") {
      for (value element : elements) {
        std::int64_t start = 0, end = 0, src = -1, dst = -1;
        double bytes = kUnknown;
        for (auto field : element.get_object()) {
          std::string_view key = field.unescaped_key();
          value v = field.value();
          if (key == "start_timestamp") start = json_int(v).value_or(0);
          if (key == "end_timestamp") end = json_int(v).value_or(0);
          if (key == "bytes") bytes = json_double(v).value_or(kUnknown);
          if (key == "src_agent_id") src = handle_of(v);
          if (key == "dst_agent_id") dst = handle_of(v);
        }
        ++copies;
        if (!emit_) {
          min_start = std::min(min_start, start);
          continue;
        }
        KernelRecord r;
        r.kind = ActivityKind::memcpy;
        r.kernel_class = KernelClass::memcpy;
        r.name = sink_.intern("Memcpy");
        const auto dst_agent = agents.find(dst);
        const bool dst_gpu = dst_agent != agents.end() && dst_agent->second.gpu;
        r.device = device_of(dst_gpu ? dst : src);
        r.start_s = ns_interval(start, origin) * units::kNanosecond;
        r.duration_s = ns_interval(end, start) * units::kNanosecond;
        r.bytes = bytes;
        sink_.add_kernel(r);
      }
    }
  }

  std::int32_t device_of(std::int64_t agent) const {
    auto it = agents.find(agent);
    return it == agents.end() ? -1 : it->second.index;
  }

  void emit_kernel(const Dispatch& d) {
    KernelRecord r;
    auto symbol = symbols.find(d.kernel_id);
    r.name = symbol == symbols.end() ? sink_.intern("kernel_id " + std::to_string(d.kernel_id)) : symbol->second;
    if (symbol != symbols.end()) {
      const auto& known = classes.at(symbol->second);
      r.kernel_class = known.first;
      // RCCL's ncclDevKernel_Generic names no collective, and rocprofv3 records no op arguments.
      if (r.kernel_class == KernelClass::communication) r.collective = known.second;
    }
    r.device = device_of(d.agent);
    r.stream = d.queue;
    r.correlation = d.correlation;
    r.start_s = ns_interval(d.start, origin) * units::kNanosecond;
    r.duration_s = ns_interval(d.end, d.start) * units::kNanosecond;
    for (int i = 0; i < 3; ++i) {
      r.block[i] = static_cast<std::uint32_t>(std::max<std::int64_t>(d.workgroup[i], 0));
      r.grid[i] = blocks(d.grid[i], d.workgroup[i]);
    }
    sink_.add_kernel(r);
  }

  RecordSink& sink_;
  bool emit_;
  bool saw_tool_ = false;
  std::map<std::int64_t, Agent> agents;
  std::unordered_map<std::int64_t, StringId> symbols;
  std::unordered_map<StringId, std::pair<KernelClass, std::optional<CollectiveKind>>> classes;
  std::int64_t pid = -1;
  std::string hostname;
  std::int64_t min_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t origin = 0;
  std::int64_t first_agent = -1;
  std::uint64_t dispatches = 0, copies = 0;
};

class RocprofJsonReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    const std::string file = path.string();
    RocprofJsonPass index(sink, false);
    {
      auto source = ByteSource::open(path);
      JsonStreamer streamer(*source, file);
      streamer.run(index);
    }
    if (!index.saw_tool_)
      throw InputError({file}, "rocprofiler-sdk-tool", "no 'rocprofiler-sdk-tool' entry with results",
                       "pass the *_results.json file that rocprofv3 --output-format json writes");
    SourceInfo info;
    info.format = "rocprofv3-json";
    info.tool = "rocprofv3 (ROCprofiler-SDK)";
    if (!index.hostname.empty()) info.tool += ", host " + index.hostname;
    if (index.pid >= 0) info.tool += ", pid " + std::to_string(index.pid);
    info.time_origin_clock = "ROCprofiler-SDK timestamp clock (ns, not the Unix epoch)";
    info.notes =
        "timestamps in ns; grid converted from work-items to workgroups; stream = HSA queue id; rank not "
        "recorded by rocprofv3";
    if (auto it = index.agents.find(index.first_agent); it != index.agents.end()) {
      info.gpu_name = it->second.name;
      info.notes += "; GPU agent: " + it->second.properties;
    }
    if (index.dispatches + index.copies == 0) return info;
    index.origin = index.min_start;
    info.time_origin_ns = index.min_start;
    RocprofJsonPass emit(sink, true);
    emit.agents = index.agents;
    emit.symbols = index.symbols;
    emit.classes = index.classes;
    emit.origin = index.origin;
    {
      auto source = ByteSource::open(path);
      JsonStreamer streamer(*source, file);
      streamer.run(emit);
    }
    info.kernel_count = emit.dispatches + emit.copies;
    return info;
  }
};

/// rocprofv3 kernel_trace.csv. Columns are found by name: their set changed across ROCm releases
/// (Private_Segment_Size became Scratch_Size, Stream_Id was added, Agent_Id became "Agent N").
class RocprofCsvReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    const std::string file = path.string();
    struct Columns {
      int kind = -1, agent = -1, queue = -1, name = -1, correlation = -1, start = -1, end = -1;
      std::array<int, 3> workgroup{-1, -1, -1}, grid{-1, -1, -1};
    } c;
    std::vector<std::string> header;
    std::int64_t min_start = std::numeric_limits<std::int64_t>::max();
    std::uint64_t rows = 0;
    // Pass 1: header and time origin. Pass 2: records.
    for (int pass = 0; pass < 2; ++pass) {
      LineReader lines(ByteSource::open(path), file);
      std::string line;
      if (!lines.next(line)) throw InputError({file}, "", "the file is empty", "pass a rocprofv3 kernel_trace.csv");
      header = split_csv_line(line);
      auto column = [&](std::string_view name) {
        for (std::size_t i = 0; i < header.size(); ++i)
          if (header[i] == name) return static_cast<int>(i);
        return -1;
      };
      c.kind = column("Kind");
      c.agent = column("Agent_Id");
      c.queue = column("Queue_Id");
      c.name = column("Kernel_Name");
      c.correlation = column("Correlation_Id");
      c.start = column("Start_Timestamp");
      c.end = column("End_Timestamp");
      const char* axes[] = {"X", "Y", "Z"};
      for (int i = 0; i < 3; ++i) {
        c.workgroup[i] = column(std::string("Workgroup_Size_") + axes[i]);
        c.grid[i] = column(std::string("Grid_Size_") + axes[i]);
      }
      for (const char* required : {"Kernel_Name", "Start_Timestamp", "End_Timestamp"})
        if (column(required) < 0)
          throw InputError({file, 1}, required, "the header has no column '" + std::string(required) + "'",
                           "pass the kernel_trace.csv that rocprofv3 --kernel-trace writes");
      std::unordered_map<StringId, KernelClass> classes;
      while (lines.next(line)) {
        if (trim(line).empty()) continue;
        const auto fields = split_csv_line(line);
        auto field = [&](int i) -> std::string_view {
          return i >= 0 && static_cast<std::size_t>(i) < fields.size() ? std::string_view(fields[i]) : "";
        };
        auto integer = [&](int i, std::string_view what) {
          std::string_view text = field(i);
          if (text.starts_with("Agent ")) text.remove_prefix(6);
          const auto value = parse_number_with_unit(text);
          if (!value)
            throw InputError({file, lines.line_number()}, std::string(what),
                             "'" + std::string(field(i)) + "' is not a number", "check that the CSV is not damaged");
          // Within int64 with room to subtract two of them (9.2e18 ns is 292 years).
          if (!(std::fabs(*value) < 4.6e18))
            throw InputError({file, lines.line_number()}, std::string(what),
                             "'" + std::string(field(i)) + "' is out of range", "check that the CSV is not damaged");
          return static_cast<std::int64_t>(*value);
        };
        if (c.kind >= 0 && field(c.kind) != "KERNEL_DISPATCH") continue;
        const std::int64_t start = integer(c.start, "Start_Timestamp");
        if (pass == 0) {
          min_start = std::min(min_start, start);
          ++rows;
          continue;
        }
        KernelRecord r;
        r.name = sink.intern(field(c.name));
        auto known = classes.find(r.name);
        if (known == classes.end()) known = classes.emplace(r.name, classify_kernel_name(field(c.name))).first;
        r.kernel_class = known->second;
        if (r.kernel_class == KernelClass::communication) r.collective = collective_from_kernel_name(field(c.name));
        r.device = c.agent >= 0 ? static_cast<std::int32_t>(integer(c.agent, "Agent_Id")) : -1;
        r.stream = c.queue >= 0 ? integer(c.queue, "Queue_Id") : -1;
        r.correlation = c.correlation >= 0 ? integer(c.correlation, "Correlation_Id") : -1;
        r.start_s = ns_interval(start, min_start) * units::kNanosecond;
        r.duration_s = ns_interval(integer(c.end, "End_Timestamp"), start) * units::kNanosecond;
        for (int i = 0; i < 3; ++i) {
          const std::int64_t wg = c.workgroup[i] >= 0 ? integer(c.workgroup[i], "Workgroup_Size") : 0;
          const std::int64_t items = c.grid[i] >= 0 ? integer(c.grid[i], "Grid_Size") : 0;
          r.block[i] = static_cast<std::uint32_t>(std::max<std::int64_t>(wg, 0));
          r.grid[i] = blocks(items, wg);
        }
        sink.add_kernel(r);
      }
    }
    SourceInfo info;
    info.format = "rocprofv3-csv";
    info.tool = "rocprofv3 kernel trace CSV";
    info.time_origin_ns = rows > 0 ? min_start : 0;
    info.time_origin_clock = "ROCprofiler-SDK timestamp clock (ns, not the Unix epoch)";
    info.notes =
        "timestamps in ns; device = Agent_Id as rocprofv3 numbers agents (CPUs included unless "
        "--agent-index relative/type-relative); grid converted from work-items to workgroups";
    info.kernel_count = rows;
    return info;
  }
};

}  // namespace

std::unique_ptr<TraceReader> make_rocprof_json_reader() { return std::make_unique<RocprofJsonReader>(); }
std::unique_ptr<TraceReader> make_rocprof_csv_reader() { return std::make_unique<RocprofCsvReader>(); }

bool probe_rocprof_json(const FilePreview& preview) {
  const std::string_view head = preview.head;
  const auto start = head.find_first_not_of(" \t\r\n");
  return start != std::string_view::npos && head[start] == '{' &&
         head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos;
}

bool probe_rocprof_csv(const FilePreview& preview) {
  const std::string_view head = preview.head;
  const auto line_end = head.find('\n');
  const std::string_view first = head.substr(0, line_end);
  return first.find("Kernel_Name") != std::string_view::npos && first.find("Start_Timestamp") != std::string_view::npos;
}

}  // namespace chopsim::detail
