#include "chopsim/common/install_paths.hpp"

#include <dlfcn.h>

#include <system_error>

namespace chopsim {

std::vector<std::filesystem::path> folders_above_this_program(int levels) {
  namespace fs = std::filesystem;
  std::error_code error;
  Dl_info info{};
  fs::path object;
  // The object holding this function: chopsim's libraries are static, so it is the executable or the Python module.
  if (dladdr(reinterpret_cast<void*>(&folders_above_this_program), &info) != 0 && info.dli_fname != nullptr)
    object = fs::canonical(info.dli_fname, error);
  if (object.empty() || error) object = fs::read_symlink("/proc/self/exe", error);
  std::vector<fs::path> folders;
  if (object.empty() || error) return folders;
  for (fs::path dir = object.parent_path(); static_cast<int>(folders.size()) < levels && !dir.empty();
       dir = dir.parent_path()) {
    folders.push_back(dir);
    if (dir == dir.parent_path()) break;
  }
  return folders;
}

}  // namespace chopsim
