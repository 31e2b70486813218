// PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip.
//
// Format: the Chrome Trace Event Format (ts and dur in microseconds, "ph":"X" complete events) with Kineto's
// additions: top-level deviceProperties, distributedInfo (rank, world_size, pg_config), baseTimeNanoseconds (ts is
// then relative to it), and per-event args: kernels carry device, stream, correlation, grid, block and usually
// "External id"; cuda_runtime/cuda_driver launches carry correlation and External id; cpu_ops carry External id,
// "Input Dims", "Input type" (record_shapes=True) and, for record_param_comms, the collective's name, message
// sizes, dtype and process group.
//
// Two streamed passes over the file (memory bounded; see json_stream.hpp):
//   pass 1 indexes metadata, the CPU ops whose shapes give FLOPs (GEMM, attention) or whose args describe a
//   collective (record_param_comms), the launches by correlation id (the External id of those ops, and the launch
//   call's time and thread), and the earliest GPU timestamp (the source's time origin);
//   pass 2 emits one KernelRecord per kernel/gpu_memcpy/gpu_memset event, linked to its op through its own
//   External id or its launch's correlation id, with its launch call, and one AnnotationRecord per user annotation.
// State kept between passes: ~100 bytes per shape- or collective-carrying op and ~60 per launch call (one per GPU
// record, like the records themselves), not per CPU event.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "byte_source.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/traces/classifier.hpp"
#include "json_stream.hpp"
#include "kineto_events.hpp"
#include "op_flops.hpp"
#include "op_traffic.hpp"
#include "reader_util.hpp"

namespace chopsim::detail {

namespace {

using simdjson::ondemand::array;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

/// memory_bound: an op whose bytes come from memory_bound_op_bytes (op_traffic.hpp).
enum class OpFamily : std::uint8_t { none, gemm, attention, collective, memory_bound };

/// What a CPU op contributes to the kernels it launches.
struct OpInfo {
  StringId name = kNoString;
  OpFamily family = OpFamily::none;
  double flops = kUnknown;
  double bytes = kUnknown;
  double head_dim = 0.0;  // attention: the query/key head width
  bool given = false;     // FLOPs already attributed to one kernel
  /// Launch calls linked to the op (pass 1): a memory-bound op's bytes are shared among its kernels (PyTorch splits
  /// a tensor of more than 2^31 elements into several kernels; a fused optimizer launches one per chunk of tensors).
  std::uint32_t launches = 0;
  /// A GEMM or attention op's longest kernel (pass 1), which gets its FLOPs and bytes: cuDNN's attention backward
  /// launches a short dO.O pre-pass before the main kernel, and split-K GEMMs a short reduction after theirs.
  std::int64_t main_correlation = -1;
  std::int64_t main_duration_ns = -1;
  std::optional<CollectiveKind> collective;
  double collective_bytes = kUnknown;
  StringId group = kNoString;
  std::int32_t group_size = -1;
};

using namespace kineto;  // the events and args the two passes read (kineto_events.hpp)

/// Pass-1 handler: metadata and the op index.
class Indexer final : public JsonStreamHandler {
 public:
  Indexer(RecordSink& sink, const std::string& file) : sink_(sink), file_(file) {}

  JsonAction action(const JsonPath& path) override {
    if (path.empty()) return JsonAction::descend;
    if (path.size() == 1) {
      const auto& key = path[0];
      if (key == "traceEvents") {
        saw_events_ = true;
        return JsonAction::stream;
      }
      if (key == "deviceProperties" || key == "distributedInfo" || key == "displayTimeUnit" ||
          key == "baseTimeNanoseconds" || key == "schemaVersion" || key == "cupti_version" ||
          key == "roctracer_version" || key == "cuda_runtime_version" || key == "hip_runtime_version")
        return JsonAction::capture;
    }
    return JsonAction::skip;
  }

