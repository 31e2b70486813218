#pragma once
// How a hardware, model or cluster file is named wherever one is asked for (a run config's keys, --hardware and
// --cluster on the command line): by name, as FOLDER/NAME.yaml under a configs folder, or by path.

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace chopsim {

/// True when `text` is spelled as a path (it has a '/' or '\', or ends in .yaml or .yml), not as a name.
[[nodiscard]] inline bool looks_like_config_path(std::string_view text) {
  return text.find('/') != std::string_view::npos || text.find('\\') != std::string_view::npos ||
         text.ends_with(".yaml") || text.ends_with(".yml");
}

/// The names of the `.yaml` files in `folder` (their stems), sorted; empty when the folder does not exist.
[[nodiscard]] inline std::vector<std::string> config_names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error))
    if (entry.is_regular_file(error) && entry.path().extension() == ".yaml")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace chopsim
