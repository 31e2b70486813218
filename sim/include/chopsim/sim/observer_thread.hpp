#pragma once
// An observer on a thread of its own, so that one run uses two cores: the engine simulates while the observers
// (breakdown, losses, power report, output writers) digest what it has sent so far.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "chopsim/sim/engine.hpp"

namespace chopsim {

/// Passes every call the engine makes to `inner`, in the same order, on a second thread. The engine's thread records
/// the calls in chunks of kChunkCalls and hands each full chunk over under a lock (one lock per chunk, not per call);
/// the second thread replays them. `inner` sees exactly the engine's calls in the engine's order, so its figures are
/// the same bit for bit as when the engine calls it directly. At most kChunksInFlight chunks wait, so memory stays
/// bounded when `inner` is the slower side (a timeline writer).
///
/// After the engine returns, drain() waits until `inner` has seen every call; only then may the caller read `inner`.
/// An exception `inner` throws stops it: the engine's thread rethrows it at its next hand-over (stopping the run, as a
/// direct call would) or in drain(). The destructor stops the thread without waiting for the rest (an engine error).
///
/// The thread starts at the first hand-over, not in the constructor: an engine that forks its simulation
/// (Engine::simulates_in_child_process, the SimGrid engine) forks before its first call, and so forks a process of one
/// thread. A thread alive at fork() can hold a lock (the sanitizer allocator's, a starting thread's registration) that
/// then stays held in the child for ever: under ASan, 86 of 300 runs of an ObserverThread around the SimGrid engine
/// hung that way (2026-12-02, after one hung the CI).
class ObserverThread final : public SimulationObserver {
 public:
  static constexpr std::size_t kChunkCalls = 2048;
  static constexpr std::size_t kChunksInFlight = 8;

  explicit ObserverThread(SimulationObserver& inner);
  ~ObserverThread() override;
  ObserverThread(const ObserverThread&) = delete;
  ObserverThread& operator=(const ObserverThread&) = delete;

  void on_op_event(const OpEvent& event) override;
  void on_telemetry(const GpuStateSample& sample) override;
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override;
  [[nodiscard]] bool folds() const override { return inner_.folds(); }
  void on_fold_window_begin(double time_s) override;
  void on_fold(double time_s, double span_s) override;

  /// Waits until `inner` has seen every call so far; rethrows what it threw.
  void drain();

 private:
  struct FoldWindowBegin {
    double time_s;
  };
  struct Fold {
    double time_s, span_s;
  };
  struct RankClasses {
    std::size_t index;  ///< into rank_classes_
  };
  using Call = std::variant<OpEvent, GpuStateSample, FoldWindowBegin, Fold, RankClasses>;
  using Chunk = std::vector<Call>;

  template <class Value>
  void push(const Value& value) {
    filling_.emplace_back(value);
    if (filling_.size() == kChunkCalls) hand_over();
  }
  /// Queues the filling chunk for the observer's thread (waiting while kChunksInFlight are queued).
  void hand_over();
  void serve();
  void replay(const Chunk& chunk);

  SimulationObserver& inner_;
  /// The engine thread's own, on a cache line of its own: it changes at every call, and sharing a line with what the
  /// observer's thread reads (inner_, the queue) made that line bounce between the cores at every call (cpu +13-29 %).
  alignas(64) Chunk filling_;
  /// on_rank_classes' vectors, kept until the end (the calls refer to them by index), added and looked up under the
  /// lock (a deque keeps its elements in place as it grows).
  std::deque<std::vector<std::uint32_t>> rank_classes_;

  alignas(64) std::mutex mutex_;
  std::condition_variable queued_;    ///< a chunk was queued, or stop_ was set
  std::condition_variable progress_;  ///< a chunk was replayed, or the observer failed
  std::deque<Chunk> queue_;           ///< handed over, not yet replayed
  std::vector<Chunk> spare_;          ///< replayed chunks, for reuse
  bool busy_ = false;                 ///< the observer's thread is replaying a chunk
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  ///< started by the first hand_over(), once the members above exist
};

}  // namespace chopsim
