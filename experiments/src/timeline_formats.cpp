#include "timeline_formats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"

namespace chopsim::detail {

namespace {

constexpr std::string_view kCounterNames[] = {"power (W)", "clock (MHz)", "temperature (°C)"};

// ---------------------------------------------------------------------------------------------
// json: the Chrome trace event format. One process per GPU (pid = its rank), one thread per stream (tid = its
// index), one complete event ("X") per op, counter events ("C") for power, clock and temperature.

class JsonTimelineEncoder final : public TimelineEncoder {
 public:
  explicit JsonTimelineEncoder(std::ostream& out) : out_(out), json_(out, 0) {
    json_.begin_object();
    json_.field("displayTimeUnit", "ns");
    json_.key("traceEvents").begin_array();
  }

  void gpu(std::uint32_t rank, std::string_view label, const std::vector<std::string>& streams) override {
    json_.begin_object().field("name", "process_name").field("ph", "M").field("pid", rank);
    json_.key("args").begin_object().field("name", label).end_object().end_object();
    json_.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", rank);
    json_.key("args").begin_object().field("sort_index", rank).end_object().end_object();
    for (std::size_t s = 0; s < streams.size(); ++s) {
      json_.begin_object()
          .field("name", "thread_name")
          .field("ph", "M")
          .field("pid", rank)
          .field("tid", static_cast<int>(s));
      json_.key("args").begin_object().field("name", streams[s]).end_object().end_object();
    }
  }

  void slice(const SliceRecord& slice) override {
    json_.begin_object();
    json_.field("name", slice.name);
    json_.field("cat", slice.category);
    json_.field("ph", "X");
    json_.field("ts", slice.start_s * 1e6);  // Chrome traces count microseconds
    json_.field("dur", (slice.end_s - slice.start_s) * 1e6);
    json_.field("pid", static_cast<std::uint64_t>(slice.rank));
    json_.field("tid", static_cast<std::uint64_t>(slice.stream));
    json_.key("args").begin_object();
    for (const SliceArgument& a : slice.arguments) {
      json_.key(a.name);
      switch (a.kind) {
        case SliceArgument::Kind::integer:
          json_.value(a.integer);
          break;
        case SliceArgument::Kind::real:
          json_.value(a.real);
          break;
        case SliceArgument::Kind::text:
          json_.value(a.text);
          break;
      }
    }
    json_.end_object();
    json_.end_object();
  }

  void counter(std::uint32_t rank, TimelineCounter which, double time_s, double value) override {
    static constexpr const char* kUnits[] = {"W", "MHz", "C"};
    const auto index = static_cast<std::size_t>(which);
    json_.begin_object();
    json_.field("name", kCounterNames[index]);
    json_.field("ph", "C");
    json_.field("ts", time_s * 1e6);
    json_.field("pid", static_cast<std::uint64_t>(rank));
    json_.key("args").begin_object().field(kUnits[index], value).end_object();
    json_.end_object();
  }

  void finish() override {
    json_.end_array();
    json_.end_object();
    json_.flush();
    out_ << '\n';
  }

 private:
  std::ostream& out_;
  JsonWriter json_;
};

// ---------------------------------------------------------------------------------------------
// perfetto: protobuf. Wire format (protobuf.dev/programming-guides/encoding): a field is its key
// (field number << 3 | wire type) as a varint, then a varint (type 0), 8 little-endian bytes (type 1: double, fixed64)
// or a varint length and that many bytes (type 2: strings and nested messages).

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

/// One message under construction.
class ProtoMessage {
 public:
  void clear() { bytes_.clear(); }
  [[nodiscard]] const std::string& bytes() const { return bytes_; }

  void add_varint(std::uint32_t field, std::uint64_t value) {
    key(field, kVarint);
    varint(value);
  }
  void add_int(std::uint32_t field, std::int64_t value) { add_varint(field, static_cast<std::uint64_t>(value)); }
  void add_double(std::uint32_t field, double value) {
    key(field, kFixed64);
    auto bits = std::bit_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i, bits >>= 8) bytes_.push_back(static_cast<char>(bits & 0xFF));
  }
  void add_bytes(std::uint32_t field, std::string_view value) {
    key(field, kLengthDelimited);
    varint(value.size());
    bytes_.append(value);
  }
  void add_message(std::uint32_t field, const ProtoMessage& message) { add_bytes(field, message.bytes_); }

