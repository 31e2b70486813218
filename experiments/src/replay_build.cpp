// Measured GPU records -> one program per rank (docs/replay.md "From records to ops").
//
// * Streams: a rank's records grouped by (device, stream) and sorted by start: stream order is a dependency.
// * Host gaps: a record that starts after its stream was ready (the previous record's end, or time 0 for the first)
//   waits for a delay op of the gap: the time the host took to launch it (Python, launch calls, data loading,
//   synchronisation) is kept as measured.
// * Cross-stream dependencies: when a kernel of another stream of the rank ends within the dependency window before
//   the record starts, and after the record's stream was ready, the record waited for it (cudaStreamWaitEvent,
//   NCCL streams joining the compute stream): the delay after that kernel's end (the event latency) depends on it.
// * Collectives: communication records of one process group are matched across its members by order (the n-th of
//   each member); a group whose members are not all in the store, or whose members disagree on the count or kinds,
//   keeps every record's measured time alone (a one-member group). Matched members meet in the replay, so the
//   collective ends for all at the last arrival plus its transfer time: the shortest of the members' measured
//   durations (the last to arrive waited least), or the collective model's time when re-simulated.
// * Stream slots: the engine matches a collective's members by stream index (docs/design.md), so the streams that
//   carry matched collectives come first in every rank's program, in one order for all ranks (by the groups they
//   carry and the first collective on them); a group whose members would meet on different slots is replayed alone.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/records.hpp"
#include "replay_internal.hpp"

namespace chopsim::replay_detail {

namespace {

constexpr std::int32_t kNone = -1;

struct StreamKey {
  std::int32_t device = 0;
  std::int64_t stream = 0;
  auto operator<=>(const StreamKey&) const = default;
};

struct RankRecords {
  std::map<StreamKey, std::vector<std::size_t>> streams;  ///< record indices, sorted by (start, end)
};

/// How one communication record is replayed.
struct Communication {
  std::int32_t group = kNone;  ///< matched group index into `groups`, or kNone (alone)
  std::size_t sequence = 0;    ///< its position in the group's sequence on its rank
};

bool known(double value) { return std::isfinite(value); }

std::string group_text(const std::vector<int>& members) {
  std::string text = "[";
  for (std::size_t i = 0; i < members.size(); ++i) text += (i ? ", " : "") + std::to_string(members[i]);
  return text + "]";
}

}  // namespace

ReplayWorkload build_replay_workload(const MeasuredTrace& trace, const BuildOptions& options) {
  const std::vector<MeasuredRecord>& records = trace.records;
  if (records.empty()) throw ModelError("replay: no records to build a workload from");
  ReplayWorkload out;

  // ---- ranks and streams -------------------------------------------------------------------------------------
  std::map<int, RankRecords> ranks;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const MeasuredRecord& m = records[i];
    ranks[m.rank].streams[{m.device, m.stream}].push_back(i);
  }
  const auto by_time = [&](std::size_t a, std::size_t b) {
    return std::tie(records[a].start_s, records[a].end_s, a) < std::tie(records[b].start_s, records[b].end_s, b);
  };
  for (auto& [rank, r] : ranks)
    for (auto& [key, list] : r.streams) std::sort(list.begin(), list.end(), by_time);
  for (const auto& [rank, r] : ranks) out.ranks.push_back(rank);
  const int world = out.ranks.back() + 1;
  const std::set<int> present(out.ranks.begin(), out.ranks.end());

