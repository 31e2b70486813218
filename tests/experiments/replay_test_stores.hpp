#pragma once
// Kernel stores for the replay tests, written and read with traces/ in replay_test_stores.cpp: traces/ and models/
// both define a TelemetrySample, so test files that include models/ headers cannot include traces/ headers.

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chopsim/common/kernel_class.hpp"

namespace chopsim::test {

/// `chopsim ingest TRACES -o store` (the library call).
void ingest_store(const std::vector<std::filesystem::path>& traces, const std::filesystem::path& store);

/// What the store holds, read with KernelStore (not with replay's reader).
struct StoreFacts {
  std::size_t records = 0;
  std::size_t communication_records = 0;
  std::size_t ranks = 0;
  double span_s = 0.0;  ///< last end - first start over all records, sources on one clock
  double busy_s[kKernelClassCount] = {};
};
[[nodiscard]] StoreFacts store_facts(const std::filesystem::path& store);

struct SyntheticKernel {
  int rank = 0;
  long stream = 7;
  std::string name;
  KernelClass kernel_class = KernelClass::other;
  double start_s = 0.0;
  double duration_s = 0.0;
  double flops = -1.0;  ///< < 0: not known
  double bytes = -1.0;
  std::optional<CollectiveKind> collective;
  double collective_bytes = -1.0;
  std::string group;  ///< e.g. "[0, 1]"
};

/// A kernel (FLOPs and bytes < 0: not known).
inline SyntheticKernel kernel(int rank, long stream, std::string name, KernelClass kernel_class, double start_s,
                              double duration_s, double flops = -1.0, double bytes = -1.0) {
  SyntheticKernel k;
  k.rank = rank;
  k.stream = stream;
  k.name = std::move(name);
  k.kernel_class = kernel_class;
  k.start_s = start_s;
  k.duration_s = duration_s;
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

/// A NCCL kernel of collective `kind` over `group` ("[0, 1]").
inline SyntheticKernel collective(int rank, long stream, CollectiveKind kind, double bytes, std::string group,
                                  double start_s, double duration_s) {
  SyntheticKernel k = kernel(rank, stream, "ncclDevKernel_" + std::string(collective_kind_name(kind)),
                             KernelClass::communication, start_s, duration_s);
  k.collective = kind;
  k.collective_bytes = bytes;
  k.group = std::move(group);
  return k;
}

/// A store with one source per rank of `kernels` (all on one clock), GPU `gpu_name`, world size `world_size`.
void write_store(const std::filesystem::path& store, const std::vector<SyntheticKernel>& kernels,
                 const std::string& gpu_name, int world_size);

}  // namespace chopsim::test
