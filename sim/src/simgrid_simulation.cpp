// The SimGrid execution of a workload (docs/design.md, "Engine semantics (SimGrid)").
//
// * Platform: one host per rank ("gpu<r>", speed 1 work unit per second, so an Exec of d units lasts d seconds at
//   full speed; the compute model alone decides kernel time), one split-duplex link per topology link that some route
//   uses, and an explicit route (from Topology::route) for every ordered pair of ranks that exchanges data, in one
//   full zone. Hosts take a speed list so that clock steps can become pstates (issue 3: a governor will call
//   Host::set_pstate, which stretches running Execs immediately; ../shared/docs/simgrid-3.32-notes.md).
// * Network model CM02 without cross traffic and with the TCP window bound off (network/TCP-gamma:0 disables it in
//   3.32; checked by the engine test "large transfer over a long link gets full bandwidth"): a transfer alone on a
//   route takes latency + size / bottleneck bandwidth, concurrent transfers share links max-min fairly. The sharing
//   system is re-solved in full at every change (network/optim:Full): 3.32's default lazy update left a flow at its
//   whole rate after two kernels ending at one instant released two flows onto its link (engine test "flows joining
//   mid-transfer take their max-min share"; Llama-3-70B LoRA's tensor-parallel reduce-scatter ran 30 µs early beside
//   an interleaved pipeline's send). Full costs little: 64-GPU Llama-3-70B 12.2-12.8 s against 13.3 s, 512 GPUs 88 s
//   against 81 s.
// * One actor per (rank, stream). An op starts when the previous op of its stream has ended and its dependencies
//   (ops of other streams of the rank, same iteration) have completed: per-rank completion counters per stream, and a
//   condition variable per stream that is only signalled when someone waits on it.
// * Iterations: a stream starts iteration i+1 once every stream of its rank has finished iteration i.
// * Collectives run their plan's steps: all sends and receives of a step posted at once on mailboxes keyed by
//   (source, destination, stream, channel), wait for all, then sleep the step's latency. Pipeline send/recv use
//   mailboxes keyed by (source, destination, tag). Mailboxes match in FIFO order, which is what makes the plans'
//   "same order per (peer, channel)" contract sufficient. Steps marked for synchronisation (pipelined rings, trees)
//   end for all their members at once, on an s4u::Barrier.
// * Pipeline send/recv start when both sides are there. The n-th send and the n-th receive of a (source,
//   destination, tag) channel match (the mailbox's FIFO order); whichever side is posted first waits, as a stream
//   that has not started its op, until its peer is posted. Only then is the op's start reported and does the rank
//   count as communicating (contention slowdown, communication power): an early-posted receive waiting for its
//   sender is pipeline bubble, not exposed communication (a NCCL receive kernel launched early spins on a few SMs,
//   which is not modelled). The transfer itself is the mailbox put/get, matched at that same instant.
// * Compute slowdown while communicating: while at least one communication op is active on a rank, an Exec of
//   unbounded work runs on its host with a bound of comm_compute_slowdown (fraction of the host speed) and a large
//   sharing weight, so SimGrid's max-min CPU sharing leaves 1 - slowdown to the kernels (verified exact in the engine
//   tests). It is cancelled when the last communication op of the rank ends.
// * Power dynamics (SimulationInput::power, issue 3): every package of dies_per_package GPUs is a PowerDomain
//   (models/power_dynamics.hpp) told of every op start and end. With a governor that moves clocks, kernels are not
//   SimGrid Execs: a kernel progresses at share / d(f) of itself per second, d(f) being the compute model's duration
//   at the clock of the moment (compute-bound kernels stretch with 1/f, memory-bound ones hardly: only their compute
//   limit scales), share = (1 - comm_compute_slowdown while communication runs) / kernels on the GPU - exactly what
//   the bounded load Exec gives an Exec. The kernel's actor waits on its rank's condition variable until the kernel's
//   predicted end or the domain's next timed governor decision, whichever is first; whoever changes a rate (a clock
//   change, a communication starting) brings the kernel's progress up to date and wakes it to wait anew. Why not
//   SimGrid pstates: a pstate scales the whole host's speed, so a memory-bound kernel would stretch like a
//   compute-bound one, and the speed table is fixed at seal while the governor's clock steps depend on the load.
//   Timed decisions of a domain with no kernel running are taken late, at its next load change, in time order:
//   nothing simulated depends on the clock meanwhile. With a governor that holds clocks fixed, kernels stay Execs
//   of their duration at that clock (exactly the engine without power dynamics) and the domains only account power.
// * The host (SimulationInput::host_launch_s > 0 and a Program::issue_order): each rank has one launching thread
//   that issues the ops of its program in issue order, IssueStep::launches x host_launch_s apart, and after an op
//   with host_waits blocks until that op completes. An op starts no earlier than its first launch; one of several
//   launches (a host-bound Python loop over tensors) runs its modelled GPU time from the first and completes with
//   the last, the GPU idle in between (its end event is the end of the GPU work, so the breakdown counts the rest
//   as idle). The host's timeline needs no actor of its own: between two host waits it launches without pause, so
//   the issue time of the op at position g is the segment's start time plus host_launch_s times the launches issued
//   since then (prefix sums over the issue order, per program). A segment starts when its host wait is released: at
//   the later of the waited op's completion and the host having issued it. An actor needing an op of a segment whose
//   wait is not released yet waits on the rank's host condition variable. An actor sleeps only when its op's launch
//   is later than now, so a GPU-bound run pays nothing.
// * Measured ops (replayed traces, Op::duration_s >= 0): a fixed-duration kernel or a delay (host gap) holds its
//   stream for exactly its duration (a sleep, not an Exec: the measurement already includes sharing and the clock;
//   power domains do not see them); a fixed-duration collective is one synchronised step without transfers whose
//   latency is the measured time (PreparedWorkload).
//
// The simulation's state and its declaration: simgrid_simulation_state.hpp; kernels under power dynamics:
// simgrid_simulation_power.cpp; transfers and collectives: simgrid_simulation_comm.cpp.

