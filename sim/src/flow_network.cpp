#include "flow_network.hpp"

#include <algorithm>
#include <string>

#include "chopsim/common/error.hpp"

namespace chopsim::sim_detail {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities) {
  constraints_.resize(capacities.size());
  for (std::size_t c = 0; c < capacities.size(); ++c) {
    if (!(capacities[c] > 0.0) || capacities[c] == kInfinity)
      throw EngineError("flow network: constraint " + std::to_string(c) + " needs a finite capacity > 0, got " +
                        std::to_string(capacities[c]));
    constraints_[c].capacity = capacities[c];
  }
}

void FlowNetwork::mark(std::uint32_t c) {
  if (constraints_[c].marked) return;
  constraints_[c].marked = true;
  dirty_.push_back(c);
}

FlowNetwork::FlowId FlowNetwork::add(std::span<const std::uint32_t> constraints, double weight, double bytes,
                                     double now_s) {
  return add(constraints, std::span<const double>(), weight, bytes, now_s);
}

FlowNetwork::FlowId FlowNetwork::add(std::span<const std::uint32_t> constraints, std::span<const double> uses,
                                     double weight, double bytes, double now_s) {
  if (!uses.empty() && uses.size() != constraints.size())
    throw EngineError("flow network: " + std::to_string(uses.size()) + " uses for " +
                      std::to_string(constraints.size()) + " constraints");
  FlowId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[id];
  flow.constraints.assign(constraints.begin(), constraints.end());
  flow.slot.resize(constraints.size());
  flow.uses.assign(constraints.size(), 1.0);
  for (std::size_t h = 0; h < uses.size(); ++h) {
    if (!(uses[h] >= 1.0)) throw EngineError("flow network: a flow uses a constraint at least once");
    flow.uses[h] = uses[h];
  }
  flow.weight = weight;
  flow.remaining = bytes;
  flow.last_s = now_s;
  flow.rate = constraints.empty() ? kInfinity : 0.0;
  flow.stamp = 0;
  flow.fixed = false;
  flow.active = true;
  for (std::size_t h = 0; h < constraints.size(); ++h) {
    const std::uint32_t c = constraints[h];
    if (c >= constraints_.size()) throw EngineError("flow network: unknown constraint " + std::to_string(c));
    flow.slot[h] = static_cast<std::uint32_t>(constraints_[c].flows.size());
    constraints_[c].flows.push_back({id, static_cast<std::uint32_t>(h), flow.uses[h]});
    mark(c);
  }
  ++active_;
  return id;
}

void FlowNetwork::remove(FlowId id) {
  Flow& flow = flows_[id];
  if (!flow.active) throw EngineError("flow network: removing flow " + std::to_string(id) + ", which is not active");
  for (std::size_t h = 0; h < flow.constraints.size(); ++h) {
    const std::uint32_t c = flow.constraints[h];
    std::vector<Entry>& list = constraints_[c].flows;
    const std::uint32_t at = flow.slot[h];
    const Entry moved = list.back();
    list[at] = moved;
    list.pop_back();
    if (moved.flow != id) flows_[moved.flow].slot[moved.hop] = at;
    mark(c);
  }
  flow.active = false;
  flow.rate = 0.0;
  --active_;
  free_.push_back(id);
}

void FlowNetwork::bring_up_to_date(Flow& flow, double now_s) const {
  if (now_s > flow.last_s) {
    if (flow.rate > 0.0 && flow.rate != kInfinity)
      flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now_s - flow.last_s));
    flow.last_s = now_s;
  }
}

double FlowNetwork::end_s(FlowId id) const {
  const Flow& flow = flows_[id];
  if (flow.rate == kInfinity || flow.remaining <= 0.0) return flow.last_s;
  if (!(flow.rate > 0.0)) return kInfinity;
  return flow.last_s + flow.remaining / flow.rate;
}

