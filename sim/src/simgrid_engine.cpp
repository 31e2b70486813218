// The "simgrid" Engine: isolation and transport around the SimGrid simulation (simgrid_simulation.cpp). Built as
// the module libchopsim_simgrid_engine.so, which engine_module.cpp loads when a run asks for this engine: SimGrid and
// the libraries it needs (ns-3, Boost.Context, ...) take ~30 ms to load and initialise, which every chopsim process
// paid before, whatever its engine.
//
// SimGrid allows one engine per process, so by default every run forks a child that prepares the workload, simulates
// and streams its events through a pipe (event_stream.hpp); the caller's thread reads the pipe and calls the observer,
// so observers never run inside SimGrid. The child's stderr goes to a second pipe: when the child dies (a SimGrid
// abort, a signal) its last output becomes part of the EngineError. Errors the child catches come back typed
// (EngineError or ModelError) with their message.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio_ext.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "chopsim/common/error.hpp"
#include "chopsim/sim/engine.hpp"
#include "event_stream.hpp"
#include "prepared_workload.hpp"
#include "simgrid_simulation.hpp"

namespace chopsim {
namespace {

using sim_detail::ErrorKind;
using sim_detail::EventReader;
using sim_detail::EventSink;
using sim_detail::EventWriter;
using sim_detail::ObserverSink;
using sim_detail::PreparedWorkload;

/// The child keeps at most this much of its stderr for error messages (the end of it: where an abort is explained).
constexpr std::size_t kStderrTail = 8192;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

/// Closes a file descriptor once.
class Fd {
 public:
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

void make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw EngineError(errno_text("cannot create a pipe for the simulation process"));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

/// A forked child; killed and reaped if the parent leaves early (an observer threw).
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      static_cast<void>(wait());
    }
  }
  /// Waits for the child to end and returns its wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

/// Runs in the forked child: prepare, simulate, stream. Returns the exit code.
int child_main(const SimulationInput& input, const EngineOptions& options, int fd) {
  EventWriter writer(fd);
  try {
    try {
      const PreparedWorkload prepared(input);
      const SimulationStats stats = sim_detail::run_simgrid(prepared, options, writer);
      writer.write_stats(stats);
      writer.flush();
      return 0;
    } catch (const EngineError& e) {
      writer.write_error(ErrorKind::engine, e.what());
    } catch (const ModelError& e) {
      writer.write_error(ErrorKind::model, e.what());
    } catch (const std::exception& e) {
      writer.write_error(ErrorKind::other, e.what());
    }
    writer.flush();
  } catch (...) {
    return 3;  // the pipe is gone: nobody to tell
  }
  return 1;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

class SimGridEngine final : public Engine {
 public:
  explicit SimGridEngine(const EngineOptions& options) : options_(options) {
    // SimGrid 3.32's network models that accept links (Constant refuses them, ns-3 is not in the Debian build); an
    // unknown name would abort inside SimGrid.
    constexpr std::array<std::string_view, 4> kModels{"CM02", "LV08", "SMPI", "IB"};
    if (std::find(kModels.begin(), kModels.end(), options_.network_model) == kModels.end())
      throw EngineError("simgrid: unknown network_model '" + options_.network_model +
                        "' (valid: CM02, LV08, SMPI, IB; chopsim uses CM02, see docs/design.md)");
  }

  [[nodiscard]] bool simulates_in_child_process() const override { return options_.isolate_in_child_process; }

  SimulationStats run(const SimulationInput& input, SimulationObserver& observer) override {
    // The reference engine simulates every micro-batch: it is what folding is checked against.
    if (input.fold.enabled()) throw EngineError("simgrid: steady-state folding is the fast engine's (simulation.fold)");
    ObserverSink sink(observer);
    if (!options_.isolate_in_child_process) {
      const PreparedWorkload prepared(input);
      return sim_detail::run_simgrid(prepared, options_, sink);
    }
    return run_in_child(input, sink);
  }

 private:
  SimulationStats run_in_child(const SimulationInput& input, EventSink& sink) const {
    Fd events_read, events_write, errors_read, errors_write;
    make_pipe(events_read, events_write);
    make_pipe(errors_read, errors_write);
    const pid_t pid = ::fork();
    if (pid < 0) throw EngineError(errno_text("cannot fork the simulation process"));
    if (pid == 0) {
      // Keep stdin, stdout and stderr (both into the error pipe) and the event pipe; close everything else, notably the
      // pipes of simulations other threads forked meanwhile, whose parents would otherwise wait for this child's end.
      // Output the parent had buffered but not yet written belongs to the parent: drop the child's copy, then send
      // whatever the child prints (SimGrid's messages) to the error pipe.
      ::__fpurge(stdout);
      ::__fpurge(stderr);
      const int out = events_write.get();
      ::dup2(errors_write.get(), STDOUT_FILENO);
      ::dup2(errors_write.get(), STDERR_FILENO);
      ::close_range(3, static_cast<unsigned>(out) - 1, 0);
      ::close_range(static_cast<unsigned>(out) + 1, ~0U, 0);
      ::_exit(child_main(input, options_, out));
    }
    Child child(pid);
    events_write.reset();
    errors_write.reset();

    EventReader reader;
    std::string errors;
    std::array<unsigned char, 1 << 16> buffer{};
    std::array<pollfd, 2> fds{pollfd{events_read.get(), POLLIN, 0}, pollfd{errors_read.get(), POLLIN, 0}};
    int open = 2;
    while (open > 0) {
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        throw EngineError(errno_text("waiting for the simulation process"));
      }
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          fds[i].fd = -1;
          --open;
          continue;
        }
        if (i == 0) {
          reader.consume(buffer.data(), static_cast<std::size_t>(n), sink);
        } else {
          errors.append(reinterpret_cast<const char*>(buffer.data()), static_cast<std::size_t>(n));
          if (errors.size() > 2 * kStderrTail) errors.erase(0, errors.size() - kStderrTail);
        }
      }
    }
    const int status = child.wait();
    if (reader.has_error()) {
      if (reader.error_kind() == ErrorKind::model) throw ModelError(reader.error_message());
      throw EngineError(reader.error_message());
    }
    if (!reader.has_stats() || reader.pending_bytes() != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (errors.size() > kStderrTail) errors.erase(0, errors.size() - kStderrTail);
      throw EngineError("the simulation process " + describe_status(status) + " before reporting its result" +
                        (errors.empty() ? std::string() : "; its last output:\n" + errors));
    }
    return reader.stats();
  }

  EngineOptions options_;
};

}  // namespace

}  // namespace chopsim

/// The module's one entry point (engine_module.cpp loads it): a new SimGridEngine, or null with `error` set. C linkage
/// so that dlsym finds it by this name; errors come back as text, not as an exception across dlopen's boundary.
extern "C" __attribute__((visibility("default"))) chopsim::Engine* chopsim_make_simgrid_engine(
    const chopsim::EngineOptions* options, std::string* error) {
  try {
    return new chopsim::SimGridEngine(*options);
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
