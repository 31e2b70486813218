#include "prepared_workload.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_set>

#include "chopsim/common/error.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/topology.hpp"

namespace chopsim::sim_detail {

namespace {

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace

PreparedWorkload::PreparedWorkload(const SimulationInput& input) : PreparedWorkload(input, std::vector<int>()) {}

PreparedWorkload::PreparedWorkload(const SimulationInput& input, const std::vector<int>& only_ranks) : input_(input) {
  if (input.workload == nullptr || input.topology == nullptr || input.compute == nullptr ||
      input.collectives == nullptr)
    throw EngineError("simulation input is incomplete: workload, topology, compute and collective models are required");
  if (input.iterations < 1) throw EngineError("simulation needs at least one iteration");
  if (!(input.host_launch_s >= 0.0 && input.host_launch_s < 1.0))
    throw EngineError("host_launch_s must be in [0, 1) s, got " + std::to_string(input.host_launch_s));
  const Workload& workload = *input.workload;
  const Topology& topology = *input.topology;
  world_size_ = static_cast<int>(workload.program_of_rank.size());
  if (world_size_ > topology.gpu_count())
    throw EngineError("workload has " + std::to_string(world_size_) + " ranks but the topology only " +
                      std::to_string(topology.gpu_count()) + " GPUs");
  clock_hz_ = input.clock_hz > 0.0 ? input.clock_hz : input.compute->params().peak_clock_hz();
  if (const PowerInput* power = input.power) {
    if (power->power == nullptr || power->thermal == nullptr || power->governor == nullptr)
      throw EngineError("power input is incomplete: power, thermal and governor models are required");
    if (power->inlet_c.size() != static_cast<std::size_t>(world_size_) ||
        power->initial_c.size() != static_cast<std::size_t>(world_size_))
      throw EngineError("power input: need one inlet and one initial temperature per rank (" +
                        std::to_string(world_size_) + "), got " + std::to_string(power->inlet_c.size()) + " and " +
                        std::to_string(power->initial_c.size()));
    if (power->dies_per_package < 1) throw EngineError("power input: dies_per_package must be >= 1");
    if (!(power->cap_w_per_gpu > 0.0)) throw EngineError("power input: the power cap must be positive");
    if (!(power->ceiling_hz > 0.0) || power->floor_hz > power->ceiling_hz)
      throw EngineError("power input: need 0 < floor clock <= ceiling clock");
    // With a governor that never moves the clock, kernels are timed once at its ceiling.
    if (power->governor->fixed_clock()) clock_hz_ = power->ceiling_hz;
  }

  // Per program: durations, dependency checks and collective signatures.
  const std::size_t programs = workload.programs.size();
  durations_.resize(programs);
  signature_.resize(programs);
  signatures_.resize(programs);
  for (std::size_t p = 0; p < programs; ++p) {
    const Program& program = workload.programs[p];
    std::map<std::tuple<GroupRole, std::int32_t, CollectiveKind, double, double, TokenRouting>, std::int32_t> index;
    if (const std::string problem = issue_order_problem(program); !problem.empty())
      throw EngineError("program " + std::to_string(p) + ": its issue order (the host's): " + problem);
    durations_[p].resize(program.streams.size());
    signature_[p].resize(program.streams.size());
    for (std::size_t s = 0; s < program.streams.size(); ++s) {
      const Stream& stream = program.streams[s];
      durations_[p][s].assign(stream.ops.size(), 0.0);
      signature_[p][s].assign(stream.ops.size(), -1);
      for (std::size_t i = 0; i < stream.ops.size(); ++i) {
        const Op& op = stream.ops[i];
        if (static_cast<std::size_t>(op.first_dependency) + op.dependency_count > program.dependencies.size())
          throw EngineError("program " + std::to_string(p) + " stream '" + stream.name + "' op " + std::to_string(i) +
                            ": dependency range outside the program's dependency list");
        for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
          const OpDependency& dep = program.dependencies[op.first_dependency + d];
          if (dep.stream >= program.streams.size() || dep.op >= program.streams[dep.stream].ops.size())
            throw EngineError("program " + std::to_string(p) + " stream '" + stream.name + "' op " + std::to_string(i) +
                              " depends on stream " + std::to_string(dep.stream) + " op " + std::to_string(dep.op) +
                              ", which does not exist");
        }
        auto op_error = [&](const std::string& problem) {
          return EngineError("program " + std::to_string(p) + " stream '" + stream.name + "' op " + std::to_string(i) +
                             ": " + problem);
        };
        if (op.kind == OpKind::compute) {
          durations_[p][s][i] =
              op.duration_s >= 0.0 ? op.duration_s : input.compute->duration_s(kernel_work(op), clock_hz_);
        } else if (op.kind == OpKind::delay) {
          if (!(op.duration_s >= 0.0)) throw op_error("a delay needs a duration_s >= 0");
          durations_[p][s][i] = op.duration_s;
        } else if (op.kind == OpKind::collective) {
          if (op.group_index >= 0 && static_cast<std::size_t>(op.group_index) >= workload.groups.size())
            throw op_error("group_index " + std::to_string(op.group_index) + " outside the workload's " +
                           std::to_string(workload.groups.size()) + " explicit groups");
          const double fixed = op.duration_s >= 0.0 ? op.duration_s : -1.0;
          const TokenRouting routing = workload.routing_of(op);
          auto [it, inserted] =
              index.emplace(std::make_tuple(op.group, op.group_index, op.collective, op.bytes, fixed, routing),
                            static_cast<std::int32_t>(signatures_[p].size()));
          if (inserted) signatures_[p].push_back({op.group, op.group_index, op.collective, op.bytes, fixed, routing});
          signature_[p][s][i] = it->second;
        }
      }
    }
  }

