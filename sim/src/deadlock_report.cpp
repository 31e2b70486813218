#include "deadlock_report.hpp"

#include <algorithm>
#include <string>

#include "chopsim/common/error.hpp"

namespace chopsim::sim_detail {

namespace {

/// Stuck streams listed in a deadlock message.
constexpr std::size_t kStuckReported = 80;

std::string reason(const PreparedWorkload& prepared, const std::vector<HostPlan>& host_plans, const StreamPosition& s,
                   const RankProgress& rank) {
  const Workload& workload = prepared.workload();
  const Program& program = workload.programs[rank.program];
  auto stream_text = [&](std::uint16_t stream) {
    return "stream " + std::to_string(stream) + " '" + program.streams[stream].name + "'";
  };
  switch (s.wait) {
    case Wait::dependency: {
      const std::uint64_t length = std::max<std::uint64_t>((*rank.lengths)[s.wait_stream], 1);
      return "waiting for op " + std::to_string((s.wait_count - 1) % length) + " of " + stream_text(s.wait_stream) +
             " (" + std::to_string((*rank.completed)[s.wait_stream] - s.iteration * (*rank.lengths)[s.wait_stream]) +
             " of its ops done in this iteration)";
    }
    case Wait::barrier:
      return "at the iteration barrier, waiting for " + stream_text(s.wait_stream);
    case Wait::transfers: {
      const RankCollective c = prepared.collective(s.rank, s.stream, s.op);
      const CollectiveStep& step = c.plan->steps[s.step];
      std::string peers;
      for (const auto* list : {&step.sends, &step.receives})
        for (const Transfer& t : *list)
          peers += (peers.empty() ? "" : ", ") + std::to_string((*c.members)[static_cast<std::size_t>(t.peer)]);
      return "in step " + std::to_string(s.step) + " of " + std::to_string(c.plan->steps.size()) + " of its " +
             c.plan->algorithm + " plan, waiting for transfers with ranks " + peers;
    }
    case Wait::sync: {
      const RankCollective c = prepared.collective(s.rank, s.stream, s.op);
      const Op& op = program.streams[s.stream].ops[s.op];
      const std::string group = op.group_index >= 0 ? "explicit group " + std::to_string(op.group_index)
                                                    : std::string(to_string(op.group)) + " group";
      return "in step " + std::to_string(s.step) + " of its " + c.plan->algorithm +
             " plan, transfers done, waiting for " + std::to_string(c.plan->steps[s.step].sync_members) +
             " members of the " + group + " to finish theirs";
    }
    case Wait::send:
      return "waiting for rank " + std::to_string(s.peer) + " to receive";
    case Wait::recv:
      return "waiting for rank " + std::to_string(s.peer) + " to send";
    case Wait::host: {
      const HostPlan& plan = host_plans[rank.program];
      if (plan.waits.empty()) return "waiting for the host to launch it";
      const IssueStep& waited = program.issue_order[plan.waits[rank.waits_released % plan.waits.size()]];
      return "waiting for the host, which waits for op " + std::to_string(waited.op) + " '" +
             std::string(workload.name(program.streams[waited.stream].ops[waited.op])) + "' of " +
             stream_text(waited.stream) + " to complete";
    }
    case Wait::kernel:
    case Wait::sleep:
    case Wait::none:
      break;
  }
  return "running";
}

}  // namespace

void report_deadlock(const PreparedWorkload& prepared, const std::vector<HostPlan>& host_plans, double now_s,
                     std::size_t streams, const std::vector<StreamPosition>& stuck,
                     const std::function<RankProgress(int rank)>& progress) {
  if (stuck.empty()) return;
  std::string message = "deadlock at t = " + std::to_string(now_s) + " s: " + std::to_string(stuck.size()) + " of " +
                        std::to_string(streams) + " streams never finished; the first:";
  for (std::size_t i = 0; i < std::min(stuck.size(), kStuckReported); ++i) {
    const StreamPosition& s = stuck[i];
    message += "\n  " + prepared.describe(s.rank, s.stream, s.op) + ", iteration " + std::to_string(s.iteration) +
               ": " + reason(prepared, host_plans, s, progress(s.rank));
  }
  throw EngineError(message);
}

}  // namespace chopsim::sim_detail
