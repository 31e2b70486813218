// The fast engine (fast_simulation.cpp): steady-state folds (engine.hpp, FoldPlan; docs/design.md, "Folding"). The
// workload holds fewer steady micro-batches than the run; a window of them, simulated, stands for the ones left out:
// the observer extrapolates its figures over them, the power domains' temperatures move across them, and every time
// reported after the window is later by their length. The simulation itself runs on in its own (shorter) time.

#include "fast_simulation_state.hpp"

namespace chopsim::sim_detail::fast {
namespace {

void FastSimulation::check_fold_plan() const {
  const FoldPlan& plan = *fold_;
  const int world = prepared_.world_size();
  if (plan.rank >= world || !classes_.is_representative(plan.rank))
    throw EngineError("fold: rank " + std::to_string(plan.rank) + " is not a simulated GPU");
  const Program& program = workload_.program(plan.rank);
  if (plan.stream >= program.streams.size())
    throw EngineError("fold: rank " + std::to_string(plan.rank) + " has no stream " + std::to_string(plan.stream));
  const std::size_t ops = program.streams[plan.stream].ops.size();
  if (!(plan.window_begin_op < plan.window_end_op && plan.window_end_op < ops))
    throw EngineError("fold: window ops " + std::to_string(plan.window_begin_op) + ".." +
                      std::to_string(plan.window_end_op) + " are not in order within the stream's " +
                      std::to_string(ops) + " ops");
  if (plan.lead_share > 0.0 && !(plan.lead_begin_op < plan.window_begin_op && std::isfinite(plan.lead_share)))
    throw EngineError("fold: the lead-in must begin before the window (op " + std::to_string(plan.lead_begin_op) +
                      " of a window from op " + std::to_string(plan.window_begin_op) + ") and its share be finite");
  if (!(plan.repeats >= 0.0 && std::isfinite(plan.repeats)))
    throw EngineError("fold: repeats must be finite and >= 0, got " + std::to_string(plan.repeats));
}

void FastSimulation::remember_energies(std::vector<std::vector<double>>& energy_j) {
  energy_j.resize(domains_.size());
  for (std::size_t d = 0; d < domains_.size(); ++d) {
    if (!domains_[d]) continue;
    PowerDomain& domain = *domains_[d];
    domain.advance_to(now_);  // its energy up to now (a domain with nothing running catches up on its decisions)
    if (dynamic_clocks_) update_domain_timer(static_cast<int>(d));
    energy_j[d].resize(static_cast<std::size_t>(domain.die_count()));
    for (int die = 0; die < domain.die_count(); ++die)
      energy_j[d][static_cast<std::size_t>(die)] = domain.energy_j(die);
  }
}

std::vector<std::vector<double>> FastSimulation::mean_power_since(const std::vector<std::vector<double>>& energy_j,
                                                                  double seconds) {
  std::vector<std::vector<double>> mean_w(domains_.size());
  for (std::size_t d = 0; d < domains_.size(); ++d) {
    if (!domains_[d]) continue;
    PowerDomain& domain = *domains_[d];
    domain.advance_to(now_);
    for (int die = 0; die < domain.die_count(); ++die)
      mean_w[d].push_back((domain.energy_j(die) - energy_j[d][static_cast<std::size_t>(die)]) / seconds);
  }
  return mean_w;
}

void FastSimulation::skip_span(double span_s, const std::vector<std::vector<double>>& mean_w) {
  if (!(span_s > 0.0)) return;
  for (std::size_t d = 0; d < domains_.size(); ++d) {
    if (!domains_[d]) continue;
    domains_[d]->skip_span(span_s, mean_w[d]);
    unsettled(static_cast<int>(d));  // it decides at the new temperatures once the instant's changes are in
  }
}

void FastSimulation::open_fold_lead() {
  fold_lead_open_ = true;
  fold_lead_begin_s_ = now_;
  remember_energies(lead_energy_j_);
}

void FastSimulation::open_fold_window() {
  fold_window_open_ = true;
  prewarmed_s_ = 0.0;
  const double lead = now_ - fold_lead_begin_s_;
  if (fold_lead_open_ && lead > 0.0) {
    prewarmed_s_ = 0.5 * fold_->repeats * lead / fold_->lead_share;
    skip_span(prewarmed_s_, mean_power_since(lead_energy_j_, lead));
  }
  fold_lead_open_ = false;
  fold_window_begin_s_ = now_;
  remember_energies(window_energy_j_);
  sink_.on_fold_window_begin(reported(now_));
}

void FastSimulation::close_fold_window() {
  fold_window_open_ = false;
  const double window = now_ - fold_window_begin_s_;
  if (!(window > 0.0)) return;  // an empty window stands for nothing
  const double span = fold_->repeats * window;
  skip_span(span - prewarmed_s_, mean_power_since(window_energy_j_, window));
  sink_.on_fold(reported(now_), span);
  folded_s_ += span;
  ++stats_.folds;
  stats_.folded_s += span;
}

}  // namespace
}  // namespace chopsim::sim_detail::fast
