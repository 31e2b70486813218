#include "byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

namespace {

constexpr std::size_t kCompressedChunk = 1 << 20;

/// Plain files are read with read() in the caller's chunk size. (Memory-mapping was measured: no faster here, and
/// the mapped pages count as resident memory, which would then grow with the file.)
class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError({path.string()}, "", "cannot open the file", "check the path and its permissions");
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~PlainSource() override { ::close(fd_); }
  PlainSource(const PlainSource&) = delete;
  PlainSource& operator=(const PlainSource&) = delete;

  std::size_t read(char* out, std::size_t size) override {
    std::size_t total = 0;
    while (total < size) {
      const ssize_t got = ::read(fd_, out + total, size - total);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw InputError({path_.string()}, "", "read error", "check the file system");
      if (got == 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

/// gzip via zlib's inflate with automatic gzip header detection (windowBits 15 + 32). Concatenated gzip members
/// (what `cat a.gz b.gz` and parallel gzip produce) are read one after another.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(const std::filesystem::path& path)
      : path_(path), in_(path, std::ios::binary), input_(kCompressedChunk) {
    if (!in_) throw InputError({path.string()}, "", "cannot open the file", "check the path and its permissions");
    if (inflateInit2(&stream_, 15 + 32) != Z_OK)
      throw InputError({path.string()}, "", "zlib initialisation failed", "");
    initialised_ = true;
  }
  ~GzipSource() override {
    if (initialised_) inflateEnd(&stream_);
  }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(char* out, std::size_t size) override {
    if (finished_) return 0;
    stream_.next_out = reinterpret_cast<Bytef*>(out);
    stream_.avail_out = static_cast<uInt>(size);
    while (stream_.avail_out > 0) {
      if (stream_.avail_in == 0) {
        in_.read(input_.data(), static_cast<std::streamsize>(input_.size()));
        if (in_.bad()) throw InputError({path_.string()}, "", "read error", "check the file system");
        const auto got = static_cast<uInt>(in_.gcount());
        if (got == 0) {
          if (member_started_)
            throw InputError({path_.string()}, "",
                             "the gzip stream ends early (after " + std::to_string(stream_.total_out) +
                                 " decompressed bytes of the last member): the file is truncated",
                             "copy or export the trace again");
          finished_ = true;
          break;
        }
        stream_.next_in = reinterpret_cast<Bytef*>(input_.data());
        stream_.avail_in = got;
      }
      member_started_ = true;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      if (status == Z_STREAM_END) {
        member_started_ = false;
        inflateReset(&stream_);
        continue;
      }
      if (status != Z_OK && status != Z_BUF_ERROR)
        throw InputError({path_.string()}, "",
                         std::string("corrupt gzip data (zlib: ") + (stream_.msg ? stream_.msg : "error") + ")",
                         "copy or export the trace again");
    }
    return size - stream_.avail_out;
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  std::vector<char> input_;
  z_stream stream_{};
  bool initialised_ = false;
  bool member_started_ = false;
  bool finished_ = false;
};

}  // namespace

bool is_gzip_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 2> magic{};
  in.read(reinterpret_cast<char*>(magic.data()), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::unique_ptr<ByteSource> ByteSource::open(const std::filesystem::path& path) {
  if (is_gzip_file(path)) return std::make_unique<GzipSource>(path);
  return std::make_unique<PlainSource>(path);
}

}  // namespace chopsim::detail
