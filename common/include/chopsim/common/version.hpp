#pragma once
// chopsim's version: printed by --version, and part of every sweep point's key (a result computed by another version
// is computed again).

namespace chopsim {

inline constexpr const char* kChopsimVersion = "0.1.0";

}  // namespace chopsim
