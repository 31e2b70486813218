#pragma once
// chopsim's version and build: printed by --version, and part of every sweep point's key (a result computed by
// another version or build is computed again).

namespace chopsim {

inline constexpr const char* kChopsimVersion = "0.1.0";

/// The git commit chopsim was built from, followed by "+" and a hash of the uncommitted changes when there were any,
/// or "unknown" outside a git checkout (generated at build time by cmake/ChopsimBuildId.cmake).
const char* build_id();

}  // namespace chopsim
