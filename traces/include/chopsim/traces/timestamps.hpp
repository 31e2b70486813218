#pragma once
// Wall-clock timestamps as telemetry tools write them, read exactly (integer nanoseconds: no double rounding of
// epoch times).

#include <cstdint>
#include <optional>
#include <string_view>

namespace chopsim {

/// Nanoseconds since the Unix epoch of "2024/05/22 17:15:22.123" (nvidia-smi), "2024-05-22 17:15:22",
/// "2024-05-22T17:15:22.5Z" or a plain number of seconds. Times without a zone are read as UTC. nullopt for text
/// that is none of these, a field out of its range, or a date int64 nanoseconds cannot hold (before 1678, after 2261).
[[nodiscard]] std::optional<std::int64_t> parse_timestamp_ns(std::string_view text);

}  // namespace chopsim
