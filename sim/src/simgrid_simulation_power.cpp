// The SimGrid engine's kernels under power dynamics (simgrid_simulation.cpp, "Power dynamics"): every package a
// PowerDomain told of every op start and end; with moving clocks, kernels that progress at their domain's rate and
// wait on their rank until their end or the domain's next timed decision.

#include <algorithm>
#include <memory>
#include <vector>

#include "chopsim/models/compute_model.hpp"
#include "chopsim/models/governor.hpp"
#include "simgrid_simulation_state.hpp"

namespace chopsim::sim_detail::sg {

void Simulation::create_power_domains() {
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

void Simulation::on_telemetry(const GpuStateSample& sample) {
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

void Simulation::retime(int domain, int die, double time_s) {
  RankState& rank =
      ranks_[static_cast<std::size_t>(domain_ranks_[static_cast<std::size_t>(domain)][static_cast<std::size_t>(die)])];
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

void Simulation::wake_kernels(int domain, const RunningKernel* self) {
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

void Simulation::run_kernel(RankState& rank, const Op& op) {
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

}  // namespace chopsim::sim_detail::sg