  void captured(const JsonPath& path, value v) override {
    const auto& key = path[0];
    if (key == "displayTimeUnit") {
      display_unit = std::string(json_string(v).value_or(""));
    } else if (key == "baseTimeNanoseconds") {
      base_ns = json_int(v).value_or(0);
    } else if (key == "schemaVersion") {
      schema_version = json_int(v).value_or(-1);
    } else if (key == "distributedInfo") {
      for (auto field : v.get_object()) {
        std::string_view k = raw_key(field);
        if (k == "rank") rank = static_cast<std::int32_t>(json_int(field.value()).value_or(-1));
        if (k == "world_size") world_size = static_cast<std::int32_t>(json_int(field.value()).value_or(-1));
      }
    } else if (key == "deviceProperties") {
      for (value device : v.get_array()) {
        std::int64_t id = -1;
        std::string name;
        for (auto field : device.get_object()) {
          std::string_view k = raw_key(field);
          if (k == "id") id = json_int(field.value()).value_or(-1);
          if (k == "name") name = std::string(json_string(field.value()).value_or(""));
        }
        if (id >= 0) device_names[id] = name;
      }
    } else {
      if (!tool_versions.empty()) tool_versions += ", ";
      tool_versions += key + " " + std::string(simdjson::to_json_string(v).value_unsafe());
    }
  }

  /// Pass 1 needs CPU ops that carry shapes or collective args, launches and GPU events.
  bool keep(const JsonPath&, std::string_view element) override {
    const auto cat = peek_string_field(element, "\"cat\"", 256);
    if (!cat) return true;
    if (is_gpu_category(*cat) || is_launch_category(*cat)) return true;
    if (*cat != "cpu_op") return false;
    const auto name = peek_string_field(element, "\"name\"", 512);
    return !name || *name == "record_param_comms" || is_gemm_op(*name) || attention_signature(*name) != nullptr ||
           has_memory_bound_rule(*name);
  }

  void batch(const JsonPath&, array events) override {
    for (value element : events) {
      object event = element.get_object();
      Event e;
      const bool has_args = read_event_header(event, e);
      if (e.ph != "X") continue;
      if (is_gpu_category(e.cat)) {
        // Decided once per trace, on its first GPU event (nanosecond_timestamps).
        if (!units_decided) {
          ns_units = nanosecond_timestamps(e.ts);
          units_decided = true;
        }
        parse_times(e, ns_units);
        if (!e.ts_ns) missing_ts(e);
        if (!e.dur.empty() && !e.dur_ns) bad_dur(e);
        ++gpu_events;
        min_gpu_ts = std::min(min_gpu_ts, *e.ts_ns);
        if (has_args) note_gpu_event(event, e);
      } else if (has_args && e.cat == "cpu_op") {
        index_op(event, event_name(event, e));
      } else if (has_args && is_launch_category(e.cat)) {
        index_launch(event, e);
      }
    }
  }

  [[noreturn]] void missing_ts(const Event& e) const {
    throw InputError({file_}, "traceEvents",
                     "a GPU event ('" + std::string(e.name) + "', cat " + std::string(e.cat) + ") has no numeric 'ts'",
                     "GPU events need ts and dur in microseconds (Chrome trace format)");
  }

  [[noreturn]] void bad_dur(const Event& e) const {
    throw InputError({file_}, "traceEvents",
                     "a GPU event ('" + std::string(e.name) + "', cat " + std::string(e.cat) + ") has 'dur' " +
                         std::string(e.dur) + ", not a number",
                     "GPU events need ts and dur in microseconds (Chrome trace format)");
  }

  RecordSink& sink_;
  const std::string& file_;
  bool saw_events_ = false;
  std::string display_unit;
  std::int64_t base_ns = 0;
  std::int64_t schema_version = -1;
  std::int32_t rank = -1;
  std::int32_t world_size = -1;
  std::map<std::int64_t, std::string> device_names;
  std::string tool_versions;
  std::int64_t min_gpu_ts = std::numeric_limits<std::int64_t>::max();
  std::uint64_t gpu_events = 0;
  bool units_decided = false;
  bool ns_units = false;
  std::int64_t first_device = -1;
  std::unordered_map<std::int64_t, OpInfo> ops;  // External id -> op
  /// The host's launch call of a GPU record (cudaLaunchKernel, cudaMemcpyAsync, ...): the indexed op that made it,
  /// and when and on which thread, where the event has a time.
  struct Launch {
    std::int64_t op = -1;  ///< External id of an indexed op; -1 = none
    bool timed = false;
    std::int64_t start_ns = 0, end_ns = 0, thread = -1;
  };
  std::unordered_map<std::int64_t, Launch> launches;  // correlation -> launch

