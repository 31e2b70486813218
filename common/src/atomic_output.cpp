#include "chopsim/common/atomic_output.hpp"

#include <unistd.h>

#include <system_error>

#include "chopsim/common/error.hpp"

namespace chopsim {

AtomicOutputSet::~AtomicOutputSet() {
  if (committed_) return;
  for (const auto& file : staged_) {
    std::error_code ignored;
    std::filesystem::remove(file.temporary, ignored);
  }
}

std::filesystem::path AtomicOutputSet::stage(const std::filesystem::path& final_path) {
  // The process id keeps concurrent runs writing into one directory apart.
  auto temporary = final_path;
  temporary += ".tmp." + std::to_string(::getpid());
  staged_.push_back({temporary, final_path});
  return temporary;
}

void AtomicOutputSet::commit() {
  for (const auto& file : staged_) {
    if (!std::filesystem::exists(file.temporary))
      throw OutputError("output file " + file.temporary.string() + " was staged but never written");
  }
  for (const auto& file : staged_) {
    std::error_code error;
    std::filesystem::rename(file.temporary, file.final_path, error);
    if (error)
      throw OutputError("cannot rename " + file.temporary.string() + " to " + file.final_path.string() + ": " +
                        error.message());
  }
  committed_ = true;
}

std::ofstream open_for_writing(const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw OutputError("cannot open " + path.string() + " for writing");
  return out;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  AtomicOutputSet set;
  const auto temporary = set.stage(path);
  {
    auto out = open_for_writing(temporary);
    out << content;
    out.close();
    if (!out) throw OutputError("cannot write " + temporary.string());
  }
  set.commit();
}

}  // namespace chopsim
