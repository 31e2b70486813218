#include "chopsim/common/atomic_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <system_error>

#include "chopsim/common/error.hpp"
#include "chopsim/common/temporary_files.hpp"

namespace chopsim {

AtomicOutputSet::~AtomicOutputSet() {
  for (const auto& file : staged_) {
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove(file.temporary, ignored);
    }
    temporary_files::release(file.slot);
  }
}

std::filesystem::path AtomicOutputSet::stage(const std::filesystem::path& final_path) {
  // Created here, exclusively (O_EXCL: a file or a planted symlink of that name makes us pick another name) and
  // under a name nobody can predict, with the permissions the umask gives any new file; the writer then opens it
  // again, truncating. The process id keeps concurrent runs apart when reading a folder.
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp.%d.%08x", static_cast<int>(::getpid()), random());
    auto temporary = final_path;
    temporary += suffix;
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw OutputError("cannot create " + temporary.string() + ": " + std::strerror(errno));
    }
    ::close(fd);
    staged_.push_back({temporary, final_path, temporary_files::track(temporary)});
    return temporary;
  }
  throw OutputError("cannot create a temporary file beside " + final_path.string());
}

void AtomicOutputSet::commit() {
  for (const auto& file : staged_) {
    if (!std::filesystem::exists(file.temporary))
      throw OutputError("output file " + file.temporary.string() + " was staged but never written");
    if (std::filesystem::is_directory(file.final_path))
      throw OutputError("cannot write " + file.final_path.string() + ": a directory of that name exists");
  }
  for (std::size_t i = 0; i < staged_.size(); ++i) {
    std::error_code error;
    std::filesystem::rename(staged_[i].temporary, staged_[i].final_path, error);
    if (error) {
      // Take back the files already renamed so that the set stays all-or-nothing.
      for (std::size_t j = 0; j < i; ++j) {
        std::error_code ignored;
        std::filesystem::remove(staged_[j].final_path, ignored);
      }
      throw OutputError("cannot rename " + staged_[i].temporary.string() + " to " + staged_[i].final_path.string() +
                        ": " + error.message());
    }
  }
  committed_ = true;
}

void check_output_file(const std::filesystem::path& file, std::string_view option,
                       const std::vector<std::filesystem::path>& inputs) {
  const SourceLocation command_line{"command line"};
  std::error_code error;
  for (const auto& input : inputs)
    if (std::filesystem::exists(file, error) && std::filesystem::equivalent(file, input, error))
      throw InputError(command_line, "",
                       std::string(option) + " " + file.string() + " is the input " + input.string() +
                           ": writing it would replace that input",
                       "write the output to another file");
  if (std::filesystem::is_directory(file))
    throw InputError(command_line, "", std::string(option) + " " + file.string() + " is a directory, not a file",
                     "name a file inside it, e.g. " + (file / "out").string());
  const auto folder = file.parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder))
    throw InputError(command_line, "",
                     std::string(option) + " " + file.string() + ": its folder " + folder.string() + " does not exist",
                     "create the folder first, or write the file elsewhere");
}

void create_output_directory(const std::filesystem::path& directory, std::string_view option) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    throw InputError(
        SourceLocation{"command line"}, "",
        std::string(option) + " " + directory.string() + ": cannot create the directory: " + error.message(),
        "give a directory path you may write to (it is created if missing)");
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
