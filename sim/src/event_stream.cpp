#include "event_stream.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chopsim/common/error.hpp"

namespace chopsim::sim_detail {

namespace {

constexpr std::size_t kStartSize = 1 + 8 + 4 + 4 + 4 + 2;
constexpr std::size_t kEndSize = 1 + 8 + 8 + 4 + 4 + 4 + 2;
constexpr std::size_t kStatsHeader = 1 + 8 + 8 + 8 + 4;
constexpr std::size_t kErrorHeader = 1 + 1 + 4;
constexpr std::size_t kTelemetrySize = 1 + 8 + 4 + 8 + 8 + 8 + 8 + 1;
constexpr std::size_t kDynamicsSize = 1 + 8 + 8 + 8;

template <class T>
T get(const unsigned char* data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return value;
}

}  // namespace

template <class T>
void EventWriter::put(const T& value) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
  buffer_.insert(buffer_.end(), bytes, bytes + sizeof(T));
}

void EventWriter::on_event(const OpEvent& event) {
  put<char>(event.is_end ? 'E' : 'S');
  put(event.time_s);
  if (event.is_end) put(event.start_s);
  put(event.rank);
  put(event.op);
  put(event.iteration);
  put(event.stream);
  if (buffer_.size() >= kFlushBytes) flush();
}

void EventWriter::on_telemetry(const GpuStateSample& sample) {
  put<char>('P');
  put(sample.time_s);
  put(sample.gpu);
  put(sample.power_w);
  put(sample.clock_hz);
  put(sample.temperature_c);
  put(sample.filtered_power_w);
  put(sample.flags);
  if (buffer_.size() >= kFlushBytes) flush();
}

void EventWriter::write_stats(const SimulationStats& stats) {
  if (stats.telemetry_samples > 0 || stats.governor_decisions > 0) {
    put<char>('D');
    put(stats.telemetry_samples);
    put(stats.governor_decisions);
    put(stats.governor_timed_events);
  }
  put<char>('T');
  put(stats.makespan_s);
  put(stats.activities);
  put(stats.op_events);
  put(static_cast<std::uint32_t>(stats.iteration_end_s.size()));
  for (const double t : stats.iteration_end_s) put(t);
}

void EventWriter::write_error(ErrorKind kind, const std::string& message) {
  put<char>('X');
  put(static_cast<std::uint8_t>(kind));
  put(static_cast<std::uint32_t>(message.size()));
  buffer_.insert(buffer_.end(), message.begin(), message.end());
}

void EventWriter::flush() {
  std::size_t written = 0;
  while (written < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + written, buffer_.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw EngineError(std::string("simulation child: writing to the parent failed: ") + std::strerror(errno));
    written += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

std::size_t EventReader::complete_record() const {
  const std::size_t available = pending_.size() - offset_;
  if (available == 0) return 0;
  const unsigned char* p = pending_.data() + offset_;
  switch (p[0]) {
    case 'S':
      return available >= kStartSize ? kStartSize : 0;
    case 'E':
      return available >= kEndSize ? kEndSize : 0;
    case 'T': {
      if (available < kStatsHeader) return 0;
      const std::size_t size = kStatsHeader + 8 * std::size_t{get<std::uint32_t>(p + 25)};
      return available >= size ? size : 0;
    }
    case 'P':
      return available >= kTelemetrySize ? kTelemetrySize : 0;
    case 'D':
      return available >= kDynamicsSize ? kDynamicsSize : 0;
    case 'X': {
      if (available < kErrorHeader) return 0;
      const std::size_t size = kErrorHeader + std::size_t{get<std::uint32_t>(p + 2)};
      return available >= size ? size : 0;
    }
    default:
      throw EngineError("simulation child sent a malformed event stream (record type " + std::to_string(p[0]) + ")");
  }
}

void EventReader::consume(const unsigned char* data, std::size_t size, EventSink& sink) {
  pending_.insert(pending_.end(), data, data + size);
  while (const std::size_t length = complete_record()) {
    const unsigned char* p = pending_.data() + offset_;
    if (p[0] == 'S' || p[0] == 'E') {
      OpEvent event;
      event.is_end = p[0] == 'E';
      std::size_t at = 1;
      event.time_s = get<double>(p + at);
      at += 8;
      if (event.is_end) {
        event.start_s = get<double>(p + at);
        at += 8;
      } else {
        event.start_s = event.time_s;
      }
      event.rank = get<std::uint32_t>(p + at);
      event.op = get<std::uint32_t>(p + at + 4);
      event.iteration = get<std::uint32_t>(p + at + 8);
      event.stream = get<std::uint16_t>(p + at + 12);
      offset_ += length;  // before dispatching: an observer that throws leaves the reader consistent
      sink.on_event(event);
      continue;
    }
    if (p[0] == 'P') {
      GpuStateSample sample;
      sample.time_s = get<double>(p + 1);
      sample.gpu = get<std::uint32_t>(p + 9);
      sample.power_w = get<double>(p + 13);
      sample.clock_hz = get<double>(p + 21);
      sample.temperature_c = get<double>(p + 29);
      sample.filtered_power_w = get<double>(p + 37);
      sample.flags = p[45];
      offset_ += length;
      sink.on_telemetry(sample);
      continue;
    }
    if (p[0] == 'D') {
      dynamics_.telemetry_samples = get<std::uint64_t>(p + 1);
      dynamics_.governor_decisions = get<std::uint64_t>(p + 9);
      dynamics_.governor_timed_events = get<std::uint64_t>(p + 17);
    } else if (p[0] == 'T') {
      stats_.makespan_s = get<double>(p + 1);
      stats_.activities = get<std::uint64_t>(p + 9);
      stats_.op_events = get<std::uint64_t>(p + 17);
      const std::uint32_t n = get<std::uint32_t>(p + 25);
      stats_.iteration_end_s.resize(n);
      for (std::uint32_t i = 0; i < n; ++i) stats_.iteration_end_s[i] = get<double>(p + kStatsHeader + 8 * i);
      stats_.telemetry_samples = dynamics_.telemetry_samples;
      stats_.governor_decisions = dynamics_.governor_decisions;
      stats_.governor_timed_events = dynamics_.governor_timed_events;
      has_stats_ = true;
    } else {
      error_kind_ = static_cast<ErrorKind>(p[1]);
      error_message_.assign(reinterpret_cast<const char*>(p + kErrorHeader), get<std::uint32_t>(p + 2));
      has_error_ = true;
    }
    offset_ += length;
  }
  // Drop consumed bytes now and then so the buffer stays small.
  if (offset_ > (1u << 16)) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(offset_));
    offset_ = 0;
  }
}

}  // namespace chopsim::sim_detail
