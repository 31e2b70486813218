#pragma once
// Progress of long commands (ingest, calibrate, validate, sweep, study) on stderr: on a terminal one line rewritten
// in place, a bar with counts and the time left at the rate so far; otherwise a plain line at most every 10 s and at
// the end (logs stay short); nothing with --quiet. Safe to call from several threads (TBB jobs).

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace chopsim::cli {

class Progress {
 public:
  /// `what` names the unit counted ("cases", "points", "inputs").
  Progress(std::string label, std::string what, bool quiet);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  /// `done` of `total` finished; `note` (optional) is shown after the counts on the plain lines.
  void update(std::size_t done, std::size_t total, const std::string& note = {});

 private:
  void draw(std::size_t done, std::size_t total, const std::string& note);

  std::string label_;
  std::string what_;
  bool quiet_;
  bool terminal_;
  bool open_line_ = false;  ///< a terminal line is drawn and not yet ended
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_line_;
  std::mutex mutex_;
};

}  // namespace chopsim::cli
