// timeline.pftrace (--timeline-format perfetto): a well-formed Perfetto protobuf trace that shows exactly what
// timeline.json shows. The file is read back with a protobuf wire-format reader written here from the encoding's
// specification (protobuf.dev/programming-guides/encoding) and the field numbers of Perfetto's protos
// (google/perfetto, protos/perfetto/trace/), independent of the writer's code.

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// One field of a message: its number, and its varint, its 8 fixed bytes or its length-delimited bytes.
struct Field {
  std::uint32_t number = 0;
  std::uint32_t wire_type = 0;
  std::uint64_t varint = 0;
  std::string_view bytes;
};

/// The fields of a protobuf message, in order; fails the test on a malformed one.
std::vector<Field> fields_of(std::string_view message) {
  std::vector<Field> fields;
  std::size_t at = 0;
  auto read_varint = [&](std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= message.size()) return false;
      const auto byte = static_cast<unsigned char>(message[at++]);
      value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  };
  while (at < message.size()) {
    std::uint64_t key = 0;
    if (!read_varint(key)) {
      ADD_FAILURE() << "truncated key";
      return {};
    }
    Field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire_type = static_cast<std::uint32_t>(key & 7);
    if (f.wire_type == 0) {
      if (!read_varint(f.varint)) ADD_FAILURE() << "truncated varint";
    } else if (f.wire_type == 1) {
      if (at + 8 > message.size()) ADD_FAILURE() << "truncated fixed64";
      f.bytes = message.substr(at, 8);
      at += 8;
    } else if (f.wire_type == 2) {
      std::uint64_t length = 0;
      if (!read_varint(length) || at + length > message.size()) {
        ADD_FAILURE() << "truncated length-delimited field " << f.number;
        return {};
      }
      f.bytes = message.substr(at, length);
      at += length;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire_type;
      return {};
    }
    fields.push_back(f);
  }
  return fields;
}

double as_double(const Field& f) {
  std::uint64_t bits = 0;
  for (int i = 7; i >= 0; --i) bits = (bits << 8) | static_cast<unsigned char>(f.bytes[static_cast<std::size_t>(i)]);
  return std::bit_cast<double>(bits);
}

/// A slice or a counter point on a named track (its GPU group's name / its own name).
struct Point {
  double time_ns = 0.0;
  double end_ns = 0.0;  ///< slices
  std::string name;     ///< slices: the op's name
  double value = 0.0;   ///< counters
};
using Tracks = std::map<std::pair<std::string, std::string>, std::vector<Point>>;

struct Decoded {
  Tracks slices, counters;
  std::size_t packets = 0;
  std::uint64_t first_flags = 0;
  std::size_t unresolved = 0;          ///< interned ids used before their definition, unknown tracks, unbalanced slices
  std::size_t without_state_flag = 0;  ///< packets with interned ids but without SEQ_NEEDS_INCREMENTAL_STATE
  std::set<std::uint64_t> sequences;
  std::size_t counter_tracks_without_descriptor = 0;
  std::vector<std::pair<std::int64_t, std::string>> gpu_groups;  ///< the root's children: (sibling rank, name)
};

