#pragma once
// Private to chopsim_models: assembling one Program — streams created by name on first use, ops appended
// in stream order, and cross-stream dependencies that may be added to an op after it was appended
// (they are gathered and laid out contiguously per op by finish()).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chopsim/models/workload.hpp"

namespace chopsim::detail {

/// Interns op names shared by all programs of a workload (Workload::names).
class NameTable {
 public:
  explicit NameTable(std::vector<std::string>& names);
  [[nodiscard]] std::uint32_t intern(std::string_view name);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  std::vector<std::string>& names_;
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> index_;
};

/// An op of the program being built.
struct OpRef {
  std::uint16_t stream = 0;
  std::uint32_t op = 0;
};

class ProgramBuilder {
 public:
  /// Stream 0 is always "compute".
  ProgramBuilder();

  /// The stream called `name`, created (appended) on first use.
  [[nodiscard]] std::uint16_t stream(std::string_view name);
  [[nodiscard]] bool has_stream(std::string_view name) const;
  /// The last op of a stream, if it has any.
  [[nodiscard]] bool last_op(std::uint16_t stream, OpRef& out) const;

  OpRef append(std::uint16_t stream, const Op& op);
  /// Appends an op that the host issues before every op appended with append(): work of the iteration's end that
  /// the next iteration consumes from its start (Megatron's --overlap-param-gather launches the parameter gathers
  /// from the forward pre-hooks). In steady state every iteration is alike, so it is issued at the start of this one.
  OpRef append_issued_first(std::uint16_t stream, const Op& op);
  /// How the host issues `ref` (IssueStep): its kernel launches, and whether the host waits for it to complete.
  void set_host_issue(OpRef ref, std::uint16_t launches, bool host_waits);
  [[nodiscard]] const Op& op(OpRef ref) const;
  /// `consumer` starts only after `producer` ended. Ignored when stream order already implies it.
  void depend(OpRef consumer, OpRef producer);

  /// How many ops append() has issued so far: a position in the host's issue order.
  [[nodiscard]] std::size_t issued_count() const { return issued_.size(); }
  /// Reorders the host's issue order from `first_cuts.front()` on: the segments [first_cuts[i], first_cuts[i + 1])
  /// (the last ends at `second_cuts.front()`) and [second_cuts[i], second_cuts[i + 1]) (the last ends at the present
  /// end) are issued in alternation, first then second; the longer list's surplus follows in its order. Each
  /// segment keeps its order, so every stream stays in its order; the caller makes sure no op of the first segments
  /// depends on one of the second.
  void alternate_issued(const std::vector<std::size_t>& first_cuts, const std::vector<std::size_t>& second_cuts);

  /// Lays the dependencies out per op and returns the program; the builder is empty afterwards.
  [[nodiscard]] Program finish();

 private:
  struct PendingDependency {
    std::uint16_t stream = 0;
    std::uint32_t op = 0;
    OpDependency on;
  };
  Program program_;
  std::vector<PendingDependency> dependencies_;
  std::vector<IssueStep> issued_first_;  ///< append_issued_first(), in order
  std::vector<IssueStep> issued_;        ///< append(), in order
};

}  // namespace chopsim::detail
