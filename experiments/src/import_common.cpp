// Helpers every framework importer shares (import_internal.hpp): the cluster and model a job names, and a key path
// in a job's YAML.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chopsim/common/config_files.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/experiments/import.hpp"
#include "import_internal.hpp"

namespace chopsim::import_detail {

namespace fs = std::filesystem;

std::optional<ClusterSpec> find_cluster(const ImportOptions& options) {
  std::error_code error;
  if (looks_like_config_path(options.cluster)) {
    if (fs::is_regular_file(options.cluster, error)) return load_cluster_config(options.cluster);
    return std::nullopt;
  }
  for (const auto& root : options.search.roots) {
    const fs::path file = root / "clusters" / (options.cluster + ".yaml");
    if (fs::is_regular_file(file, error)) return load_cluster_config(file);
  }
  return std::nullopt;
}

int cluster_gpus_per_node(const ImportOptions& options) {
  const std::optional<ClusterSpec> cluster = find_cluster(options);
  return cluster ? cluster->gpus_per_node : 0;
}

bool model_is_hf_config(const std::string& model) { return fs::path(model).extension() == ".json"; }

std::string model_entry(const std::string& model) {
  if (!model_is_hf_config(model)) return "model: " + model + "\n";
  const ImportResult hf = import_hf_model(model);
  std::string out = "model:  # --model " + model + "\n";
  std::istringstream lines(hf.yaml);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() != '#') out += "  " + line + "\n";
  return out;
}

std::string model_entry(const std::string& model, std::optional<int> mtp_layers, const ConfigSearchPath& search) {
  if (!mtp_layers) return model_entry(model);
  // The model's keys (the Hugging Face import's, or a shipped file's) without its mtp_layers, then the job's.
  std::string text, source;
  if (model_is_hf_config(model)) {
    text = import_hf_model(model).yaml;
    source = "--model " + model;
  } else {
    fs::path file;
    std::error_code error;
    for (const fs::path& root : search.roots)
      if (fs::is_regular_file(root / "models" / (model + ".yaml"), error)) {
        file = root / "models" / (model + ".yaml");
        break;
      }
    // No file: the run config's loader names it. The file's own depth: written by name.
    if (file.empty() || load_model_config(file).mtp_layers == *mtp_layers) return model_entry(model);
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    source = "configs/models/" + model + ".yaml";
  }
  std::string out = "model:  # " + source + ", mtp_layers from the job\n";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() != '#' && line.rfind("mtp_layers:", 0) != 0) out += "  " + line + "\n";
  out += "  mtp_layers: " + std::to_string(*mtp_layers) + "        # model.mtp_num_layers\n";
  return out;
}

std::string shipped_model_with_shape(const ConfigSearchPath& search,
                                     const std::function<bool(const TransformerSpec&)>& matches) {
  for (const fs::path& root : search.roots) {
    std::error_code error;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root / "models", error))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());  // the same answer whatever the directory's order
    for (const fs::path& file : files) {
      try {
        if (matches(load_model_config(file))) return file.stem().string();
      } catch (const InputError&) {
      }
    }
  }
  return "";
}

YAML::Node at_path(const YAML::Node& root, const std::string& path) {
  YAML::Node node = root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node next = node[part];
    if (!next.IsDefined()) return next;
    node.reset(next);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

}  // namespace chopsim::import_detail