Decoded decode_pftrace(const std::string& file) {
  Decoded out;
  struct Track {
    std::string name;
    std::uint64_t parent = 0;
    bool counter = false;
    std::int64_t order = 0;  ///< sibling_order_rank
  };
  std::map<std::uint64_t, Track> tracks;
  std::map<std::uint64_t, std::string> names;
  std::map<std::uint64_t, std::pair<double, std::string>> open;  // track -> (begin ns, name)
  for (const Field& trace_field : fields_of(file)) {
    EXPECT_EQ(trace_field.number, 1u) << "Trace holds only packets (field 1)";
    ++out.packets;
    std::uint64_t timestamp = 0, flags = 0;
    std::string_view event, descriptor, interned;
    for (const Field& f : fields_of(trace_field.bytes)) {
      if (f.number == 8) timestamp = f.varint;
      if (f.number == 10) out.sequences.insert(f.varint);
      if (f.number == 13) flags = f.varint;
      if (f.number == 11) event = f.bytes;
      if (f.number == 12) interned = f.bytes;
      if (f.number == 60) descriptor = f.bytes;
    }
    if (out.packets == 1) out.first_flags = flags;
    for (const Field& f : fields_of(interned))
      if (f.number == 2) {  // InternedData.event_names: EventName {iid = 1, name = 2}
        std::uint64_t iid = 0;
        std::string name;
        for (const Field& g : fields_of(f.bytes)) {
          if (g.number == 1) iid = g.varint;
          if (g.number == 2) name = g.bytes;
        }
        names[iid] = name;
      }
    if (!descriptor.empty()) {
      std::uint64_t uuid = 0;
      Track track;
      for (const Field& f : fields_of(descriptor)) {
        if (f.number == 1) uuid = f.varint;
        if (f.number == 2) track.name = f.bytes;
        if (f.number == 5) track.parent = f.varint;
        if (f.number == 8) track.counter = true;
        if (f.number == 12) track.order = static_cast<std::int64_t>(f.varint);
      }
      tracks[uuid] = track;
      if (track.parent != 0 && tracks.count(track.parent) && tracks[track.parent].parent == 0)
        out.gpu_groups.emplace_back(track.order, track.name);
    }
    if (event.empty()) continue;
    std::uint64_t type = 0, track_uuid = 0, name_iid = 0;
    double value = std::nan("");
    for (const Field& f : fields_of(event)) {
      if (f.number == 9) type = f.varint;
      if (f.number == 11) track_uuid = f.varint;
      if (f.number == 10) name_iid = f.varint;
      if (f.number == 44) value = as_double(f);
    }
    const auto track = tracks.find(track_uuid);
    if (track == tracks.end() || !tracks.count(track->second.parent)) {
      ++out.unresolved;
      continue;
    }
    const std::pair<std::string, std::string> key{tracks[track->second.parent].name, track->second.name};
    const auto t = static_cast<double>(timestamp);
    if (type == 1) {  // TYPE_SLICE_BEGIN
      if (!names.count(name_iid) || open.count(track_uuid)) ++out.unresolved;
      if ((flags & 2) == 0) ++out.without_state_flag;
      open[track_uuid] = {t, names[name_iid]};
    } else if (type == 2) {  // TYPE_SLICE_END
      const auto begin = open.find(track_uuid);
      if (begin == open.end() || t < begin->second.first) {
        ++out.unresolved;
        continue;
      }
      out.slices[key].push_back({begin->second.first, t, begin->second.second, 0.0});
      open.erase(begin);
    } else if (type == 4) {  // TYPE_COUNTER
      if (!track->second.counter) ++out.counter_tracks_without_descriptor;
      out.counters[key].push_back({t, 0.0, "", value});
    } else {
      ++out.unresolved;
    }
  }
  out.unresolved += open.size();
  return out;
}

/// timeline.json's complete and counter events on the same named tracks (process name / thread or counter name),
/// times in ns.
std::pair<Tracks, Tracks> read_json_timeline(const std::string& text) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.parse(text);
  std::map<std::int64_t, std::string> process;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread;
  Tracks slices, counters;
  for (const simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"].get_string();
    const std::int64_t pid = e["pid"].get_int64();
    if (ph == "M") {
      const std::string_view kind = e["name"].get_string();
      if (kind == "process_name") process[pid] = std::string(e["args"]["name"].get_string().value());
      if (kind == "thread_name")
        thread[{pid, e["tid"].get_int64()}] = std::string(e["args"]["name"].get_string().value());
    } else if (ph == "X") {
      const double ts = e["ts"].get_double().value() * 1e3, dur = e["dur"].get_double().value() * 1e3;
      slices[{process[pid], thread[{pid, e["tid"].get_int64()}]}].push_back(
          {ts, ts + dur, std::string(e["name"].get_string().value()), 0.0});
    } else if (ph == "C") {
      double value = 0.0;
      for (const auto field : e["args"].get_object()) value = field.value.get_double();
      counters[{process[pid], std::string(e["name"].get_string().value())}].push_back(
          {e["ts"].get_double().value() * 1e3, 0.0, "", value});
    }
  }
  return {slices, counters};
}

