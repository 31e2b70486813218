#include "workload_program.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

NameTable::NameTable(std::vector<std::string>& names) : names_(names) {
  for (std::size_t i = 0; i < names_.size(); ++i) index_.emplace(names_[i], static_cast<std::uint32_t>(i));
}

std::uint32_t NameTable::intern(std::string_view name) {
  const auto found = index_.find(name);
  if (found != index_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  index_.emplace(names_.back(), id);
  return id;
}

ProgramBuilder::ProgramBuilder() { (void)stream("compute"); }

std::uint16_t ProgramBuilder::stream(std::string_view name) {
  for (std::size_t i = 0; i < program_.streams.size(); ++i)
    if (program_.streams[i].name == name) return static_cast<std::uint16_t>(i);
  if (program_.streams.size() >= std::numeric_limits<std::uint16_t>::max())
    throw ModelError("workload: too many streams in one program");
  program_.streams.push_back(Stream{std::string(name), {}});
  return static_cast<std::uint16_t>(program_.streams.size() - 1);
}

bool ProgramBuilder::has_stream(std::string_view name) const {
  return std::any_of(program_.streams.begin(), program_.streams.end(), [&](const Stream& s) { return s.name == name; });
}

bool ProgramBuilder::last_op(std::uint16_t stream, OpRef& out) const {
  const auto& ops = program_.streams.at(stream).ops;
  if (ops.empty()) return false;
  out = OpRef{stream, static_cast<std::uint32_t>(ops.size() - 1)};
  return true;
}

OpRef ProgramBuilder::append(std::uint16_t stream, const Op& op) {
  auto& ops = program_.streams.at(stream).ops;
  if (ops.size() >= std::numeric_limits<std::uint32_t>::max()) throw ModelError("workload: stream too long");
  ops.push_back(op);
  ops.back().first_dependency = 0;
  ops.back().dependency_count = 0;
  const OpRef ref{stream, static_cast<std::uint32_t>(ops.size() - 1)};
  issued_.push_back(IssueStep{ref.op, ref.stream, 1, false});
  return ref;
}

OpRef ProgramBuilder::append_issued_first(std::uint16_t stream, const Op& op) {
  const OpRef ref = append(stream, op);
  issued_first_.push_back(issued_.back());
  issued_.pop_back();
  return ref;
}

void ProgramBuilder::set_host_issue(OpRef ref, std::uint16_t launches, bool host_waits) {
  // Ops are configured right after they are appended: search from the back.
  for (auto* steps : {&issued_, &issued_first_})
    for (auto it = steps->rbegin(); it != steps->rend(); ++it)
      if (it->stream == ref.stream && it->op == ref.op) {
        it->launches = launches;
        it->host_waits = host_waits;
        return;
      }
  throw ModelError("workload: set_host_issue on an op that was not appended");
}

const Op& ProgramBuilder::op(OpRef ref) const { return program_.streams.at(ref.stream).ops.at(ref.op); }

void ProgramBuilder::depend(OpRef consumer, OpRef producer) {
  if (consumer.stream == producer.stream) {
    if (producer.op < consumer.op) return;  // stream order already says so
    throw ModelError("workload: an op cannot depend on itself or on a later op of its own stream");
  }
  dependencies_.push_back({consumer.stream, consumer.op, OpDependency{producer.stream, producer.op}});
}

void ProgramBuilder::alternate_issued(const std::vector<std::size_t>& first_cuts,
                                      const std::vector<std::size_t>& second_cuts) {
  if (first_cuts.empty() || second_cuts.empty()) return;
  const std::size_t begin = first_cuts.front(), middle = second_cuts.front(), end = issued_.size();
  if (!(begin <= middle && middle <= end) || !std::is_sorted(first_cuts.begin(), first_cuts.end()) ||
      !std::is_sorted(second_cuts.begin(), second_cuts.end()) || first_cuts.back() > middle || second_cuts.back() > end)
    throw ModelError("workload: internal error, issue segments out of order");
  const auto segment = [](const std::vector<std::size_t>& cuts, std::size_t i, std::size_t last) {
    return std::pair<std::size_t, std::size_t>{cuts[i], i + 1 < cuts.size() ? cuts[i + 1] : last};
  };
  std::vector<IssueStep> merged;
  merged.reserve(end - begin);
  for (std::size_t i = 0; i < std::max(first_cuts.size(), second_cuts.size()); ++i) {
    if (i < first_cuts.size()) {
      const auto [from, to] = segment(first_cuts, i, middle);
      merged.insert(merged.end(), issued_.begin() + static_cast<std::ptrdiff_t>(from),
                    issued_.begin() + static_cast<std::ptrdiff_t>(to));
    }
    if (i < second_cuts.size()) {
      const auto [from, to] = segment(second_cuts, i, end);
      merged.insert(merged.end(), issued_.begin() + static_cast<std::ptrdiff_t>(from),
                    issued_.begin() + static_cast<std::ptrdiff_t>(to));
    }
  }
  std::copy(merged.begin(), merged.end(), issued_.begin() + static_cast<std::ptrdiff_t>(begin));
}

Program ProgramBuilder::finish() {
  auto key = [](const PendingDependency& d) { return std::tie(d.stream, d.op, d.on.stream, d.on.op); };
  std::sort(dependencies_.begin(), dependencies_.end(),
            [&](const PendingDependency& a, const PendingDependency& b) { return key(a) < key(b); });
  dependencies_.erase(
      std::unique(dependencies_.begin(), dependencies_.end(),
                  [&](const PendingDependency& a, const PendingDependency& b) { return key(a) == key(b); }),
      dependencies_.end());
  // A dependency on an op that comes no later on the same producer stream than another dependency of the
  // same consumer is implied by it (stream order); keep only the latest op per producer stream.
  std::vector<PendingDependency> kept;
  kept.reserve(dependencies_.size());
  for (std::size_t i = 0; i < dependencies_.size(); ++i) {
    const auto& d = dependencies_[i];
    const bool superseded = i + 1 < dependencies_.size() && dependencies_[i + 1].stream == d.stream &&
                            dependencies_[i + 1].op == d.op && dependencies_[i + 1].on.stream == d.on.stream;
    if (!superseded) kept.push_back(d);
  }
  program_.dependencies.clear();
  program_.dependencies.reserve(kept.size());
  for (const auto& d : kept) {
    Op& consumer = program_.streams[d.stream].ops.at(d.op);
    if (consumer.dependency_count == 0)
      consumer.first_dependency = static_cast<std::uint32_t>(program_.dependencies.size());
    ++consumer.dependency_count;
    program_.dependencies.push_back(d.on);
  }
  program_.issue_order = std::move(issued_first_);
  program_.issue_order.insert(program_.issue_order.end(), issued_.begin(), issued_.end());
  if (const std::string problem = issue_order_problem(program_); !problem.empty())
    throw ModelError("workload: " + problem);
  Program result = std::move(program_);
  program_ = Program{};
  dependencies_.clear();
  issued_first_.clear();
  issued_.clear();
  (void)stream("compute");
  return result;
}

}  // namespace chopsim::detail
