#pragma once
// What running GPUs costs (docs/studies.md): a GPU's price (rented, or owned and amortised) and the facility around
// it. Studies price each candidate's best point with it; sweeps rank points by cost per token with it.

#include <optional>
#include <string>

namespace chopsim {

/// What one GPU type costs and needs around it. Either rented (gpu_hour_usd: the provider's price includes power
/// and facility) or owned (capex_usd_per_gpu amortised over amortisation_years, plus the facility's electricity).
struct GpuCost {
  std::optional<double> gpu_hour_usd;       ///< rental price per GPU-hour (USD)
  std::optional<double> capex_usd_per_gpu;  ///< purchase price per GPU, its share of the node included (USD)
  double amortisation_years = 4.0;
  double node_overhead_w = 0.0;  ///< a node's power beyond its GPUs (CPUs, NICs, fans, drives) at full load (W)
  int gpus_per_rack = 32;        ///< GPUs one rack holds (space)
  /// IT power one rack of this system can be given (kW), for systems sold as whole racks with their own power
  /// shelves and liquid cooling (GB200 NVL72); unset: the facility's rack_power_kw.
  std::optional<double> rack_power_kw;
  std::string source;  ///< where the numbers come from, with dates
};

/// The data centre around the GPUs.
struct FacilityCost {
  double pue = 1.5;                      ///< facility power / IT power
  double electricity_usd_per_kwh = 0.1;  ///< USD per kWh of facility energy
  double rack_power_kw = 40.0;           ///< IT power one rack can be given (kW)
  std::string source;
};

/// USD per second of running `gpus` GPUs on `nodes` nodes, each GPU drawing `mean_power_w`: rented, the GPU-hour
/// price; owned, the capital's share (straight-line over amortisation_years) plus the facility's electricity for
/// the GPUs and the nodes' overhead, times the PUE.
[[nodiscard]] double cost_usd_per_s(const GpuCost& cost, const FacilityCost& facility, int gpus, int nodes,
                                    double mean_power_w);

}  // namespace chopsim
