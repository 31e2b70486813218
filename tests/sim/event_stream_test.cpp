// The child-to-parent record stream survives arbitrary read boundaries and keeps every field bit-exact.

#include "event_stream.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "chopsim/common/error.hpp"
#include "sim_test_support.hpp"

namespace chopsim::test {
namespace {

class Collect final : public sim_detail::EventSink {
 public:
  void on_event(const OpEvent& event) override { events.push_back(event); }
  std::vector<OpEvent> events;
};

/// Everything `write` puts into a pipe.
template <class F>
std::vector<unsigned char> through_pipe(F write) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::vector<unsigned char> bytes;
  std::thread reader([&] {
    unsigned char buffer[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  });
  {
    sim_detail::EventWriter writer(fds[1]);
    write(writer);
    writer.flush();
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  return bytes;
}

TEST(EventStream, RoundTripInAnyChunking) {
  std::vector<OpEvent> sent;
  for (std::uint32_t i = 0; i < 5000; ++i) {
    OpEvent e;
    e.time_s = 1e-3 * i + 1.0 / 3.0;
    e.start_s = e.time_s - 1e-7 * (i % 17);
    e.rank = i * 7919u;
    e.op = i;
    e.iteration = i % 5;
    e.stream = static_cast<std::uint16_t>(i % 9);
    e.is_end = i % 2 == 1;
    if (!e.is_end) e.start_s = e.time_s;
    sent.push_back(e);
  }
  SimulationStats stats;
  stats.makespan_s = 12.5;
  stats.iteration_end_s = {4.0, 8.25, 12.5};
  stats.activities = 123456789012ULL;
  stats.op_events = sent.size();
  const auto bytes = through_pipe([&](sim_detail::EventWriter& w) {
    for (const OpEvent& e : sent) w.on_event(e);
    w.write_stats(stats);
  });
  EXPECT_EQ(bytes.size(), 2500u * 23 + 2500u * 31 + 29 + 3 * 8);  // the compact record sizes
  for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
    Collect sink;
    sim_detail::EventReader reader;
    for (std::size_t at = 0; at < bytes.size(); at += chunk)
      reader.consume(bytes.data() + at, std::min(chunk, bytes.size() - at), sink);
    EXPECT_TRUE(same_events(sink.events, sent)) << "chunk " << chunk;
    ASSERT_TRUE(reader.has_stats());
    EXPECT_EQ(reader.stats().iteration_end_s, stats.iteration_end_s);
    EXPECT_EQ(reader.stats().activities, stats.activities);
    EXPECT_EQ(reader.pending_bytes(), 0u);
  }
}

TEST(EventStream, ErrorsKeepKindAndMessage) {
  const auto bytes = through_pipe(
      [](sim_detail::EventWriter& w) { w.write_error(sim_detail::ErrorKind::model, "collective: bad group"); });
  Collect sink;
  sim_detail::EventReader reader;
  reader.consume(bytes.data(), bytes.size(), sink);
  ASSERT_TRUE(reader.has_error());
  EXPECT_EQ(reader.error_kind(), sim_detail::ErrorKind::model);
  EXPECT_EQ(reader.error_message(), "collective: bad group");
  const unsigned char garbage[] = {'?', 1, 2, 3};
  EXPECT_THROW(reader.consume(garbage, sizeof garbage, sink), EngineError);
}

}  // namespace
}  // namespace chopsim::test