  // ---- collectives: matched across ranks by group and order ----------------------------------------------------
  std::vector<Communication> communication(records.size());
  // Per group (its member list), per member: the member's communication records of that group in start order.
  std::map<std::vector<int>, std::map<int, std::vector<std::size_t>>> by_group;
  bool assumed_world = false;
  for (const auto& [rank, r] : ranks)
    for (const auto& [key, list] : r.streams)
      for (const std::size_t i : list) {
        const MeasuredRecord& k = records[i];
        if (k.kernel_class != KernelClass::communication) continue;
        std::vector<int> members = process_group_ranks(trace.names.at(k.group));
        if (members.empty() && options.whole_world) {
          for (int m = 0; m < world; ++m) members.push_back(m);
          assumed_world = true;
        }
        std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        if (members.size() < 2) continue;
        by_group[members][rank].push_back(i);
      }
  std::vector<std::vector<int>> matched;  // group index -> members
  for (auto& [members, per_member] : by_group) {
    for (auto& [rank, list] : per_member) std::sort(list.begin(), list.end(), by_time);
    std::string problem;
    if (!std::includes(present.begin(), present.end(), members.begin(), members.end())) {
      problem = "ranks of the group are not in the store";
    } else if (per_member.size() != members.size()) {
      problem = "some members have none of its collectives";
    } else {
      const auto& first = per_member.begin()->second;
      for (const auto& [rank, list] : per_member) {
        if (list.size() != first.size()) {
          problem = "rank " + std::to_string(rank) + " has " + std::to_string(list.size()) +
                    " of its collectives, rank " + std::to_string(per_member.begin()->first) + " " +
                    std::to_string(first.size());
          break;
        }
        for (std::size_t n = 0; n < list.size() && problem.empty(); ++n) {
          const MeasuredRecord& a = records[first[n]];
          const MeasuredRecord& b = records[list[n]];
          const bool bytes_differ = known(a.collective_bytes) && known(b.collective_bytes) &&
                                    std::abs(a.collective_bytes - b.collective_bytes) >
                                        1e-9 * std::max(a.collective_bytes, b.collective_bytes);
          if (a.collective != b.collective || bytes_differ)
            problem = "collective " + std::to_string(n) + " differs between ranks " +
                      std::to_string(per_member.begin()->first) + " and " + std::to_string(rank);
        }
      }
    }
    if (!problem.empty()) {
      out.notes.push_back("collectives of group " + group_text(members) +
                          " keep their measured times alone: " + problem);
      continue;
    }
    const auto index = static_cast<std::int32_t>(matched.size());
    matched.push_back(members);
    for (const auto& [rank, list] : per_member)
      for (std::size_t n = 0; n < list.size(); ++n) communication[list[n]] = {index, n};
  }

  // ---- stream slots ----------------------------------------------------------------------------------------------
  // A stream carrying matched collectives is keyed by (the groups on it, the first collective of its smallest group):
  // equal keys on all members, in one global order, put a group's collectives on one stream index everywhere.
  using SlotKey = std::pair<std::vector<std::int32_t>, std::size_t>;
  std::vector<bool> demoted(matched.size(), false);
  std::map<int, std::vector<std::pair<StreamKey, SlotKey>>> slotted;  // rank -> its collective streams and keys
  std::vector<SlotKey> slots;
  for (bool changed = true; changed;) {
    changed = false;
    slotted.clear();
    std::set<SlotKey> all;
    for (const auto& [rank, r] : ranks)
      for (const auto& [key, list] : r.streams) {
        std::set<std::int32_t> groups;
        std::size_t first = 0;
        for (const std::size_t i : list) {
          const Communication& c = communication[i];
          if (c.group == kNone || demoted[static_cast<std::size_t>(c.group)]) continue;
          if (groups.empty() || c.group < *groups.begin()) first = c.sequence;
          groups.insert(c.group);
        }
        if (groups.empty()) continue;
        SlotKey slot{{groups.begin(), groups.end()}, first};
        slotted[rank].emplace_back(key, slot);
        all.insert(slot);
      }
    slots.assign(all.begin(), all.end());
    // Same slot for the n-th collective of a group on every member?
    std::map<std::pair<std::int32_t, std::size_t>, SlotKey> seen;
    for (const auto& [rank, streams] : slotted)
      for (const auto& [key, slot] : streams)
        for (const std::size_t i : ranks[rank].streams[key]) {
          const Communication& c = communication[i];
          if (c.group == kNone || demoted[static_cast<std::size_t>(c.group)]) continue;
          const auto [it, inserted] = seen.emplace(std::make_pair(c.group, c.sequence), slot);
          if (!inserted && it->second != slot) {
            demoted[static_cast<std::size_t>(c.group)] = true;
            out.notes.push_back("collectives of group " + group_text(matched[static_cast<std::size_t>(c.group)]) +
                                " run on streams that differ between its members: they keep their measured times "
                                "alone");
            changed = true;
          }
        }
  }
  if (assumed_world)
    out.notes.push_back("communication records without a process group were matched over all " + std::to_string(world) +
                        " ranks (the store holds the whole world)");