 private:
  /// From a GPU event's args: the trace's first device, and the longest GPU record of each GEMM or attention op (see
  /// OpInfo::main_correlation).
  void note_gpu_event(object& event, const Event& e) {
    std::int64_t external = -1, correlation = -1;
    for (auto field : event.find_field_unordered("args").get_object()) {
      const std::string_view key = raw_key(field);
      if (key == "External id") external = text_int(scalar_text(field.value())).value_or(-1);
      if (key == "correlation") correlation = text_int(scalar_text(field.value())).value_or(-1);
      if (key == "device" && first_device < 0) first_device = json_int(field.value()).value_or(-1);
    }
    if (correlation < 0) return;
    if (external < 0) {
      const auto launch = launches.find(correlation);
      if (launch != launches.end()) external = launch->second.op;
    }
    const auto op = ops.find(external);
    if (op == ops.end() || (op->second.family != OpFamily::gemm && op->second.family != OpFamily::attention)) return;
    const std::int64_t duration = e.dur_ns.value_or(0);
    if (duration > op->second.main_duration_ns) {
      op->second.main_duration_ns = duration;
      op->second.main_correlation = correlation;
    }
  }

  void index_op(object& event, std::string_view name) {
    const bool comms = name == "record_param_comms";
    const AttentionSignature* attention = attention_signature(name);
    const bool gemm = is_gemm_op(name);
    // Every other op that records shapes may be a memory-bound one (op_traffic.hpp decides once its inputs are read).
    const bool other = !comms && !attention && !gemm;
    if (other && !has_memory_bound_rule(name)) return;
    std::int64_t external = -1;
    std::vector<OpTensor> inputs;
    std::vector<std::string> concrete;
    CollectiveArgs collective;
    for (auto field : event.find_field_unordered("args").get_object()) {
      std::string_view key = raw_key(field);
      value v = field.value();
      if (key == "External id") {
        external = json_int(v).value_or(-1);
      } else if (!comms && key == "Input Dims") {
        read_dims(v, inputs);
      } else if (!comms && key == "Input type") {
        read_types(v, inputs);
      } else if (attention && key == "Concrete Inputs") {
        read_concrete(v, concrete);
      } else if (comms) {
        read_collective_field(key, v, collective);
      }
    }
    if (external < 0) return;
    OpInfo info;
    if (comms) {
      if (!collective.present()) return;  // older PyTorch: record_param_comms without args
      info.family = OpFamily::collective;
      info.name = sink_.intern(collective.name);
      fill_collective(collective, info);
    } else {
      info.name = sink_.intern(name);
      if (gemm || attention) {
        info.family = gemm ? OpFamily::gemm : OpFamily::attention;
        if (const std::optional<OpCost> cost =
                gemm ? gemm_cost(name, inputs) : attention_cost(*attention, inputs, concrete)) {
          info.flops = cost->flops;
          info.bytes = cost->bytes;
          info.head_dim = cost->head_dim;
        }
      } else {
        const std::optional<double> bytes = other ? memory_bound_op_bytes(name, inputs) : std::nullopt;
        if (!bytes) return;
        info.family = OpFamily::memory_bound;
        info.bytes = *bytes;
      }
    }
    ops[external] = info;
  }

