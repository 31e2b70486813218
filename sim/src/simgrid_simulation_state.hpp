#pragma once
// Private to the SimGrid engine (simgrid_simulation.cpp, which describes its semantics): its actors' and ranks'
// state and the simulation. The member functions are split by concern: setup, a stream's actor, the host, ordering
// and deadlock reports (simgrid_simulation.cpp), kernels under power dynamics (simgrid_simulation_power.cpp),
// transfers, collectives and pipeline matching (simgrid_simulation_comm.cpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chopsim/models/power_dynamics.hpp"
#include "deadlock_report.hpp"
#include "engine_keys.hpp"
#include "host_plan.hpp"
#include "simgrid_simulation.hpp"

namespace chopsim::sim_detail::sg {

namespace sg4 = simgrid::s4u;

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

/// What an actor is doing, kept outside the actor so that a deadlock can be reported after SimGrid gives up.
struct ActorState : StreamPosition {
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
  // The host (simgrid_simulation.cpp's file comment).
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

  SimulationStats run();

 private:
  // ---- setup, the actors, the host, ordering, events, deadlock (simgrid_simulation.cpp) --------------------------

  void build_platform();
  void create_actors();

  [[nodiscard]] bool host_modelled(const RankState& rank) const {
    return prepared_.input().host_launch_s > 0.0 && !workload_.programs[rank.program].issue_order.empty();
  }
  /// When the host launches op `op` of `actor`'s stream in iteration `iteration`: (first launch, last launch).
  /// Waits while the host has not been released from the wait before it.
  std::pair<double, double> host_issue(ActorState& actor, RankState& rank, std::uint32_t iteration, std::uint32_t op);
  /// The op the host waited for (the next unreleased wait) completed: the next segment starts now, or when the host
  /// has launched that op if it is later.
  void release_host(RankState& rank);

  void wait_for(ActorState& actor, RankState& rank, std::uint16_t stream, std::uint64_t count, Wait why);
  void complete(RankState& rank, std::uint16_t stream);

  /// Passes an event on; a sink that throws stops the simulation and its exception is rethrown by run().
  bool emit(const OpEvent& event);
  /// Records the exception being handled and stops every other actor.
  void fail();

  void stream_actor(ActorState& actor);
  void execute(ActorState& actor, RankState& rank, const Op& op);

  void report_deadlock() const;

  // ---- power dynamics (simgrid_simulation_power.cpp) ------------------------------------------------------------

  /// Tells the engine which kernels of a domain die changed rate.
  class DomainListener final : public RateListener {
   public:
    DomainListener(Simulation& simulation, int domain) : simulation_(simulation), domain_(domain) {}
    void on_rates_changed(int die, double time_s) override { simulation_.retime(domain_, die, time_s); }

   private:
    Simulation& simulation_;
    int domain_;
  };

  void create_power_domains();
  void on_telemetry(const GpuStateSample& sample) override;
  /// Brings the progress of the kernels on `die` of `domain` up to `time_s` at their old rates and takes the new ones.
  void retime(int domain, int die, double time_s);
  /// Wakes the kernels of `domain` (other than `self`) whose rate changed or that must wake for an earlier
  /// governor decision, so that they wait anew.
  void wake_kernels(int domain, const RunningKernel* self);
  /// A compute kernel under moving clocks (simgrid_simulation.cpp's file comment).
  void run_kernel(RankState& rank, const Op& op);

  // ---- communication (simgrid_simulation_comm.cpp) ---------------------------------------------------------------

  static MailboxKey pipeline_key(int src, int dst, std::uint32_t tag) {
    return {static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(dst), 0, tag};
  }
  /// Waits, without counting as communication, until the peer of this pipeline send or receive is posted too
  /// (simgrid_simulation.cpp's file comment): data flows from then on.
  void match_pipeline_peer(ActorState& actor, const Op& op);
  void run_collective(ActorState& actor, const RankCollective& collective);
  /// Waits until `members` actors have reached the step `key` (a pipelined collective ends for all together).
  void synchronize(const SyncKey& key, int members);
  // The rank's state is updated before the simcalls (start, cancel) so that other actors of the rank that run
  // during them see a consistent count and load.
  void comm_begin(RankState& rank);
  void comm_end(RankState& rank);
  /// Actors are cooperative but every simcall lets the others run: shared state must be consistent before each
  /// simcall. Mailbox::by_name is one, so the cache entry is only added once the mailbox exists.
  sg4::Mailbox* mailbox(const MailboxKey& key);
  static std::uint64_t bytes(double value) { return value > 0.0 ? static_cast<std::uint64_t>(std::llround(value)) : 0; }

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

}  // namespace chopsim::sim_detail::sg
