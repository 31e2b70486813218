// The fast engine (fast_simulation.cpp): transfers (puts and gets matched on mailboxes, a route's latency, then the
// flow network), collective steps and their synchronisation, pipeline send/recv.

#include "fast_simulation_state.hpp"

namespace chopsim::sim_detail::fast {
namespace {

void FastSimulation::post_step(StreamRun& run, std::uint32_t id, const CollectiveStep& step) {
  const auto me = run.rank;
  const std::uint32_t space = 1u + run.stream;
  const std::vector<int>& members = *run.collective.members;
  run.pending = static_cast<std::uint32_t>(step.sends.size() + step.receives.size());
  stats_.activities += step.sends.size();
  // Mailboxes are keyed by representatives: under symmetry the put of this rank to a member of another replica is
  // matched by the get its class's representative posts for the image of this rank.
  for (const Transfer& t : step.sends) {
    const int peer = members[static_cast<std::size_t>(t.peer)];
    post_put(mailbox_key(me, classes_.representative(peer), space, static_cast<std::uint32_t>(t.channel)), id,
             route_of(me, static_cast<std::uint32_t>(peer)), bytes_of(t.bytes));
  }
  for (const Transfer& t : step.receives) {
    const int peer = members[static_cast<std::size_t>(t.peer)];
    post_get(mailbox_key(classes_.representative(peer), me, space, static_cast<std::uint32_t>(t.channel)), id);
  }
}

std::uint32_t FastSimulation::route_of(std::uint32_t src, std::uint32_t dst) const {
  const auto it = route_of_pair_.find(pair_key(src, dst));
  if (it == route_of_pair_.end())
    throw EngineError("no route from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
                      " (not among the communicating pairs)");
  return it->second;
}

void FastSimulation::post_put(const Key128& key, std::uint32_t run, std::uint32_t route, double bytes) {
  Mailbox& box = mailboxes_[key];
  if (box.get_head < box.gets.size()) {
    const std::uint32_t receiver = box.gets[box.get_head++];
    if (box.get_head == box.gets.size()) {
      box.gets.clear();
      box.get_head = 0;
    }
    begin_comm(run, receiver, route, bytes);
    return;
  }
  box.puts.push_back({run, route, bytes});
}

void FastSimulation::post_get(const Key128& key, std::uint32_t run) {
  Mailbox& box = mailboxes_[key];
  if (box.put_head < box.puts.size()) {
    const Post put = box.puts[box.put_head++];
    if (box.put_head == box.puts.size()) {
      box.puts.clear();
      box.put_head = 0;
    }
    begin_comm(put.run, run, put.route, put.bytes);
    return;
  }
  box.gets.push_back(run);
}

void FastSimulation::begin_comm(std::uint32_t sender, std::uint32_t receiver, std::uint32_t route, double bytes) {
  std::uint32_t id;
  if (!free_comms_.empty()) {
    id = free_comms_.back();
    free_comms_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(comms_.size());
    comms_.emplace_back();
  }
  CommRun& comm = comms_[id];
  comm.sender = sender;
  comm.receiver = receiver;
  comm.route = route;
  comm.bytes = bytes;
  comm.in_network = false;
  comm.active = true;
  ++comm.version;
  const double latency = routes_[comm.route].latency_s;
  if (latency > 0.0)
    push_timer(now_ + latency, TimerKind::flow_start, id);
  else
    start_flow(id);
}

void FastSimulation::start_flow(std::uint32_t id) {
  CommRun& comm = comms_[id];
  const Route& route = routes_[comm.route];
  if (comm.bytes <= 0.0 || route.constraints.empty()) {
    push_timer(now_, TimerKind::flow_end, id, comm.version);
    return;
  }
  comm.flow = network_->add(route.constraints, route.uses, route.weight, comm.bytes, now_);
  comm.in_network = true;
  if (flow_owner_.size() <= comm.flow) flow_owner_.resize(comm.flow + 1);
  flow_owner_[comm.flow] = id;
}

void FastSimulation::schedule_flow_end(std::uint32_t id) {
  CommRun& comm = comms_[id];
  const double end = network_->end_s(comm.flow);
  ++comm.version;
  if (end < kInfinity) push_timer(end, TimerKind::flow_end, id, comm.version);
}

void FastSimulation::finish_comm(std::uint32_t id) {
  CommRun& comm = comms_[id];
  if (comm.in_network) network_->remove(comm.flow);
  comm.in_network = false;
  comm.active = false;
  ++comm.version;
  free_comms_.push_back(id);
  for (const std::uint32_t side : {comm.sender, comm.receiver}) {
    StreamRun& run = runs_[side];
    if (--run.pending == 0) ready_.push_back(side);
  }
}

void FastSimulation::comm_begin(RankRun& rank) {
  if (rank.domain >= 0) {
    domains_[static_cast<std::size_t>(rank.domain)]->communication_begin(now_, rank.die);
    unsettled(rank.domain);
    if (dynamic_clocks_) {
      ++rank.active_comms;
      return;
    }
  }
  if (rank.active_comms++ == 0 && slowdown_ > 0.0) retime_fixed(rank);
}

void FastSimulation::comm_end(RankRun& rank) {
  if (rank.domain >= 0) {
    domains_[static_cast<std::size_t>(rank.domain)]->communication_end(now_, rank.die);
    unsettled(rank.domain);
    if (dynamic_clocks_) {
      --rank.active_comms;
      return;
    }
  }
  if (--rank.active_comms == 0 && slowdown_ > 0.0) retime_fixed(rank);
}

}  // namespace
}  // namespace chopsim::sim_detail::fast
