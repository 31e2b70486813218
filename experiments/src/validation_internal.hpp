#pragma once
// Private to validation*.cpp: helpers the case builders (validation_cases.cpp, validation_power_cases.cpp), the
// runner and page (validation.cpp) and the CSV (validation_csv.cpp) share.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "chopsim/common/units.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/validation.hpp"

namespace chopsim::validation_detail {

/// A measured data file of ../shared/data (YAML or JSON, read as it is: these are not configs); InputError at the
/// file's line for a malformed one.
[[nodiscard]] YAML::Node load_yaml_data(const std::filesystem::path& path);

// The power, DVFS and thermal cases (validation_power_cases.cpp), each appended to `cases`.
/// The H200 Llama-3.2-1B eager measurement (../shared/data/measured/h200_llama32_1b).
void add_h200_eager_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                          const ModelRegistries& registries, std::vector<ValidationCase>& cases);
/// Perseus's per-stage time and energy on A100 (../shared/data/power).
void add_perseus_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                       std::vector<ValidationCase>& cases);
/// Zeus's power-limit sweep and Merak's per-stage profile on A100 (../shared/data/power).
void add_zeus_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                    std::vector<ValidationCase>& cases);
/// NVIDIA's Megatron-Core throughput tables (../shared/data/validation/published_megatron_records.yaml), each record
/// mapped to a run by one rule (validation_records.cpp).
void add_megatron_record_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                               std::vector<ValidationCase>& cases);
/// Training FLOPs per token as Narayanan et al. (SC'21, eq. 3) count them for a GPT of `model`'s sizes, activation
/// recomputation's extra forward included: F = 96 B s l h^2 (1 + s / 6h + V / 16 l h) per iteration of B sequences
/// of s tokens, divided by B s (the Megatron-LM README's A100 rows and the paper's Table 1 report this).
[[nodiscard]] double narayanan_flops_per_token(const TransformerSpec& model, int seq_len);
/// The seed papers' findings, each checked for the reason the paper gives.
void add_seed_findings(const std::filesystem::path& configs_dir, const ModelRegistries& registries,
                       std::vector<ValidationCase>& cases);

/// The GPU-count band a validation case is grouped in (ValidationCase::categories).
inline std::string gpu_count_band(int gpus) {
  return gpus <= 0      ? "unknown"
         : gpus <= 8    ? "1-8"
         : gpus <= 64   ? "9-64"
         : gpus <= 256  ? "65-256"
         : gpus <= 1024 ? "257-1024"
                        : "over 1024";
}

/// `value` with `decimals` decimals ("%.*f").
inline std::string format(double value, int decimals) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  return text.data();
}

/// A relative error as the tables show it: "+12.3 %".
inline std::string percent(double fraction) { return (fraction >= 0 ? "+" : "") + format(100.0 * fraction, 1) + " %"; }

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

/// The unit a metric is shown in (the tables' and validation.csv's `unit` column).
inline std::string metric_unit(ValidationMetric metric) {
  switch (metric) {
    case ValidationMetric::iteration_time_s:
      return "s";
    case ValidationMetric::tokens_per_s_per_gpu:
      return "tokens/s/GPU";
    case ValidationMetric::peak_memory_bytes:
      return "GiB";
    case ValidationMetric::stage_time_s:
      return "stage s";
    case ValidationMetric::stage_energy_j:
      return "stage J";
    case ValidationMetric::relative_time:
      return "time ratio";
    case ValidationMetric::average_power_w:
      return "W/GPU";
    case ValidationMetric::model_tflops_per_gpu:
      return "TFLOP/s/GPU";
    case ValidationMetric::mean_clock_hz:
      return "MHz";
    case ValidationMetric::peak_power_w:
      return "peak W/GPU";
    case ValidationMetric::finding:
      return "finding";
  }
  return "";
}

/// `value` (SI) in metric_unit's unit.
inline double display_value(ValidationMetric metric, double value) {
  if (metric == ValidationMetric::peak_memory_bytes) return value / units::kGiB;
  if (metric == ValidationMetric::mean_clock_hz) return value / units::kMega;
  if (metric == ValidationMetric::model_tflops_per_gpu) return value / units::kTera;
  return value;
}

}  // namespace chopsim::validation_detail