  void index_launch(object& event, const Event& e) {
    std::int64_t external = -1, correlation = -1;
    for (auto field : event.find_field_unordered("args").get_object()) {
      std::string_view key = raw_key(field);
      if (key == "External id") external = text_int(scalar_text(field.value())).value_or(-1);
      if (key == "correlation") correlation = text_int(scalar_text(field.value())).value_or(-1);
    }
    if (correlation < 0) return;
    Launch launch;
    // Kineto writes every CPU op before the GPU section, so the op index is complete here; kernels that carry their
    // own External id do not need the link.
    if (external >= 0) {
      const auto op = ops.find(external);
      if (op != ops.end()) {
        launch.op = external;
        ++op->second.launches;
      }
    }
    // Launch calls usually precede the GPU events that decide the trace's time unit: decide it the same way here.
    if (!e.ts.empty()) {
      const bool ns = units_decided ? ns_units : nanosecond_timestamps(e.ts);
      if (const std::optional<std::int64_t> start = parse_time_as_ns(e.ts, ns)) {
        const std::int64_t duration = e.dur.empty() ? 0 : parse_time_as_ns(e.dur, ns).value_or(0);
        launch.timed = true;
        launch.start_ns = *start;
        launch.end_ns = ns_sum_saturated(*start, duration);
        launch.thread = e.tid().value_or(-1);
      }
    }
    // One entry per launch that links or times a GPU record: memory grows with the trace's kernels, like its records.
    if (launch.op >= 0 || launch.timed) launches[correlation] = launch;
  }

 public:
  static void read_collective_field(std::string_view key, value v, CollectiveArgs& c) {
    if (key == "Collective name") c.name = std::string(json_string(v).value_or(""));
    if (key == "In msg nelems") c.in_nelems = json_int(v).value_or(-1);
    if (key == "Out msg nelems") c.out_nelems = json_int(v).value_or(-1);
    if (key == "dtype") c.dtype = std::string(json_string(v).value_or(""));
    if (key == "Group size") c.group_size = static_cast<std::int32_t>(json_int(v).value_or(-1));
    if (key == "Process Group Ranks") c.ranks = std::string(json_string(v).value_or(""));
  }

  void fill_collective(const CollectiveArgs& c, OpInfo& info) {
    info.collective = collective_from_op_name(c.name);
    const double element = dtype_bytes(c.dtype).value_or(kUnknown);
    if (info.collective) info.collective_bytes = collective_size(*info.collective, c, element);
    if (!c.ranks.empty()) info.group = sink_.intern(canonical_rank_list(c.ranks));
    info.group_size = c.group_size;
  }
};

/// Pass-2 handler: records.
class Emitter final : public JsonStreamHandler {
 public:
  Emitter(RecordSink& sink, Indexer& index, std::int64_t origin_ts)
      : sink_(sink), index_(index), origin_ts_(origin_ts) {}

  JsonAction action(const JsonPath& path) override {
    if (path.empty()) return JsonAction::descend;
    if (path.size() == 1 && path[0] == "traceEvents") return JsonAction::stream;
    return JsonAction::skip;
  }
  void captured(const JsonPath&, value) override {}

  /// Pass 2 needs GPU events and annotations.
  bool keep(const JsonPath&, std::string_view element) override {
    const auto cat = peek_string_field(element, "\"cat\"", 256);
    return !cat || is_gpu_category(*cat) || *cat == "user_annotation" || *cat == "gpu_user_annotation";
  }

  void batch(const JsonPath&, array events) override {
    for (value element : events) {
      object event = element.get_object();
      Event e;
      const bool has_args = read_event_header(event, e);
      if (e.ph != "X") continue;
      parse_times(e, index_.ns_units);
      if (is_gpu_category(e.cat)) {
        emit_gpu(event, e, has_args);
      } else if (e.cat == "user_annotation" || e.cat == "gpu_user_annotation") {
        emit_annotation(event, e, has_args);
      }
    }
  }

  std::uint64_t kernels = 0, annotations = 0, linked = 0;

 private:
  double seconds(std::int64_t ts) const { return ns_interval(ts, origin_ts_) * units::kNanosecond; }

  KernelClass class_of(StringId name, std::string_view text) {
    auto it = classes_.find(name);
    if (it != classes_.end()) return it->second;
    const KernelClass c = classify_kernel_name(text);
    classes_.emplace(name, c);
    return c;
  }

