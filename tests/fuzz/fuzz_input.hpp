#pragma once
// The fuzzed bytes as a file of this process (chopsim's readers and decoders take paths).

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace chopsim::fuzz {

/// A file of this process for the input (one at a time: libFuzzer calls the target from one thread).
inline std::filesystem::path input_file(const char* extension) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("chopsim_fuzz_" + std::to_string(::getpid()) + extension);
  return path;
}

inline void write_input(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace chopsim::fuzz
