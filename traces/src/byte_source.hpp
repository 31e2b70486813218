#pragma once
// Sequential reading of a trace file, plain or gzip-compressed, in bounded chunks.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace chopsim::detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Reads up to `size` bytes of content into `out`; returns 0 only at the end of the content.
  /// Throws InputError naming the file for unreadable or corrupt (truncated gzip) input.
  virtual std::size_t read(char* out, std::size_t size) = 0;

  /// Opens `path`; gzip is recognised by its magic bytes (1f 8b), not by the file name.
  static std::unique_ptr<ByteSource> open(const std::filesystem::path& path);
};

/// True if the file starts with the gzip magic bytes.
bool is_gzip_file(const std::filesystem::path& path);

}  // namespace chopsim::detail
