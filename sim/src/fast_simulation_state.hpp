#pragma once
// Private to the fast engine (fast_simulation.cpp): its per-(rank, stream) state machines and the simulation. The
// member functions are split by concern: setup, the event loop and deadlock reports (fast_simulation.cpp), a
// stream's ops and their ordering (fast_simulation_streams.cpp), transfers and collectives
// (fast_simulation_transfers.cpp), kernels and power domains (fast_simulation_kernels.cpp), steady-state folds
// (fast_simulation_fold.cpp).

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
#include "chopsim/sim/engine.hpp"
#include "deadlock_report.hpp"
#include "engine_keys.hpp"
#include "event_stream.hpp"
#include "flow_network.hpp"
#include "host_plan.hpp"
#include "prepared_workload.hpp"
#include "symmetry.hpp"
#include "timer_queue.hpp"

namespace chopsim::sim_detail::fast {
// Internal linkage: the five sources are one translation unit (sim/CMakeLists.txt), and the compiler inlines the
// engine's single-use steps into their callers as when it was one file.
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
/// KernelRun::rate of a kernel begun at this instant, before its domain has decided.
constexpr double kRateUnknown = -1.0;

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

/// (source, destination, space, id): space 0 for pipeline send/recv (id = tag), 1 + stream for collectives (id =
/// channel).
inline Key128 mailbox_key(std::uint32_t src, std::uint32_t dst, std::uint32_t space, std::uint32_t id) {
  return {pair_key(src, dst), pair_key(space, id)};
}

struct PipeChannel {
  std::uint64_t sends = 0;
  std::uint64_t receives = 0;
  std::vector<std::uint32_t> waiters;
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

inline double bytes_of(double value) { return value > 0.0 ? static_cast<double>(std::llround(value)) : 0.0; }

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

  SimulationStats run();

 private:
  // ---- setup -------------------------------------------------------------------------------------------------------

  /// A constraint per direction of every link some communicating pair's route uses; a Route per pair.
  void build_routes();

  /// Link directions with the same capacity that carry the same routes, each as often, are loaded alike at every
  /// instant, so max-min fairness gives them the same share and one constraint can stand for all of them (a
  /// duplicate constraint never changes a max-min allocation). Under symmetry a transfer's images cross hundreds of
  /// such links (each replica's NIC and leaf ports), and the solver's cost follows the constraints a flow touches:
  /// merging them took the 16,384-GPU run's flows from ~275 constraints each to a handful.
  void merge_equivalent_constraints(std::vector<double>& capacities);

  void create_runs();

  /// Tells the engine which kernels of a domain die changed rate.
  class DomainListener final : public RateListener {
   public:
    DomainListener(FastSimulation& simulation, int domain) : simulation_(simulation), domain_(domain) {}
    void on_rates_changed(int die, double time_s) override { simulation_.retime_dynamic(domain_, die, time_s); }

   private:
    FastSimulation& simulation_;
    int domain_;
  };

  void create_power_domains();

  void on_telemetry(const GpuStateSample& sample) override;

  // ---- the loop ----------------------------------------------------------------------------------------------------

  void loop();

  void push_timer(double time_s, TimerKind kind, std::uint32_t target, std::uint32_t version = 0) {
    timers_.push(std::max(time_s, now_), static_cast<std::uint8_t>(kind), target, version);
  }

  void fire(const TimerEntry& timer);

  void sleep_until(StreamRun& run, std::uint32_t id, double time_s, Wait why);

  // ---- a stream ----------------------------------------------------------------------------------------------------

  /// Runs stream `id` until it blocks.
  void advance(std::uint32_t id);

  /// Reports the op's start and begins it; false when the stream now waits for it to end.
  bool start_op(StreamRun& run, std::uint32_t id, RankRun& rank, const Op& op);

  static std::uint64_t next_sequence(StreamRun& run, int group);

  void emit(const StreamRun& run, bool is_end);

  // ---- ordering ----------------------------------------------------------------------------------------------------

  bool wait_for(StreamRun& run, std::uint32_t id, RankRun& rank, std::uint16_t stream, std::uint64_t count, Wait why);

  void complete(RankRun& rank, std::uint16_t stream);

  /// The op the host waited for completed: the next segment starts now, or when the host has launched that op if
  /// that is later.
  void release_host(RankRun& rank);

  /// Data of a pipeline send or receive flows once its peer is posted too: true when it is.
  bool match_pipeline_peer(StreamRun& run, std::uint32_t id, const Op& op);

  /// The members of a synchronised step end it together: true when the last has arrived.
  bool synchronize(StreamRun& run, std::uint32_t id, const CollectiveStep& step);

  /// How many simulated members end a synchronised step together: all `sync_members`, or under symmetry the
  /// representatives among them (every other member is the image of one and would arrive at the same time).
  int sync_arrivals(const StreamRun& run, const CollectiveStep& step);

