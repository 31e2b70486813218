// Collectives: alpha-beta fits and their conversion into the parameters of chopsim's collective model
// (models/src/collective.cpp: ring all-reduce 2(n-1)/n S/B + 2(n-1) alpha, all-gather / reduce-scatter
// (n-1)/n S/B + (n-1) alpha, alpha = route latency + step latency; point-to-point send/recv L + S/B).
// Bus bandwidth as nccl-tests reports it (doc/PERFORMANCE.md in NVIDIA/nccl-tests): busbw = S/t * factor.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "chopsim/calibration/fits.hpp"
#include "chopsim/common/units.hpp"

namespace chopsim {

namespace {

/// CollectiveParams::step_latency_s's default (models/collective.hpp), used when the data cannot tell it.
constexpr double kDefaultStepLatencyS = 2e-6;
/// A per-step latency above this is not a link or protocol latency (NCCL's tuning model uses at most a few µs per
/// step, src/graph/tuning.cc) but waiting for peers inside the measured times; such a fit is reported, not used.
constexpr double kMaxStepAlphaS = 50e-6;
/// See the bandwidth choice in fit_collectives().
constexpr double kMinBandwidthRatio = 0.5;

bool is_ring_kind(CollectiveKind kind) {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
         kind == CollectiveKind::reduce_scatter;
}

int kind_preference(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 0;
    case CollectiveKind::all_gather:
      return 1;
    case CollectiveKind::reduce_scatter:
      return 2;
    default:
      return 3;
  }
}

std::string format_g(double value, int digits = 3) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

std::string describe(const AlphaBetaFit& f) {
  return std::string(collective_kind_name(f.kind)) + " on " + std::to_string(f.group_size) + " GPUs (" +
         std::string(to_string(f.scope)) + ")";
}

/// b for t = a_fixed + b S, minimising relative errors; 0 if the data leave no positive slope.
double slope_with_fixed_intercept(std::span<const CollectiveSample> samples, double a_fixed) {
  double numerator = 0.0, denominator = 0.0;
  for (const auto& s : samples) {
    const double x = s.bytes / s.duration_s;
    numerator += x * (s.duration_s - a_fixed) / s.duration_s;
    denominator += x * x;
  }
  return denominator > 0.0 ? std::max(numerator / denominator, 0.0) : 0.0;
}

}  // namespace

double bus_factor(CollectiveKind kind, int group_size) {
  const double n = group_size;
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all:
      return (n - 1.0) / n;
    case CollectiveKind::broadcast:
    case CollectiveKind::send_recv:
      return 1.0;
  }
  return 1.0;
}

int latency_steps(CollectiveKind kind, int group_size) {
  switch (kind) {
    case CollectiveKind::all_reduce:
      return 2 * (group_size - 1);
    case CollectiveKind::send_recv:
      return 1;
    default:
      return group_size - 1;
  }
}

int parallel_links(NodeLinks node_links, int group_size, int links_per_gpu) {
  if (node_links == NodeLinks::nvswitch) return std::max(links_per_gpu, 1);
  if (group_size <= 2) return 1;
  return 2 * ((group_size - 1) / 2);
}