double FlowNetwork::remaining_bytes(FlowId id, double now_s) const {
  const Flow& flow = flows_[id];
  if (flow.rate == kInfinity) return 0.0;
  return std::max(0.0, flow.remaining - flow.rate * std::max(0.0, now_s - flow.last_s));
}

double FlowNetwork::load(std::uint32_t c) const {
  double sum = 0.0;
  for (const Entry& e : constraints_[c].flows) sum += flows_[e.flow].rate * e.uses;
  return sum;
}

void FlowNetwork::solve(double now_s, std::vector<FlowId>& changed) {
  if (dirty_.empty()) return;
  ++epoch_;
  // The components that hold a marked constraint: breadth-first over constraints and the flows that join them.
  component_.clear();
  component_flows_.clear();
  for (const std::uint32_t c : dirty_) {
    constraints_[c].marked = false;
    if (constraints_[c].stamp == epoch_) continue;
    constraints_[c].stamp = epoch_;
    component_.push_back(c);
  }
  dirty_.clear();
  for (std::size_t i = 0; i < component_.size(); ++i) {
    for (const Entry& e : constraints_[component_[i]].flows) {
      Flow& flow = flows_[e.flow];
      if (flow.stamp == epoch_) continue;
      flow.stamp = epoch_;
      component_flows_.push_back(e.flow);
      for (const std::uint32_t c : flow.constraints) {
        if (constraints_[c].stamp == epoch_) continue;
        constraints_[c].stamp = epoch_;
        component_.push_back(c);
      }
    }
  }
  // Progress at the old rates up to now; then every flow of the components is unfixed.
  std::vector<double>& old_rates = old_rates_;
  old_rates.resize(component_flows_.size());
  for (std::size_t i = 0; i < component_flows_.size(); ++i) {
    Flow& flow = flows_[component_flows_[i]];
    bring_up_to_date(flow, now_s);
    old_rates[i] = flow.rate;
    flow.fixed = false;
    flow.rate = 0.0;
  }
  // Progressive filling with a heap of shares per unit weight (smallest first; ties by constraint index, so the
  // order, and the rounding, is the same on every run).
  auto later = [](const Share& a, const Share& b) {
    return a.per_weight != b.per_weight ? a.per_weight > b.per_weight : a.constraint > b.constraint;
  };
  heap_.clear();
  for (const std::uint32_t c : component_) {
    Constraint& con = constraints_[c];
    con.remaining = con.capacity;
    con.usage = 0.0;
    con.unfixed = static_cast<std::uint32_t>(con.flows.size());
    for (const Entry& e : con.flows) con.usage += flows_[e.flow].weight * e.uses;
    ++con.version;
    if (con.unfixed > 0) heap_.push_back({con.remaining / con.usage, c, con.version});
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Share top = heap_.back();
    heap_.pop_back();
    Constraint& con = constraints_[top.constraint];
    if (top.version != con.version || con.unfixed == 0) continue;
    const double per_weight = top.per_weight;
    for (const Entry& e : con.flows) {
      Flow& flow = flows_[e.flow];
      if (flow.fixed) continue;
      flow.fixed = true;
      flow.rate = per_weight * flow.weight;
      for (std::size_t h = 0; h < flow.constraints.size(); ++h) {
        const std::uint32_t other = flow.constraints[h];
        if (other == top.constraint) continue;
        Constraint& o = constraints_[other];
        o.remaining = std::max(0.0, o.remaining - flow.rate * flow.uses[h]);
        o.usage -= flow.weight * flow.uses[h];
        ++o.version;
        if (--o.unfixed > 0) {
          heap_.push_back({o.usage > 0.0 ? o.remaining / o.usage : 0.0, other, o.version});
          std::push_heap(heap_.begin(), heap_.end(), later);
        }
      }
    }
    con.unfixed = 0;
  }
  for (std::size_t i = 0; i < component_flows_.size(); ++i)
    if (flows_[component_flows_[i]].rate != old_rates[i]) changed.push_back(component_flows_[i]);
}

}  // namespace chopsim::sim_detail
