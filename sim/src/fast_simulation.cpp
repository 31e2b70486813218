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

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/topology.hpp"
#include "flow_network.hpp"
#include "host_plan.hpp"
#include "symmetry.hpp"
#include "timer_queue.hpp"

namespace chopsim::sim_detail {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// KernelRun::rate of a kernel begun at this instant, before its domain has decided.
constexpr double kRateUnknown = -1.0;
/// Stuck streams listed in a deadlock message.
constexpr std::size_t kStuckReported = 80;

/// Times within this of each other are one instant.
double same_instant(double t) { return 1e-12 * std::max(1.0, std::abs(t)); }

enum class TimerKind : std::uint8_t { wake, flow_start, flow_end, kernel_end, domain };

enum class Phase : std::uint8_t {
  begin_op,
  dependencies,
  host,
  match,
  start,
  run_step,
  step_transfers,
  step_synced,
  step_next,
  p2p_done,
  end,
  complete,
  barrier,
  finished,
};

enum class Wait : std::uint8_t { none, dependency, barrier, kernel, transfers, sync, send, recv, host, sleep };

struct StreamRun {
  std::uint32_t rank = 0;
  std::uint16_t stream = 0;
  Phase phase = Phase::begin_op;
  Wait wait = Wait::none;
  bool posted = false;  ///< its side of a pipeline channel is counted
  std::uint32_t iteration = 0;
  std::uint32_t op = 0;
  std::uint32_t cursor = 0;   ///< next dependency, barrier stream or collective step
  std::uint32_t pending = 0;  ///< transfers of the present step (or send/recv) not finished
  std::uint16_t wait_stream = 0;
  std::uint64_t wait_count = 0;  ///< completed ops of wait_stream needed; pipeline: this side's post number
  int peer = -1;
  std::uint32_t next_host_wait = 0;  ///< index into HostPlan::waits_of_stream of this iteration
  double start_s = 0.0;
  std::pair<double, double> issue{0.0, 0.0};
  RankCollective collective;
  std::uint64_t sequence = 0;
  std::vector<std::pair<int, std::uint64_t>> collectives_of_group;  ///< collectives run per group, for SyncKey
};

struct RankRun {
  std::uint32_t program = 0;
  bool host = false;
  std::vector<std::uint64_t> completed;  ///< ops completed per stream, all iterations
  std::vector<std::uint64_t> lengths;    ///< ops per stream
  std::vector<std::vector<std::pair<std::uint32_t, std::uint64_t>>> waiters;  ///< per stream: (run, count needed)
  int active_comms = 0;
  std::vector<std::uint32_t> kernels;  ///< running modelled kernels (KernelRun ids)
  int domain = -1;
  int die = 0;
  std::vector<double> segment_start_s{0.0};  ///< per host-wait segment reached (all iterations): when it started
  std::uint64_t waits_released = 0;
  std::vector<std::uint32_t> host_waiters;
};

/// A modelled kernel on its GPU. Without moving clocks `remaining` is work in seconds at full share (SimGrid's Exec
/// of duration units on a host of speed 1) and `rate` the share; with moving clocks `remaining` is the fraction left
/// and `rate` the domain's kernel_rate.
struct KernelRun {
  std::uint32_t run = 0;
  std::uint32_t rank = 0;
  PowerDomain::KernelHandle handle = 0;
  double remaining = 0.0;
  double last_s = 0.0;
  double rate = 0.0;
  std::uint32_t version = 0;
  bool active = false;
};

/// A transfer's route; under symmetry the union of the routes of every transfer its class stands for, `uses` counting
/// how many of them cross each constraint.
struct Route {
  std::vector<std::uint32_t> constraints;
  std::vector<double> uses;  ///< empty: 1 each
  double latency_s = 0.0;
  double weight = 1.0;  ///< 1 / CM02's sharing penalty
};

struct CommRun {
  std::uint32_t sender = 0;    ///< StreamRun
  std::uint32_t receiver = 0;  ///< StreamRun
  std::uint32_t route = 0;
  double bytes = 0.0;
  FlowNetwork::FlowId flow = 0;
  bool in_network = false;
  bool active = false;
  std::uint32_t version = 0;
};

struct Post {
  std::uint32_t run = 0;
  std::uint32_t route = 0;  ///< the put side's route (sender to its actual peer)
  double bytes = 0.0;
};

/// Unmatched puts or gets of one mailbox, FIFO.
struct Mailbox {
  std::vector<Post> puts;
  std::vector<std::uint32_t> gets;
  std::size_t put_head = 0;
  std::size_t get_head = 0;
};

struct Key128 {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  bool operator==(const Key128&) const = default;
};

struct Key128Hash {
  std::size_t operator()(const Key128& k) const {
    std::uint64_t h = k.a * 0x9e3779b97f4a7c15ULL;
    h ^= k.b + 0xbf58476d1ce4e5b9ULL + (h << 6) + (h >> 2);
    h *= 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

std::uint64_t pair_key(std::uint32_t a, std::uint32_t b) { return std::uint64_t{a} << 32 | b; }

/// (source, destination, space, id): space 0 for pipeline send/recv (id = tag), 1 + stream for collectives (id =
/// channel).
Key128 mailbox_key(std::uint32_t src, std::uint32_t dst, std::uint32_t space, std::uint32_t id) {
  return {pair_key(src, dst), pair_key(space, id)};
}

struct PipeChannel {
  std::uint64_t sends = 0;
  std::uint64_t receives = 0;
  std::vector<std::uint32_t> waiters;
};

/// Identity of one synchronised collective step (CollectiveStep::sync_members): the group, the stream, the how-many-th
/// collective of that group on that stream (members meet collectives in the same order), the step and the sync id.
struct SyncKey {
  int group = 0;
  std::uint16_t stream = 0;
  std::uint64_t sequence = 0;
  std::uint32_t step = 0;
  int sync_id = 0;
  bool operator==(const SyncKey&) const = default;
};

struct SyncKeyHash {
  std::size_t operator()(const SyncKey& k) const {
    return Key128Hash{}({pair_key(static_cast<std::uint32_t>(k.group), k.stream) ^ k.sequence * 0xff51afd7ed558ccdULL,
                         pair_key(k.step, static_cast<std::uint32_t>(k.sync_id))});
  }
};

/// A synchronised step of one group as one member's plan has it.
struct SyncCountKey {
  int group = 0;
  const CollectivePlan* plan = nullptr;
  std::uint32_t step = 0;
  auto operator<=>(const SyncCountKey&) const = default;
};

/// Members that have reached a synchronised step.
struct Rendezvous {
  int arrived = 0;
  std::vector<std::uint32_t> waiters;
};

double bytes_of(double value) { return value > 0.0 ? static_cast<double>(std::llround(value)) : 0.0; }

class FastSimulation final : private TelemetrySink {
 public:
  FastSimulation(const PreparedWorkload& prepared, const RankClasses& classes, EventSink& sink)
      : prepared_(prepared),
        classes_(classes),
        sink_(sink),
        workload_(prepared.workload()),
        power_(prepared.input().power),
        dynamic_clocks_(power_ != nullptr && !power_->governor->fixed_clock()),
        host_launch_s_(prepared.input().host_launch_s) {}

  SimulationStats run() {
    slowdown_ = prepared_.input().compute->params().comm_compute_slowdown;
    if (!(slowdown_ >= 0.0 && slowdown_ < 1.0))
      throw EngineError("comm_compute_slowdown must be in [0, 1), got " + std::to_string(slowdown_));
    if (classes_.reduced()) sink_.on_rank_classes(classes_.representatives_of_ranks());
    build_routes();
    create_runs();
    create_power_domains();
    loop();
    report_deadlock();
    stats_.makespan_s = 0.0;
    for (const double t : stats_.iteration_end_s) stats_.makespan_s = std::max(stats_.makespan_s, t);
    for (auto& domain : domains_) {
      if (!domain) continue;
      domain->finish(stats_.makespan_s);
      stats_.governor_decisions += domain->stats().decisions;
      stats_.governor_timed_events += domain->stats().timed_events;
    }
    return stats_;
  }

 private:
  // ---- setup -------------------------------------------------------------------------------------------------------

  /// A constraint per direction of every link some communicating pair's route uses; a Route per pair.
  void build_routes() {
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

  /// Link directions with the same capacity that carry the same routes, each as often, are loaded alike at every
  /// instant, so max-min fairness gives them the same share and one constraint can stand for all of them (a
  /// duplicate constraint never changes a max-min allocation). Under symmetry a transfer's images cross hundreds of
  /// such links (each replica's NIC and leaf ports), and the solver's cost follows the constraints a flow touches:
  /// merging them took the 16,384-GPU run's flows from ~275 constraints each to a handful.
  void merge_equivalent_constraints(std::vector<double>& capacities) {
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

  void create_runs() {
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

  /// Tells the engine which kernels of a domain die changed rate.
  class DomainListener final : public RateListener {
   public:
    DomainListener(FastSimulation& simulation, int domain) : simulation_(simulation), domain_(domain) {}
    void on_rates_changed(int die, double time_s) override { simulation_.retime_dynamic(domain_, die, time_s); }

   private:
    FastSimulation& simulation_;
    int domain_;
  };

  void create_power_domains() {
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

  void on_telemetry(const GpuStateSample& sample) override {
    sink_.on_telemetry(sample);
    ++stats_.telemetry_samples;
  }

  // ---- the loop ----------------------------------------------------------------------------------------------------

  void loop() {
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

  void push_timer(double time_s, TimerKind kind, std::uint32_t target, std::uint32_t version = 0) {
    timers_.push(std::max(time_s, now_), static_cast<std::uint8_t>(kind), target, version);
  }

  void fire(const TimerEntry& timer) {
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

  void sleep_until(StreamRun& run, std::uint32_t id, double time_s, Wait why) {
    run.wait = why;
    ++stats_.activities;
    push_timer(time_s, TimerKind::wake, id);
  }

  // ---- a stream ----------------------------------------------------------------------------------------------------

  /// Runs stream `id` until it blocks.
  void advance(std::uint32_t id) {
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
          iteration_end = std::max(iteration_end, now_);
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

  /// Reports the op's start and begins it; false when the stream now waits for it to end.
  bool start_op(StreamRun& run, std::uint32_t id, RankRun& rank, const Op& op) {
    run.start_s = now_;
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

  static std::uint64_t next_sequence(StreamRun& run, int group) {
    for (auto& [g, count] : run.collectives_of_group)
      if (g == group) return count++;
    run.collectives_of_group.emplace_back(group, 1);
    return 0;
  }

  void emit(const StreamRun& run, bool is_end) {
    OpEvent event;
    event.time_s = now_;
    event.start_s = run.start_s;
    event.rank = run.rank;
    event.op = run.op;
    event.iteration = run.iteration;
    event.stream = run.stream;
    event.is_end = is_end;
    sink_.on_event(event);
    ++stats_.op_events;
  }

  // ---- ordering ----------------------------------------------------------------------------------------------------

  bool wait_for(StreamRun& run, std::uint32_t id, RankRun& rank, std::uint16_t stream, std::uint64_t count, Wait why) {
    if (rank.completed[stream] >= count) return true;
    run.wait = why;
    run.wait_stream = stream;
    run.wait_count = count;
    ++stats_.activities;
    rank.waiters[stream].emplace_back(id, count);
    return false;
  }

  void complete(RankRun& rank, std::uint16_t stream) {
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

  /// The op the host waited for completed: the next segment starts now, or when the host has launched that op if
  /// that is later.
  void release_host(RankRun& rank) {
    const HostPlan& plan = host_plans_[rank.program];
    const std::uint64_t segment = rank.waits_released;
    const double issued = plan.wait_issued_s(segment, rank.segment_start_s[segment], host_launch_s_);
    rank.segment_start_s.push_back(std::max(issued, now_));
    ++rank.waits_released;
    for (const std::uint32_t waiter : rank.host_waiters) ready_.push_back(waiter);
    rank.host_waiters.clear();
  }

  /// Data of a pipeline send or receive flows once its peer is posted too: true when it is.
  bool match_pipeline_peer(StreamRun& run, std::uint32_t id, const Op& op) {
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

  /// The members of a synchronised step end it together: true when the last has arrived.
  bool synchronize(StreamRun& run, std::uint32_t id, const CollectiveStep& step) {
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

  /// How many simulated members end a synchronised step together: all `sync_members`, or under symmetry the
  /// representatives among them (every other member is the image of one and would arrive at the same time).
  int sync_arrivals(const StreamRun& run, const CollectiveStep& step) {
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

  // ---- communication -----------------------------------------------------------------------------------------------

  void post_step(StreamRun& run, std::uint32_t id, const CollectiveStep& step) {
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

  std::uint32_t route_of(std::uint32_t src, std::uint32_t dst) const {
    const auto it = route_of_pair_.find(pair_key(src, dst));
    if (it == route_of_pair_.end())
      throw EngineError("no route from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
                        " (not among the communicating pairs)");
    return it->second;
  }

  void post_put(const Key128& key, std::uint32_t run, std::uint32_t route, double bytes) {
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

  void post_get(const Key128& key, std::uint32_t run) {
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

  /// A matched transfer: it pays its route's latency, then shares the links until its bytes are through.
  void begin_comm(std::uint32_t sender, std::uint32_t receiver, std::uint32_t route, double bytes) {
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

  void start_flow(std::uint32_t id) {
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

  void schedule_flow_end(std::uint32_t id) {
    CommRun& comm = comms_[id];
    const double end = network_->end_s(comm.flow);
    ++comm.version;
    if (end < kInfinity) push_timer(end, TimerKind::flow_end, id, comm.version);
  }

  void finish_comm(std::uint32_t id) {
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

  // The compute share of a GPU while communication runs on it.
  void comm_begin(RankRun& rank) {
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

  void comm_end(RankRun& rank) {
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

  // ---- kernels -----------------------------------------------------------------------------------------------------

  std::uint32_t new_kernel() {
    if (!free_kernels_.empty()) {
      const std::uint32_t id = free_kernels_.back();
      free_kernels_.pop_back();
      return id;
    }
    kernels_.emplace_back();
    return static_cast<std::uint32_t>(kernels_.size() - 1);
  }

  void start_kernel(std::uint32_t run_id, std::uint32_t rank_id, const Op& op, double duration) {
    RankRun& rank = ranks_[rank_id];
    ++stats_.activities;
    const std::uint32_t id = new_kernel();
    {
      KernelRun& k = kernels_[id];
      k.run = run_id;
      k.rank = rank_id;
      k.last_s = now_;
      k.active = true;
      ++k.version;
    }
    if (dynamic_clocks_) {
      PowerDomain& domain = *domains_[static_cast<std::size_t>(rank.domain)];
      KernelRun& k = kernels_[id];
      k.handle = domain.kernel_begin(now_, rank.die, kernel_work(op));
      k.remaining = 1.0;
      k.rate = kRateUnknown;  // the domain's decision at the end of this instant gives it (retime_dynamic)
      rank.kernels.push_back(id);
      unsettled(rank.domain);
      return;
    }
    if (rank.domain >= 0) {
      kernels_[id].handle =
          domains_[static_cast<std::size_t>(rank.domain)]->kernel_begin(now_, rank.die, kernel_work(op));
      unsettled(rank.domain);
    }
    kernels_[id].remaining = duration;
    kernels_[id].rate = 0.0;
    rank.kernels.push_back(id);
    retime_fixed(rank);
  }

  void schedule_kernel_end(std::uint32_t id) {
    KernelRun& k = kernels_[id];
    ++k.version;
    const double end = k.rate == kInfinity ? k.last_s : k.last_s + k.remaining / k.rate;
    push_timer(end, TimerKind::kernel_end, id, k.version);
  }

  /// Without moving clocks: every kernel of the GPU gets (1 - slowdown while communicating) / kernels.
  void retime_fixed(RankRun& rank) {
    if (rank.kernels.empty()) return;
    const double busy = 1.0 - (rank.active_comms > 0 ? slowdown_ : 0.0);
    const double share = busy / static_cast<double>(rank.kernels.size());
    for (const std::uint32_t id : rank.kernels) {
      KernelRun& k = kernels_[id];
      if (now_ > k.last_s) {
        k.remaining = std::max(0.0, k.remaining - (now_ - k.last_s) * k.rate);
        k.last_s = now_;
      }
      if (k.rate == share) continue;
      k.rate = share;
      schedule_kernel_end(id);
    }
  }

  void end_kernel(std::uint32_t id) {
    KernelRun& k = kernels_[id];
    RankRun& rank = ranks_[k.rank];
    rank.kernels.erase(std::find(rank.kernels.begin(), rank.kernels.end(), id));
    k.active = false;
    ++k.version;
    free_kernels_.push_back(id);
    ready_.push_back(k.run);
    if (rank.domain >= 0) {
      domains_[static_cast<std::size_t>(rank.domain)]->kernel_end(now_, rank.die, k.handle);
      unsettled(rank.domain);
    }
    if (dynamic_clocks_) return;
    retime_fixed(rank);
  }

  /// A kernel under moving clocks reached its predicted end: the governor's decisions due now first (they may
  /// retime it), then it ends if nothing is left.
  void dynamic_kernel_due(std::uint32_t id) {
    const RankRun& rank = ranks_[kernels_[id].rank];
    domains_[static_cast<std::size_t>(rank.domain)]->advance_to(now_);
    KernelRun& k = kernels_[id];
    if (now_ > k.last_s) {
      k.remaining -= (now_ - k.last_s) * k.rate;
      k.last_s = now_;
    }
    if (k.rate == kInfinity || k.remaining / k.rate <= same_instant(now_)) {
      end_kernel(id);
      return;
    }
    schedule_kernel_end(id);
    update_domain_timer(rank.domain);
  }

  /// The domain's listener: the kernels on `die` take their new rates from `time_s` on.
  void retime_dynamic(int domain, int die, double time_s) {
    const int r = domain_ranks_[static_cast<std::size_t>(domain)][static_cast<std::size_t>(die)];
    const RankRun& rank = ranks_[static_cast<std::size_t>(r)];
    PowerDomain& d = *domains_[static_cast<std::size_t>(domain)];
    for (const std::uint32_t id : rank.kernels) {
      KernelRun& k = kernels_[id];
      if (time_s > k.last_s) {
        k.remaining -= (time_s - k.last_s) * k.rate;
        k.last_s = time_s;
      }
      const double rate = d.kernel_rate(die, k.handle);
      if (rate == k.rate) continue;
      k.rate = rate;
      schedule_kernel_end(id);
    }
  }

  /// `domain`'s load changed at this instant: it decides once all of the instant's changes are in (settle_domains).
  void unsettled(int domain) {
    auto& flag = domain_unsettled_[static_cast<std::size_t>(domain)];
    if (flag) return;
    flag = 1;
    unsettled_domains_.push_back(domain);
  }

  /// The end of an instant: every domain whose load changed decides (a kernel that ended and the next one that began
  /// are one decision and one telemetry sample), retimes its kernels and re-arms its timer, before the clock moves on
  /// (telemetry stays in time order).
  void settle_domains() {
    for (const int d : unsettled_domains_) {
      domain_unsettled_[static_cast<std::size_t>(d)] = 0;
      domains_[static_cast<std::size_t>(d)]->settle();
      if (dynamic_clocks_) update_domain_timer(d);
    }
    unsettled_domains_.clear();
  }

  /// While a kernel runs on a domain, its governor's timed decisions are taken when they are due.
  void update_domain_timer(int domain) {
    const auto d = static_cast<std::size_t>(domain);
    const double next = domains_[d]->computing() ? domains_[d]->next_event_s() : kInfinity;
    if (next == domain_timer_s_[d]) return;
    domain_timer_s_[d] = next;
    timers_.arm(d, next < kInfinity ? std::max(next, now_) : kInfinity, static_cast<std::uint8_t>(TimerKind::domain));
  }

  // ---- deadlock ----------------------------------------------------------------------------------------------------

  void report_deadlock() const {
    std::vector<const StreamRun*> stuck;
    for (const StreamRun& run : runs_)
      if (run.phase != Phase::finished) stuck.push_back(&run);
    if (stuck.empty()) return;
    std::string message = "deadlock at t = " + std::to_string(now_) + " s: " + std::to_string(stuck.size()) + " of " +
                          std::to_string(runs_.size()) + " streams never finished; the first:";
    for (std::size_t i = 0; i < std::min(stuck.size(), kStuckReported); ++i) {
      const StreamRun& run = *stuck[i];
      message += "\n  " + prepared_.describe(static_cast<int>(run.rank), run.stream, run.op) + ", iteration " +
                 std::to_string(run.iteration) + ": " + reason(run);
    }
    throw EngineError(message);
  }

  std::string reason(const StreamRun& run) const {
    const RankRun& rank = ranks_[run.rank];
    const Program& program = workload_.programs[rank.program];
    auto stream_text = [&](std::uint16_t s) {
      return "stream " + std::to_string(s) + " '" + program.streams[s].name + "'";
    };
    switch (run.wait) {
      case Wait::dependency: {
        const std::uint64_t length = std::max<std::uint64_t>(rank.lengths[run.wait_stream], 1);
        return "waiting for op " + std::to_string((run.wait_count - 1) % length) + " of " +
               stream_text(run.wait_stream) + " (" +
               std::to_string(rank.completed[run.wait_stream] - run.iteration * rank.lengths[run.wait_stream]) +
               " of its ops done in this iteration)";
      }
      case Wait::barrier:
        return "at the iteration barrier, waiting for " + stream_text(run.wait_stream);
      case Wait::transfers: {
        const CollectiveStep& step = run.collective.plan->steps[run.cursor];
        std::string peers;
        for (const auto* list : {&step.sends, &step.receives})
          for (const Transfer& t : *list)
            peers += (peers.empty() ? "" : ", ") +
                     std::to_string((*run.collective.members)[static_cast<std::size_t>(t.peer)]);
        return "in step " + std::to_string(run.cursor) + " of " + std::to_string(run.collective.plan->steps.size()) +
               " of its " + run.collective.plan->algorithm + " plan, waiting for transfers with ranks " + peers;
      }
      case Wait::sync:
        return "in step " + std::to_string(run.cursor) + " of its " + run.collective.plan->algorithm +
               " plan, transfers done, waiting for " +
               std::to_string(run.collective.plan->steps[run.cursor].sync_members) +
               " members of its group to finish theirs";
      case Wait::send:
        return "waiting for rank " + std::to_string(run.peer) + " to receive";
      case Wait::recv:
        return "waiting for rank " + std::to_string(run.peer) + " to send";
      case Wait::host: {
        const HostPlan& plan = host_plans_[rank.program];
        if (plan.waits.empty()) return "waiting for the host to launch it";
        const IssueStep& waited = program.issue_order[plan.waits[rank.waits_released % plan.waits.size()]];
        return "waiting for the host, which waits for op " + std::to_string(waited.op) + " '" +
               std::string(workload_.name(program.streams[waited.stream].ops[waited.op])) + "' of " +
               stream_text(waited.stream) + " to complete";
      }
      case Wait::kernel:
      case Wait::sleep:
      case Wait::none:
        break;
    }
    return "running";
  }

  const PreparedWorkload& prepared_;
  const RankClasses& classes_;
  EventSink& sink_;
  const Workload& workload_;
  const PowerInput* power_;
  const bool dynamic_clocks_;
  const double host_launch_s_;
  double slowdown_ = 0.0;
  double now_ = 0.0;
  std::size_t finished_ = 0;
  SimulationStats stats_;

  std::vector<RankRun> ranks_;
  std::vector<StreamRun> runs_;
  std::vector<HostPlan> host_plans_;  ///< per program
  std::vector<std::uint32_t> ready_;
  /// One-shot timers, and one slot per power domain for its next timed decision.
  TimerQueue timers_;

  std::vector<Route> routes_;
  std::unordered_map<std::uint64_t, std::uint32_t> route_of_pair_;
  std::unique_ptr<FlowNetwork> network_;
  std::vector<std::uint32_t> flow_owner_;  ///< per flow id: its CommRun
  std::vector<CommRun> comms_;
  std::vector<std::uint32_t> free_comms_;
  std::unordered_map<Key128, Mailbox, Key128Hash> mailboxes_;
  std::unordered_map<Key128, PipeChannel, Key128Hash> pipe_channels_;
  std::unordered_map<SyncKey, Rendezvous, SyncKeyHash> rendezvous_;
  std::map<SyncCountKey, int> sync_counts_;

  std::vector<KernelRun> kernels_;
  std::vector<std::uint32_t> free_kernels_;

  std::vector<std::unique_ptr<PowerDomain>> domains_;
  std::vector<std::unique_ptr<DomainListener>> listeners_;
  std::vector<std::vector<int>> domain_ranks_;
  std::vector<double> domain_timer_s_;
  std::vector<std::uint8_t> domain_unsettled_;  ///< per domain: its load changed at this instant (settle_domains)
  std::vector<int> unsettled_domains_;
};

}  // namespace

SimulationStats run_fast(const PreparedWorkload& prepared, const RankClasses& classes, EventSink& sink) {
  FastSimulation simulation(prepared, classes, sink);
  return simulation.run();
}

}  // namespace chopsim::sim_detail
