#include <algorithm>
#include <cmath>

#include "chopsim/common/error.hpp"
#include "chopsim/models/power.hpp"

namespace chopsim {

namespace {

/// Dynamic power C_eff * V(f)^2 * f * activity (CMOS switching power; Rabaey, "Digital Integrated Circuits",
/// ch. 5), with the voltage floor-and-rise curve of power.hpp. Static power is the measured idle power plus a
/// linear leakage term in temperature.
class Cv2fPowerModel final : public PowerModel {
 public:
  explicit Cv2fPowerModel(const PowerParams& params) : params_(params) {
    const auto& v = params_.voltage;
    if (!(params_.max_clock_hz > 0.0)) throw ModelError("power model: max_clock_hz must be positive");
    if (params_.idle_w < 0.0 || params_.dynamic_w < 0.0 || params_.hbm_w < 0.0)
      throw ModelError("power model: idle, dynamic and HBM powers must be >= 0");
    if (v.max_ratio < 1.0) throw ModelError("power model: voltage.max_ratio must be >= 1");
    if (!(v.exponent > 0.0)) throw ModelError("power model: voltage.exponent must be positive");
    if (v.knee_hz < 0.0 || v.knee_hz > params_.max_clock_hz)
      throw ModelError("power model: the voltage knee must lie in [0, max clock]");
  }

  double dynamic_scale(double clock_hz) const override {
    return dynamic_power_scale(params_.voltage, clock_hz, params_.max_clock_hz);
  }

  PowerLine power_line(const DieActivity& a, double temperature_c) const override {
    const double activity = params_.busy_activity * a.busy + params_.tensor_activity * a.tensor +
                            params_.vector_activity * a.vector + params_.communication_activity * a.communication;
    const double hbm = std::min(1.0, a.hbm + params_.communication_hbm * a.communication);
    const double leakage = params_.leakage_w_per_k * (temperature_c - params_.reference_c);
    // Leakage never takes the board below a third of its idle power (a cold GPU still draws its fixed loads).
    const double static_w = std::max(params_.idle_w + leakage, params_.idle_w / 3.0);
    return {static_w + params_.hbm_w * hbm, params_.dynamic_w * activity};
  }

  const PowerParams& params() const override { return params_; }

 private:
  PowerParams params_;
};

}  // namespace

double expected_maximum_of_standard_normals(int n) {
  if (n < 1) throw ModelError("expected maximum of standard normals: needs at least one draw");
  if (n == 1) return 0.0;
  // E[max] = integral of x * n * phi(x) * Phi(x)^(n-1) dx. The integrand is smooth and negligible outside
  // [-9, 9 + sqrt(2 ln n)] (Phi^(n-1) vanishes below, phi above); Simpson's rule on 1/200 steps is exact to ~1e-10.
  const double upper = 9.0 + std::sqrt(2.0 * std::log(static_cast<double>(n)));
  constexpr double lower = -9.0;
  constexpr double step = 1.0 / 200.0;
  const auto steps = static_cast<int>(std::ceil((upper - lower) / step / 2.0)) * 2;
  const double h = (upper - lower) / steps;
  const double inverse_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::acos(-1.0));
  const auto integrand = [&](double x) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    return x * n * inverse_sqrt_2pi * std::exp(-0.5 * x * x) * std::pow(cdf, n - 1);
  };
  double sum = integrand(lower) + integrand(upper);
  for (int i = 1; i < steps; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * integrand(lower + i * h);
  return sum * h / 3.0;
}

double slowest_chip_dynamic_scale(double chip_sigma, int gpus) {
  if (!(chip_sigma >= 0.0)) throw ModelError("slowest chip: the chips' dynamic power spread must be >= 0");
  return 1.0 + chip_sigma * expected_maximum_of_standard_normals(gpus);
}

void register_builtin_power_models(PowerModelRegistry& registry) {
  registry.add("cv2f",
               "P = P_idle + leakage(T) + P_dyn * (f/f_max) * (V(f)/V_max)^2 * activity + P_hbm * HBM utilisation",
               [](const PowerParams& params) { return std::make_unique<Cv2fPowerModel>(params); });
}

}  // namespace chopsim
