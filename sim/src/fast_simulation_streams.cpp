// The fast engine (fast_simulation.cpp): a stream runs its ops until it blocks, in its stream order and after the
// ops it depends on, the host's launches and waits, and each iteration's barrier.

#include "fast_simulation_state.hpp"

namespace chopsim::sim_detail::fast {
namespace {

void FastSimulation::advance(std::uint32_t id) {
  StreamRun& run = runs_[id];
  RankRun& rank = ranks_[run.rank];
  const Program& program = workload_.programs[rank.program];
  const Stream& stream = program.streams[run.stream];
  for (;;) {
    switch (run.phase) {
      case Phase::begin_op:
        run.cursor = 0;
        run.phase = run.op == stream.ops.size() ? Phase::barrier : Phase::dependencies;
        break;
      case Phase::dependencies: {
        const Op& op = stream.ops[run.op];
        while (run.cursor < op.dependency_count) {
          const OpDependency& dep = program.dependencies[op.first_dependency + run.cursor];
          if (!wait_for(run, id, rank, dep.stream, run.iteration * rank.lengths[dep.stream] + dep.op + 1,
                        Wait::dependency))
            return;
          ++run.cursor;
        }
        run.phase = Phase::host;
        break;
      }
      case Phase::host: {
        run.issue = {0.0, 0.0};
        if (rank.host) {
          const HostPlan& plan = host_plans_[rank.program];
          const std::uint64_t segment = plan.segment_of(run.stream, run.op, run.iteration);
          if (rank.waits_released < segment) {
            run.wait = Wait::host;
            ++stats_.activities;
            rank.host_waiters.push_back(id);
            return;
          }
          run.issue =
              plan.issue_times(run.stream, run.op, run.iteration, rank.segment_start_s[segment], host_launch_s_);
        }
        run.phase = Phase::match;
        if (run.issue.first > now_) {  // the host is behind: the GPU waits for the launch
          sleep_until(run, id, run.issue.first, Wait::host);
          return;
        }
        break;
      }
      case Phase::match: {
        run.wait = Wait::none;
        const Op& op = stream.ops[run.op];
        if ((op.kind == OpKind::send || op.kind == OpKind::recv) && !match_pipeline_peer(run, id, op)) return;
        run.phase = Phase::start;
        break;
      }
      case Phase::start:
        if (!start_op(run, id, rank, stream.ops[run.op])) return;
        break;
      case Phase::run_step: {
        const auto& steps = run.collective.plan->steps;
        if (run.cursor == steps.size()) {
          comm_end(rank);
          run.phase = Phase::end;
          break;
        }
        post_step(run, id, steps[run.cursor]);
        run.phase = Phase::step_transfers;
        if (run.pending > 0) {
          run.wait = Wait::transfers;
          return;
        }
        break;
      }
      case Phase::step_transfers: {
        const CollectiveStep& step = run.collective.plan->steps[run.cursor];
        run.phase = Phase::step_synced;
        if (step.sync_members > 1 && !synchronize(run, id, step)) return;
        break;
      }
      case Phase::step_synced: {
        run.wait = Wait::none;
        const CollectiveStep& step = run.collective.plan->steps[run.cursor];
        run.phase = Phase::step_next;
        if (step.latency_s > 0.0) {
          sleep_until(run, id, now_ + step.latency_s, Wait::sleep);
          return;
        }
        break;
      }
      case Phase::step_next:
        run.wait = Wait::none;
        ++run.cursor;
        run.phase = Phase::run_step;
        break;
      case Phase::p2p_done:
        run.wait = Wait::none;
        comm_end(rank);
        run.phase = Phase::end;
        break;
      case Phase::end: {
        run.wait = Wait::none;
        emit(run, true);
        run.phase = Phase::complete;
        if (run.issue.second > now_) {
          // Several launches (a host-bound loop): the GPU work is done and the GPU idles between the remaining
          // launches; the op's result is complete with the last one.
          sleep_until(run, id, run.issue.second, Wait::host);
          return;
        }
        break;
      }
      case Phase::complete: {
        run.wait = Wait::none;
        double& iteration_end = stats_.iteration_end_s[run.iteration];
        iteration_end = std::max(iteration_end, reported(now_));
        complete(rank, run.stream);
        if (rank.host) {
          const auto& waits = host_plans_[rank.program].waits_of_stream[run.stream];
          if (run.next_host_wait < waits.size() && waits[run.next_host_wait] == run.op) {
            ++run.next_host_wait;
            release_host(rank);
          }
        }
        ++run.op;
        run.phase = Phase::begin_op;
        break;
      }
      case Phase::barrier:
        // A stream starts iteration i+1 once every stream of its rank has finished iteration i.
        while (run.cursor < rank.lengths.size()) {
          const auto s = static_cast<std::uint16_t>(run.cursor);
          if (!wait_for(run, id, rank, s, (run.iteration + 1) * rank.lengths[s], Wait::barrier)) return;
          ++run.cursor;
        }
        run.wait = Wait::none;
        ++run.iteration;
        run.op = 0;
        run.next_host_wait = 0;
        if (run.iteration == static_cast<std::uint32_t>(prepared_.input().iterations)) {
          run.phase = Phase::finished;
          ++finished_;
          return;
        }
        run.phase = Phase::begin_op;
        break;
      case Phase::finished:
        return;
    }
  }
}

bool FastSimulation::start_op(StreamRun& run, std::uint32_t id, RankRun& rank, const Op& op) {
  fold_at_op_start(run);
  run.start_s = reported(now_);
  emit(run, false);
  switch (op.kind) {
    case OpKind::delay:
    case OpKind::compute: {
      run.phase = Phase::end;
      const double duration = prepared_.duration_s(rank.program, run.stream, run.op);
      if (duration <= 0.0) return true;
      if (op.kind == OpKind::delay || op.duration_s >= 0.0) {
        // A host gap, or a measured kernel: it holds its stream for exactly its duration (not shared, not
        // stretched by the clock: the measurement already includes both).
        sleep_until(run, id, now_ + duration, Wait::sleep);
        return false;
      }
      run.wait = Wait::kernel;
      start_kernel(id, run.rank, op, duration);
      return false;
    }
    case OpKind::collective:
      comm_begin(rank);
      run.collective = prepared_.collective(static_cast<int>(run.rank), run.stream, run.op);
      run.sequence = next_sequence(run, run.collective.group);
      run.cursor = 0;
      run.phase = Phase::run_step;
      return true;
    case OpKind::send:
    case OpKind::recv: {
      comm_begin(rank);
      const int peer = run.peer;  // found by match_pipeline_peer
      run.phase = Phase::p2p_done;
      run.pending = 1;
      const auto me = run.rank;
      const auto other = static_cast<std::uint32_t>(peer);
      if (op.kind == OpKind::send) {
        run.wait = Wait::send;
        post_put(mailbox_key(me, classes_.representative(peer), 0, op.tag), id, route_of(me, other),
                 bytes_of(op.bytes));
      } else {
        run.wait = Wait::recv;
        post_get(mailbox_key(classes_.representative(peer), me, 0, op.tag), id);
      }
      return run.pending == 0;
    }
  }
  return true;
}

std::uint64_t FastSimulation::next_sequence(StreamRun& run, int group) {
  for (auto& [g, count] : run.collectives_of_group)
    if (g == group) return count++;
  run.collectives_of_group.emplace_back(group, 1);
  return 0;
}

void FastSimulation::emit(const StreamRun& run, bool is_end) {
  OpEvent event;
  event.time_s = reported(now_);
  event.start_s = run.start_s;
  event.rank = run.rank;
  event.op = run.op;
  event.iteration = run.iteration;
  event.stream = run.stream;
  event.is_end = is_end;
  sink_.on_event(event);
  ++stats_.op_events;
}

bool FastSimulation::wait_for(StreamRun& run, std::uint32_t id, RankRun& rank, std::uint16_t stream,
                              std::uint64_t count, Wait why) {
  if (rank.completed[stream] >= count) return true;
  run.wait = why;
  run.wait_stream = stream;
  run.wait_count = count;
  ++stats_.activities;
  rank.waiters[stream].emplace_back(id, count);
  return false;
}

void FastSimulation::complete(RankRun& rank, std::uint16_t stream) {
  const std::uint64_t done = ++rank.completed[stream];
  auto& waiters = rank.waiters[stream];
  if (waiters.empty()) return;
  std::size_t kept = 0;
  for (const auto& waiter : waiters) {
    if (waiter.second <= done)
      ready_.push_back(waiter.first);
    else
      waiters[kept++] = waiter;
  }
  waiters.resize(kept);
}

void FastSimulation::release_host(RankRun& rank) {
  const HostPlan& plan = host_plans_[rank.program];
  const std::uint64_t segment = rank.waits_released;
  const double issued = plan.wait_issued_s(segment, rank.segment_start_s[segment], host_launch_s_);
  rank.segment_start_s.push_back(std::max(issued, now_));
  ++rank.waits_released;
  for (const std::uint32_t waiter : rank.host_waiters) ready_.push_back(waiter);
  rank.host_waiters.clear();
}

bool FastSimulation::match_pipeline_peer(StreamRun& run, std::uint32_t id, const Op& op) {
  // The peer is found once per op: start_op reuses it.
  if (!run.posted) run.peer = prepared_.pipeline_peer(static_cast<int>(run.rank), op.peer_offset);
  const bool send = op.kind == OpKind::send;
  const auto me = run.rank;
  const std::uint32_t other_class = classes_.representative(run.peer);
  PipeChannel& channel =
      pipe_channels_[send ? mailbox_key(me, other_class, 0, op.tag) : mailbox_key(other_class, me, 0, op.tag)];
  if (!run.posted) {
    run.posted = true;
    run.wait_count = send ? ++channel.sends : ++channel.receives;
    for (const std::uint32_t waiter : channel.waiters) ready_.push_back(waiter);
    channel.waiters.clear();
  }
  const std::uint64_t theirs = send ? channel.receives : channel.sends;
  if (theirs >= run.wait_count) {
    run.posted = false;
    return true;
  }
  run.wait = send ? Wait::send : Wait::recv;
  ++stats_.activities;
  channel.waiters.push_back(id);
  return false;
}

bool FastSimulation::synchronize(StreamRun& run, std::uint32_t id, const CollectiveStep& step) {
  const SyncKey key{run.collective.group, run.stream, run.sequence, run.cursor, step.sync_id};
  const auto it = rendezvous_.try_emplace(key).first;
  Rendezvous& rendezvous = it->second;
  ++stats_.activities;
  if (++rendezvous.arrived == sync_arrivals(run, step)) {
    for (const std::uint32_t waiter : rendezvous.waiters) ready_.push_back(waiter);
    rendezvous_.erase(it);
    return true;
  }
  run.wait = Wait::sync;
  rendezvous.waiters.push_back(id);
  return false;
}

int FastSimulation::sync_arrivals(const StreamRun& run, const CollectiveStep& step) {
  if (!classes_.reduced()) return step.sync_members;
  const SyncCountKey key{run.collective.group, run.collective.plan, run.cursor};
  if (const auto it = sync_counts_.find(key); it != sync_counts_.end()) return it->second;
  int count = 0;
  for (const int member : *run.collective.members) {
    if (!classes_.is_representative(member)) continue;
    const RankCollective theirs = prepared_.collective(member, run.stream, run.op);
    if (theirs.plan->steps[run.cursor].sync_id == step.sync_id) ++count;
  }
  sync_counts_.emplace(key, count);
  return count;
}

}  // namespace
}  // namespace chopsim::sim_detail::fast
