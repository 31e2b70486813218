#pragma once
// The byte stream a simulation child process writes to its parent: typed records, native byte order (both ends are
// the same executable on the same machine). Records:
//   'S' op start:  f64 time, u32 rank, u32 op, u32 iteration, u16 stream                          (23 bytes)
//   'E' op end:    f64 time, f64 start, u32 rank, u32 op, u32 iteration, u16 stream               (31 bytes)
//   'T' stats:     f64 makespan, u64 activities, u64 op_events, u32 n, n x f64 iteration ends
//   'X' error:     u8 kind (ErrorKind), u32 length, message bytes
//   'P' telemetry: f64 time, u32 gpu, f64 power, f64 clock, f64 temperature, f64 averaged power, u8 flags  (46 bytes)
//   'D' dynamics:  u64 telemetry samples, u64 governor decisions, u64 timed decisions (sent before 'T')  (25 bytes)

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chopsim/sim/engine.hpp"

namespace chopsim::sim_detail {

/// Receives what a simulation reports, in time order.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const OpEvent& event) = 0;
  virtual void on_telemetry(const GpuStateSample& /*sample*/) {}
  virtual void on_rank_classes(const std::vector<std::uint32_t>& /*representative*/) {}
  virtual void on_fold_window_begin(double /*time_s*/) {}
  virtual void on_fold(double /*time_s*/, double /*span_s*/) {}
};

/// Passes what a simulation reports to a SimulationObserver.
class ObserverSink final : public EventSink {
 public:
  explicit ObserverSink(SimulationObserver& observer) : observer_(observer) {}
  void on_event(const OpEvent& event) override { observer_.on_op_event(event); }
  void on_telemetry(const GpuStateSample& sample) override { observer_.on_telemetry(sample); }
  void on_rank_classes(const std::vector<std::uint32_t>& representative) override {
    observer_.on_rank_classes(representative);
  }
  void on_fold_window_begin(double time_s) override { observer_.on_fold_window_begin(time_s); }
  void on_fold(double time_s, double span_s) override { observer_.on_fold(time_s, span_s); }

 private:
  SimulationObserver& observer_;
};

enum class ErrorKind : std::uint8_t { engine = 0, model = 1, other = 2 };

/// Buffers records and writes them to a file descriptor (the child's end of the pipe).
class EventWriter final : public EventSink {
 public:
  explicit EventWriter(int fd) : fd_(fd) { buffer_.reserve(kFlushBytes + 64); }
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void on_event(const OpEvent& event) override;
  void on_telemetry(const GpuStateSample& sample) override;
  /// The 'D' record (only with power dynamics) and the 'T' record.
  void write_stats(const SimulationStats& stats);
  void write_error(ErrorKind kind, const std::string& message);
  /// Writes out everything buffered; throws EngineError if the pipe is gone.
  void flush();

 private:
  static constexpr std::size_t kFlushBytes = 1 << 16;
  template <class T>
  void put(const T& value);
  int fd_;
  std::vector<unsigned char> buffer_;
};

/// Parses the parent's side of the stream incrementally.
class EventReader {
 public:
  /// Appends bytes read from the pipe and dispatches every complete record: events to `sink`, stats and errors
  /// remembered. Throws EngineError on a malformed stream.
  void consume(const unsigned char* data, std::size_t size, EventSink& sink);

  [[nodiscard]] bool has_stats() const { return has_stats_; }
  [[nodiscard]] const SimulationStats& stats() const { return stats_; }
  [[nodiscard]] bool has_error() const { return has_error_; }
  [[nodiscard]] ErrorKind error_kind() const { return error_kind_; }
  [[nodiscard]] const std::string& error_message() const { return error_message_; }
  /// Bytes of an incomplete record left at the end.
  [[nodiscard]] std::size_t pending_bytes() const { return pending_.size() - offset_; }

 private:
  /// Length of the record at offset_ if it is complete, else 0.
  [[nodiscard]] std::size_t complete_record() const;
  std::vector<unsigned char> pending_;
  std::size_t offset_ = 0;
  bool has_stats_ = false;
  SimulationStats stats_;
  SimulationStats dynamics_;  ///< the 'D' record's counters until 'T' arrives
  bool has_error_ = false;
  ErrorKind error_kind_ = ErrorKind::other;
  std::string error_message_;
};

}  // namespace chopsim::sim_detail
