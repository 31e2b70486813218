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

#include "simgrid_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "chopsim/models/power_dynamics.hpp"
#include "chopsim/models/topology.hpp"
#include "engine_keys.hpp"
#include "host_plan.hpp"

namespace sg4 = simgrid::s4u;

namespace chopsim::sim_detail {
namespace {

/// Work of the communication-load Exec: never finishes while a collective runs (at most 1 work unit per second).
constexpr double kUnboundedWork = 1e30;
/// Sharing weight of the load Exec: large, so that it always gets its bound and the kernels the rest.
constexpr double kLoadPriority = 1e6;
/// Actor stack size (KiB). Actors run this file's code only; observers run in the parent, or on these stacks in
/// in-process mode, hence the margin.
constexpr int kStackKiB = 512;
/// Above this many actors the stacks go without guard pages. SimGrid protects a guard page below every actor's
/// stack with mprotect, which splits the stack's mapping in two; Linux allows 65,530 mappings per process
/// (vm.max_map_count), so about 32,000 actors (6,500 GPUs of five streams) abort with "Failed to protect stack".
/// Without guards (contexts/guard-size:0) a stack is one allocation: 8,192 GPUs and more run where memory allows.
/// Below the threshold the guards stay, to catch a stack overflow.
constexpr std::size_t kGuardedActors = 16384;
/// Stuck actors listed in a deadlock message.
constexpr std::size_t kStuckReported = 80;

struct MailboxKey {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint32_t space = 0;  ///< collective: 1 + stream; pipeline: 0
  std::uint32_t id = 0;     ///< collective: channel; pipeline: tag
  bool operator==(const MailboxKey&) const = default;
};

struct MailboxKeyHash {
  std::size_t operator()(const MailboxKey& k) const {
    std::uint64_t h = (std::uint64_t{k.src} << 32 | k.dst) * 0x9e3779b97f4a7c15ULL;
    h ^= (std::uint64_t{k.space} << 32 | k.id) + 0xbf58476d1ce4e5b9ULL + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

/// Matching state of one pipeline channel (source, destination, tag): sends and receives posted so far, all
/// iterations. The n-th send matches the n-th receive.
struct PipeChannel {
  std::uint64_t sends = 0;
  std::uint64_t receives = 0;
  int waiters = 0;
  sg4::ConditionVariablePtr posted;  ///< signalled when a side is posted and someone waits
};

/// Members that have reached a synchronised step, and the barrier they wait on.
struct Rendezvous {
  int arrived = 0;
  sg4::BarrierPtr barrier;
};

enum class Wait : std::uint8_t { none, dependency, barrier, transfers, sync, send, recv, host };

/// What an actor is doing, kept outside the actor so that a deadlock can be reported after SimGrid gives up.
struct ActorState {
  int rank = 0;
  std::uint16_t stream = 0;
  std::uint32_t iteration = 0;
  std::uint32_t op = 0;
  Wait wait = Wait::none;
  std::uint16_t wait_stream = 0;
  std::uint64_t wait_count = 0;  ///< completed ops of wait_stream needed
  std::size_t step = 0;
  int peer = -1;
  bool finished = false;
  std::unordered_map<int, std::uint64_t> collectives_of_group;  ///< collectives run per group, for SyncKey
};

/// A kernel running under power dynamics: its progress, brought up to date whenever its rate changes.
struct RunningKernel {
  PowerDomain::KernelHandle handle = 0;
  double remaining = 1.0;  ///< fraction of the kernel left at last_s
  double last_s = 0.0;
  double rate = 0.0;    ///< fraction per second since last_s
  double wake_s = 0.0;  ///< when its actor will wake up unless woken earlier
  bool rate_changed = false;
};

/// Times within this of each other are one instant (an actor woken at t may see t plus or minus an ulp).
double same_instant(double t) { return 1e-12 * std::max(1.0, std::abs(t)); }

struct RankState {
  std::uint32_t program = 0;
  std::vector<std::uint64_t> completed;  ///< ops completed per stream, all iterations
  std::vector<std::uint64_t> lengths;    ///< ops per stream
  std::vector<int> waiters;              ///< actors waiting on each stream's counter
  std::vector<sg4::ConditionVariablePtr> signals;
  sg4::MutexPtr mutex;
  int active_comms = 0;
  sg4::ExecPtr comm_load;
  // Power dynamics.
  int domain = -1;  ///< index into Simulation::domains_
  int die = 0;      ///< die of the rank in its domain
  std::vector<RunningKernel*> running;
  sg4::ConditionVariablePtr kernel_signal;
  int kernel_waiters = 0;
  // The host (see the file comment).
  std::vector<double> segment_start_s{0.0};  ///< per host-wait segment reached (all iterations): when it started
  std::uint64_t waits_released = 0;          ///< host waits whose op has completed (all iterations)
  sg4::ConditionVariablePtr host_signal;
  int host_waiters = 0;
};

class Simulation final : private TelemetrySink {
 public:
  Simulation(const PreparedWorkload& prepared, const EngineOptions& options, EventSink& sink)
      : prepared_(prepared),
        options_(options),
        sink_(sink),
        workload_(prepared.workload()),
        power_(prepared.input().power),
        dynamic_clocks_(power_ != nullptr && !power_->governor->fixed_clock()) {}

  SimulationStats run() {
    if (sg4::Engine::has_instance())
      throw EngineError(
          "SimGrid already ran in this process (one engine per process): run with isolate_in_child_process = true");
    std::vector<std::string> args{"chopsim", "--log=root.thres:critical",
                                  "--cfg=network/model:" + options_.network_model, "--cfg=network/crosstraffic:0",
                                  "--cfg=network/TCP-gamma:0",
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

 private:
  void build_platform() {
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

  void create_actors() {
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

  // ---- power dynamics -------------------------------------------------------------------------------------------

  /// Tells the engine which kernels of a domain die changed rate.
  class DomainListener final : public RateListener {
   public:
    DomainListener(Simulation& simulation, int domain) : simulation_(simulation), domain_(domain) {}
    void on_rates_changed(int die, double time_s) override { simulation_.retime(domain_, die, time_s); }

   private:
    Simulation& simulation_;
    int domain_;
  };

  void create_power_domains() {
    if (power_ == nullptr) return;
    const SimulationInput& input = prepared_.input();
    std::vector<PowerDomainSettings> packages = power_packages(*power_, prepared_.world_size(), slowdown_);
    domain_ranks_.resize(packages.size());
    for (int d = 0; d < static_cast<int>(packages.size()); ++d) {
      PowerDomainSettings& settings = packages[static_cast<std::size_t>(d)];
      for (std::size_t die = 0; die < settings.dies.size(); ++die) {
        const int r = static_cast<int>(settings.dies[die].gpu);
        RankState& rank = ranks_[static_cast<std::size_t>(r)];
        rank.domain = d;
        rank.die = static_cast<int>(die);
        if (dynamic_clocks_) rank.kernel_signal = sg4::ConditionVariable::create();
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
    if (failure_) return;
    if (!in_simulation_) {  // the final samples, after SimGrid: let a throwing sink throw
      sink_.on_telemetry(sample);
      ++stats_.telemetry_samples;
      return;
    }
    try {
      sink_.on_telemetry(sample);
      ++stats_.telemetry_samples;
    } catch (const std::exception&) {
      fail();
    }
  }

  /// Brings the progress of the kernels on `die` of `domain` up to `time_s` at their old rates and takes the new ones.
  void retime(int domain, int die, double time_s) {
    RankState& rank = ranks_[static_cast<std::size_t>(
        domain_ranks_[static_cast<std::size_t>(domain)][static_cast<std::size_t>(die)])];
    PowerDomain& d = *domains_[static_cast<std::size_t>(domain)];
    for (RunningKernel* k : rank.running) {
      if (time_s > k->last_s) {
        k->remaining -= (time_s - k->last_s) * k->rate;
        k->last_s = time_s;
      }
      const double rate = d.kernel_rate(die, k->handle);
      if (rate != k->rate) {
        k->rate = rate;
        k->rate_changed = true;
      }
    }
  }

  /// Wakes the kernels of `domain` (other than `self`) whose rate changed or that must wake for an earlier
  /// governor decision, so that they wait anew.
  void wake_kernels(int domain, const RunningKernel* self) {
    // The domain's next event takes its pending decision first, which retimes the kernels (rate_changed).
    const double next_event_s = domains_[static_cast<std::size_t>(domain)]->next_event_s();
    for (const int r : domain_ranks_[static_cast<std::size_t>(domain)]) {
      RankState& rank = ranks_[static_cast<std::size_t>(r)];
      if (rank.kernel_waiters == 0) continue;
      bool wake = false;
      for (RunningKernel* k : rank.running)
        if (k != self && (k->rate_changed || next_event_s < k->wake_s - same_instant(k->wake_s))) wake = true;
      if (!wake) continue;
      rank.mutex->lock();
      rank.kernel_signal->notify_all();
      rank.mutex->unlock();
    }
  }

  /// A compute kernel under moving clocks (see the file comment).
  void run_kernel(RankState& rank, const Op& op) {
    PowerDomain& domain = *domains_[static_cast<std::size_t>(rank.domain)];
    double now = sg4::Engine::get_clock();
    RunningKernel k;
    k.handle = domain.kernel_begin(now, rank.die, kernel_work(op));
    k.last_s = now;
    k.rate = domain.kernel_rate(rank.die, k.handle);
    // Registered while this frame lives: an actor killed while waiting (a failing observer) unregisters its kernel.
    struct Registration {
      std::vector<RunningKernel*>& running;
      RunningKernel* kernel;
      ~Registration() {
        const auto it = std::find(running.begin(), running.end(), kernel);
        if (it != running.end()) running.erase(it);
      }
    } registration{rank.running, &k};
    rank.running.push_back(&k);
    wake_kernels(rank.domain, &k);
    ++stats_.activities;
    while (k.remaining / k.rate > same_instant(now)) {
      {
        std::unique_lock<sg4::Mutex> lock(*rank.mutex);
        k.wake_s = std::min(k.last_s + k.remaining / k.rate, domain.next_event_s());
        k.rate_changed = false;
        ++rank.kernel_waiters;
        if (k.wake_s > sg4::Engine::get_clock()) rank.kernel_signal->wait_until(lock, k.wake_s);
        --rank.kernel_waiters;
      }
      if (failure_) return;
      now = sg4::Engine::get_clock();
      domain.advance_to(now);  // the governor's decisions due now; they retime this kernel too
      wake_kernels(rank.domain, &k);
      if (now > k.last_s) {
        k.remaining -= (now - k.last_s) * k.rate;
        k.last_s = now;
      }
    }
    rank.running.erase(std::find(rank.running.begin(), rank.running.end(), &k));  // before the domain retimes
    domain.kernel_end(now, rank.die, k.handle);
    wake_kernels(rank.domain, nullptr);
  }

  // ---- the host ---------------------------------------------------------------------------------------------------

  [[nodiscard]] bool host_modelled(const RankState& rank) const {
    return prepared_.input().host_launch_s > 0.0 && !workload_.programs[rank.program].issue_order.empty();
  }

  /// When the host launches op `op` of `actor`'s stream in iteration `iteration`: (first launch, last launch).
  /// Waits while the host has not been released from the wait before it.
  std::pair<double, double> host_issue(ActorState& actor, RankState& rank, std::uint32_t iteration, std::uint32_t op) {
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
    return plan.issue_times(actor.stream, op, iteration, rank.segment_start_s[segment],
                            prepared_.input().host_launch_s);
  }

  /// The op the host waited for (the next unreleased wait) completed: the next segment starts now, or when the host
  /// has launched that op if it is later.
  void release_host(RankState& rank) {
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

  void wait_for(ActorState& actor, RankState& rank, std::uint16_t stream, std::uint64_t count, Wait why) {
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

  void complete(RankState& rank, std::uint16_t stream) {
    ++rank.completed[stream];
    if (rank.waiters[stream] == 0) return;
    rank.mutex->lock();
    rank.signals[stream]->notify_all();
    rank.mutex->unlock();
  }

  // ---- events ---------------------------------------------------------------------------------------------------

  /// Passes an event on; a sink that throws stops the simulation and its exception is rethrown by run().
  bool emit(const OpEvent& event) {
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

  /// Records the exception being handled and stops every other actor.
  void fail() {
    failure_ = std::current_exception();
    for (RankState& rank : ranks_)
      if (rank.comm_load) rank.comm_load->cancel();
    sg4::Actor::kill_all();
  }

  // ---- the actor ------------------------------------------------------------------------------------------------

  void stream_actor(ActorState& actor) {
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

  static MailboxKey pipeline_key(int src, int dst, std::uint32_t tag) {
    return {static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst), 0, tag};
  }

  /// Waits, without counting as communication, until the peer of this pipeline send or receive is posted too
  /// (see the file comment): data flows from then on.
  void match_pipeline_peer(ActorState& actor, const Op& op) {
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

  void execute(ActorState& actor, RankState& rank, const Op& op) {
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

  void run_collective(ActorState& actor, const RankCollective& collective) {
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

  /// Waits until `members` actors have reached the step `key` (a pipelined collective ends for all together).
  void synchronize(const SyncKey& key, int members) {
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

  // The rank's state is updated before the simcalls (start, cancel) so that other actors of the rank that run
  // during them see a consistent count and load.
  void comm_begin(RankState& rank) {
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

  void comm_end(RankState& rank) {
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

  /// Actors are cooperative but every simcall lets the others run: shared state must be consistent before each
  /// simcall. Mailbox::by_name is one, so the cache entry is only added once the mailbox exists.
  sg4::Mailbox* mailbox(const MailboxKey& key) {
    if (auto it = mailboxes_.find(key); it != mailboxes_.end()) return it->second;
    const std::string name = (key.space == 0 ? "p" : "c" + std::to_string(key.space - 1)) + ":" +
                             std::to_string(key.src) + ">" + std::to_string(key.dst) + ":" + std::to_string(key.id);
    sg4::Mailbox* created = sg4::Mailbox::by_name(name);
    return mailboxes_.emplace(key, created).first->second;  // the same mailbox if another actor got there first
  }

  static std::uint64_t bytes(double value) { return value > 0.0 ? static_cast<std::uint64_t>(std::llround(value)) : 0; }

  // ---- deadlock -------------------------------------------------------------------------------------------------

  void report_deadlock() const {
    std::vector<const ActorState*> stuck;
    for (const ActorState& actor : actors_)
      if (!actor.finished) stuck.push_back(&actor);
    if (stuck.empty()) return;
    std::string message = "deadlock at t = " + std::to_string(sg4::Engine::get_clock()) +
                          " s: " + std::to_string(stuck.size()) + " of " + std::to_string(actors_.size()) +
                          " streams never finished; the first:";
    for (std::size_t i = 0; i < std::min(stuck.size(), kStuckReported); ++i) {
      const ActorState& a = *stuck[i];
      message += "\n  " + prepared_.describe(a.rank, a.stream, a.op) + ", iteration " + std::to_string(a.iteration);
      message += ": " + reason(a);
    }
    throw EngineError(message);
  }

  static std::string group_name(const Op& op) {
    return op.group_index >= 0 ? "explicit group " + std::to_string(op.group_index)
                               : std::string(to_string(op.group)) + " group";
  }

  std::string reason(const ActorState& a) const {
    const Program& program = workload_.programs[ranks_[static_cast<std::size_t>(a.rank)].program];
    const RankState& rank = ranks_[static_cast<std::size_t>(a.rank)];
    auto stream_text = [&](std::uint16_t s) {
      return "stream " + std::to_string(s) + " '" + program.streams[s].name + "'";
    };
    switch (a.wait) {
      case Wait::dependency: {
        const std::uint64_t length = std::max<std::uint64_t>(rank.lengths[a.wait_stream], 1);
        return "waiting for op " + std::to_string((a.wait_count - 1) % length) + " of " + stream_text(a.wait_stream) +
               " (" + std::to_string(rank.completed[a.wait_stream] - a.iteration * rank.lengths[a.wait_stream]) +
               " of its ops done in this iteration)";
      }
      case Wait::barrier:
        return "at the iteration barrier, waiting for " + stream_text(a.wait_stream);
      case Wait::transfers: {
        const RankCollective c = prepared_.collective(a.rank, a.stream, a.op);
        std::string peers;
        const auto& step = c.plan->steps[a.step];
        for (const auto* list : {&step.sends, &step.receives})
          for (const Transfer& t : *list)
            peers += (peers.empty() ? "" : ", ") + std::to_string((*c.members)[static_cast<std::size_t>(t.peer)]);
        return "in step " + std::to_string(a.step) + " of " + std::to_string(c.plan->steps.size()) + " of its " +
               c.plan->algorithm + " plan, waiting for transfers with ranks " + peers;
      }
      case Wait::sync: {
        const RankCollective c = prepared_.collective(a.rank, a.stream, a.op);
        return "in step " + std::to_string(a.step) + " of its " + c.plan->algorithm +
               " plan, transfers done, waiting for " + std::to_string(c.plan->steps[a.step].sync_members) +
               " members of the " + group_name(workload_.program(a.rank).streams[a.stream].ops[a.op]) +
               " to finish theirs";
      }
      case Wait::send:
        return "waiting for rank " + std::to_string(a.peer) + " to receive";
      case Wait::recv:
        return "waiting for rank " + std::to_string(a.peer) + " to send";
      case Wait::host: {
        const HostPlan& plan = host_plans_[rank.program];
        if (plan.waits.empty()) return "waiting for the host to launch it";
        const IssueStep& waited = program.issue_order[plan.waits[rank.waits_released % plan.waits.size()]];
        return "waiting for the host, which waits for op " + std::to_string(waited.op) + " '" +
               std::string(workload_.name(program.streams[waited.stream].ops[waited.op])) + "' of " +
               stream_text(waited.stream) + " to complete";
      }
      case Wait::none:
        break;
    }
    return "running";
  }

  const PreparedWorkload& prepared_;
  const EngineOptions& options_;
  EventSink& sink_;
  const Workload& workload_;
  double slowdown_ = 0.0;
  std::vector<sg4::Host*> hosts_;
  std::vector<RankState> ranks_;
  std::vector<ActorState> actors_;
  std::vector<HostPlan> host_plans_;  ///< per program
  std::unordered_map<MailboxKey, sg4::Mailbox*, MailboxKeyHash> mailboxes_;
  std::unordered_map<SyncKey, Rendezvous, SyncKeyHash> rendezvous_;
  std::unordered_map<MailboxKey, PipeChannel, MailboxKeyHash> pipe_channels_;
  sg4::MutexPtr pipe_mutex_;
  int payload_ = 0;  ///< what transfers carry: only their simulated size matters
  SimulationStats stats_;
  std::exception_ptr failure_;
  // Power dynamics.
  const PowerInput* power_;
  bool dynamic_clocks_;
  bool in_simulation_ = false;
  std::vector<std::unique_ptr<PowerDomain>> domains_;
  std::vector<std::unique_ptr<DomainListener>> listeners_;
  std::vector<std::vector<int>> domain_ranks_;
};

}  // namespace

SimulationStats run_simgrid(const PreparedWorkload& prepared, const EngineOptions& options, EventSink& sink) {
  Simulation simulation(prepared, options, sink);
  return simulation.run();
}

}  // namespace chopsim::sim_detail
