#include "sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

std::string sha256_file(const std::filesystem::path& path, std::uint64_t& size_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path.string()}, "", "cannot open the file", "check the path and its permissions");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw OutputError("OpenSSL SHA-256 initialisation failed");
  std::vector<char> buffer(std::size_t{1} << 20);
  size_bytes = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    EVP_DigestUpdate(context.get(), buffer.data(), got);
    size_bytes += got;
  }
  if (in.bad()) throw InputError({path.string()}, "", "read error", "check the file system");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace chopsim::detail