 private:
  void key(std::uint32_t field, WireType type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      bytes_.push_back(static_cast<char>((value & 0x7F) | 0x80));
      value >>= 7;
    }
    bytes_.push_back(static_cast<char>(value));
  }

  std::string bytes_;
};

// Field numbers (Perfetto's protos, named as there).
namespace trace {
constexpr std::uint32_t packet = 1;  // Trace.packet
}
namespace packet {
constexpr std::uint32_t timestamp = 8;
constexpr std::uint32_t trusted_packet_sequence_id = 10;
constexpr std::uint32_t track_event = 11;
constexpr std::uint32_t interned_data = 12;
constexpr std::uint32_t sequence_flags = 13;
constexpr std::uint32_t track_descriptor = 60;
constexpr std::uint64_t kSeqIncrementalStateCleared = 1;
constexpr std::uint64_t kSeqNeedsIncrementalState = 2;
}  // namespace packet
namespace track_descriptor {
constexpr std::uint32_t uuid = 1;
constexpr std::uint32_t name = 2;
constexpr std::uint32_t parent_uuid = 5;
constexpr std::uint32_t counter = 8;
constexpr std::uint32_t child_ordering = 11;
constexpr std::uint32_t sibling_order_rank = 12;
constexpr std::uint64_t kExplicitOrder = 3;  // ChildTracksOrdering.EXPLICIT: by sibling_order_rank
}  // namespace track_descriptor
namespace counter_descriptor {
constexpr std::uint32_t unit_name = 6;
}
namespace track_event {
constexpr std::uint32_t category_iids = 3;
constexpr std::uint32_t debug_annotations = 4;
constexpr std::uint32_t type = 9;
constexpr std::uint32_t name_iid = 10;
constexpr std::uint32_t track_uuid = 11;
constexpr std::uint32_t double_counter_value = 44;
constexpr std::uint64_t kSliceBegin = 1;
constexpr std::uint64_t kSliceEnd = 2;
constexpr std::uint64_t kCounter = 4;
}  // namespace track_event
namespace debug_annotation {
constexpr std::uint32_t name_iid = 1;
constexpr std::uint32_t int_value = 4;
constexpr std::uint32_t double_value = 5;
constexpr std::uint32_t string_value = 6;
}  // namespace debug_annotation
namespace interned_data {
constexpr std::uint32_t event_categories = 1;
constexpr std::uint32_t event_names = 2;
constexpr std::uint32_t debug_annotation_names = 3;
// EventCategory, EventName and DebugAnnotationName alike:
constexpr std::uint32_t iid = 1;
constexpr std::uint32_t name = 2;
}  // namespace interned_data

/// The one packet sequence chopsim writes (any nonzero id).
constexpr std::uint64_t kSequenceId = 1;

/// Track uuids: the root that orders the GPUs, a GPU's group, its streams and its counters (nonzero, unique while a
/// GPU has fewer than 2^16 streams).
constexpr std::uint64_t kRootTrack = 1;
std::uint64_t gpu_track(std::uint32_t rank) { return (static_cast<std::uint64_t>(rank) + 1) << 20; }
std::uint64_t stream_track(std::uint32_t rank, std::uint32_t stream) { return gpu_track(rank) + 1 + stream; }
std::uint64_t counter_track(std::uint32_t rank, TimelineCounter which) {
  return gpu_track(rank) + (1u << 16) + static_cast<std::uint64_t>(which);
}

