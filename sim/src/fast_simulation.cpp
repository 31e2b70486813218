// The "fast" engine (docs/design.md, "Engine semantics (fast)"): the SimGrid engine's semantics on an event loop of
// our own, without actors.
//
// * Every (rank, stream) is a state machine (StreamRun) that runs until it blocks: on a dependency or the iteration
//   barrier (a waiter on the rank's completion counter of that stream), on the host (a waiter on the rank's host
//   release, or a timer at its launch), on its pipeline peer, on a kernel, on transfers, on a synchronised step or a
//   step's latency. Whoever unblocks it puts it on the ready list; the loop runs the ready list, then re-solves the
//   network, then takes the next timer in (time, insertion sequence) order (timer_queue.hpp), so ties resolve the same
//   way on every run. Timers that a rate change made stale carry an old version and are skipped; a power domain's
//   next timed decision is a re-armable slot instead.
// * Kernels share their GPU as the SimGrid host's max-min CPU sharing shares it: n kernels each get 1/n, and while
//   communication runs on the GPU they share 1 - comm_compute_slowdown (the bounded load Exec of the SimGrid engine).
//   Under power dynamics with moving clocks a kernel progresses at the power domain's kernel_rate (share / d(f)), and
//   while a kernel runs on a domain its governor's timed decisions are taken at the times it names; a domain with no
//   kernel running takes them late, at its next load change (as in the SimGrid engine).
// * Transfers: a put and a get on a mailbox (source, destination, stream, channel) for collectives and (source,
//   destination, tag) for pipeline send/recv match in FIFO order; the matched transfer pays its route's latency,
//   then enters the FlowNetwork (CM02's max-min sharing, weighted by 1 / route latency) until its bytes are through.
// * Collectives run their plan's steps: all sends and receives of a step posted at once, wait for all, then the
//   synchronisation of the step's members if the step asks for it, then the step's latency.
// * The host: HostPlan's closed form (host_plan.hpp), as in the SimGrid engine.

#include "fast_simulation.hpp"

#include "fast_simulation_state.hpp"