#include "simgrid_simulation.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/topology.hpp"
#include "simgrid_simulation_state.hpp"

namespace chopsim::sim_detail::sg {

/// Actor stack size (KiB). Actors run the engine's code only; observers run in the parent, or on these stacks in
/// in-process mode, hence the margin.
constexpr int kStackKiB = 512;
/// Above this many actors the stacks go without guard pages. SimGrid protects a guard page below every actor's
/// stack with mprotect, which splits the stack's mapping in two; Linux allows 65,530 mappings per process
/// (vm.max_map_count), so about 32,000 actors (6,500 GPUs of five streams) abort with "Failed to protect stack".
/// Without guards (contexts/guard-size:0) a stack is one allocation: 8,192 GPUs and more run where memory allows.
/// Below the threshold the guards stay, to catch a stack overflow.
constexpr std::size_t kGuardedActors = 16384;

// ---- setup ----------------------------------------------------------------------------------------------------

SimulationStats Simulation::run() {
  if (sg4::Engine::has_instance())
    throw EngineError(
        "SimGrid already ran in this process (one engine per process): run with isolate_in_child_process = true");
  std::vector<std::string> args{"chopsim", "--log=root.thres:critical", "--cfg=network/model:" + options_.network_model,
                                "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
                                // The lazy update (3.32's default) missed a re-share: see the file's header.
                                "--cfg=network/optim:Full", "--cfg=contexts/stack-size:" + std::to_string(kStackKiB)};
  std::size_t actors = 0;
  for (std::size_t r = 0; r < workload_.program_of_rank.size(); ++r)
    actors += workload_.program(static_cast<int>(r)).streams.size();
  if (actors > kGuardedActors) args.emplace_back("--cfg=contexts/guard-size:0");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  // Deliberately never deleted: SimGrid allows one engine per process and a destroyed engine would let a second
  // in-process run start on leftover state; while it lives, has_instance() refuses that run. A forked child exits
  // right after the run anyway.
  auto* engine = new sg4::Engine(&argc, argv.data());

  build_platform();
  create_actors();
  create_power_domains();
  in_simulation_ = true;
  engine->run();
  in_simulation_ = false;
  for (RankState& rank : ranks_) rank.comm_load = nullptr;
  for (RankState& rank : ranks_) rank.kernel_signal = nullptr;
  for (RankState& rank : ranks_) rank.host_signal = nullptr;
  pipe_channels_.clear();
  pipe_mutex_ = nullptr;
  if (failure_) std::rethrow_exception(failure_);
  report_deadlock();
  stats_.makespan_s = 0.0;
  for (const double t : stats_.iteration_end_s) stats_.makespan_s = std::max(stats_.makespan_s, t);
  for (auto& domain : domains_) {
    domain->finish(stats_.makespan_s);
    stats_.governor_decisions += domain->stats().decisions;
    stats_.governor_timed_events += domain->stats().timed_events;
  }
  return stats_;
}

void Simulation::build_platform() {
  const Topology& topology = *prepared_.input().topology;
  auto* zone = sg4::create_full_zone("cluster");
  const int world = prepared_.world_size();
  hosts_.reserve(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    // One pstate for now; issue 3 adds the governor's clock steps here.
    hosts_.push_back(zone->create_host("gpu" + std::to_string(r), std::vector<double>{1.0}));
    hosts_.back()->seal();
  }
  std::vector<sg4::Link*> links(topology.links().size(), nullptr);
  std::vector<sg4::LinkInRoute> route;
  for (const auto& [src, dst] : prepared_.communicating_pairs()) {
    route.clear();
    for (const RouteHop& hop : topology.route(src, dst)) {
      sg4::Link*& link = links[static_cast<std::size_t>(hop.link)];
      if (link == nullptr) {
        const TopologyLink& spec = topology.links()[static_cast<std::size_t>(hop.link)];
        link = zone->create_split_duplex_link(spec.name, spec.bandwidth_bytes_per_s);
        link->set_latency(spec.latency_s);
        link->seal();
      }
      route.emplace_back(link, hop.forward ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
    }
    zone->add_route(hosts_[static_cast<std::size_t>(src)]->get_netpoint(),
                    hosts_[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();
}

void Simulation::create_actors() {
  const int world = prepared_.world_size();
  const int iterations = prepared_.input().iterations;
  stats_.iteration_end_s.assign(static_cast<std::size_t>(iterations), 0.0);
  slowdown_ = prepared_.input().compute->params().comm_compute_slowdown;
  pipe_mutex_ = sg4::Mutex::create();
  if (!(slowdown_ >= 0.0 && slowdown_ < 1.0))
    throw EngineError("comm_compute_slowdown must be in [0, 1), got " + std::to_string(slowdown_));
  ranks_.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    RankState& rank = ranks_[static_cast<std::size_t>(r)];
    rank.program = workload_.program_of_rank[static_cast<std::size_t>(r)];
    const Program& program = workload_.programs[rank.program];
    const std::size_t streams = program.streams.size();
    rank.completed.assign(streams, 0);
    rank.waiters.assign(streams, 0);
    for (const Stream& s : program.streams) rank.lengths.push_back(s.ops.size());
    rank.mutex = sg4::Mutex::create();
    for (std::size_t s = 0; s < streams; ++s) rank.signals.push_back(sg4::ConditionVariable::create());
    if (host_modelled(rank)) rank.host_signal = sg4::ConditionVariable::create();
  }
  host_plans_.resize(workload_.programs.size());
  for (std::size_t p = 0; p < workload_.programs.size() && prepared_.input().host_launch_s > 0.0; ++p)
    host_plans_[p] = HostPlan::of(workload_.programs[p]);
  // Actor states are allocated up front so that references stay valid.
  std::size_t actors = 0;
  for (const RankState& rank : ranks_) actors += rank.completed.size();
  actors_.reserve(actors);
  for (int r = 0; r < world; ++r) {
    const Program& program = workload_.programs[ranks_[static_cast<std::size_t>(r)].program];
    for (std::size_t s = 0; s < program.streams.size(); ++s) {
      ActorState* state = &actors_.emplace_back();
      state->rank = r;
      state->stream = static_cast<std::uint16_t>(s);
      sg4::Actor::create("r" + std::to_string(r) + "." + program.streams[s].name, hosts_[static_cast<std::size_t>(r)],
                         [this, state] { stream_actor(*state); });
    }
  }
}

// ---- the host ---------------------------------------------------------------------------------------------------

std::pair<double, double> Simulation::host_issue(ActorState& actor, RankState& rank, std::uint32_t iteration,
                                                 std::uint32_t op) {
  const HostPlan& plan = host_plans_[rank.program];
  const std::uint64_t segment = plan.segment_of(actor.stream, op, iteration);
  if (rank.waits_released < segment) {
    actor.wait = Wait::host;
    ++rank.host_waiters;
    ++stats_.activities;
    rank.mutex->lock();
    while (rank.waits_released < segment) rank.host_signal->wait(rank.mutex);
    rank.mutex->unlock();
    --rank.host_waiters;
    actor.wait = Wait::none;
  }
  return plan.issue_times(actor.stream, op, iteration, rank.segment_start_s[segment], prepared_.input().host_launch_s);
}

void Simulation::release_host(RankState& rank) {
  const HostPlan& plan = host_plans_[rank.program];
  const std::uint64_t segment = rank.waits_released;  // the wait ends this segment
  const double issued = plan.wait_issued_s(segment, rank.segment_start_s[segment], prepared_.input().host_launch_s);
  rank.segment_start_s.push_back(std::max(issued, sg4::Engine::get_clock()));
  ++rank.waits_released;
  if (rank.host_waiters == 0) return;
  rank.mutex->lock();
  rank.host_signal->notify_all();
  rank.mutex->unlock();
}

// ---- ordering -------------------------------------------------------------------------------------------------

void Simulation::wait_for(ActorState& actor, RankState& rank, std::uint16_t stream, std::uint64_t count, Wait why) {
  if (rank.completed[stream] >= count) return;
  actor.wait = why;
  actor.wait_stream = stream;
  actor.wait_count = count;
  // Register before the first simcall: the notifier only signals streams with waiters.
  ++rank.waiters[stream];
  ++stats_.activities;
  rank.mutex->lock();
  while (rank.completed[stream] < count) rank.signals[stream]->wait(rank.mutex);
  rank.mutex->unlock();
  --rank.waiters[stream];
  actor.wait = Wait::none;
}

void Simulation::complete(RankState& rank, std::uint16_t stream) {
  ++rank.completed[stream];
  if (rank.waiters[stream] == 0) return;
  rank.mutex->lock();
  rank.signals[stream]->notify_all();
  rank.mutex->unlock();
}

// ---- events ---------------------------------------------------------------------------------------------------

bool Simulation::emit(const OpEvent& event) {
  if (failure_) return false;
  try {
    sink_.on_event(event);
    ++stats_.op_events;
    return true;
  } catch (const std::exception&) {
    fail();
    return false;
  }
}

void Simulation::fail() {
  failure_ = std::current_exception();
  for (RankState& rank : ranks_)
    if (rank.comm_load) rank.comm_load->cancel();
  sg4::Actor::kill_all();
}

// ---- the actor ------------------------------------------------------------------------------------------------

void Simulation::stream_actor(ActorState& actor) {
  RankState& rank = ranks_[static_cast<std::size_t>(actor.rank)];
  const Program& program = workload_.programs[rank.program];
  const Stream& stream = program.streams[actor.stream];
  const auto iterations = static_cast<std::uint32_t>(prepared_.input().iterations);
  const bool host = host_modelled(rank);
  static const std::vector<std::uint32_t> kNone;
  const std::vector<std::uint32_t>& host_waits_after =
      host ? host_plans_[rank.program].waits_of_stream[actor.stream] : kNone;  // ops the host waits for, in order
  for (std::uint32_t it = 0; it < iterations; ++it) {
    actor.iteration = it;
    auto next_host_wait = host_waits_after.begin();
    for (std::uint32_t i = 0; i < stream.ops.size(); ++i) {
      actor.op = i;
      const Op& op = stream.ops[i];
      for (std::uint32_t d = 0; d < op.dependency_count; ++d) {
        const OpDependency& dep = program.dependencies[op.first_dependency + d];
        wait_for(actor, rank, dep.stream, it * rank.lengths[dep.stream] + dep.op + 1, Wait::dependency);
      }
      std::pair<double, double> issue{0.0, 0.0};
      if (host) issue = host_issue(actor, rank, it, i);
      if (issue.first > sg4::Engine::get_clock()) {  // the host is behind: the GPU waits for the launch
        actor.wait = Wait::host;
        ++stats_.activities;
        sg4::this_actor::sleep_until(issue.first);
        actor.wait = Wait::none;
      }
      if (op.kind == OpKind::send || op.kind == OpKind::recv) match_pipeline_peer(actor, op);
      OpEvent event;
      event.time_s = sg4::Engine::get_clock();
      event.start_s = event.time_s;
      event.rank = static_cast<std::uint32_t>(actor.rank);
      event.op = i;
      event.iteration = it;
      event.stream = actor.stream;
      if (!emit(event)) return;
      execute(actor, rank, op);
      event.time_s = sg4::Engine::get_clock();
      event.is_end = true;
      if (!emit(event)) return;
      if (issue.second > sg4::Engine::get_clock()) {
        // Several launches (a host-bound loop): the GPU work is done, and the GPU idles between the remaining
        // launches; the op's result is complete with the last one.
        actor.wait = Wait::host;
        ++stats_.activities;
        sg4::this_actor::sleep_until(issue.second);
        actor.wait = Wait::none;
      }
      double& iteration_end = stats_.iteration_end_s[it];
      iteration_end = std::max(iteration_end, sg4::Engine::get_clock());
      complete(rank, actor.stream);
      if (next_host_wait != host_waits_after.end() && *next_host_wait == i) {
        ++next_host_wait;
        release_host(rank);
      }
    }
    // Per-rank barrier between iterations.
    actor.op = static_cast<std::uint32_t>(stream.ops.size());
    for (std::size_t s = 0; s < rank.lengths.size(); ++s)
      wait_for(actor, rank, static_cast<std::uint16_t>(s), (it + 1) * rank.lengths[s], Wait::barrier);
  }
  actor.finished = true;
}

void Simulation::execute(ActorState& actor, RankState& rank, const Op& op) {
  switch (op.kind) {
    case OpKind::delay:
    case OpKind::compute: {
      const double duration = prepared_.duration_s(rank.program, actor.stream, actor.op);
      if (duration <= 0.0) return;
      if (op.kind == OpKind::delay || op.duration_s >= 0.0) {
        // A host gap, or a measured kernel: it holds its stream for exactly its duration. Not an Exec: measured
        // times already include sharing the GPU with concurrent kernels and communication, and the clock they
        // ran at, so neither max-min sharing nor the power domain's clock may stretch them again.
        ++stats_.activities;
        sg4::this_actor::sleep_for(duration);
        return;
      }
      if (dynamic_clocks_) {
        run_kernel(rank, op);
        return;
      }
      PowerDomain* domain = rank.domain >= 0 ? domains_[static_cast<std::size_t>(rank.domain)].get() : nullptr;
      PowerDomain::KernelHandle handle = 0;
      if (domain != nullptr) handle = domain->kernel_begin(sg4::Engine::get_clock(), rank.die, kernel_work(op));
      ++stats_.activities;
      sg4::this_actor::execute(duration);
      if (domain != nullptr) domain->kernel_end(sg4::Engine::get_clock(), rank.die, handle);
      return;
    }
    case OpKind::collective:
      comm_begin(rank);
      run_collective(actor, prepared_.collective(actor.rank, actor.stream, actor.op));
      comm_end(rank);
      return;
    case OpKind::send:
    case OpKind::recv: {
      comm_begin(rank);
      const int peer = prepared_.pipeline_peer(actor.rank, op.peer_offset);
      actor.peer = peer;
      ++stats_.activities;
      if (op.kind == OpKind::send) {
        actor.wait = Wait::send;
        mailbox({static_cast<std::uint32_t>(actor.rank), static_cast<std::uint32_t>(peer), 0, op.tag})
            ->put(&payload_, bytes(op.bytes));
      } else {
        actor.wait = Wait::recv;
        void* data = nullptr;
        mailbox({static_cast<std::uint32_t>(peer), static_cast<std::uint32_t>(actor.rank), 0, op.tag})
            ->get_async<void>(&data)
            ->wait();
      }
      actor.wait = Wait::none;
      comm_end(rank);
      return;
    }
  }
}

// ---- deadlock -------------------------------------------------------------------------------------------------

void Simulation::report_deadlock() const {
  std::vector<StreamPosition> stuck;
  for (const ActorState& a : actors_)
    if (!a.finished) stuck.push_back(a);  // its position
  sim_detail::report_deadlock(prepared_, host_plans_, sg4::Engine::get_clock(), actors_.size(), stuck, [&](int r) {
    const RankState& rank = ranks_[static_cast<std::size_t>(r)];
    return RankProgress{rank.program, &rank.completed, &rank.lengths, rank.waits_released};
  });
}

}  // namespace chopsim::sim_detail::sg

namespace chopsim::sim_detail {

SimulationStats run_simgrid(const PreparedWorkload& prepared, const EngineOptions& options, EventSink& sink) {
  sg::Simulation simulation(prepared, options, sink);
  return simulation.run();
}

}  // namespace chopsim::sim_detail