  // Per rank: its group for each signature and the plan, cached by (group, kind, bytes, member).
  const RankLayout& layout = workload.layout;
  // (role, group id) -> groups_; explicit groups are keyed (world, -1 - group_index).
  std::map<std::pair<GroupRole, int>, std::size_t> group_index;
  std::map<std::tuple<std::size_t, CollectiveKind, double, int, double, TokenRouting>, const CollectivePlan*>
      plan_cache;
  std::unordered_set<std::uint64_t> pairs;
  rank_collectives_.resize(static_cast<std::size_t>(world_size_));
  std::vector<int> all_ranks;
  if (only_ranks.empty()) {
    all_ranks.resize(static_cast<std::size_t>(world_size_));
    for (int r = 0; r < world_size_; ++r) all_ranks[static_cast<std::size_t>(r)] = r;
  }
  for (const int rank : only_ranks.empty() ? all_ranks : only_ranks) {
    if (rank < 0 || rank >= world_size_) throw EngineError("rank " + std::to_string(rank) + " outside the workload");
    const std::uint32_t p = workload.program_of_rank[static_cast<std::size_t>(rank)];
    if (p >= programs) throw EngineError("rank " + std::to_string(rank) + " has no program");
    auto& mine = rank_collectives_[static_cast<std::size_t>(rank)];
    for (const CollectiveSignature& sig : signatures_[p]) {
      const bool explicit_group = sig.group_index >= 0;
      const std::string group_name = explicit_group ? "explicit group " + std::to_string(sig.group_index)
                                                    : std::string(to_string(sig.role)) + " group";
      const int id = explicit_group ? -1 - sig.group_index : layout.group_id(rank, sig.role);
      auto [git, new_group] =
          group_index.emplace(std::make_pair(explicit_group ? GroupRole::world : sig.role, id), groups_.size());
      if (new_group) {
        groups_.push_back(std::make_unique<std::vector<int>>(
            explicit_group ? workload.groups[static_cast<std::size_t>(sig.group_index)]
                           : layout.group(rank, sig.role)));
        for (const int member : *groups_.back())
          if (member < 0 || member >= world_size_)
            throw EngineError(group_name + " of rank " + std::to_string(rank) + " names rank " +
                              std::to_string(member) + " outside the workload");
      }
      const std::vector<int>& members = *groups_[git->second];
      const int position = explicit_group
                               ? static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin())
                               : layout.index_in_group(rank, sig.role);
      if (position < 0 || position >= static_cast<int>(members.size()) ||
          members[static_cast<std::size_t>(position)] != rank)
        throw EngineError("rank " + std::to_string(rank) + " is not in its own " + group_name);
      const int me = position;
      auto [pit, new_plan] = plan_cache.emplace(
          std::make_tuple(git->second, sig.kind, sig.bytes, me, sig.duration_s, sig.routing), nullptr);
      if (new_plan && sig.duration_s >= 0.0) {
        // A measured collective: the members meet (the last to arrive releases the others), then it lasts its
        // measured time; no transfers, so the network is not used.
        CollectiveStep step;
        step.latency_s = sig.duration_s;
        step.sync_members = members.size() > 1 ? static_cast<int>(members.size()) : 0;
        plans_.push_back(std::make_unique<CollectivePlan>(CollectivePlan{"measured", {step}}));
        pit->second = plans_.back().get();
      } else if (new_plan) {
        const CollectiveCall call{sig.kind, sig.bytes, members, sig.routing};
        plans_.push_back(std::make_unique<CollectivePlan>(input.collectives->plan(call, me, topology)));
        pit->second = plans_.back().get();
        for (const CollectiveStep& step : plans_.back()->steps) {
          for (const Transfer& t : step.sends) {
            if (t.peer < 0 || t.peer >= static_cast<int>(members.size()) || t.peer == me)
              throw EngineError("collective plan of rank " + std::to_string(rank) + " sends to invalid member " +
                                std::to_string(t.peer));
            pairs.insert(pair_key(rank, members[static_cast<std::size_t>(t.peer)]));
          }
          for (const Transfer& t : step.receives)
            if (t.peer < 0 || t.peer >= static_cast<int>(members.size()) || t.peer == me)
              throw EngineError("collective plan of rank " + std::to_string(rank) + " receives from invalid member " +
                                std::to_string(t.peer));
        }
      }
      mine.push_back(RankCollective{pit->second, &members, static_cast<int>(git->second)});
    }
    // Pipeline peers.
    for (const Stream& stream : workload.programs[p].streams)
      for (const Op& op : stream.ops) {
        if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
        const int peer = pipeline_peer(rank, op.peer_offset);
        if (peer == rank)
          throw EngineError("rank " + std::to_string(rank) + ": " + std::string(to_string(op.kind)) +
                            " with peer_offset " + std::to_string(op.peer_offset) + " reaches the rank itself");
        pairs.insert(op.kind == OpKind::send ? pair_key(rank, peer) : pair_key(peer, rank));
      }
  }
  pairs_.reserve(pairs.size());
  for (const std::uint64_t key : pairs)
    pairs_.emplace_back(static_cast<int>(key >> 32), static_cast<int>(key & 0xffffffffULL));
  std::sort(pairs_.begin(), pairs_.end());
}