  // ---- programs --------------------------------------------------------------------------------------------------
  Workload& w = out.workload;
  ParallelismSpec layout;
  layout.dp = world;
  w.layout = RankLayout(layout);
  w.names = trace.names;
  const auto gap_name = static_cast<std::uint32_t>(w.names.size());
  w.names.emplace_back("host gap");
  for (std::size_t g = 0; g < matched.size(); ++g) w.groups.push_back(matched[g]);
  std::vector<std::int32_t> alone_group(static_cast<std::size_t>(world), kNone);
  w.programs.resize(static_cast<std::size_t>(world));
  out.record_of_op.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) w.program_of_rank.push_back(static_cast<std::uint32_t>(r));

  // Transfer time of a matched collective: the shortest of its members' measured durations.
  std::map<std::pair<std::int32_t, std::size_t>, double> transfer_s;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Communication& c = communication[i];
    if (c.group == kNone || demoted[static_cast<std::size_t>(c.group)]) continue;
    const double d = records[i].end_s - records[i].start_s;
    auto [it, inserted] = transfer_s.emplace(std::make_pair(c.group, c.sequence), d);
    if (!inserted) it->second = std::min(it->second, d);
  }

  for (auto& [rank, r] : ranks) {
    Program& program = w.programs[static_cast<std::size_t>(rank)];
    auto& op_records = out.record_of_op[static_cast<std::size_t>(rank)];
    // Stream order: every slot (empty where this rank has none), then the rank's other streams.
    std::vector<std::pair<std::string, const std::vector<std::size_t>*>> order;
    const std::vector<std::size_t> no_records;
    const auto& mine = slotted[rank];
    std::set<StreamKey> in_slots;
    std::set<std::int32_t> devices;
    for (const auto& [key, list] : r.streams) devices.insert(key.device);
    const bool several_devices = devices.size() > 1;
    auto stream_name = [&](const StreamKey& key) {
      return "stream " + std::to_string(key.stream) +
             (several_devices ? " (GPU " + std::to_string(key.device) + ")" : "");
    };
    for (const SlotKey& slot : slots) {
      const auto it = std::find_if(mine.begin(), mine.end(), [&](const auto& entry) { return entry.second == slot; });
      if (it == mine.end()) {
        order.emplace_back("(no collectives here)", &no_records);
      } else {
        order.emplace_back(stream_name(it->first), &r.streams[it->first]);
        in_slots.insert(it->first);
      }
    }
    for (const auto& [key, list] : r.streams)
      if (!in_slots.count(key)) order.emplace_back(stream_name(key), &list);

    // Every record's stream and op index, and what precedes it (a delay, a dependency), before emitting ops.
    struct Placement {
      std::uint16_t stream = 0;
      std::uint32_t op = 0;
    };
    std::map<std::size_t, Placement> placed;  // record -> its op
    struct Before {
      double delay_s = 0.0;
      std::int64_t depends_on = -1;  ///< record index
    };
    std::vector<std::vector<Before>> before(order.size());
    // Every record of the rank by end time, for the dependency search.
    std::vector<std::pair<double, std::size_t>> ends;
    std::map<std::size_t, std::size_t> stream_of_record;
    for (std::size_t s = 0; s < order.size(); ++s)
      for (const std::size_t i : *order[s].second) {
        ends.emplace_back(records[i].end_s, i);
        stream_of_record[i] = s;
      }
    std::sort(ends.begin(), ends.end());
    for (std::size_t s = 0; s < order.size(); ++s) {
      const auto& list = *order[s].second;
      before[s].resize(list.size());
      double ready = 0.0;
      std::uint32_t op = 0;
      for (std::size_t n = 0; n < list.size(); ++n) {
        const MeasuredRecord& k = records[list[n]];
        if (n > 0 && k.start_s < ready) ++out.same_stream_overlaps;
        const double gap = k.start_s - ready;
        Before& b = before[s][n];
        if (gap > 0.0) {
          // The latest end of another stream's record in [start - window, start] and after `ready`.
          auto it = std::upper_bound(ends.begin(), ends.end(), std::make_pair(k.start_s, records.size()));
          while (it != ends.begin()) {
            --it;
            if (it->first < k.start_s - options.dependency_window_s || it->first <= ready) break;
            if (stream_of_record[it->second] != s) {
              b.depends_on = static_cast<std::int64_t>(it->second);
              break;
            }
          }
          b.delay_s = b.depends_on >= 0 ? k.start_s - records[static_cast<std::size_t>(b.depends_on)].end_s : gap;
        }
        if (b.delay_s > 0.0) ++op;  // the delay's op
        placed[list[n]] = {static_cast<std::uint16_t>(s), op++};
        ready = std::max(ready, k.end_s);
      }
    }

    for (std::size_t s = 0; s < order.size(); ++s) {
      Stream stream;
      stream.name = order[s].first;
      std::vector<std::int64_t> op_record;
      const auto& list = *order[s].second;
      for (std::size_t n = 0; n < list.size(); ++n) {
        const std::size_t i = list[n];
        const MeasuredRecord& m = records[i];
        const MeasuredRecord& k = m;
        const Before& b = before[s][n];
        auto add_dependency = [&](Op& op) {
          if (b.depends_on < 0) return;
          const Placement& target = placed.at(static_cast<std::size_t>(b.depends_on));
          op.first_dependency = static_cast<std::uint32_t>(program.dependencies.size());
          op.dependency_count = 1;
          program.dependencies.push_back({target.stream, target.op});
          ++out.dependencies;
        };
        if (b.delay_s > 0.0) {
          Op delay;
          delay.kind = OpKind::delay;
          delay.duration_s = b.delay_s;
          delay.name = gap_name;
          add_dependency(delay);
          stream.ops.push_back(delay);
          op_record.push_back(-1);
          ++out.delays;
          out.delay_s += b.delay_s;
        }
        Op op;
        op.name = k.name;
        op.kernel_class = k.kernel_class;
        if (b.delay_s <= 0.0) add_dependency(op);
        const double measured = m.end_s - m.start_s;
        if (k.kernel_class == KernelClass::communication) {
          op.kind = OpKind::collective;
          op.collective = k.collective.value_or(CollectiveKind::all_reduce);
          op.bytes = known(k.collective_bytes) ? k.collective_bytes : 0.0;
          const Communication& c = communication[i];
          if (c.group != kNone && !demoted[static_cast<std::size_t>(c.group)]) {
            op.group_index = c.group;
            const bool simulate = options.simulate_collectives && k.collective.has_value() && op.bytes > 0.0;
            op.duration_s = simulate ? -1.0 : transfer_s.at({c.group, c.sequence});
            ++out.collectives_matched;
            if (simulate) ++out.collectives_simulated;
          } else {
            auto& alone = alone_group[static_cast<std::size_t>(rank)];
            if (alone == kNone) {
              alone = static_cast<std::int32_t>(w.groups.size());
              w.groups.push_back({rank});
            }
            op.group_index = alone;
            op.duration_s = measured;
            ++out.collectives_measured;
          }
        } else {
          op.kind = OpKind::compute;
          op.precision = options.precision ? options.precision(k) : Precision::bf16;
          op.flops = known(k.flops) ? k.flops : 0.0;
          op.bytes = known(k.bytes) ? k.bytes : 0.0;
          op.duration_s = options.kernel_duration ? options.kernel_duration(k) : measured;
        }
        stream.ops.push_back(op);
        op_record.push_back(static_cast<std::int64_t>(i));
      }
      program.streams.push_back(std::move(stream));
      op_records.push_back(std::move(op_record));
    }
  }
  if (out.same_stream_overlaps > 0)
    out.notes.push_back(std::to_string(out.same_stream_overlaps) +
                        " records start before the previous record of their stream ends; the replay runs them one "
                        "after the other");
  return out;
}

}  // namespace chopsim::replay_detail
