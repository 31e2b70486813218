#pragma once
// Kineto's Chrome-trace events as the Kineto reader's two passes read them (kineto_reader.cpp; private to
// chopsim_traces): an event's header fields as raw text, and its args' input shapes, types and collective fields.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/traces/records.hpp"
#include "op_traffic.hpp"
#include "reader_util.hpp"

namespace chopsim::detail::kineto {

/// Collective args as record_param_comms (and, in newer PyTorch, the NCCL kernel itself) records them.
struct CollectiveArgs {
  std::string name;
  std::int64_t in_nelems = -1;
  std::int64_t out_nelems = -1;
  std::string dtype;
  std::int32_t group_size = -1;
  std::string ranks;
  bool present() const { return !name.empty(); }
};

/// The collective's size in bytes by CollectiveKind's convention (an all-gather's is its gathered output), or
/// kUnknown without element counts.
[[nodiscard]] double collective_size(CollectiveKind kind, const CollectiveArgs& args, double element_bytes);

/// Kernel classes whose time is set by the bytes they move.
[[nodiscard]] bool is_memory_bound_class(KernelClass c);

/// The fields of one event that the passes use, as raw text (views into the batch, dead with it). Only what a pass
/// needs is converted: most events are CPU ops and flows that one of the two passes ignores.
struct Event {
  std::string_view ph, cat, name;
  std::string_view ts, dur;  // raw number tokens: the unit is decided per trace
  std::string_view pid_text, tid_text;
  bool name_escaped = false;  // the name has backslash escapes: read it with get_string() when needed
  std::optional<std::int64_t> ts_ns, dur_ns;
  std::optional<std::int64_t> pid() const { return text_int(pid_text); }
  std::optional<std::int64_t> tid() const { return text_int(tid_text); }
};

/// Chrome-trace ts and dur are microseconds (displayTimeUnit only sets the viewer's unit). A trace whose timestamps
/// have 17 or more integer digits was written in nanoseconds: as microseconds since the epoch they would lie after
/// the year 5000.
[[nodiscard]] inline bool nanosecond_timestamps(std::string_view ts) { return integer_digits(ts) >= 17; }

inline void parse_times(Event& e, bool ns_units) {
  if (!e.ts.empty()) e.ts_ns = parse_time_as_ns(e.ts, ns_units);
  if (!e.dur.empty()) e.dur_ns = parse_time_as_ns(e.dur, ns_units);
}

/// The value of a top-level string field of an event, read from its raw text: Kineto writes "ph", "cat" and "name"
/// first, so only the first `window` bytes are searched. nullopt if not found there (the event is then parsed in
/// full).
[[nodiscard]] std::optional<std::string_view> peek_string_field(std::string_view element, std::string_view quoted_key,
                                                                std::size_t window);

[[nodiscard]] inline bool is_gpu_category(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}
[[nodiscard]] inline bool is_launch_category(std::string_view cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver";
}

/// Reads ph, cat, name, pid, tid, ts, dur as text; leaves args unread (returns true if the event has args).
bool read_event_header(simdjson::ondemand::object& event, Event& out);

/// The event's name unescaped (only names with backslashes need the second look-up).
[[nodiscard]] std::string_view event_name(simdjson::ondemand::object& event, const Event& e);

// "Input Dims" and "Input type" are parallel lists (one entry per op input, in either order in the args): both
// fill inputs[i] by position.
void read_dims(simdjson::ondemand::value v, std::vector<OpTensor>& inputs);
void read_types(simdjson::ondemand::value v, std::vector<OpTensor>& inputs);
/// "Concrete Inputs": one text per input (scalars as written, "" for tensors).
void read_concrete(simdjson::ondemand::value v, std::vector<std::string>& concrete);

}  // namespace chopsim::detail::kineto
