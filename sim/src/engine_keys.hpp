#pragma once
// Keys both engines (fast_simulation.cpp, simgrid_simulation.cpp) look their shared state up by (private to
// chopsim_sim): 128-bit keys and the identity of one synchronised collective step, with their hashes; and the
// tolerance within which both take two times for one instant.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace chopsim::sim_detail {

struct Key128 {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  bool operator==(const Key128&) const = default;
};

struct Key128Hash {
  std::size_t operator()(const Key128& k) const {
    std::uint64_t h = k.a * 0x9e3779b97f4a7c15ULL;
    h ^= k.b + 0xbf58476d1ce4e5b9ULL + (h << 6) + (h >> 2);
    h *= 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

inline std::uint64_t pair_key(std::uint32_t a, std::uint32_t b) { return std::uint64_t{a} << 32 | b; }

/// Identity of one synchronised collective step (CollectiveStep::sync_members): the group, the stream, the how-many-th
/// collective of that group on that stream (members meet collectives in the same order), the step and the sync id.
struct SyncKey {
  int group = 0;
  std::uint16_t stream = 0;
  std::uint64_t sequence = 0;
  std::uint32_t step = 0;
  int sync_id = 0;
  bool operator==(const SyncKey&) const = default;
};

struct SyncKeyHash {
  std::size_t operator()(const SyncKey& k) const {
    return Key128Hash{}({pair_key(static_cast<std::uint32_t>(k.group), k.stream) ^ k.sequence * 0xff51afd7ed558ccdULL,
                         pair_key(k.step, static_cast<std::uint32_t>(k.sync_id))});
  }
};

/// Times within this of each other are one instant (an actor or stream woken at t may see t plus or minus an ulp).
inline double same_instant(double t) { return 1e-12 * std::max(1.0, std::abs(t)); }

}  // namespace chopsim::sim_detail
