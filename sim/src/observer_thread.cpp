#include "chopsim/sim/observer_thread.hpp"

#include <type_traits>
#include <utility>

namespace chopsim {

// A call is copied into its chunk and out again: a plain copy, as the engine's own events are.
static_assert(std::is_trivially_copyable_v<OpEvent> && std::is_trivially_copyable_v<GpuStateSample>);

ObserverThread::ObserverThread(SimulationObserver& inner) : inner_(inner) { filling_.reserve(kChunkCalls); }

ObserverThread::~ObserverThread() {
  if (!thread_.joinable()) return;  // no chunk was ever handed over
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  queued_.notify_one();
  thread_.join();
}

void ObserverThread::on_op_event(const OpEvent& event) { push(event); }

void ObserverThread::on_telemetry(const GpuStateSample& sample) { push(sample); }

void ObserverThread::on_rank_classes(const std::vector<std::uint32_t>& representative) {
  std::size_t index = 0;
  {
    const std::lock_guard lock(mutex_);
    rank_classes_.push_back(representative);
    index = rank_classes_.size() - 1;
  }
  push(RankClasses{index});
}

void ObserverThread::on_fold_window_begin(double time_s) { push(FoldWindowBegin{time_s}); }

void ObserverThread::on_fold(double time_s, double span_s) { push(Fold{time_s, span_s}); }

void ObserverThread::hand_over() {
  if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
  Chunk next;
  {
    std::unique_lock lock(mutex_);
    progress_.wait(lock, [&] { return queue_.size() < kChunksInFlight || error_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(filling_));
    if (!spare_.empty()) {
      next = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  queued_.notify_one();
  filling_ = std::move(next);
  filling_.clear();
  filling_.reserve(kChunkCalls);
}

void ObserverThread::drain() {
  if (!filling_.empty()) hand_over();
  std::unique_lock lock(mutex_);
  progress_.wait(lock, [&] { return (queue_.empty() && !busy_) || error_; });
  if (error_) std::rethrow_exception(error_);
}

void ObserverThread::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (stop_) return;  // the engine is done with us: drained, or failed
    Chunk chunk = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      replay(chunk);
    } catch (...) {
      error = std::current_exception();
    }
    chunk.clear();
    lock.lock();
    busy_ = false;
    spare_.push_back(std::move(chunk));
    if (error) {
      error_ = error;
      queue_.clear();  // the observer has failed: what is queued is never replayed
    }
    progress_.notify_one();
  }
}

void ObserverThread::replay(const Chunk& chunk) {
  SimulationObserver& inner = inner_;  // read once: the calls below may not change it, but the compiler cannot know
  for (const Call& call : chunk) {
    if (const auto* event = std::get_if<OpEvent>(&call)) {
      inner.on_op_event(*event);
    } else if (const auto* sample = std::get_if<GpuStateSample>(&call)) {
      inner.on_telemetry(*sample);
    } else if (const auto* begin = std::get_if<FoldWindowBegin>(&call)) {
      inner.on_fold_window_begin(begin->time_s);
    } else if (const auto* fold = std::get_if<Fold>(&call)) {
      inner.on_fold(fold->time_s, fold->span_s);
    } else if (const auto* classes = std::get_if<RankClasses>(&call)) {
      const std::vector<std::uint32_t>* representative = nullptr;
      {
        const std::lock_guard lock(mutex_);
        representative = &rank_classes_[classes->index];
      }
      inner.on_rank_classes(*representative);
    }
  }
}

}  // namespace chopsim
