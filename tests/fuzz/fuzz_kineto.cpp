// libFuzzer target: the kineto reader (chopsim ingest --format kineto) on arbitrary bytes.
#include "fuzz_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return chopsim::fuzz::read_as("kineto", ".json", data, size);
}
