#pragma once
// The file formats of a run's timeline (TimelineWriter, observers.hpp, decides what is shown; an encoder writes it):
//  * json: the Chrome trace event format (timeline.json), which chrome://tracing and the Perfetto UI open;
//  * perfetto: Perfetto's own protobuf trace (timeline.pftrace), a sequence of TracePacket messages with interned
//    names, 38-41 % of the JSON's size (the quick start, Llama-3-70B on 64 H100) and faster for the UI to parse. The
//    messages and field numbers are those of Perfetto's protos (google/perfetto, protos/perfetto/trace/:
//    trace_packet.proto, track_event/track_event.proto, track_event/track_descriptor.proto,
//    track_event/counter_descriptor.proto, track_event/debug_annotation.proto, interned_data/interned_data.proto),
//    written by hand: chopsim does not link protobuf for one output file.

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/experiments/run.hpp"  // TimelineFormat

namespace chopsim::detail {

/// One argument of a slice (shown in the UI's details panel).
struct SliceArgument {
  std::string_view name;
  enum class Kind : std::uint8_t { integer, real, text } kind = Kind::integer;
  std::int64_t integer = 0;
  double real = 0.0;
  std::string_view text;

  static SliceArgument of_integer(std::string_view name, std::int64_t value) {
    return {name, Kind::integer, value, 0.0, {}};
  }
  static SliceArgument of_real(std::string_view name, double value) { return {name, Kind::real, 0, value, {}}; }
  static SliceArgument of_text(std::string_view name, std::string_view value) {
    return {name, Kind::text, 0, 0.0, value};
  }
};

/// One op on one stream of one GPU, from start_s to end_s (s).
struct SliceRecord {
  std::uint32_t rank = 0;
  std::uint32_t stream = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  std::string_view name;
  std::string_view category;
  std::span<const SliceArgument> arguments;
};

/// The counter tracks of a GPU.
enum class TimelineCounter : std::uint8_t { power, clock, temperature };

class TimelineEncoder {
 public:
  virtual ~TimelineEncoder() = default;
  /// Declares GPU `rank`'s track group (named `label`) and its streams' tracks, in order, before its first event.
  virtual void gpu(std::uint32_t rank, std::string_view label, const std::vector<std::string>& streams) = 0;
  virtual void slice(const SliceRecord& slice) = 0;
  /// `value`: W, MHz or °C from `time_s` on.
  virtual void counter(std::uint32_t rank, TimelineCounter which, double time_s, double value) = 0;
  /// Ends the file's structure (the stream is flushed and checked by the caller).
  virtual void finish() = 0;
};

[[nodiscard]] std::unique_ptr<TimelineEncoder> make_timeline_encoder(TimelineFormat format, std::ostream& out);

/// The file name of a timeline in `format`: timeline.json or timeline.pftrace.
[[nodiscard]] std::string_view timeline_file_name(TimelineFormat format);

/// Bytes per op of a GPU shown, and of the power, clock and temperature points around an op under power dynamics,
/// for the size estimate that refuses runaway timelines (TimelineWriter::limit_size).
struct TimelineBytesPerOp {
  double op = 0.0;
  double telemetry = 0.0;
};
[[nodiscard]] TimelineBytesPerOp timeline_bytes_per_op(TimelineFormat format);

}  // namespace chopsim::detail