std::vector<PowerDomainSettings> power_packages(const PowerInput& power, int world_size, double comm_compute_slowdown) {
  const int per = power.dies_per_package;
  std::vector<PowerDomainSettings> packages(static_cast<std::size_t>((world_size + per - 1) / per));
  for (std::size_t k = 0; k < packages.size(); ++k) {
    PowerDomainSettings& settings = packages[k];
    settings.ceiling_hz = power.ceiling_hz;
    settings.floor_hz = power.floor_hz;
    settings.comm_compute_slowdown = comm_compute_slowdown;
    settings.governed_dynamic_scale = power.governed_dynamic_scale;
    const int first = static_cast<int>(k) * per;
    for (int r = first; r < std::min(world_size, first + per); ++r) {
      const auto i = static_cast<std::size_t>(r);
      settings.dies.push_back({static_cast<std::uint32_t>(r), power.inlet_c[i], power.initial_c[i]});
    }
    settings.cap_w = power.cap_w_per_gpu * static_cast<double>(settings.dies.size());
  }
  return packages;
}

RankCollective PreparedWorkload::collective(int rank, std::size_t stream, std::size_t op) const {
  const std::uint32_t p = input_.workload->program_of_rank[static_cast<std::size_t>(rank)];
  const std::int32_t sig = signature_[p][stream][op];
  return rank_collectives_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(sig)];
}

int PreparedWorkload::pipeline_peer(int rank, int offset) const {
  const RankLayout& layout = input_.workload->layout;
  RankCoordinates c = layout.coordinates(rank);
  const int pp = layout.parallelism().pp;
  c.pp = ((c.pp + offset) % pp + pp) % pp;
  return layout.rank_of(c);
}

std::string PreparedWorkload::describe(int rank, std::size_t stream, std::size_t op) const {
  const Workload& w = *input_.workload;
  const Program& program = w.program(rank);
  const Stream& s = program.streams[stream];
  std::string text = "rank " + std::to_string(rank) + " stream " + std::to_string(stream) + " '" + s.name + "'";
  if (op >= s.ops.size()) return text + " (after its last op)";
  const Op& o = s.ops[op];
  text += " op " + std::to_string(op);
  if (o.name < w.names.size()) text += " '" + w.names[o.name] + "'";
  text += " (" + std::string(to_string(o.kind));
  if (o.kind == OpKind::collective)
    text += " " + std::string(to_string(o.collective)) + " over " +
            (o.group_index >= 0 ? "explicit group " + std::to_string(o.group_index) : std::string(to_string(o.group))) +
            ", " + std::to_string(o.bytes) + " bytes";
  if (o.kind == OpKind::send || o.kind == OpKind::recv)
    text += " peer_offset " + std::to_string(o.peer_offset) + " tag " + std::to_string(o.tag);
  return text + ")";
}

}  // namespace chopsim::sim_detail
