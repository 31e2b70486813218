// libFuzzer target: the HDF5 kernel store's reader (what calibrate and replay read) on fuzzed table contents. The
// input is not an HDF5 file (HDF5's own format is HDF5's to fuzz): it becomes the rows of a store written through
// KernelStoreWriter with any values in any field (classes and kinds beyond their enums, string and source indices
// beyond their tables, non-finite times), as a store from another chopsim or an h5py script might hold them. Every
// read must give records that pass the readers' range checks or a typed error.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/kernel_store.hpp"
#include "fuzz_input.hpp"

namespace {

using chopsim::KernelRecord;

constexpr std::array<double, 8> kReals = {0.0,
                                          1e-6,
                                          -1.0,
                                          1e300,
                                          std::numeric_limits<double>::infinity(),
                                          -std::numeric_limits<double>::infinity(),
                                          std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::denorm_min()};

double real(FuzzedDataProvider& input) {
  return input.ConsumeBool() ? input.PickValueInArray(kReals) : input.ConsumeFloatingPoint<double>();
}

/// A string index: mostly within the first few strings, sometimes anything.
std::uint32_t string_index(FuzzedDataProvider& input) {
  return input.ConsumeBool() ? input.ConsumeIntegralInRange<std::uint32_t>(0, 6)
                             : input.ConsumeIntegral<std::uint32_t>();
}

KernelRecord kernel(FuzzedDataProvider& input) {
  KernelRecord r;
  r.rank = input.ConsumeIntegral<std::int32_t>();
  r.device = input.ConsumeIntegralInRange<std::int32_t>(-2, 16);
  r.stream = input.ConsumeIntegral<std::int64_t>();
  r.name = string_index(input);
  r.op = string_index(input);
  r.kernel_class = static_cast<chopsim::KernelClass>(input.ConsumeIntegral<std::uint8_t>());
  r.kind = static_cast<chopsim::ActivityKind>(input.ConsumeIntegralInRange<std::uint8_t>(0, 4));
  if (input.ConsumeBool()) r.collective = static_cast<chopsim::CollectiveKind>(input.ConsumeIntegral<std::uint8_t>());
  r.start_s = real(input);
  r.duration_s = real(input);
  for (int i = 0; i < 3; ++i) {
    r.grid[static_cast<std::size_t>(i)] = input.ConsumeIntegral<std::uint32_t>();
    r.block[static_cast<std::size_t>(i)] = input.ConsumeIntegral<std::uint32_t>();
  }
  r.flops = real(input);
  r.bytes = real(input);
  r.collective_bytes = real(input);
  r.group = string_index(input);
  r.group_size = input.ConsumeIntegral<std::int32_t>();
  r.correlation = input.ConsumeIntegral<std::int64_t>();
  r.launch_start_s = real(input);
  r.launch_end_s = real(input);
  r.launch_thread = input.ConsumeIntegral<std::int64_t>();
  return r;
}

/// Writes the store the input describes.
void write_store(const std::filesystem::path& path, FuzzedDataProvider& input) {
  chopsim::KernelStoreWriter writer(path);
  const int strings = input.ConsumeIntegralInRange(0, 6);
  for (int i = 0; i < strings; ++i) (void)writer.intern(input.ConsumeRandomLengthString(24));
  const int sources = input.ConsumeIntegralInRange(0, 3);
  std::vector<chopsim::SourceInfo> infos(static_cast<std::size_t>(sources));
  for (auto& info : infos) {
    info.path = input.ConsumeRandomLengthString(16);
    info.format = input.ConsumeRandomLengthString(12);
    info.rank = input.ConsumeIntegral<std::int32_t>();
    info.world_size = input.ConsumeIntegral<std::int32_t>();
    info.time_origin_ns = input.ConsumeIntegral<std::int64_t>();
  }
  while (input.remaining_bytes() > 0) {
    writer.begin_source(input.ConsumeBool() ? input.ConsumeIntegralInRange<std::uint32_t>(0, 3)
                                            : input.ConsumeIntegral<std::uint32_t>());
    switch (input.ConsumeIntegralInRange(0, 2)) {
      case 0:
        writer.add_kernel(kernel(input));
        break;
      case 1: {
        chopsim::TelemetrySample s;
        s.device = input.ConsumeIntegral<std::int32_t>();
        s.time_s = real(input);
        s.power_w = real(input);
        s.power_limit_w = real(input);
        s.gfx_clock_hz = real(input);
        s.temp_edge_c = real(input);
        s.util_gpu = real(input);
        s.energy_j = real(input);
        writer.add_telemetry(s);
        break;
      }
      default: {
        chopsim::AnnotationRecord a;
        a.rank = input.ConsumeIntegral<std::int32_t>();
        a.stream = input.ConsumeIntegral<std::int64_t>();
        a.name = string_index(input);
        a.start_s = real(input);
        a.duration_s = real(input);
        writer.add_annotation(a);
      }
    }
  }
  writer.finish(infos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  const std::filesystem::path path = chopsim::fuzz::input_file(".h5");
  try {
    write_store(path, input);
  } catch (const chopsim::Error&) {
    return 0;  // the writer refused: nothing to read
  }
  try {
    const chopsim::KernelStore store = chopsim::KernelStore::open(path);
    std::uint64_t visited = 0;
    store.for_each_kernel([&](std::span<const KernelRecord> chunk) { visited += chunk.size(); });
    if (visited != store.kernel_count()) {
      std::fprintf(stderr, "fuzz: store: %llu kernels visited of %llu\n", static_cast<unsigned long long>(visited),
                   static_cast<unsigned long long>(store.kernel_count()));
      std::abort();
    }
    (void)store.telemetry();
    (void)store.annotations();
    (void)store.streams();
  } catch (const chopsim::Error&) {
    // the expected answer to rows out of range
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: store: untyped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
