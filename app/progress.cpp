#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace chopsim::cli {

namespace {
constexpr auto kPlainLineInterval = std::chrono::seconds(10);
constexpr int kBarWidth = 24;
}  // namespace

Progress::Progress(std::string label, std::string what, bool quiet)
    : label_(std::move(label)),
      what_(std::move(what)),
      quiet_(quiet),
      terminal_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_line_(start_) {}

Progress::~Progress() {
  if (open_line_) std::fputc('\n', stderr);
}

void Progress::update(std::size_t done, std::size_t total, const std::string& note) {
  if (quiet_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  draw(done, total, note);
}

void Progress::draw(std::size_t done, std::size_t total, const std::string& note) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0.0 ? static_cast<double>(done) / elapsed : 0.0;
  const double left = rate > 0.0 && total >= done ? static_cast<double>(total - done) / rate : 0.0;
  if (terminal_) {
    const int filled =
        total > 0 ? static_cast<int>(kBarWidth * static_cast<double>(done) / static_cast<double>(total)) : kBarWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kBarWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %zu/%zu %s, %.0f s, ETA %.0f s   ", label_.c_str(), bar.c_str(), done, total,
                 what_.c_str(), elapsed, left);
    open_line_ = done < total;
    if (!open_line_) std::fputc('\n', stderr);
    return;
  }
  // Plain lines: the first, then at most one every 10 s, and the last.
  if (done != 1 && done < total && now - last_line_ < kPlainLineInterval) return;
  last_line_ = now;
  std::fprintf(stderr, "%s: %zu/%zu %s, %.0f s elapsed, %.0f s left%s%s\n", label_.c_str(), done, total, what_.c_str(),
               elapsed, left, note.empty() ? "" : ": ", note.c_str());
}

}  // namespace chopsim::cli