AlphaBetaFit fit_alpha_beta(CollectiveKind kind, int group_size, LinkScope scope,
                            std::span<const CollectiveSample> samples) {
  AlphaBetaFit fit;
  fit.kind = kind;
  fit.group_size = group_size;
  fit.scope = scope;
  std::set<std::size_t> inputs;
  std::set<double> sizes;
  std::vector<double> times;
  for (const auto& s : samples) {
    inputs.insert(s.input);
    sizes.insert(s.bytes);
    times.push_back(s.duration_s);
  }
  fit.inputs.assign(inputs.begin(), inputs.end());
  fit.points = samples.size();
  if (samples.empty()) return fit;
  fit.min_bytes = *sizes.begin();
  fit.max_bytes = *sizes.rbegin();
  const double factor = bus_factor(kind, group_size);

  if (sizes.size() == 1) {
    // One message size cannot separate a from b: tiny messages measure latency, large ones bandwidth.
    if (fit.max_bytes < units::kMiB) {
      fit.alpha_s = quantile(times, 0.5);
      fit.latency_fitted = true;
      fit.notes.push_back("one message size of " + format_g(fit.max_bytes) + " B: latency only (a = median time)");
    } else {
      std::vector<double> per_byte;
      for (const auto& s : samples) per_byte.push_back(s.duration_s / s.bytes);
      fit.beta_s_per_byte = quantile(per_byte, 0.5);
      fit.bandwidth_fitted = true;
      fit.notes.push_back("one message size: bandwidth only (a = 0)");
    }
  } else {
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const auto& s : samples) {
      rows.push_back({1.0, s.bytes});
      y.push_back(s.duration_s);
      w.push_back(1.0 / (s.duration_s * s.duration_s));  // relative errors
    }
    const auto c = weighted_linear_least_squares(rows, y, w);
    fit.alpha_s = c[0];
    fit.beta_s_per_byte = c[1];
    if (fit.alpha_s < 0.0) {
      fit.notes.push_back("the intercept came out negative (" + format_g(fit.alpha_s * 1e6) +
                          " µs): refitted with a = 0");
      fit.alpha_s = 0.0;
      fit.beta_s_per_byte = slope_with_fixed_intercept(samples, 0.0);
    }
    fit.bandwidth_fitted = fit.beta_s_per_byte > 0.0;
    if (!fit.bandwidth_fitted) {
      fit.beta_s_per_byte = 0.0;
      fit.alpha_s = quantile(times, 0.5);
      fit.notes.push_back("no growth with size: latency only (a = median time)");
    }
    // a is a latency only where the smallest message is latency-dominated; otherwise it is an overhead of the
    // measured size range (synchronisation, protocol changes) that extrapolates to 0 badly.
    fit.latency_fitted = fit.alpha_s > 0.0 && fit.beta_s_per_byte * fit.min_bytes <= fit.alpha_s;
    if (fit.alpha_s > 0.0 && !fit.latency_fitted)
      fit.notes.push_back("the smallest message (" + format_g(fit.min_bytes) + " B) is bandwidth-dominated: a = " +
                          format_g(fit.alpha_s * 1e6) + " µs is not used as a latency");
  }
  if (fit.bandwidth_fitted) fit.bus_bandwidth_bytes_per_s = factor / fit.beta_s_per_byte;
  std::vector<double> measured, predicted;
  for (const auto& s : samples) {
    measured.push_back(s.duration_s);
    predicted.push_back(std::max(fit.alpha_s + fit.beta_s_per_byte * s.bytes, 1e-12));
  }
  fit.stats = fit_stats(measured, predicted);
  if (sizes.size() < 2) fit.stats.r2 = std::numeric_limits<double>::quiet_NaN();
  return fit;
}

