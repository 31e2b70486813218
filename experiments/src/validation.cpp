#include "chopsim/experiments/validation.hpp"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include "chopsim/common/error.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/experiments/config.hpp"
#include "chopsim/experiments/run.hpp"

namespace chopsim {

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

YAML::Node load_yaml_data(const std::filesystem::path& path) {
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::Exception& error) {
    throw InputError(SourceLocation{path.string(), error.mark.line + 1, error.mark.column + 1}, "", error.msg,
                     "the measured data file is malformed; restore it from ../shared/data");
  }
}

/// Numeric values of a Megatron-LM golden-values series ({"values": {"1": 7.9, "2": "nan", ...}}).
std::vector<double> megatron_series(const std::filesystem::path& path, const std::string& metric) {
  const YAML::Node root = load_yaml_data(path);
  const YAML::Node values = root[metric]["values"];
  if (!values || !values.IsMap())
    throw InputError(SourceLocation{path.string(), 0, 0}, metric, "has no 'values' mapping",
                     "use a Megatron-LM golden_values_*.json file");
  std::vector<double> numbers;
  for (const auto& entry : values) {
    const std::string text = entry.second.as<std::string>();
    if (text == "nan") continue;
    numbers.push_back(std::stod(text));
  }
  return numbers;
}

/// The two single-node Megatron-LM functional tests with measured H100 step times
/// (NVIDIA/Megatron-LM @ d98e8a6, tests/functional_tests/test_cases/gpt/...).
void add_megatron_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                        const ModelRegistries& registries, std::vector<ValidationCase>& cases) {
  struct Entry {
    const char* config;
    const char* directory;
  };
  constexpr std::array<Entry, 2> kEntries = {{
      {"megatron-gpt3-7b-tp1-pp4.yaml", "gpt3_7b_tp1_pp4_memory_speed"},
      {"megatron-gpt3-7b-tp4-pp1.yaml", "gpt3_7b_tp4_pp1_memory_speed"},
  }};
  for (const auto& entry : kEntries) {
    const auto golden = data_dir / "validation" / "megatron_lm" / entry.directory / "golden_values_dev_dgx_h100.json";
    const auto config = configs_dir / "validation" / entry.config;
    if (!std::filesystem::exists(golden) || !std::filesystem::exists(config)) continue;
    const RunSpec run = load_run_config(config, default_search_path(config), registries);
    const std::string source = "NVIDIA/Megatron-LM@d98e8a6 tests/functional_tests/test_cases/gpt/" +
                               std::string(entry.directory) + "/golden_values_dev_dgx_h100.json";

    ValidationCase step_time;
    step_time.id = std::string(entry.directory) + " (DGX H100)";
    step_time.group = "megatron_lm";
    step_time.source = source;
    step_time.metric = ValidationMetric::iteration_time_s;
    step_time.measured = median(megatron_series(golden, "iteration-time"));
    step_time.notes = "median of the logged steps' iteration-time (first, warm-up step included as logged)";
    step_time.run = run;
    cases.push_back(step_time);

    // mem-max-allocated-bytes is PyTorch's allocator peak: it excludes the CUDA context, NCCL buffers and
    // fragmentation, which the prediction compares without (peak minus reserved minus fragmentation).
    ValidationCase memory = step_time;
    memory.id = std::string(entry.directory) + " peak allocated (DGX H100)";
    memory.metric = ValidationMetric::peak_memory_bytes;
    const auto peaks = megatron_series(golden, "mem-max-allocated-bytes");
    memory.measured = peaks.empty() ? std::nan("") : *std::max_element(peaks.begin(), peaks.end());
    memory.notes = "max over steps of mem-max-allocated-bytes (rank 0: first pipeline stage)";
    cases.push_back(memory);
  }
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// llm-foundry's published H100 FSDP throughput tables (../shared/data/validation/published_dev_records.yaml).
void add_llm_foundry_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                           std::vector<ValidationCase>& cases) {
  const auto records_path = data_dir / "validation" / "published_dev_records.yaml";
  if (!std::filesystem::exists(records_path)) return;
  const YAML::Node records = load_yaml_data(records_path);
  const HardwareSpec h100 = load_hardware_config(configs_dir / "hardware" / "H100-SXM5-80GB.yaml");
  const ClusterSpec dgx = load_cluster_config(configs_dir / "clusters" / "dgx-h100.yaml");
  std::map<std::string, TransformerSpec> models;

  for (const auto& record : records) {
    const auto where = SourceLocation{records_path.string(), record.Mark().line + 1, record.Mark().column + 1};
    try {
      const std::string model_name = lower(record["model"].as<std::string>());
      const auto model_file = configs_dir / "models" / (model_name + ".yaml");
      if (!models.count(model_name)) models.emplace(model_name, load_model_config(model_file));

      ValidationCase c;
      c.id = record["id"].as<std::string>();
      c.group = "llm_foundry";
      c.source = record["source"].as<std::string>();
      c.metric = ValidationMetric::tokens_per_s_per_gpu;
      c.measured = record["tokens_per_s_per_gpu"].as<double>();
      c.measured_mfu = record["mfu_pct"].as<double>() / 100.0;
      const int gpus = record["num_gpus"].as<int>();

      RunSpec& run = c.run;
      run.name = c.id;
      run.model = models.at(model_name);
      run.hardware = h100;
      run.cluster = dgx;
      run.cluster.nodes = std::max(1, gpus / dgx.gpus_per_node);
      if (run.cluster.nodes == 1) run.cluster.fabric.kind = "none";
      run.parallelism.dp = gpus;
      run.parallelism.zero_stage = 3;  // FSDP FULL_SHARD
      run.training.global_batch = record["global_batch"].as<int>();
      run.training.micro_batch = record["micro_batch"].as<int>();
      run.training.seq_len = record["seq_len"].as<int>();
      const std::string precision = record["precision"].as<std::string>();
      run.training.precision = precision.find("fp8") != std::string::npos ? Precision::fp8 : Precision::bf16;
      const std::string recompute = record["recompute"].as<std::string>();
      run.training.recompute =
          recompute.find("full") != std::string::npos ? RecomputePolicy::full : RecomputePolicy::none;
      c.notes = record["model"].as<std::string>() + ", " + std::to_string(gpus) + " GPUs, seq " +
                std::to_string(run.training.seq_len) + ", mbs " + std::to_string(run.training.micro_batch) +
                (run.training.recompute == RecomputePolicy::full ? ", full recompute" : "") + ", " +
                std::string(to_string(run.training.precision));
      validate_run(run, where);
      cases.push_back(std::move(c));
    } catch (const YAML::Exception& error) {
      throw InputError(where, "", "malformed record: " + error.msg, "restore the file from ../shared/data");
    }
  }
}