TEST(PerfettoTimeline, ShowsWhatTheJsonTimelineShowsAsAWellFormedTrace) {
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-fsdp.yaml";  // power dynamics on: counters too
  const RunSpec run = load_run_config(config, default_search_path(config), registries);
  const auto dir = test::process_temp_dir() / "perfetto_timeline";
  std::filesystem::remove_all(dir);
  RunOptions json_options;
  json_options.output_dir = dir / "json";
  RunOptions perfetto_options;
  perfetto_options.output_dir = dir / "perfetto";
  perfetto_options.timeline_format = TimelineFormat::perfetto;
  (void)run_simulation(run, registries, json_options);
  const RunReport report = run_simulation(run, registries, perfetto_options);
  EXPECT_FALSE(std::filesystem::exists(dir / "perfetto" / "timeline.json"));
  ASSERT_TRUE(
      std::count(report.files_written.begin(), report.files_written.end(), dir / "perfetto" / "timeline.pftrace") == 1);

  const std::string pftrace = read_bytes(dir / "perfetto" / "timeline.pftrace");
  const std::string json = read_bytes(dir / "json" / "timeline.json");
  const Decoded decoded = decode_pftrace(pftrace);
  // Perfetto's incremental-state protocol: the first packet clears the state, every packet that refers to interned
  // names says it needs it, all on one sequence.
  EXPECT_EQ(decoded.first_flags, 1u);
  EXPECT_EQ(decoded.without_state_flag, 0u);
  EXPECT_EQ(decoded.sequences, std::set<std::uint64_t>{1});
  EXPECT_EQ(decoded.unresolved, 0u);
  EXPECT_EQ(decoded.counter_tracks_without_descriptor, 0u);
  // The GPUs hang under one root track, ranked by their GPU index (the label starts "GPU <rank> ").
  ASSERT_EQ(decoded.gpu_groups.size(), 8u);
  for (const auto& [order, name] : decoded.gpu_groups)
    EXPECT_EQ(name.rfind("GPU " + std::to_string(order) + " ", 0), 0u) << name;

  const auto [json_slices, json_counters] = read_json_timeline(json);
  ASSERT_EQ(decoded.slices.size(), json_slices.size()) << "tracks with slices";
  std::size_t slices = 0;
  for (const auto& [track, expected] : json_slices) {
    const auto found = decoded.slices.find(track);
    ASSERT_NE(found, decoded.slices.end()) << track.first << " / " << track.second;
    ASSERT_EQ(found->second.size(), expected.size()) << track.first << " / " << track.second;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const Point& a = found->second[i];
      const Point& b = expected[i];
      EXPECT_EQ(a.name, b.name);
      // JSON holds microseconds with up to 17 digits, the protobuf whole nanoseconds: within 1 ns.
      EXPECT_NEAR(a.time_ns, b.time_ns, 1.0) << a.name;
      EXPECT_NEAR(a.end_ns, b.end_ns, 1.0) << a.name;
    }
    slices += expected.size();
  }
  EXPECT_GT(slices, 7000u);  // the quick start's 7,552 ops
  ASSERT_EQ(decoded.counters.size(), json_counters.size()) << "counter tracks";
  for (const auto& [track, expected] : json_counters) {
    const auto found = decoded.counters.find(track);
    ASSERT_NE(found, decoded.counters.end()) << track.first << " / " << track.second;
    ASSERT_EQ(found->second.size(), expected.size()) << track.second;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(found->second[i].time_ns, expected[i].time_ns, 1.0);
      EXPECT_EQ(found->second[i].value, expected[i].value) << track.second;
    }
  }
  // The format's point: the same content in well under half the bytes (measured 38 %).
  EXPECT_LT(static_cast<double>(pftrace.size()), 0.5 * static_cast<double>(json.size()));
}

}  // namespace
}  // namespace chopsim
