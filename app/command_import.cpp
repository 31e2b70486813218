#include <iostream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/experiments/config.hpp"
#include "chopsim/experiments/import.hpp"
#include "chopsim/experiments/registries.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_import(const std::vector<std::string>& raw) {
  const Arguments args(
      raw, {"--format", "--hardware", "--cluster", "--nodes", "--model", "-o", "--out-dir", "--configs"}, {"--strict"});
  const auto& files = args.positional();
  if (files.empty()) throw argument_error("import takes one or more job files", "write chopsim import job.yaml ...");
  const auto hardware = args.option("--hardware");
  const auto cluster = args.option("--cluster");
  if (!hardware || !cluster)
    throw argument_error(
        "import needs --hardware NAME and --cluster NAME (job files name neither the GPU nor the fabric)",
        "e.g. --hardware H100-SXM5-80GB --cluster dgx-h100");
  const auto out = args.option("-o");
  const auto out_dir = args.option("--out-dir");
  if (out.has_value() == out_dir.has_value())
    throw argument_error("import writes either one file (-o run.yaml) or a folder (--out-dir DIR)",
                         "give -o for one job, --out-dir for several");
  if (out && files.size() != 1) throw argument_error("-o takes one job file", "use --out-dir DIR for several");
  if (const auto format = args.option("--format"); format && *format != "nemo")
    throw argument_error("--format " + *format +
                             ": chopsim imports nemo so far (megatron, bridge, torchtitan, foundry "
                             "and hf are not built yet)",
                         "use --format nemo, or leave --format out");

  const auto registries = ModelRegistries::with_builtins();
  ImportOptions options;
  options.hardware = *hardware;
  options.cluster = *cluster;
  if (const auto nodes = args.positive_int("--nodes")) options.nodes = *nodes;
  options.model = args.option("--model").value_or("");
  if (const auto dir = args.option("--configs")) options.search.roots.push_back(*dir);
  for (const auto& root : default_search_path(files.front()).roots) options.search.roots.push_back(root);
  if (out_dir) create_output_directory(*out_dir, "--out-dir");
  std::vector<std::filesystem::path> inputs(files.begin(), files.end());

  int failed = 0;
  for (const std::filesystem::path& file : inputs) {
    const std::filesystem::path target =
        out ? std::filesystem::path(*out) : std::filesystem::path(*out_dir) / (file.stem().string() + ".yaml");
    try {
      check_output_file(target, out ? "-o" : "--out-dir", inputs);
      if (detect_job_format(file) != "nemo" && !args.option("--format"))
        throw InputError({file.string()}, "", "not a job format chopsim imports (NeMo training YAML)",
                         "pass a NeMo config, or name the format with --format");
      const ImportResult result = import_nemo(file, options);
      if (args.has_switch("--strict") && !result.notes.empty())
        throw InputError({file.string()}, "", "--strict: " + result.notes.front(), "drop --strict to import anyway");
      // Written under a temporary name, loaded as chopsim run would load it, then renamed: an invalid run leaves
      // nothing behind.
      AtomicOutputSet set;
      const auto temporary = set.stage(target);
      {
        auto stream = open_for_writing(temporary);
        stream << result.yaml;
      }
      try {
        (void)load_run_config(temporary, options.search, registries);
      } catch (const InputError& e) {
        throw InputError({file.string()}, e.key(), "the run it maps to is invalid: " + e.problem(), e.fix());
      }
      set.commit();
      std::cout << file.string() << " -> " << target.string() << " (" << result.format << ")\n";
      for (const std::string& note : result.notes) std::cout << "  note: " << note << "\n";
    } catch (const InputError& e) {
      if (inputs.size() == 1) throw;
      std::cerr << "chopsim import: " << e.what() << "\n";
      ++failed;
    }
  }
  if (inputs.size() > 1)
    std::cout << "chopsim import: " << inputs.size() - static_cast<std::size_t>(failed) << " of " << inputs.size()
              << " jobs imported\n";
  return failed > 0 ? kExitBadInput : kExitOk;
}

}  // namespace chopsim::cli