std::string metric_unit(ValidationMetric metric) {
  switch (metric) {
    case ValidationMetric::iteration_time_s:
      return "s";
    case ValidationMetric::tokens_per_s_per_gpu:
      return "tokens/s/GPU";
    case ValidationMetric::peak_memory_bytes:
      return "GiB";
  }
  return "";
}

double display_value(ValidationMetric metric, double value) {
  return metric == ValidationMetric::peak_memory_bytes ? value / units::kGiB : value;
}

std::string format(double value, int decimals) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  return text.data();
}

std::string percent(double fraction) { return (fraction >= 0 ? "+" : "") + format(100.0 * fraction, 1) + " %"; }

}  // namespace

std::vector<ValidationCase> load_validation_cases(const std::filesystem::path& data_dir,
                                                  const std::filesystem::path& configs_dir,
                                                  const ModelRegistries& registries) {
  std::vector<ValidationCase> cases;
  add_megatron_cases(data_dir, configs_dir, registries, cases);
  add_llm_foundry_cases(data_dir, configs_dir, cases);
  return cases;
}

std::vector<ValidationResult> run_validation(const std::vector<ValidationCase>& cases,
                                             const ModelRegistries& registries, int jobs) {
  std::vector<ValidationResult> results(cases.size());
  tbb::task_arena arena(std::max(jobs, 1));
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, cases.size(), [&](std::size_t i) {
      ValidationResult& result = results[i];
      result.validation_case = cases[i];
      const ValidationCase& c = cases[i];
      try {
        RunOptions options;
        options.simulate_when_out_of_memory = c.metric == ValidationMetric::peak_memory_bytes;
        if (c.metric == ValidationMetric::peak_memory_bytes) {
          // Memory needs no simulation: the model's estimate of the allocator peak.
          const auto memory = estimate_peak_memory(c.run.model, c.run.parallelism, c.run.training, c.run.hardware);
          result.predicted = memory.total_bytes - memory.reserved_bytes - memory.fragmentation_bytes;
          result.ok = true;
        } else {
          const RunReport report = run_simulation(c.run, registries, options);
          if (!report.simulated) {
            result.failure = "does not fit in memory (" + format(report.memory.total_bytes / units::kGiB, 1) + " GiB)";
          } else {
            result.ok = true;
            result.predicted_mfu = report.mfu;
            result.predicted = c.metric == ValidationMetric::iteration_time_s ? report.iteration_time_s
                                                                              : report.tokens_per_s / report.gpus;
          }
        }
        if (result.ok) result.relative_error = (result.predicted - c.measured) / c.measured;
      } catch (const std::exception& error) {
        result.ok = false;
        result.failure = error.what();
      }
    });
  });
  return results;
}

