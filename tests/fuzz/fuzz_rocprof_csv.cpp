// libFuzzer target: the rocprofv3-csv reader (chopsim ingest --format rocprofv3-csv) on arbitrary bytes.
#include "fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return chopsim::fuzz::read_as("rocprofv3-csv", ".csv", data, size);
}
