// ObserverThread: every call reaches the observer, in order, across many chunks; an exception the observer throws
// reaches the engine's thread and stops the calls; a run that fails midway (the thread destroyed with calls queued)
// neither hangs nor leaks. Also under ThreadSanitizer (scripts/test-tsan.sh).

#include "chopsim/sim/observer_thread.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace chopsim::test {
namespace {

/// Logs every call as text, in arrival order; throws at call number `throw_at` (0: never).
class Log final : public SimulationObserver {
 public:
  explicit Log(std::size_t throw_at = 0) : throw_at_(throw_at) {}
  void on_op_event(const OpEvent& e) override {
    note("op " + std::to_string(e.rank) + " " + std::to_string(e.op) + " " + std::to_string(e.time_s) +
         (e.is_end ? " end" : " start"));
  }
  void on_telemetry(const GpuStateSample& s) override {
    note("sample " + std::to_string(s.gpu) + " " + std::to_string(s.power_w) + " " + std::to_string(s.time_s));
  }
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override {
    note("classes " + std::to_string(representative.size()) + " " + std::to_string(representative.back()));
  }
  void on_fold_window_begin(double time_s) override { note("window " + std::to_string(time_s)); }
  void on_fold(double time_s, double span_s) override {
    note("fold " + std::to_string(time_s) + " " + std::to_string(span_s));
  }
  std::vector<std::string> calls;

 private:
  void note(std::string call) {
    if (throw_at_ != 0 && calls.size() + 1 == throw_at_) throw std::runtime_error("observer failed at " + call);
    calls.push_back(std::move(call));
  }
  std::size_t throw_at_;
};

/// Makes `count` calls of every kind on `observer` (rank classes first, as an engine does).
void call_many(SimulationObserver& observer, std::size_t count) {
  observer.on_rank_classes({0, 0, 2, 2});
  for (std::size_t i = 1; i < count; ++i) {
    const double t = 1e-3 * static_cast<double>(i);
    if (i % 5 == 0) {
      GpuStateSample s;
      s.gpu = static_cast<std::uint32_t>(i % 4);
      s.time_s = t;
      s.power_w = 100.0 + static_cast<double>(i);
      observer.on_telemetry(s);
    } else if (i == count / 3) {
      observer.on_fold_window_begin(t);
    } else if (i == count / 2) {
      observer.on_fold(t, 2.5);
    } else {
      OpEvent e;
      e.rank = static_cast<std::uint32_t>(i % 7);
      e.op = static_cast<std::uint32_t>(i);
      e.time_s = t;
      e.is_end = i % 2 == 0;
      observer.on_op_event(e);
    }
  }
}

/// The calls of call_many(count) made on a Log directly.
std::vector<std::string> direct_calls(std::size_t count) {
  Log direct;
  call_many(direct, count);
  EXPECT_EQ(direct.calls.size(), count);
  return direct.calls;
}

/// The threads of this process now (Linux: the "Threads:" line of /proc/self/status).
int threads_of_this_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  ADD_FAILURE() << "/proc/self/status has no Threads: line";
  return -1;
}

TEST(ObserverThread, StartsItsThreadOnlyWhenTheFirstChunkIsHandedOver) {
  // The SimGrid engine forks its simulation at the start of run(), before its first call: the process must then
  // have one thread (a lock another thread holds at fork() stays held in the child; observer_thread.hpp).
  const int before = threads_of_this_process();
  Log threaded;
  {
    ObserverThread concurrent(threaded);
    EXPECT_EQ(threads_of_this_process(), before) << "constructed: no thread yet";
    call_many(concurrent, ObserverThread::kChunkCalls - 1);
    EXPECT_EQ(threads_of_this_process(), before) << "a chunk not yet full: still no thread";
    call_many(concurrent, 1);  // the chunk is full: handed over
    EXPECT_EQ(threads_of_this_process(), before + 1);
    concurrent.drain();
  }
  EXPECT_EQ(threads_of_this_process(), before) << "joined";
  EXPECT_EQ(threaded.calls.size(), ObserverThread::kChunkCalls);
}

TEST(ObserverThread, DrainWithoutCallsReturnsWithoutAThread) {
  Log threaded;
  ObserverThread concurrent(threaded);
  concurrent.drain();
  EXPECT_TRUE(threaded.calls.empty());
}

TEST(ObserverThread, EveryCallArrivesInOrderAcrossChunks) {
  const std::size_t count = 3 * ObserverThread::kChunkCalls + 17;  // three full chunks and a partial one
  Log threaded;
  {
    ObserverThread concurrent(threaded);
    call_many(concurrent, count);
    concurrent.drain();
  }
  EXPECT_EQ(threaded.calls, direct_calls(count));
}

TEST(ObserverThread, MoreChunksThanMayWaitStillArriveInOrder) {
  // The engine's thread waits while kChunksInFlight chunks are queued: a slow observer bounds memory, loses nothing.
  const std::size_t count = (ObserverThread::kChunksInFlight + 3) * ObserverThread::kChunkCalls;
  Log threaded;
  ObserverThread concurrent(threaded);
  call_many(concurrent, count);
  concurrent.drain();
  EXPECT_EQ(threaded.calls, direct_calls(count));
  concurrent.drain();  // again: nothing more arrives
  EXPECT_EQ(threaded.calls.size(), count);
}

TEST(ObserverThread, TheObserversExceptionReachesTheEngineThreadAndStopsTheCalls) {
  const std::size_t fails_at = ObserverThread::kChunkCalls + 5;
  Log failing(fails_at);
  std::string message;
  {
    ObserverThread concurrent(failing);
    try {
      call_many(concurrent, 20 * ObserverThread::kChunkCalls);  // rethrown at a later hand-over...
      concurrent.drain();                                       // ...or here
    } catch (const std::runtime_error& error) {
      message = error.what();
    }
  }
  EXPECT_NE(message.find("observer failed at"), std::string::npos) << message;
  EXPECT_EQ(failing.calls.size(), fails_at - 1) << "no call reaches the observer after it threw";
}

TEST(ObserverThread, AFailedRunStopsTheThreadWithCallsStillQueued) {
  // An engine error: the ObserverThread goes out of scope without drain(), chunks still queued or being replayed.
  Log log;
  {
    ObserverThread concurrent(log);
    call_many(concurrent, 5 * ObserverThread::kChunkCalls);
  }
  EXPECT_LE(log.calls.size(), 5 * ObserverThread::kChunkCalls);
}

}  // namespace
}  // namespace chopsim::test
