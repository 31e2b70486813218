// The SimGrid engine's communication (simgrid_simulation.cpp): pipeline send/recv matched on their channel,
// collectives run as their plan's steps on mailboxes, synchronised steps, and the compute slowdown while a rank
// communicates.

#include <cmath>
#include <string>
#include <vector>

#include "simgrid_simulation_state.hpp"

namespace chopsim::sim_detail::sg {

/// Work of the communication-load Exec: never finishes while a collective runs (at most 1 work unit per second).
constexpr double kUnboundedWork = 1e30;
/// Sharing weight of the load Exec: large, so that it always gets its bound and the kernels the rest.
constexpr double kLoadPriority = 1e6;

void Simulation::match_pipeline_peer(ActorState& actor, const Op& op) {
  const int peer = prepared_.pipeline_peer(actor.rank, op.peer_offset);
  const bool send = op.kind == OpKind::send;
  const MailboxKey key = send ? pipeline_key(actor.rank, peer, op.tag) : pipeline_key(peer, actor.rank, op.tag);
  auto it = pipe_channels_.find(key);
  if (it == pipe_channels_.end()) {
    sg4::ConditionVariablePtr posted = sg4::ConditionVariable::create();  // may let other actors run
    it = pipe_channels_.try_emplace(key).first;  // the entry another actor made meanwhile, if any
    if (!it->second.posted) it->second.posted = std::move(posted);
  }
  PipeChannel& channel = it->second;  // node-based map: stays valid while others insert
  const std::uint64_t mine = send ? ++channel.sends : ++channel.receives;
  const std::uint64_t& theirs = send ? channel.receives : channel.sends;
  if (theirs >= mine) {  // the peer is waiting for this post
    if (channel.waiters > 0) {
      pipe_mutex_->lock();
      channel.posted->notify_all();
      pipe_mutex_->unlock();
    }
    return;
  }
  actor.peer = peer;
  actor.wait = send ? Wait::send : Wait::recv;
  ++channel.waiters;
  ++stats_.activities;
  pipe_mutex_->lock();
  while (theirs < mine) channel.posted->wait(pipe_mutex_);
  pipe_mutex_->unlock();
  --channel.waiters;
  actor.wait = Wait::none;
}

void Simulation::run_collective(ActorState& actor, const RankCollective& collective) {
  const auto me = static_cast<std::uint32_t>(actor.rank);
  const std::uint32_t space = 1u + actor.stream;
  const std::vector<int>& members = *collective.members;
  std::vector<sg4::CommPtr> comms;
  void* data = nullptr;
  const auto& steps = collective.plan->steps;
  const std::uint64_t sequence = actor.collectives_of_group[collective.group]++;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    actor.step = k;
    const CollectiveStep& step = steps[k];
    comms.clear();
    for (const Transfer& t : step.sends) {
      const auto peer = static_cast<std::uint32_t>(members[static_cast<std::size_t>(t.peer)]);
      comms.push_back(
          mailbox({me, peer, space, static_cast<std::uint32_t>(t.channel)})->put_async(&payload_, bytes(t.bytes)));
    }
    for (const Transfer& t : step.receives) {
      const auto peer = static_cast<std::uint32_t>(members[static_cast<std::size_t>(t.peer)]);
      comms.push_back(mailbox({peer, me, space, static_cast<std::uint32_t>(t.channel)})->get_async<void>(&data));
    }
    stats_.activities += step.sends.size();
    actor.wait = Wait::transfers;
    sg4::Comm::wait_all(comms);
    if (step.sync_members > 1) {
      actor.wait = Wait::sync;
      synchronize({collective.group, actor.stream, sequence, static_cast<std::uint32_t>(k), step.sync_id},
                  step.sync_members);
    }
    actor.wait = Wait::none;
    if (step.latency_s > 0.0) {
      ++stats_.activities;
      sg4::this_actor::sleep_for(step.latency_s);
    }
  }
  comms.clear();
}

void Simulation::synchronize(const SyncKey& key, int members) {
  auto it = rendezvous_.find(key);
  if (it == rendezvous_.end()) {
    sg4::BarrierPtr created = sg4::Barrier::create(static_cast<unsigned>(members));  // may let others run first
    it = rendezvous_.emplace(key, Rendezvous{0, std::move(created)}).first;
  }
  const sg4::BarrierPtr barrier = it->second.barrier;
  if (++it->second.arrived == members) rendezvous_.erase(it);
  ++stats_.activities;
  barrier->wait();
}

void Simulation::comm_begin(RankState& rank) {
  if (rank.domain >= 0) {
    domains_[static_cast<std::size_t>(rank.domain)]->communication_begin(sg4::Engine::get_clock(), rank.die);
    if (dynamic_clocks_) {
      ++rank.active_comms;  // the kernels' share is the domain's business: no load Exec
      wake_kernels(rank.domain, nullptr);
      return;
    }
  }
  if (rank.active_comms++ > 0 || slowdown_ <= 0.0) return;
  ++stats_.activities;
  sg4::ExecPtr load = sg4::this_actor::exec_init(kUnboundedWork);
  load->set_bound(slowdown_);
  load->set_priority(kLoadPriority);
  rank.comm_load = load;
  load->start();
}

void Simulation::comm_end(RankState& rank) {
  if (rank.domain >= 0) {
    domains_[static_cast<std::size_t>(rank.domain)]->communication_end(sg4::Engine::get_clock(), rank.die);
    if (dynamic_clocks_) {
      --rank.active_comms;
      wake_kernels(rank.domain, nullptr);
      return;
    }
  }
  if (--rank.active_comms > 0 || !rank.comm_load) return;
  sg4::ExecPtr load = std::move(rank.comm_load);
  rank.comm_load = nullptr;
  load->cancel();
}

sg4::Mailbox* Simulation::mailbox(const MailboxKey& key) {
  if (auto it = mailboxes_.find(key); it != mailboxes_.end()) return it->second;
  const std::string name = (key.space == 0 ? "p" : "c" + std::to_string(key.space - 1)) + ":" +
                           std::to_string(key.src) + ">" + std::to_string(key.dst) + ":" + std::to_string(key.id);
  sg4::Mailbox* created = sg4::Mailbox::by_name(name);
  return mailboxes_.emplace(key, created).first->second;  // the same mailbox if another actor got there first
}

}  // namespace chopsim::sim_detail::sg
