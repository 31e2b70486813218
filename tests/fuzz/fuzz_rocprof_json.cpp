// libFuzzer target: the rocprofv3-json reader (chopsim ingest --format rocprofv3-json) on arbitrary bytes.
#include "fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return chopsim::fuzz::read_as("rocprofv3-json", ".json", data, size);
}