/// Perfetto's TrackEvent protobuf: a track per GPU with a child track per stream and per counter, a begin and an end
/// event per op, names, categories and argument names interned (defined once in the sequence's incremental state,
/// then referred to by number).
class PerfettoTimelineEncoder final : public TimelineEncoder {
 public:
  explicit PerfettoTimelineEncoder(std::ostream& out) : out_(out) {
    // The first packet clears the sequence's incremental state, so interned ids start afresh.
    packet_.clear();
    packet_.add_varint(packet::trusted_packet_sequence_id, kSequenceId);
    packet_.add_varint(packet::sequence_flags, packet::kSeqIncrementalStateCleared);
    emit();
    // One root track holds the GPUs in rank order (tracks without a parent have no defined order in the UI, and
    // by name "GPU 16" would come before "GPU 4").
    ProtoMessage root;
    root.add_varint(track_descriptor::uuid, kRootTrack);
    root.add_bytes(track_descriptor::name, "GPUs");
    root.add_varint(track_descriptor::child_ordering, track_descriptor::kExplicitOrder);
    descriptor(root);
  }

  void gpu(std::uint32_t rank, std::string_view label, const std::vector<std::string>& streams) override {
    ProtoMessage track;
    track.add_varint(track_descriptor::uuid, gpu_track(rank));
    track.add_varint(track_descriptor::parent_uuid, kRootTrack);
    track.add_bytes(track_descriptor::name, label);
    track.add_varint(track_descriptor::child_ordering, track_descriptor::kExplicitOrder);
    track.add_int(track_descriptor::sibling_order_rank, rank);
    descriptor(track);
    for (std::size_t s = 0; s < streams.size(); ++s) {
      track.clear();
      track.add_varint(track_descriptor::uuid, stream_track(rank, static_cast<std::uint32_t>(s)));
      track.add_varint(track_descriptor::parent_uuid, gpu_track(rank));
      track.add_bytes(track_descriptor::name, streams[s]);
      track.add_int(track_descriptor::sibling_order_rank, static_cast<std::int64_t>(s));
      descriptor(track);
    }
    static constexpr std::string_view kUnits[] = {"W", "MHz", "°C"};
    for (std::size_t c = 0; c < std::size(kCounterNames); ++c) {
      track.clear();
      track.add_varint(track_descriptor::uuid, counter_track(rank, static_cast<TimelineCounter>(c)));
      track.add_varint(track_descriptor::parent_uuid, gpu_track(rank));
      track.add_bytes(track_descriptor::name, kCounterNames[c]);
      track.add_int(track_descriptor::sibling_order_rank, static_cast<std::int64_t>(streams.size() + c));
      ProtoMessage unit;
      unit.add_bytes(counter_descriptor::unit_name, kUnits[c]);
      track.add_message(track_descriptor::counter, unit);
      descriptor(track);
    }
  }

  void slice(const SliceRecord& slice) override {
    interned_.clear();
    const std::uint64_t name = intern(names_, interned_data::event_names, slice.name);
    const std::uint64_t category = intern(categories_, interned_data::event_categories, slice.category);
    event_.clear();
    event_.add_varint(track_event::type, track_event::kSliceBegin);
    event_.add_varint(track_event::track_uuid, stream_track(slice.rank, slice.stream));
    event_.add_varint(track_event::name_iid, name);
    event_.add_varint(track_event::category_iids, category);
    for (const SliceArgument& a : slice.arguments) {
      annotation_.clear();
      annotation_.add_varint(debug_annotation::name_iid,
                             intern(argument_names_, interned_data::debug_annotation_names, a.name));
      switch (a.kind) {
        case SliceArgument::Kind::integer:
          annotation_.add_int(debug_annotation::int_value, a.integer);
          break;
        case SliceArgument::Kind::real:
          // FLOPs and bytes are whole numbers: a varint of 4-7 bytes instead of a double's 8 (exact below 2^53).
          if (a.real == std::floor(a.real) && std::abs(a.real) < 9007199254740992.0)
            annotation_.add_int(debug_annotation::int_value, static_cast<std::int64_t>(a.real));
          else
            annotation_.add_double(debug_annotation::double_value, a.real);
          break;
        case SliceArgument::Kind::text:
          annotation_.add_bytes(debug_annotation::string_value, a.text);
          break;
      }
      event_.add_message(track_event::debug_annotations, annotation_);
    }
    timed_event(slice.start_s, true, interned_.bytes().empty() ? nullptr : &interned_);
    event_.clear();
    event_.add_varint(track_event::type, track_event::kSliceEnd);
    event_.add_varint(track_event::track_uuid, stream_track(slice.rank, slice.stream));
    timed_event(slice.end_s, false, nullptr);
  }