namespace chopsim::sim_detail::fast {
namespace {

SimulationStats FastSimulation::run() {
  slowdown_ = prepared_.input().compute->params().comm_compute_slowdown;
  if (!(slowdown_ >= 0.0 && slowdown_ < 1.0))
    throw EngineError("comm_compute_slowdown must be in [0, 1), got " + std::to_string(slowdown_));
  if (classes_.reduced()) sink_.on_rank_classes(classes_.representatives_of_ranks());
  if (prepared_.input().fold.enabled()) {
    fold_ = &prepared_.input().fold;
    check_fold_plan();
  }
  build_routes();
  create_runs();
  create_power_domains();
  loop();
  report_deadlock();
  stats_.makespan_s = 0.0;
  for (const double t : stats_.iteration_end_s) stats_.makespan_s = std::max(stats_.makespan_s, t);
  for (auto& domain : domains_) {
    if (!domain) continue;
    domain->finish(stats_.makespan_s - folded_s_);  // the domains run on simulated time
    stats_.governor_decisions += domain->stats().decisions;
    stats_.governor_timed_events += domain->stats().timed_events;
  }
  return stats_;
}

void FastSimulation::build_routes() {
  const Topology& topology = *prepared_.input().topology;
  std::vector<std::int64_t> constraint_of(topology.links().size() * 2, -1);
  std::vector<double> capacities;
  const auto& pairs = prepared_.communicating_pairs();
  routes_.reserve(pairs.size());
  std::vector<std::int64_t> hop_of(topology.links().size() * 2, -1);  // link direction -> index in the route
  std::vector<std::size_t> touched;
  for (const auto& [src, dst] : pairs) {
    Route route;
    touched.clear();
    // Under symmetry the transfer stands for its images in every member of the class: each image's route loads
    // the links it crosses.
    for (int image = 0; image < classes_.class_size(); ++image) {
      const int from = classes_.image(src, image), to = classes_.image(dst, image);
      for (const RouteHop& hop : topology.route(from, to)) {
        const TopologyLink& link = topology.links()[static_cast<std::size_t>(hop.link)];
        const std::size_t direction = static_cast<std::size_t>(hop.link) * 2 + (hop.forward ? 0 : 1);
        if (constraint_of[direction] < 0) {
          constraint_of[direction] = static_cast<std::int64_t>(capacities.size());
          capacities.push_back(link.bandwidth_bytes_per_s);
        }
        if (image == 0) route.latency_s += link.latency_s;
        if (hop_of[direction] >= 0) {
          route.uses[static_cast<std::size_t>(hop_of[direction])] += 1.0;
          continue;
        }
        hop_of[direction] = static_cast<std::int64_t>(route.constraints.size());
        touched.push_back(direction);
        route.constraints.push_back(static_cast<std::uint32_t>(constraint_of[direction]));
        route.uses.push_back(1.0);
      }
    }
    for (const std::size_t direction : touched) hop_of[direction] = -1;
    if (std::all_of(route.uses.begin(), route.uses.end(), [](double u) { return u == 1.0; })) route.uses.clear();
    // CM02 with weight-S = 0: sharing penalty = route latency, or 1 for a route without latency.
    route.weight = route.latency_s > 0.0 ? 1.0 / route.latency_s : 1.0;
    route_of_pair_.emplace(pair_key(static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst)),
                           static_cast<std::uint32_t>(routes_.size()));
    routes_.push_back(std::move(route));
  }
  merge_equivalent_constraints(capacities);
  network_ = std::make_unique<FlowNetwork>(std::move(capacities));
}

void FastSimulation::merge_equivalent_constraints(std::vector<double>& capacities) {
  using Incidence = std::vector<std::pair<std::uint32_t, double>>;  // (route, uses), by route
  std::vector<Incidence> incidence(capacities.size());
  for (std::size_t r = 0; r < routes_.size(); ++r) {
    const Route& route = routes_[r];
    for (std::size_t h = 0; h < route.constraints.size(); ++h)
      incidence[route.constraints[h]].emplace_back(static_cast<std::uint32_t>(r),
                                                   route.uses.empty() ? 1.0 : route.uses[h]);
  }
  std::map<std::pair<double, Incidence>, std::uint32_t> merged_of;
  std::vector<std::uint32_t> merged(capacities.size());
  std::vector<double> merged_capacities;
  for (std::size_t c = 0; c < capacities.size(); ++c) {
    auto [it, added] = merged_of.emplace(std::make_pair(capacities[c], std::move(incidence[c])),
                                         static_cast<std::uint32_t>(merged_capacities.size()));
    if (added) merged_capacities.push_back(capacities[c]);
    merged[c] = it->second;
  }
  for (Route& route : routes_) {
    std::vector<std::uint32_t> constraints;
    std::vector<double> uses;
    for (std::size_t h = 0; h < route.constraints.size(); ++h) {
      const std::uint32_t c = merged[route.constraints[h]];
      if (std::find(constraints.begin(), constraints.end(), c) != constraints.end()) continue;
      constraints.push_back(c);
      uses.push_back(route.uses.empty() ? 1.0 : route.uses[h]);
    }
    route.constraints = std::move(constraints);
    if (std::all_of(uses.begin(), uses.end(), [](double u) { return u == 1.0; })) uses.clear();
    route.uses = std::move(uses);
  }
  capacities = std::move(merged_capacities);
}

void FastSimulation::create_runs() {
  const int world = prepared_.world_size();
  stats_.iteration_end_s.assign(static_cast<std::size_t>(prepared_.input().iterations), 0.0);
  host_plans_.resize(workload_.programs.size());
  for (std::size_t p = 0; p < workload_.programs.size() && host_launch_s_ > 0.0; ++p)
    host_plans_[p] = HostPlan::of(workload_.programs[p]);
  ranks_.resize(static_cast<std::size_t>(world));
  std::size_t runs = 0;
  for (const int r : classes_.representatives()) runs += workload_.program(r).streams.size();
  runs_.reserve(runs);
  ready_.reserve(runs);
  for (const int r : classes_.representatives()) {
    RankRun& rank = ranks_[static_cast<std::size_t>(r)];
    rank.program = workload_.program_of_rank[static_cast<std::size_t>(r)];
    const Program& program = workload_.programs[rank.program];
    rank.host = host_launch_s_ > 0.0 && !program.issue_order.empty();
    rank.completed.assign(program.streams.size(), 0);
    rank.waiters.resize(program.streams.size());
    for (const Stream& s : program.streams) rank.lengths.push_back(s.ops.size());
    for (std::size_t s = 0; s < program.streams.size(); ++s) {
      StreamRun& run = runs_.emplace_back();
      run.rank = static_cast<std::uint32_t>(r);
      run.stream = static_cast<std::uint16_t>(s);
      ready_.push_back(static_cast<std::uint32_t>(runs_.size() - 1));
    }
  }
}

void FastSimulation::create_power_domains() {
  if (power_ == nullptr) return;
  const SimulationInput& input = prepared_.input();
  std::vector<PowerDomainSettings> packages = power_packages(*power_, prepared_.world_size(), slowdown_);
  const std::size_t count = packages.size();
  domain_ranks_.resize(count);
  domain_timer_s_.assign(count, kInfinity);
  domain_unsettled_.assign(count, 0);
  timers_.resize_slots(count);
  for (int d = 0; d < static_cast<int>(count); ++d) {
    PowerDomainSettings& settings = packages[static_cast<std::size_t>(d)];
    // A package of representatives holds representatives only (RankClasses); the others are not simulated.
    if (!classes_.is_representative(static_cast<int>(settings.dies.front().gpu))) {
      domains_.push_back(nullptr);
      listeners_.push_back(nullptr);
      continue;
    }
    for (std::size_t die = 0; die < settings.dies.size(); ++die) {
      const int r = static_cast<int>(settings.dies[die].gpu);
      ranks_[static_cast<std::size_t>(r)].domain = d;
      ranks_[static_cast<std::size_t>(r)].die = static_cast<int>(die);
      domain_ranks_[static_cast<std::size_t>(d)].push_back(r);
    }
    listeners_.push_back(std::make_unique<DomainListener>(*this, d));
    domains_.push_back(std::make_unique<PowerDomain>(
        *input.compute, *power_->power, *power_->thermal, *power_->governor, std::move(settings),
        static_cast<TelemetrySink*>(this), dynamic_clocks_ ? listeners_.back().get() : nullptr));
    domains_.back()->start(0.0);
  }
}

void FastSimulation::on_telemetry(const GpuStateSample& sample) {
  if (folded_s_ > 0.0) {
    GpuStateSample later = sample;
    later.time_s = reported(sample.time_s);
    sink_.on_telemetry(later);
  } else {
    sink_.on_telemetry(sample);
  }
  ++stats_.telemetry_samples;
}

void FastSimulation::loop() {
  std::vector<FlowNetwork::FlowId> changed;
  for (;;) {
    for (std::size_t i = 0; i < ready_.size(); ++i) advance(ready_[i]);
    ready_.clear();
    if (network_->dirty()) {
      changed.clear();
      network_->solve(now_, changed);
      for (const FlowNetwork::FlowId flow : changed) schedule_flow_end(flow_owner_[flow]);
    }
    settle_domains();
    if (timers_.empty()) return;
    // Every timer of this instant before the ready list runs and the network is re-solved.
    const double instant = timers_.next_time_s();
    now_ = instant;
    while (!timers_.empty() && timers_.next_time_s() == instant) fire(timers_.pop());
  }
}

void FastSimulation::fire(const TimerEntry& timer) {
  switch (static_cast<TimerKind>(timer.kind)) {
    case TimerKind::wake:
      ready_.push_back(timer.target);
      return;
    case TimerKind::flow_start:
      start_flow(timer.target);
      return;
    case TimerKind::flow_end: {
      CommRun& comm = comms_[timer.target];
      if (!comm.active || comm.version != timer.version) return;
      finish_comm(timer.target);
      return;
    }
    case TimerKind::kernel_end: {
      const KernelRun& kernel = kernels_[timer.target];
      if (!kernel.active || kernel.version != timer.version) return;
      if (dynamic_clocks_)
        dynamic_kernel_due(timer.target);
      else
        end_kernel(timer.target);
      return;
    }
    case TimerKind::domain: {
      const auto d = static_cast<std::size_t>(timer.target);
      domain_timer_s_[d] = kInfinity;  // the slot fired and is disarmed
      domains_[d]->advance_to(now_);
      update_domain_timer(timer.target);
      return;
    }
  }
}

void FastSimulation::sleep_until(StreamRun& run, std::uint32_t id, double time_s, Wait why) {
  run.wait = why;
  ++stats_.activities;
  push_timer(time_s, TimerKind::wake, id);
}

void FastSimulation::report_deadlock() const {
  std::vector<StreamPosition> stuck;
  for (const StreamRun& run : runs_)
    if (run.phase != Phase::finished)
      stuck.push_back({static_cast<int>(run.rank), run.stream, run.iteration, run.op, run.wait, run.wait_stream,
                       run.wait_count, run.cursor, run.peer});
  sim_detail::report_deadlock(prepared_, host_plans_, now_, runs_.size(), stuck, [&](int r) {
    const RankRun& rank = ranks_[static_cast<std::size_t>(r)];
    return RankProgress{rank.program, &rank.completed, &rank.lengths, rank.waits_released};
  });
}

}  // namespace
}  // namespace chopsim::sim_detail::fast

namespace chopsim::sim_detail {

SimulationStats run_fast(const PreparedWorkload& prepared, const RankClasses& classes, EventSink& sink) {
  fast::FastSimulation simulation(prepared, classes, sink);
  return simulation.run();
}

}  // namespace chopsim::sim_detail