void write_validation_markdown(std::ostream& out, const std::vector<ValidationResult>& results) {
  out << "# Validation: predicted vs measured\n\n"
         "Generated by `chopsim validate` (see README). Do not edit by hand. Every measured case in "
         "`../shared/data/validation` is predicted with the default, uncalibrated parameters of "
         "`configs/hardware/`; error = (predicted - measured) / measured. Sources are the public repositories "
         "named per row.\n\n";

  std::map<std::string, std::vector<const ValidationResult*>> groups;
  for (const auto& r : results) groups[r.validation_case.group].push_back(&r);

  out << "## Summary\n\n| group | metric | cases | predicted | median abs. error | max abs. error | within 15 % |\n"
         "|---|---|---|---|---|---|---|\n";
  for (const auto& [group, rows] : groups) {
    std::map<std::string, std::vector<double>> errors_by_metric;
    std::map<std::string, int> counts;
    for (const auto* r : rows) {
      const std::string metric = metric_unit(r->validation_case.metric);
      ++counts[metric];
      if (r->ok) errors_by_metric[metric].push_back(std::abs(r->relative_error));
    }
    for (const auto& [metric, count] : counts) {
      const auto& errors = errors_by_metric[metric];
      const auto within = std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 0.15; });
      out << "| " << group << " | " << metric << " | " << count << " | " << errors.size() << " | "
          << (errors.empty() ? "-" : format(100.0 * median(errors), 1) + " %") << " | "
          << (errors.empty() ? "-" : format(100.0 * *std::max_element(errors.begin(), errors.end()), 1) + " %") << " | "
          << within << " of " << errors.size() << " |\n";
    }
  }

  for (const auto& [group, rows] : groups) {
    out << "\n## " << group
        << "\n\n| case | metric | measured | predicted | error | measured MFU | predicted MFU | notes |\n"
        << "|---|---|---|---|---|---|---|---|\n";
    for (const auto* r : rows) {
      const auto& c = r->validation_case;
      const int decimals = c.metric == ValidationMetric::tokens_per_s_per_gpu ? 0 : 3;
      out << "| " << c.id << " | " << metric_unit(c.metric) << " | "
          << format(display_value(c.metric, c.measured), decimals) << " | "
          << (r->ok ? format(display_value(c.metric, r->predicted), decimals) : "failed: " + r->failure) << " | "
          << (r->ok ? percent(r->relative_error) : "-") << " | "
          << (c.measured_mfu >= 0 ? format(100.0 * c.measured_mfu, 1) + " %" : "-") << " | "
          << (r->ok && r->predicted_mfu > 0 ? format(100.0 * r->predicted_mfu, 1) + " %" : "-") << " | " << c.notes
          << " |\n";
    }
    out << "\nSources:\n";
    std::vector<std::string> sources;
    for (const auto* r : rows) sources.push_back(r->validation_case.source);
    std::sort(sources.begin(), sources.end());
    sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
    for (const auto& s : sources) out << "- " << s << "\n";
  }
}

}  // namespace chopsim