  void counter(std::uint32_t rank, TimelineCounter which, double time_s, double value) override {
    event_.clear();
    event_.add_varint(track_event::type, track_event::kCounter);
    event_.add_varint(track_event::track_uuid, counter_track(rank, which));
    event_.add_double(track_event::double_counter_value, value);
    timed_event(time_s, false, nullptr);
  }

  void finish() override {}

 private:
  /// Strings by their text, looked up without building a std::string (C++20 heterogeneous lookup).
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using InternTable = std::unordered_map<std::string, std::uint64_t, TextHash, std::equal_to<>>;

  /// The iid of `text` among `table`'s, defining it in interned_ (for the next packet) the first time.
  std::uint64_t intern(InternTable& table, std::uint32_t field, std::string_view text) {
    if (const auto found = table.find(text); found != table.end()) return found->second;
    const std::uint64_t iid = table.size() + 1;
    table.emplace(std::string(text), iid);
    entry_.clear();
    entry_.add_varint(interned_data::iid, iid);
    entry_.add_bytes(interned_data::name, text);
    interned_.add_message(field, entry_);
    return iid;
  }

  void descriptor(const ProtoMessage& track) {
    packet_.clear();
    packet_.add_varint(packet::trusted_packet_sequence_id, kSequenceId);
    packet_.add_message(packet::track_descriptor, track);
    emit();
  }

  /// A packet of event_ at `time_s` (stored in ns), with `interned` definitions when not null. `uses_interned`: the
  /// event refers to interned names (the packet then says it needs the sequence's incremental state).
  void timed_event(double time_s, bool uses_interned, const ProtoMessage* interned) {
    packet_.clear();
    packet_.add_varint(packet::timestamp, static_cast<std::uint64_t>(std::llround(std::max(time_s, 0.0) * 1e9)));
    packet_.add_varint(packet::trusted_packet_sequence_id, kSequenceId);
    if (uses_interned) packet_.add_varint(packet::sequence_flags, packet::kSeqNeedsIncrementalState);
    if (interned != nullptr) packet_.add_message(packet::interned_data, *interned);
    packet_.add_message(packet::track_event, event_);
    emit();
  }

  void emit() {
    framed_.clear();  // Trace.packet: key and length, then the packet
    framed_.add_message(trace::packet, packet_);
    out_.write(framed_.bytes().data(), static_cast<std::streamsize>(framed_.bytes().size()));
  }

  std::ostream& out_;
  // Scratch messages, reused from packet to packet.
  ProtoMessage packet_, event_, annotation_, interned_, entry_, framed_;
  InternTable names_, categories_, argument_names_;
};

}  // namespace

std::unique_ptr<TimelineEncoder> make_timeline_encoder(TimelineFormat format, std::ostream& out) {
  if (format == TimelineFormat::perfetto) return std::make_unique<PerfettoTimelineEncoder>(out);
  return std::make_unique<JsonTimelineEncoder>(out);
}

std::string_view timeline_file_name(TimelineFormat format) {
  return format == TimelineFormat::perfetto ? "timeline.pftrace" : "timeline.json";
}

TimelineBytesPerOp timeline_bytes_per_op(TimelineFormat format) {
  // json: an op's complete event averaged 235 bytes, and under power dynamics the power, clock and temperature points
  // written around it another 2.1 counter events of 92 bytes (Llama-3-70B on 64 H100: 1.49 M ops, 3.08 M counter
  // points, 643 MB).
  if (format == TimelineFormat::json) return {240.0, 195.0};
  // perfetto: an op's begin and end packets averaged 110 bytes, a counter packet 27 (the same run: 51.7 MB; the
  // quick start, with 3.1 counter points per op, 1.48 MB): rounded up, as the estimate guards a limit.
  return {120.0, 75.0};
}

}  // namespace chopsim::detail
