// Where a run's configs are looked up (docs/configs.md, "Naming a component"): the configs folder above the
// run file, CHOPSIM_CONFIG_PATH's folders, the installed configs, the source tree's; and the checks of a folder the
// user names (--configs, Python's configs=).

#include <algorithm>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "chopsim/common/install_paths.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/decode.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using config_detail::holds_folder;

bool config_detail::holds_folder(std::vector<fs::path>::const_iterator first,
                                 std::vector<fs::path>::const_iterator last, const fs::path& root) {
  std::error_code error;
  return std::any_of(first, last, [&](const fs::path& r) { return fs::equivalent(r, root, error); });
}

namespace {

/// The folders of CHOPSIM_CONFIG_PATH (colon-separated, as PATH), those that exist.
std::vector<fs::path> config_path_from_environment() {
  std::vector<fs::path> out;
  const char* value = std::getenv("CHOPSIM_CONFIG_PATH");  // read-only: the user's setting, not chopsim's state
  if (value == nullptr) return out;
  const std::string text(value);
  std::error_code error;
  for (std::size_t begin = 0; begin <= text.size();) {
    const std::size_t end = std::min(text.find(':', begin), text.size());
    const fs::path dir = text.substr(begin, end - begin);
    if (!dir.empty() && fs::is_directory(dir, error)) out.push_back(fs::absolute(dir, error).lexically_normal());
    begin = end + 1;
  }
  return out;
}

/// The configs `cmake --install` put under the prefix this code was installed to: PREFIX/share/chopsim/configs, found
/// from the file holding chopsim's code (PREFIX/bin/chopsim, or the Python module's
/// PREFIX/lib/python3/dist-packages/chopsim/_chopsim.so) by looking up to five folders up; empty when this is no
/// installed chopsim (the build tree's).
fs::path installed_configs() {
  std::error_code error;
  for (const fs::path& dir : folders_above_this_program(5)) {
    const fs::path share = dir / "share" / "chopsim" / "configs";
    if (fs::is_directory(share / "hardware", error)) return share;
  }
  return {};
}

}  // namespace

ConfigSearchPath default_search_path(const fs::path& run_file) {
  std::error_code error;
  ConfigSearchPath search;
  fs::path dir = run_file.parent_path();
  if (dir.empty()) dir = ".";
  fs::path current = fs::absolute(dir, error).lexically_normal();
  while (!error) {
    // A folder without hardware/ is no error: the walk goes on to its parent. (is_directory reports a missing path
    // through its error code, which once ended the walk at the run file's own folder: configs/validation/x.yaml of a
    // copied configs folder then took the shipped hardware files instead of the copy's.)
    std::error_code missing;
    if (fs::is_directory(current / "hardware", missing)) {
      search.roots.push_back(current);
      break;
    }
    const fs::path parent = current.parent_path();
    if (parent == current || parent.empty()) break;
    current = parent;
  }
  // Then the folders the user lists in CHOPSIM_CONFIG_PATH, then the configs chopsim ships: installed beside the
  // executable (cmake --install), else its source tree's configs/, so that a run file copied anywhere still finds
  // hardware, models and clusters by name.
  std::vector<fs::path> more = config_path_from_environment();
  const fs::path installed = installed_configs();
  if (!installed.empty()) more.push_back(installed);
  const fs::path shipped = CHOPSIM_SHIPPED_CONFIGS;
  if (!shipped.empty() && fs::is_directory(shipped / "hardware", error)) more.push_back(shipped);
  for (const fs::path& root : more)
    if (!holds_folder(search.roots.begin(), search.roots.end(), root)) search.roots.push_back(root);
  return search;
}

ConfigSearchPath default_search_path(const fs::path& run_file, const fs::path& first) {
  ConfigSearchPath search = default_search_path(run_file);
  if (!first.empty()) search.roots.insert(search.roots.begin(), first);
  return search;
}

void check_configs_folder(const fs::path& dir, const std::string& origin) {
  // An option (--configs) is on the command line; anything else (Python's configs=) is an argument of a call.
  const SourceLocation where{origin.starts_with("--") ? "command line" : "argument", 0, 0};
  std::error_code error;
  if (!fs::is_directory(dir, error))
    throw InputError(where, "", origin + " " + dir.string() + ": no such folder",
                     "give the folder that holds hardware/, models/ and clusters/ (e.g. configs)");
  for (const char* kind : {"hardware", "models", "clusters"})
    if (fs::is_directory(dir / kind, error)) return;
  throw InputError(where, "", origin + " " + dir.string() + " holds none of hardware/, models/ and clusters/",
                   "give the folder above them (e.g. configs, not configs/hardware)");
}

fs::path find_run_config(const fs::path& given, const ConfigSearchPath& search) {
  std::error_code error;
  if (fs::exists(given, error) || given.has_parent_path()) return given;
  // A bare name: a run config of the search path's folders (`chopsim run llama3-8b-fsdp`).
  for (const fs::path& root : search.roots)
    for (const fs::path& candidate : {root / given, root / (given.string() + ".yaml")})
      if (fs::is_regular_file(candidate, error)) return candidate;
  return given;
}

}  // namespace chopsim