CollectiveCalibration fit_collectives(const MeasurementSet& measurements, const HardwareReference& hardware,
                                      NodeLinks node_links) {
  CollectiveCalibration result;
  result.node_links = node_links;
  std::map<std::tuple<LinkScope, CollectiveKind, int>, std::vector<CollectiveSample>> groups;
  for (const auto& s : measurements.collectives) groups[{s.scope, s.kind, s.group_size}].push_back(s);
  for (const auto& [key, samples] : groups)
    result.fits.push_back(fit_alpha_beta(std::get<1>(key), std::get<2>(key), std::get<0>(key), samples));

  const double link_latency = hardware.intra_node_link_latency_s;
  // Per-step latency: the intra-node ring collective over the most GPUs whose intercept is a latency.
  const AlphaBetaFit* latency_source = nullptr;
  for (const auto& f : result.fits) {
    if (f.scope != LinkScope::intra_node || !is_ring_kind(f.kind) || !f.latency_fitted || f.group_size < 2) continue;
    if (latency_source == nullptr || f.group_size > latency_source->group_size ||
        (f.group_size == latency_source->group_size &&
         std::tie(f.min_bytes, f.points) < std::tie(latency_source->min_bytes, latency_source->points)))
      latency_source = &f;
  }
  double alpha = link_latency + kDefaultStepLatencyS;
  if (latency_source != nullptr &&
      latency_source->alpha_s / latency_steps(latency_source->kind, latency_source->group_size) > kMaxStepAlphaS) {
    result.step_latency_from = describe(*latency_source) + ": a = " + format_g(latency_source->alpha_s * 1e6) +
                               " µs gives more than " + format_g(kMaxStepAlphaS * 1e6) +
                               " µs per step, far above NVLink/xGMI latencies: the times include waiting for peers; "
                               "not used";
    latency_source = nullptr;
  }
  if (latency_source != nullptr) {
    result.step_latency_fitted = true;
    result.per_step_alpha_s = latency_source->alpha_s / latency_steps(latency_source->kind, latency_source->group_size);
    result.step_latency_s = std::max(result.per_step_alpha_s - link_latency, 0.0);
    alpha = link_latency + result.step_latency_s;
    result.step_latency_from = describe(*latency_source) + ": a = " + format_g(latency_source->alpha_s * 1e6) +
                               " µs over " +
                               std::to_string(latency_steps(latency_source->kind, latency_source->group_size)) +
                               " steps, minus the hardware file's link latency " + format_g(link_latency * 1e6) + " µs";
    if (result.per_step_alpha_s < link_latency)
      result.step_latency_from += " (the per-step latency is below the link latency: step latency set to 0)";
  }

  // Per-link bandwidth: the intra-node ring collective over the most GPUs, with the most points.
  const AlphaBetaFit* bandwidth_source = nullptr;
  for (const auto& f : result.fits) {
    if (f.scope != LinkScope::intra_node || !is_ring_kind(f.kind) || !f.bandwidth_fitted) continue;
    if (bandwidth_source == nullptr ||
        std::make_tuple(-f.group_size, -static_cast<long>(f.points), kind_preference(f.kind)) <
            std::make_tuple(-bandwidth_source->group_size, -static_cast<long>(bandwidth_source->points),
                            kind_preference(bandwidth_source->kind)))
      bandwidth_source = &f;
  }
  if (bandwidth_source != nullptr) {
    std::vector<CollectiveSample> samples;
    for (const auto& s : measurements.collectives)
      if (s.scope == bandwidth_source->scope && s.kind == bandwidth_source->kind &&
          s.group_size == bandwidth_source->group_size)
        samples.push_back(s);
    const int n = bandwidth_source->group_size;
    const double a_model = latency_steps(bandwidth_source->kind, n) * alpha;
    // t = a_model + factor * S / busbw: the bandwidth that, with the profile's latency, reproduces the times.
    const double per_byte = slope_with_fixed_intercept(samples, a_model);
    const double factor = bus_factor(bandwidth_source->kind, n);
    result.bus_bandwidth_bytes_per_s = per_byte > 0.0 ? factor / per_byte : bandwidth_source->bus_bandwidth_bytes_per_s;
    result.links = parallel_links(node_links, n, hardware.intra_node_links_per_gpu);
    result.link_bandwidth_bytes_per_s = result.bus_bandwidth_bytes_per_s / result.links;
    // Below half the marginal bandwidth (factor / b of the free fit), the bandwidth would be absorbing a large
    // size-independent overhead of the measured times (waiting for peers in a trace) that chopsim's model has no
    // term for: reported, not written.
    result.link_bandwidth_fitted =
        result.bus_bandwidth_bytes_per_s >= kMinBandwidthRatio * bandwidth_source->bus_bandwidth_bytes_per_s;
    if (!result.link_bandwidth_fitted)
      result.link_bandwidth_from =
          describe(*bandwidth_source) + ": with the latency term fixed at " + format_g(a_model * 1e6) +
          " µs the bus bandwidth would be " + format_g(result.bus_bandwidth_bytes_per_s * 1e-9) +
          " GB/s, under half the marginal " + format_g(bandwidth_source->bus_bandwidth_bytes_per_s * 1e-9) +
          " GB/s: the times carry an overhead of " + format_g(bandwidth_source->alpha_s * 1e6) +
          " µs the collective model cannot represent; not used";
    else
      result.link_bandwidth_from = describe(*bandwidth_source) + ": bus bandwidth " +
                                   format_g(result.bus_bandwidth_bytes_per_s * 1e-9) +
                                   " GB/s with the latency term fixed at " + format_g(a_model * 1e6) + " µs, over " +
                                   std::to_string(result.links) +
                                   (node_links == NodeLinks::nvswitch ? " NVLinks per GPU (NVSwitch)"
                                                                      : " xGMI links driven at once (full mesh rings)");
  }

  // NIC: inter-node point-to-point, one GPU's rail.
  const AlphaBetaFit* nic_source = nullptr;
  for (const auto& f : result.fits)
    if (f.scope == LinkScope::inter_node && f.kind == CollectiveKind::send_recv && f.bandwidth_fitted &&
        (nic_source == nullptr || f.points > nic_source->points))
      nic_source = &f;
  if (nic_source != nullptr) {
    result.nic_bandwidth_fitted = true;
    result.nic_bandwidth_bytes_per_s = 1.0 / nic_source->beta_s_per_byte;
    result.nic_bandwidth_from = describe(*nic_source) + ": 1 / b";
  }

  // The profile states the fitted bandwidths as efficiencies of the hardware file's nominal rates (docs/configs.md:
  // runs build links with bandwidth x efficiency), so that applying a profile derates the nominal rate once.
  const auto as_efficiency = [](bool& fitted, double effective, double nominal, std::string& from) {
    if (!fitted) return 0.0;
    if (!(nominal > 0.0)) {
      fitted = false;
      from += "; the hardware file has no nominal bandwidth to state it against: not used";
      return 0.0;
    }
    const double efficiency = effective / nominal;
    if (efficiency > 1.0) {
      from += "; above the nominal " + format_g(nominal * 1e-9) + " GB/s: efficiency capped at 1";
      return 1.0;
    }
    return efficiency;
  };
  result.link_efficiency = as_efficiency(result.link_bandwidth_fitted, result.link_bandwidth_bytes_per_s,
                                         hardware.intra_node_link_bandwidth_bytes_per_s, result.link_bandwidth_from);
  result.nic_efficiency = as_efficiency(result.nic_bandwidth_fitted, result.nic_bandwidth_bytes_per_s,
                                        hardware.nic_bandwidth_bytes_per_s, result.nic_bandwidth_from);

  // chopsim's closed-form times with the profile's values, against every intra-node group.
  // The links a run builds with the profile: the nominal bandwidth times the profile's efficiency, or the hardware
  // file's efficiency where the profile has none.
  const double link_bw = hardware.intra_node_link_bandwidth_bytes_per_s *
                         (result.link_bandwidth_fitted ? result.link_efficiency : hardware.intra_node_link_efficiency);
  for (const auto& [key, samples] : groups) {
    const auto [scope, kind, n] = key;
    if (scope != LinkScope::intra_node || link_bw <= 0.0 || n < 2) continue;
    if (!is_ring_kind(kind) && kind != CollectiveKind::send_recv) continue;
    const double bandwidth =
        kind == CollectiveKind::send_recv
            ? link_bw * (node_links == NodeLinks::nvswitch ? std::max(hardware.intra_node_links_per_gpu, 1) : 1)
            : link_bw * parallel_links(node_links, n, hardware.intra_node_links_per_gpu);
    const double latency = kind == CollectiveKind::send_recv ? link_latency : latency_steps(kind, n) * alpha;
    std::vector<double> measured, predicted;
    for (const auto& s : samples) {
      measured.push_back(s.duration_s);
      predicted.push_back(std::max(latency + bus_factor(kind, n) * s.bytes / bandwidth, 1e-12));
    }
    result.checks.push_back({kind, n, fit_stats(measured, predicted)});
  }
  return result;
}

}  // namespace chopsim