  void emit_gpu(object& event, const Event& e, bool has_args) {
    KernelRecord r;
    r.rank = index_.rank;
    const std::string name_text(event_name(event, e));
    r.name = sink_.intern(name_text);
    r.kind = e.cat == "kernel"       ? ActivityKind::kernel
             : e.cat == "gpu_memcpy" ? ActivityKind::memcpy
                                     : ActivityKind::memset;
    r.kernel_class = r.kind == ActivityKind::kernel ? class_of(r.name, name_text) : KernelClass::memcpy;
    r.start_s = seconds(*e.ts_ns);
    r.duration_s = e.dur_ns ? static_cast<double>(*e.dur_ns) * units::kNanosecond : 0.0;
    r.device = e.pid().value_or(-1) >= 0 ? static_cast<std::int32_t>(*e.pid()) : -1;
    r.stream = e.tid().value_or(-1);
    std::int64_t external = -1;
    CollectiveArgs collective;
    if (has_args) {
      for (auto field : event.find_field_unordered("args").get_object()) {
        std::string_view key = raw_key(field);
        value v = field.value();
        if (key == "External id") {
          external = text_int(scalar_text(v)).value_or(-1);
        } else if (key == "correlation") {
          r.correlation = text_int(scalar_text(v)).value_or(-1);
        } else if (key == "device") {
          r.device = static_cast<std::int32_t>(text_int(scalar_text(v)).value_or(r.device));
        } else if (key == "stream") {
          r.stream = text_int(scalar_text(v)).value_or(r.stream);
        } else if (key == "bytes") {
          if (auto b = json_double(v)) r.bytes = *b;
        } else if (key == "grid" || key == "block") {
          auto& dims = key == "grid" ? r.grid : r.block;
          std::size_t i = 0;
          for (value d : v.get_array())
            if (i < 3) dims[i++] = static_cast<std::uint32_t>(json_int(d).value_or(0));
        } else if (r.kernel_class == KernelClass::communication) {
          Indexer::read_collective_field(key, v, collective);
        }
      }
    }
    if (r.correlation >= 0) {
      const auto it = index_.launches.find(r.correlation);
      if (it != index_.launches.end()) {
        const Indexer::Launch& launch = it->second;
        if (external < 0) external = launch.op;
        if (launch.timed) {
          r.launch_start_s = seconds(launch.start_ns);
          r.launch_end_s = seconds(launch.end_ns);
          r.launch_thread = launch.thread;
        }
      }
    }
    OpInfo* op = nullptr;
    if (external >= 0) {
      auto it = index_.ops.find(external);
      if (it != index_.ops.end()) op = &it->second;
    }
    if (op) {
      ++linked;
      r.op = op->name;
      // Classes from names and shapes: an unknown kernel launched by a GEMM or attention op is one.
      if (r.kernel_class == KernelClass::other && r.kind == ActivityKind::kernel) {
        if (op->family == OpFamily::gemm) r.kernel_class = KernelClass::gemm;
        if (op->family == OpFamily::attention) r.kernel_class = KernelClass::attention;
      }
      const bool matches = (op->family == OpFamily::gemm && r.kernel_class == KernelClass::gemm) ||
                           (op->family == OpFamily::attention && r.kernel_class == KernelClass::attention);
      // One op may launch several kernels (a memset, the GEMM, a split-K reduction): its FLOPs and bytes go to its
      // longest kernel (pass 1), or to the first of the op's own class when the trace gives no correlation ids.
      const bool main = op->main_correlation >= 0 ? r.correlation == op->main_correlation : !op->given;
      if (matches && main && !op->given) {
        r.flops = op->flops;
        r.bytes = op->bytes;
        if (op->family == OpFamily::attention) r.attention_head_dim = op->head_dim;
        op->given = true;
      }
      // A memory-bound op's kernels share its bytes evenly (the chunks of a split tensor are equal).
      if (op->family == OpFamily::memory_bound && r.kind == ActivityKind::kernel &&
          is_memory_bound_class(r.kernel_class))
        r.bytes = op->bytes / static_cast<double>(std::max<std::uint32_t>(op->launches, 1));
    }
    if (r.kernel_class == KernelClass::communication) {
      if (collective.present()) {  // args on the kernel itself (PyTorch >= 2.4)
        OpInfo from_kernel;
        index_.fill_collective(collective, from_kernel);
        r.op = sink_.intern(collective.name);
        apply_collective(from_kernel, r);
      } else if (op && op->family == OpFamily::collective) {
        apply_collective(*op, r);
      }
      if (!r.collective) r.collective = collective_from_kernel_name(name_text);
    }
    sink_.add_kernel(r);
    ++kernels;
  }

