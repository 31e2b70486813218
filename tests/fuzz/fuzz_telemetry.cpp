// libFuzzer target: the telemetry CSV readers (nvidia-smi, DCGM dmon, amd-smi/rocm-smi) on arbitrary bytes; the first
// byte picks the reader, so one corpus covers the three.
#include "fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kFormats[] = {"nvidia-smi", "dcgm-dmon", "amd-smi"};
  return chopsim::fuzz::read_as(kFormats[data[0] % 3], ".csv", data + 1, size - 1);
}
