// Telemetry records ('P') and the dynamics counters ('D') cross the child-to-parent pipe bit-exact, in any chunking,
// interleaved with op events in the order written.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "event_stream.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

class Collect final : public sim_detail::EventSink {
 public:
  void on_event(const OpEvent& /*event*/) override { order.push_back('E'); }
  void on_telemetry(const GpuStateSample& sample) override {
    samples.push_back(sample);
    order.push_back('P');
  }
  std::vector<GpuStateSample> samples;
  std::string order;
};

TEST(TelemetryStream, RoundTripInAnyChunking) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<unsigned char> bytes;
  std::thread reader([&] {
    unsigned char buffer[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  });
  std::vector<GpuStateSample> sent;
  std::string order;
  SimulationStats stats;
  {
    sim_detail::EventWriter writer(fds[1]);
    for (std::uint32_t i = 0; i < 3000; ++i) {
      if (i % 3 == 0) {
        OpEvent e;
        e.time_s = i * 1e-4;
        e.rank = i;
        writer.on_event(e);
        order += 'E';
      }
      GpuStateSample s;
      s.time_s = i * 1e-4 + 1.0 / 7.0;
      s.gpu = i * 31u;
      s.power_w = 100.0 + i / 3.0;
      s.clock_hz = 1.41e9 - i * 15e6 / 7.0;
      s.temperature_c = 40.0 + i * 1e-3;
      s.filtered_power_w = 399.999999;
      s.flags = static_cast<std::uint8_t>(i % 4);
      writer.on_telemetry(s);
      sent.push_back(s);
      order += 'P';
    }
    stats.makespan_s = 1.5;
    stats.iteration_end_s = {1.5};
    stats.telemetry_samples = sent.size();
    stats.governor_decisions = 123456;
    stats.governor_timed_events = 789;
    writer.write_stats(stats);
    writer.flush();
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{45}, std::size_t{4096}}) {
    Collect sink;
    sim_detail::EventReader reader_side;
    for (std::size_t at = 0; at < bytes.size(); at += chunk)
      reader_side.consume(bytes.data() + at, std::min(chunk, bytes.size() - at), sink);
    ASSERT_EQ(sink.samples.size(), sent.size()) << "chunk " << chunk;
    EXPECT_EQ(sink.order, order);
    for (std::size_t i = 0; i < sent.size(); ++i)
      EXPECT_EQ(std::memcmp(&sink.samples[i].time_s, &sent[i].time_s, sizeof(double)), 0);
    EXPECT_EQ(sink.samples.back().clock_hz, sent.back().clock_hz);
    EXPECT_EQ(sink.samples[7].flags, sent[7].flags);
    EXPECT_EQ(sink.samples[11].gpu, sent[11].gpu);
    ASSERT_TRUE(reader_side.has_stats());
    EXPECT_EQ(reader_side.stats().telemetry_samples, sent.size());
    EXPECT_EQ(reader_side.stats().governor_decisions, 123456U);
    EXPECT_EQ(reader_side.stats().governor_timed_events, 789U);
    EXPECT_EQ(reader_side.pending_bytes(), 0U);
  }
}

}  // namespace
}  // namespace chopsim::test