  static void apply_collective(const OpInfo& op, KernelRecord& r) {
    r.collective = op.collective;
    r.collective_bytes = op.collective_bytes;
    r.group = op.group;
    r.group_size = op.group_size;
  }

  void emit_annotation(object& event, const Event& e, bool has_args) {
    if (!e.ts_ns) return;
    AnnotationRecord a;
    a.rank = index_.rank;
    a.name = sink_.intern(event_name(event, e));
    a.start_s = seconds(*e.ts_ns);
    a.duration_s = e.dur_ns ? static_cast<double>(*e.dur_ns) * units::kNanosecond : 0.0;
    a.stream = e.tid().value_or(-1);
    if (e.cat == "gpu_user_annotation") {
      a.device = e.pid().value_or(-1) >= 0 ? static_cast<std::int32_t>(*e.pid()) : -1;
      if (has_args)
        for (auto field : event.find_field_unordered("args").get_object())
          if (raw_key(field) == "device")
            a.device = static_cast<std::int32_t>(json_int(field.value()).value_or(a.device));
    }
    sink_.add_annotation(a);
    ++annotations;
  }

  RecordSink& sink_;
  Indexer& index_;
  std::int64_t origin_ts_;
  std::unordered_map<StringId, KernelClass> classes_;
};

class KinetoReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    const std::string file = path.string();
    Indexer index(sink, file);
    {
      auto source = ByteSource::open(path);
      JsonStreamer streamer(*source, file);
      streamer.run(index);
    }
    if (!index.saw_events_)
      throw InputError({file}, "traceEvents", "the JSON document has no top-level 'traceEvents' array",
                       "this is not a PyTorch profiler / Chrome trace; export it with prof.export_chrome_trace() or "
                       "torch.profiler.tensorboard_trace_handler");
    SourceInfo info;
    info.format = "kineto";
    info.rank = index.rank;
    info.world_size = index.world_size;
    info.tool = "PyTorch profiler (Kineto)";
    if (index.schema_version >= 0) info.tool += ", schemaVersion " + std::to_string(index.schema_version);
    if (!index.tool_versions.empty()) info.tool += ", " + index.tool_versions;
    if (auto it = index.device_names.find(index.first_device); it != index.device_names.end())
      info.gpu_name = it->second;
    else if (!index.device_names.empty())
      info.gpu_name = index.device_names.begin()->second;
    if (index.gpu_events == 0) return info;  // the caller reports an empty trace

    info.notes = index.ns_units ? "ts/dur read as nanoseconds (timestamps with 17+ integer digits)"
                                : "ts/dur read as microseconds (Chrome trace format; displayTimeUnit ignored)";
    info.time_origin_ns = index.base_ns + index.min_gpu_ts;
    info.time_origin_clock = "unix_epoch";
    if (index.base_ns != 0) info.notes += ", relative to baseTimeNanoseconds";
    info.notes += "; time origin = first GPU event";

    Emitter emitter(sink, index, index.min_gpu_ts);
    {
      auto source = ByteSource::open(path);
      JsonStreamer streamer(*source, file);
      streamer.run(emitter);
    }
    info.kernel_count = emitter.kernels;
    info.annotation_count = emitter.annotations;
    info.linked_op_count = emitter.linked;
    return info;
  }
};

}  // namespace

std::unique_ptr<TraceReader> make_kineto_reader() { return std::make_unique<KinetoReader>(); }

bool probe_kineto(const FilePreview& preview) {
  const std::string_view head = preview.head;
  const auto start = head.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || head[start] != '{') return false;
  // rocprofv3 is JSON too; its root key comes first.
  if (head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos) return false;
  return head.find("\"traceEvents\"") != std::string_view::npos ||
         head.find("\"schemaVersion\"") != std::string_view::npos ||
         head.find("\"deviceProperties\"") != std::string_view::npos ||
         head.find("\"distributedInfo\"") != std::string_view::npos;
}

}  // namespace chopsim::detail
