#include "chopsim/common/temporary_files.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <string>

namespace chopsim::temporary_files {

namespace {

constexpr std::size_t kSlots = 1024;
constexpr std::size_t kLongestPath = 4096;  // PATH_MAX on Linux

enum : int { kFree = 0, kFilling = 1, kLive = 2 };

/// A fixed table: a signal handler may not allocate or lock. A slot is claimed (free -> filling), its path copied,
/// then published (live); release() frees it.
struct Slot {
  std::atomic<int> state{kFree};
  std::array<char, kLongestPath> path{};
};

std::array<Slot, kSlots>& slots() {
  static std::array<Slot, kSlots> table;
  return table;
}

extern "C" void on_interrupt(int signal) {
  remove_tracked();
  // End as the signal would have (the shell sees "killed by SIGINT" and stops a script): default action, again.
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

int track(const std::filesystem::path& path) {
  const std::string& text = path.native();
  if (text.size() + 1 > kLongestPath) return -1;
  auto& table = slots();
  for (std::size_t i = 0; i < table.size(); ++i) {
    int expected = kFree;
    if (!table[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(table[i].path.data(), text.c_str(), text.size() + 1);
    table[i].state.store(kLive);
    return static_cast<int>(i);
  }
  return -1;
}

void release(int slot) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= kSlots) return;
  slots()[static_cast<std::size_t>(slot)].state.store(kFree);
}

void remove_tracked() noexcept {
  for (Slot& slot : slots())
    if (slot.state.load() == kLive) ::unlink(slot.path.data());
}

void remove_on_interrupt() {
  (void)slots();  // construct the table before any signal can arrive
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal, on_interrupt);
}

}  // namespace chopsim::temporary_files
