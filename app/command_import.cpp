#include <algorithm>
#include <iostream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/import.hpp"
#include "cli.hpp"

namespace chopsim::cli {

int command_import(const std::vector<std::string>& raw) {
  const Arguments args(raw, kImportOptions);
  const auto& files = args.positional();
  if (files.empty()) throw argument_error("import takes one or more job files", "write chopsim import job.yaml ...");
  const auto format = args.option("--format");
  const std::vector<std::string> formats = import_format_names();
  if (format && std::find(formats.begin(), formats.end(), *format) == formats.end())
    throw argument_error("--format " + *format +
                             ": chopsim imports nemo, megatron, bridge, foundry and torchtitan (training jobs) and hf "
                             "(Hugging Face config.json, as a model file)",
                         "use one of those, or leave --format out");
  // A .json file is a Hugging Face config.json unless it is the job config torchtitan's trainer writes; read as a
  // model otherwise, so that a damaged config.json is reported as one.
  const auto is_model = [&](const std::filesystem::path& file) {
    if (format) return *format == "hf";
    return is_hf_config(file) || (file.extension() == ".json" && !is_torchtitan_config(file));
  };
  const auto hardware = args.option("--hardware");
  const auto cluster = args.option("--cluster");
  const bool any_job = std::any_of(files.begin(), files.end(), [&](const std::string& f) { return !is_model(f); });
  if (any_job && (!hardware || !cluster))
    throw argument_error(
        "import needs --hardware NAME and --cluster NAME (job files name neither the GPU nor the fabric)",
        "e.g. --hardware H100-SXM5-80GB --cluster dgx-h100");
  const auto out = args.option("-o");
  const auto out_dir = args.option("--out-dir");
  if (out.has_value() == out_dir.has_value())
    throw argument_error("import writes either one file (-o run.yaml) or a folder (--out-dir DIR)",
                         "give -o for one job, --out-dir for several");
  if (out && files.size() != 1) throw argument_error("-o takes one job file", "use --out-dir DIR for several");

  const auto registries = ModelRegistries::with_builtins();
  ImportOptions options;
  options.hardware = hardware.value_or("");
  options.cluster = cluster.value_or("");
  if (const auto nodes = args.positive_int("--nodes")) options.nodes = *nodes;
  options.model = args.option("--model").value_or("");
  options.precision = args.option("--precision").value_or("");
  options.search = default_search_path(files.front(), configs_option(args).value_or(""));
  if (out_dir) create_output_directory(*out_dir, "--out-dir");
  std::vector<std::filesystem::path> inputs(files.begin(), files.end());

  int failed = 0;
  for (const std::filesystem::path& file : inputs) {
    // A Hugging Face checkout's config.json is named after its folder (Meta-Llama-3-8B/config.json), and a Megatron-LM
    // functional test's model_config.yaml after its test case.
    const std::string stem = (file.stem() == "config" || file.stem() == "model_config") && file.has_parent_path()
                                 ? std::filesystem::absolute(file).parent_path().filename().string()
                                 : file.stem().string();
    const std::filesystem::path target =
        out ? std::filesystem::path(*out) : std::filesystem::path(*out_dir) / (stem + ".yaml");
    try {
      check_output_file(target, out ? "-o" : "--out-dir", inputs);
      const bool model = is_model(file);
      const std::string job_format = model                         ? "hf"
                                     : format                      ? *format
                                     : is_torchtitan_config(file)  ? "torchtitan"
                                     : is_megatron_arguments(file) ? "megatron"
                                     : is_bridge_config(file)      ? "bridge"
                                     : is_foundry_config(file)     ? "foundry"
                                                                   : detect_job_format(file);
      if (job_format.empty())
        throw InputError({file.string()}, "",
                         "not a format chopsim imports (NeMo training YAML, Megatron-LM arguments, Megatron-Bridge "
                         "YAML, llm-foundry YAML, torchtitan TOML or job JSON, Hugging Face config.json)",
                         "pass one of those, or name the format with --format");
      const ImportResult result = model                        ? import_hf_model(file)
                                  : job_format == "megatron"   ? import_megatron(file, options)
                                  : job_format == "foundry"    ? import_foundry(file, options)
                                  : job_format == "torchtitan" ? import_torchtitan(file, options)
                                  : job_format == "bridge"     ? import_bridge(file, options)
                                                               : import_nemo(file, options);
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
        if (model)
          (void)load_model_config(temporary);
        else
          (void)load_run_config(temporary, options.search, registries);
      } catch (const InputError& e) {
        throw InputError({file.string()}, e.key(),
                         std::string(model ? "the model file" : "the run") + " it maps to is invalid: " + e.problem(),
                         e.fix());
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
