// The fast engine (fast_simulation.cpp): kernels sharing their GPU, slowed while communication runs on it, and
// timed by the power domains when clocks move.

#include "fast_simulation_state.hpp"

namespace chopsim::sim_detail::fast {
namespace {

std::uint32_t FastSimulation::new_kernel() {
  if (!free_kernels_.empty()) {
    const std::uint32_t id = free_kernels_.back();
    free_kernels_.pop_back();
    return id;
  }
  kernels_.emplace_back();
  return static_cast<std::uint32_t>(kernels_.size() - 1);
}

void FastSimulation::start_kernel(std::uint32_t run_id, std::uint32_t rank_id, const Op& op, double duration) {
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

void FastSimulation::schedule_kernel_end(std::uint32_t id) {
  KernelRun& k = kernels_[id];
  ++k.version;
  const double end = k.rate == kInfinity ? k.last_s : k.last_s + k.remaining / k.rate;
  push_timer(end, TimerKind::kernel_end, id, k.version);
}

void FastSimulation::retime_fixed(RankRun& rank) {
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

void FastSimulation::end_kernel(std::uint32_t id) {
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

void FastSimulation::dynamic_kernel_due(std::uint32_t id) {
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

void FastSimulation::retime_dynamic(int domain, int die, double time_s) {
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

void FastSimulation::unsettled(int domain) {
  auto& flag = domain_unsettled_[static_cast<std::size_t>(domain)];
  if (flag) return;
  flag = 1;
  unsettled_domains_.push_back(domain);
}

void FastSimulation::settle_domains() {
  for (const int d : unsettled_domains_) {
    domain_unsettled_[static_cast<std::size_t>(d)] = 0;
    domains_[static_cast<std::size_t>(d)]->settle();
    if (dynamic_clocks_) update_domain_timer(d);
  }
  unsettled_domains_.clear();
}

void FastSimulation::update_domain_timer(int domain) {
  const auto d = static_cast<std::size_t>(domain);
  const double next = domains_[d]->computing() ? domains_[d]->next_event_s() : kInfinity;
  if (next == domain_timer_s_[d]) return;
  domain_timer_s_[d] = next;
  timers_.arm(d, next < kInfinity ? std::max(next, now_) : kInfinity, static_cast<std::uint8_t>(TimerKind::domain));
}

}  // namespace
}  // namespace chopsim::sim_detail::fast
