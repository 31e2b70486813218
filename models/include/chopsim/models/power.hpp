#pragma once
// Power of one GPU (one die: a GCD on MI250/MI250X) from what runs on it, its core clock and its temperature.
//
//   P = P_idle + k_leak * (T - T_ref)                         static: board, HBM refresh, leakage
//     + P_dyn * g(f) * (a_busy * busy + a_tensor * u_tensor + a_vector * u_vector + a_comm * comm)
//     + P_hbm * u_hbm                                         HBM traffic
//   g(f) = (f / f_max) * (V(f) / V(f_max))^2                  C_eff V^2 f, normalised to 1 at the max clock
//
// busy is the share of time a kernel occupies the die, u_tensor and u_vector the fraction of the peak FLOP/s at
// the current clock that its kernels sustain (tensor/matrix cores or vector units), comm is 1 while a
// communication kernel runs, u_hbm the fraction of the HBM bandwidth in use. P_dyn is the dynamic core power of
// activity 1 at the max clock. The voltage floor below the knee and the rise above it are why power grows faster
// than linearly with clock near the top of the range (../shared/docs/domain-primer.md, "Clocks, power and heat").

#include <memory>

#include "chopsim/common/registry.hpp"
#include "chopsim/common/voltage_curve.hpp"

namespace chopsim {

/// Parameters of a power model (per die). Units: W, Hz, °C, W/K; activities are dimensionless.
struct PowerParams {
  double idle_w = 0.0;     ///< board power with nothing running, at `reference_c`
  double dynamic_w = 0.0;  ///< core dynamic power of activity 1 at the max clock
  double hbm_w = 0.0;      ///< HBM power at full bandwidth (above what idle_w holds)
  /// Activity of any running kernel per unit of busy time (clock tree, schedulers, caches of busy SMs/CUs).
  double busy_activity = 0.3;
  double tensor_activity = 0.7;         ///< per unit of tensor/matrix-core utilisation
  double vector_activity = 0.35;        ///< per unit of vector (fp32, non-tensor) utilisation
  double communication_activity = 0.1;  ///< while a communication kernel runs (a few SMs copying)
  double communication_hbm = 0.1;       ///< HBM utilisation while a communication kernel runs
  double leakage_w_per_k = 0.0;         ///< static power change per kelvin of temperature
  double reference_c = 40.0;            ///< temperature at which idle_w holds (°C)
  double max_clock_hz = 0.0;            ///< top of the clock range (g(f_max) = 1)
  VoltageCurve voltage;
};

/// What runs on a die, averaged over its kernels: the power model's input.
struct DieActivity {
  double busy = 0.0;           ///< share of time a compute kernel occupies the die (0..1)
  double tensor = 0.0;         ///< busy-weighted tensor-core utilisation (fraction of peak at this clock)
  double vector = 0.0;         ///< busy-weighted vector-unit utilisation
  double hbm = 0.0;            ///< fraction of the HBM bandwidth in use by compute kernels
  double communication = 0.0;  ///< 1 while a communication kernel runs, else 0
};

/// A die's power at one load and temperature as a function of its clock: base_w + per_scale_w * g(f). Static and
/// HBM power do not depend on the core clock; the core's dynamic power is g(f) times its value at the max clock.
struct PowerLine {
  double base_w = 0.0;       ///< W at any clock: static (idle, leakage) and HBM
  double per_scale_w = 0.0;  ///< W per unit of g(f): the dynamic power at the max clock
  [[nodiscard]] double at(double dynamic_scale) const { return base_w + per_scale_w * dynamic_scale; }
};

class PowerModel {
 public:
  virtual ~PowerModel() = default;
  /// Power (W) of a die with `activity` at core clock `clock_hz` and temperature `temperature_c` (°C).
  [[nodiscard]] double power_w(const DieActivity& activity, double clock_hz, double temperature_c) const {
    return power_line(activity, temperature_c).at(dynamic_scale(clock_hz));
  }
  /// The same at a clock whose dynamic_scale() the caller already has: a power domain evaluates many loads at the
  /// few clocks of the governor's steps and computes g(f) (a pow()) once per clock.
  [[nodiscard]] double power_at_scale_w(const DieActivity& activity, double dynamic_scale, double temperature_c) const {
    return power_line(activity, temperature_c).at(dynamic_scale);
  }
  /// Power against g(f) at one load and temperature (a governor searching the clock for a recorded load needs it
  /// once, then one multiply-add per clock it tries).
  [[nodiscard]] virtual PowerLine power_line(const DieActivity& activity, double temperature_c) const = 0;
  /// g(f): dynamic power at `clock_hz` relative to the max clock at equal activity.
  [[nodiscard]] virtual double dynamic_scale(double clock_hz) const = 0;
  [[nodiscard]] virtual const PowerParams& params() const = 0;
};

using PowerModelRegistry = Registry<PowerModel, const PowerParams&>;
/// "cv2f": P = P_idle + leakage + P_dyn * (f/f_max) * (V(f)/V_max)^2 * activity + P_hbm * u_hbm.
void register_builtin_power_models(PowerModelRegistry& registry);

/// E[max(Z_1, ..., Z_n)] for n independent standard normal variables (0 for n = 1; 1/sqrt(pi) for n = 2): how many
/// standard deviations the extreme of n draws lies from their mean.
[[nodiscard]] double expected_maximum_of_standard_normals(int n);

/// Chips of one product differ in the dynamic power they draw at a given clock and load (manufacturing variation;
/// Sinha et al., "Not All GPUs Are Created Equal", SC'22). A synchronous job of `gpus` chips whose dynamic power
/// varies with relative standard deviation `chip_sigma` waits for its slowest chip, the one that draws the most
/// under the power cap: its dynamic power is 1 + chip_sigma * E[max of gpus standard normals] times the mean chip's.
[[nodiscard]] double slowest_chip_dynamic_scale(double chip_sigma, int gpus);

}  // namespace chopsim
