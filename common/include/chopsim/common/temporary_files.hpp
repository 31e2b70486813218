#pragma once
// Temporary output files that an interrupted process removes (issue 16: Ctrl-C left timeline.json.tmp.<pid>
// behind, hundreds of MB). AtomicOutputSet tracks what it stages; main() installs the handlers.
//
// This is process-wide state on purpose: a signal reaches the process, not an engine or a config, and its handler
// can only reach what a fixed table holds. Everything here is thread-safe; remove_tracked() is async-signal-safe.

#include <filesystem>

namespace chopsim::temporary_files {

/// Tracks `path` for removal on interrupt until release(); returns the slot (-1 when the table of 1,024 is full or
/// the path is too long to hold, in which case the file is only removed by its owner, as before).
int track(const std::filesystem::path& path);
/// Stops tracking a slot track() returned (-1 is ignored).
void release(int slot);
/// Unlinks every tracked file. Async-signal-safe (unlink only), for a signal handler.
void remove_tracked() noexcept;
/// For main(): on SIGINT, SIGTERM or SIGHUP remove the tracked files, then end as the signal would have.
void remove_on_interrupt();

}  // namespace chopsim::temporary_files