  // ---- communication -----------------------------------------------------------------------------------------------

  void post_step(StreamRun& run, std::uint32_t id, const CollectiveStep& step);

  std::uint32_t route_of(std::uint32_t src, std::uint32_t dst) const;

  void post_put(const Key128& key, std::uint32_t run, std::uint32_t route, double bytes);

  void post_get(const Key128& key, std::uint32_t run);

  /// A matched transfer: it pays its route's latency, then shares the links until its bytes are through.
  void begin_comm(std::uint32_t sender, std::uint32_t receiver, std::uint32_t route, double bytes);

  void start_flow(std::uint32_t id);

  void schedule_flow_end(std::uint32_t id);

  void finish_comm(std::uint32_t id);

  // The compute share of a GPU while communication runs on it.
  void comm_begin(RankRun& rank);

  void comm_end(RankRun& rank);

  // ---- kernels -----------------------------------------------------------------------------------------------------

  std::uint32_t new_kernel();

  void start_kernel(std::uint32_t run_id, std::uint32_t rank_id, const Op& op, double duration);

  void schedule_kernel_end(std::uint32_t id);

  /// Without moving clocks: every kernel of the GPU gets (1 - slowdown while communicating) / kernels.
  void retime_fixed(RankRun& rank);

  void end_kernel(std::uint32_t id);

  /// A kernel under moving clocks reached its predicted end: the governor's decisions due now first (they may
  /// retime it), then it ends if nothing is left.
  void dynamic_kernel_due(std::uint32_t id);

  /// The domain's listener: the kernels on `die` take their new rates from `time_s` on.
  void retime_dynamic(int domain, int die, double time_s);

  /// `domain`'s load changed at this instant: it decides once all of the instant's changes are in (settle_domains).
  void unsettled(int domain);

  /// The end of an instant: every domain whose load changed decides (a kernel that ended and the next one that began
  /// are one decision and one telemetry sample), retimes its kernels and re-arms its timer, before the clock moves on
  /// (telemetry stays in time order).
  void settle_domains();

  /// While a kernel runs on a domain, its governor's timed decisions are taken when they are due.
  void update_domain_timer(int domain);

  // ---- steady-state folds (FoldPlan) -------------------------------------------------------------------------------

  /// Refuses a plan whose window is not on a simulated rank's stream.
  void check_fold_plan() const;

  /// `run` is about to start an op: opens the lead-in, or opens or closes the window, when it is the plan's op.
  void fold_at_op_start(const StreamRun& run) {
    if (fold_ == nullptr || run.rank != static_cast<std::uint32_t>(fold_->rank) || run.stream != fold_->stream) return;
    if (fold_->lead_share > 0.0 && run.op == fold_->lead_begin_op) open_fold_lead();
    if (run.op == fold_->window_begin_op) open_fold_window();
    if (run.op == fold_->window_end_op && fold_window_open_) close_fold_window();
  }

  /// Every power domain caught up to now and its dies' energies in `energy_j` (per domain, per die).
  void remember_energies(std::vector<std::vector<double>>& energy_j);

  /// Each die's mean power since `energy_j` was remembered `seconds` ago (per domain, per die; empty without power).
  [[nodiscard]] std::vector<std::vector<double>> mean_power_since(const std::vector<std::vector<double>>& energy_j,
                                                                  double seconds);

  /// Moves every die's temperature on by `span_s` at `mean_w`.
  void skip_span(double span_s, const std::vector<std::vector<double>>& mean_w);

  void open_fold_lead();

  /// Energies remembered, the GPUs warmed halfway across the span when a lead-in was measured; the observer told.
  void open_fold_window();

  /// Moves every die's temperature across the rest of the span (what the window's start did not) at the window's mean
  /// power, tells the observer, and shifts every later reported time by the span.
  void close_fold_window();

  /// The time reported for simulated time `time_s` (later than it by the spans folded so far).
  [[nodiscard]] double reported(double time_s) const { return time_s + folded_s_; }

  // ---- deadlock ----------------------------------------------------------------------------------------------------

  void report_deadlock() const;

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

  const FoldPlan* fold_ = nullptr;  ///< the plan when it folds
  bool fold_window_open_ = false;
  double fold_window_begin_s_ = 0.0;                  ///< simulated time the open window began
  double folded_s_ = 0.0;                             ///< spans folded so far: reported times are this much later
  std::vector<std::vector<double>> window_energy_j_;  ///< per domain, per die: its energy when the window opened
  bool fold_lead_open_ = false;
  double fold_lead_begin_s_ = 0.0;
  std::vector<std::vector<double>> lead_energy_j_;  ///< per domain, per die: its energy when the lead-in began
  double prewarmed_s_ = 0.0;                        ///< the part of the span the GPUs warmed by at the window's start
};

}  // namespace
}  // namespace chopsim::sim_detail::fast
