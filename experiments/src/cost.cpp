// Cost arithmetic and the decoding of cost keys, shared by sweeps (cost per token) and studies (cost.hpp).

#include "chopsim/experiments/cost.hpp"

#include "cost_internal.hpp"

namespace chopsim {

namespace {
constexpr double kSecondsPerHour = 3600.0;
constexpr double kJoulesPerKwh = 3.6e6;
constexpr double kSecondsPerYear = 365.25 * 86400.0;
const config_detail::RealRule kPrice{0.0, false, 1e9, false, "a price >= 0"};
}  // namespace

double cost_usd_per_s(const GpuCost& cost, const FacilityCost& facility, int gpus, int nodes, double mean_power_w) {
  const double n = static_cast<double>(gpus);
  if (cost.gpu_hour_usd) return *cost.gpu_hour_usd * n / kSecondsPerHour;
  const double capex = cost.capex_usd_per_gpu.value_or(0.0) * n;
  const double facility_w = (mean_power_w * n + cost.node_overhead_w * static_cast<double>(nodes)) * facility.pue;
  return capex / (cost.amortisation_years * kSecondsPerYear) +
         facility_w / kJoulesPerKwh * facility.electricity_usd_per_kwh;
}

namespace config_detail {

void decode_gpu_cost(Mapping& m, GpuCost& cost) {
  double value = 0.0;
  if (m.read("gpu_hour_usd", value, 1.0, kPrice, "USD per GPU-hour")) {
    cost.gpu_hour_usd = value;
    cost.capex_usd_per_gpu.reset();
  }
  if (m.read("capex_usd_per_gpu", value, 1.0, kPrice, "USD per GPU")) {
    cost.capex_usd_per_gpu = value;
    cost.gpu_hour_usd.reset();
  }
  m.read("amortisation_years", cost.amortisation_years, 1.0, kPositiveReal, "years");
  m.read("node_overhead_w", cost.node_overhead_w, 1.0, kNonNegativeReal, "W");
  m.read("gpus_per_rack", cost.gpus_per_rack, kPositiveInt);
  if (m.read("rack_power_kw", value, 1.0, kPositiveReal, "kW")) cost.rack_power_kw = value;
  m.read("source", cost.source);
  m.finish();
}

void decode_facility(Mapping& m, FacilityCost& f) {
  m.read("pue", f.pue, 1.0, kAtLeastOne, "");
  m.read("electricity_usd_per_kwh", f.electricity_usd_per_kwh, 1.0, kPrice, "USD/kWh");
  m.read("rack_power_kw", f.rack_power_kw, 1.0, kPositiveReal, "kW");
  m.read("source", f.source);
  m.finish();
}

}  // namespace config_detail
}  // namespace chopsim
