#include "chopsim/models/workload_check.hpp"

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {

enum class OpState : std::uint8_t { waiting, posted, done };

class SymbolicExecutor {
 public:
  explicit SymbolicExecutor(const Workload& workload) : workload_(workload), layout_(workload.layout) {
    const int world = layout_.world_size();
    if (workload.program_of_rank.size() != static_cast<std::size_t>(world))
      throw ModelError("workload check: program_of_rank has " + std::to_string(workload.program_of_rank.size()) +
                       " entries for " + std::to_string(world) + " ranks");
    stream_base_.resize(workload.programs.size());
    for (std::size_t p = 0; p < workload.programs.size(); ++p) {
      std::size_t base = 0;
      for (const Stream& stream : workload.programs[p].streams) {
        stream_base_[p].push_back(base);
        base += stream.ops.size();
      }
      validate_dependencies(p);
    }
    ranks_.resize(static_cast<std::size_t>(world));
    for (int rank = 0; rank < world; ++rank) {
      const std::uint32_t p = workload.program_of_rank[static_cast<std::size_t>(rank)];
      if (p >= workload.programs.size()) throw ModelError("workload check: rank has no program");
      RankState& state = ranks_[static_cast<std::size_t>(rank)];
      state.program = p;
      state.ops.assign(workload.programs[p].op_count(), OpState::waiting);
      state.next.assign(workload.programs[p].streams.size(), 0);
    }
  }

  void run() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (int rank = 0; rank < layout_.world_size(); ++rank) {
        const std::size_t streams = ranks_[static_cast<std::size_t>(rank)].next.size();
        for (std::size_t stream = 0; stream < streams; ++stream)
          progress |= advance(rank, static_cast<std::uint16_t>(stream));
      }
    }
    report_stuck_ops();
  }

 private:
  struct RankState {
    std::uint32_t program = 0;
    std::vector<OpState> ops;         ///< per op of the program, streams laid out one after another
    std::vector<std::uint32_t> next;  ///< per stream: first op not yet done
  };
  struct Endpoint {
    int rank = -1;
    std::uint16_t stream = 0;
    std::uint32_t op = 0;
    double bytes = 0.0;
  };
  struct Transfer {
    Endpoint send;
    Endpoint recv;
    bool done = false;
  };

  const Program& program_of(int rank) const {
    return workload_.programs[ranks_[static_cast<std::size_t>(rank)].program];
  }
  OpState& state(int rank, std::uint16_t stream, std::uint32_t op) {
    RankState& r = ranks_[static_cast<std::size_t>(rank)];
    return r.ops[stream_base_[r.program][stream] + op];
  }

  void validate_dependencies(std::size_t p) const {
    const Program& program = workload_.programs[p];
    for (std::size_t s = 0; s < program.streams.size(); ++s) {
      for (const Op& op : program.streams[s].ops) {
        if (op.name >= workload_.names.size()) throw ModelError("workload check: op name index out of range");
        if (static_cast<std::size_t>(op.first_dependency) + op.dependency_count > program.dependencies.size())
          throw ModelError("workload check: op '" + workload_.names[op.name] + "' has dependencies out of range");
        for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
          const OpDependency& dep = program.dependencies[op.first_dependency + d];
          if (dep.stream >= program.streams.size() || dep.op >= program.streams[dep.stream].ops.size())
            throw ModelError("workload check: op '" + workload_.names[op.name] + "' on stream '" +
                             program.streams[s].name + "' depends on a missing op");
        }
      }
    }
  }

  int peer_of(int rank, const Op& op) const {
    const int pp = layout_.parallelism().pp;
    RankCoordinates c = layout_.coordinates(rank);
    if (pp < 2) throw ModelError("workload check: a send/recv without pipeline parallelism");
    c.pp = ((c.pp + op.peer_offset) % pp + pp) % pp;
    return layout_.rank_of(c);
  }

  std::string describe(int rank, std::uint16_t stream, std::uint32_t index) const {
    const Program& program = program_of(rank);
    const Op& op = program.streams[stream].ops[index];
    std::ostringstream text;
    text << "rank " << rank << " stream '" << program.streams[stream].name << "' op " << index << " '"
         << workload_.names[op.name] << "' (" << to_string(op.kind) << ", " << to_string(op.pass) << ", layer "
         << op.layer << ", micro-batch " << op.micro_batch << ")";
    return text.str();
  }

  bool dependencies_done(int rank, const Op& op) {
    const Program& program = program_of(rank);
    for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
      const OpDependency& dep = program.dependencies[op.first_dependency + d];
      if (state(rank, dep.stream, dep.op) != OpState::done) return false;
    }
    return true;
  }

  void post_collective(int rank, std::uint16_t stream, std::uint32_t index, const Op& op) {
    // Explicit groups (replayed traces) join ranks that run different programs; their matching is the engine's.
    if (op.group_index >= 0)
      throw ModelError("workload check: " + describe(rank, stream, index) +
                       " uses an explicit group (a replayed trace); only role groups are checked here");
    const std::uint32_t program = ranks_[static_cast<std::size_t>(rank)].program;
    const auto key = std::make_tuple(program, stream, index, layout_.group_id(rank, op.group));
    int& arrived = meetings_[key];
    ++arrived;
    state(rank, stream, index) = OpState::posted;
    if (arrived < layout_.group_size(op.group)) return;
    for (const int member : layout_.group(rank, op.group)) {
      if (ranks_[static_cast<std::size_t>(member)].program != program)
        throw ModelError("workload check: " + describe(rank, stream, index) + " has group member rank " +
                         std::to_string(member) + " running another program");
      state(member, stream, index) = OpState::done;
    }
  }

  void post_point_to_point(int rank, std::uint16_t stream, std::uint32_t index, const Op& op) {
    const int peer = peer_of(rank, op);
    const bool is_send = op.kind == OpKind::send;
    const auto key = is_send ? std::make_tuple(rank, peer, op.tag) : std::make_tuple(peer, rank, op.tag);
    Transfer& transfer = transfers_[key];
    Endpoint& mine = is_send ? transfer.send : transfer.recv;
    if (mine.rank >= 0)
      throw ModelError("workload check: duplicate " + std::string(to_string(op.kind)) + " tag " +
                       std::to_string(op.tag) + ": " + describe(rank, stream, index) + " and " +
                       describe(mine.rank, mine.stream, mine.op));
    mine = Endpoint{rank, stream, index, op.bytes};
    state(rank, stream, index) = OpState::posted;
    if (transfer.send.rank < 0 || transfer.recv.rank < 0) return;
    if (transfer.send.bytes != transfer.recv.bytes)
      throw ModelError("workload check: " + describe(transfer.send.rank, transfer.send.stream, transfer.send.op) +
                       " and its receive disagree on the size");
    transfer.done = true;
    state(transfer.send.rank, transfer.send.stream, transfer.send.op) = OpState::done;
    state(transfer.recv.rank, transfer.recv.stream, transfer.recv.op) = OpState::done;
  }

  /// Runs `stream` of `rank` as far as it can go; true if anything completed.
  bool advance(int rank, std::uint16_t stream) {
    const auto& ops = program_of(rank).streams[stream].ops;
    std::uint32_t& next = ranks_[static_cast<std::size_t>(rank)].next[stream];
    bool progress = false;
    while (next < ops.size()) {
      OpState& current = state(rank, stream, next);
      if (current == OpState::done) {
        ++next;
        progress = true;
        continue;
      }
      if (current == OpState::posted) break;
      const Op& op = ops[next];
      if (!dependencies_done(rank, op)) break;
      switch (op.kind) {
        case OpKind::compute:
        case OpKind::delay:
          current = OpState::done;
          break;
        case OpKind::collective:
          post_collective(rank, stream, next, op);
          break;
        case OpKind::send:
        case OpKind::recv:
          post_point_to_point(rank, stream, next, op);
          break;
      }
    }
    return progress;
  }

  void report_stuck_ops() {
    std::size_t stuck = 0;
    std::ostringstream text;
    constexpr std::size_t kShown = 12;
    for (int rank = 0; rank < layout_.world_size(); ++rank) {
      const RankState& r = ranks_[static_cast<std::size_t>(rank)];
      for (std::size_t s = 0; s < r.next.size(); ++s) {
        const auto stream = static_cast<std::uint16_t>(s);
        const auto& ops = program_of(rank).streams[s].ops;
        if (r.next[s] >= ops.size()) continue;
        ++stuck;
        if (stuck > kShown) continue;
        const std::uint32_t index = r.next[s];
        text << "\n  " << describe(rank, stream, index);
        if (state(rank, stream, index) == OpState::posted) {
          text << " waits for its " << (ops[index].kind == OpKind::collective ? "group" : "partner");
        } else {
          const Op& op = ops[index];
          const Program& program = program_of(rank);
          for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
            const OpDependency& dep = program.dependencies[op.first_dependency + d];
            if (state(rank, dep.stream, dep.op) != OpState::done) {
              text << " waits for " << describe(rank, dep.stream, dep.op);
              break;
            }
          }
        }
      }
    }
    if (stuck == 0) return;
    std::string message = "workload check: deadlock, " + std::to_string(stuck) + " streams cannot finish:" + text.str();
    if (stuck > kShown) message += "\n  ... and " + std::to_string(stuck - kShown) + " more";
    throw ModelError(message);
  }

  const Workload& workload_;
  const RankLayout& layout_;
  std::vector<std::vector<std::size_t>> stream_base_;  ///< per program, per stream: first op's flat index
  std::vector<RankState> ranks_;
  std::map<std::tuple<std::uint32_t, std::uint16_t, std::uint32_t, int>, int> meetings_;
  std::map<std::tuple<int, int, std::uint32_t>, Transfer> transfers_;
};

}  // namespace

void check_workload_completes(const Workload& workload) { SymbolicExecutor(workload).run(); }

}  // namespace chopsim
