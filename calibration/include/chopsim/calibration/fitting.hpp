#pragma once
// Numerical building blocks of the fits (Eigen stays inside calibration/src): goodness-of-fit statistics,
// Levenberg-Marquardt nonlinear least squares and weighted linear least squares.

#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace chopsim {

/// How well a fitted model reproduces the points it was fitted to. Every fit in a report carries one.
struct FitStats {
  std::size_t points = 0;  ///< points used by the fit
  /// Coefficient of determination of log(measured) by log(predicted): 1 - SS_res / SS_tot. The fits minimise
  /// relative (log) errors because measured times span several decades, so R² is taken on the same scale.
  /// NaN with fewer than 2 points or when all measured values are equal.
  double r2 = std::numeric_limits<double>::quiet_NaN();
  /// Median of |predicted - measured| / measured.
  double median_rel_residual = std::numeric_limits<double>::quiet_NaN();
  double p90_rel_residual = std::numeric_limits<double>::quiet_NaN();  ///< 90th percentile of the same
};

/// Statistics of `predicted` against `measured` (same length, measured > 0).
[[nodiscard]] FitStats fit_stats(std::span<const double> measured, std::span<const double> predicted);

/// The q-quantile (0 <= q <= 1) with linear interpolation between order statistics (Hyndman-Fan type 7, numpy's
/// default). NaN for an empty list.
[[nodiscard]] double quantile(std::vector<double> values, double q);

/// Residuals r(params) of a nonlinear least-squares problem: fills `residuals` (fixed length) from `params`.
using ResidualFunction = std::function<void(std::span<const double> params, std::span<double> residuals)>;

struct LevenbergMarquardtOptions {
  int max_iterations = 300;
  double relative_tolerance = 1e-12;  ///< stop when the cost improves by less than this fraction
};

struct LevenbergMarquardtResult {
  std::vector<double> params;
  double cost = 0.0;  ///< 0.5 * sum of squared residuals at `params`
  int iterations = 0;
  bool converged = false;
};

/// Minimises 0.5 * |r(params)|^2 from `start` by Levenberg-Marquardt (Marquardt's diagonal scaling) with a
/// central-difference Jacobian. Deterministic: the same problem and start give the same bits.
[[nodiscard]] LevenbergMarquardtResult levenberg_marquardt(const ResidualFunction& residuals,
                                                           std::size_t residual_count, std::vector<double> start,
                                                           const LevenbergMarquardtOptions& options = {});

/// Minimises sum_i w_i (y_i - sum_j X_ij c_j)^2 over c; `rows` are the rows of X. Solved by a column-pivoting QR
/// decomposition of the weighted system. Throws ModelError if the sizes disagree.
[[nodiscard]] std::vector<double> weighted_linear_least_squares(const std::vector<std::vector<double>>& rows,
                                                                std::span<const double> y,
                                                                std::span<const double> weights);

}  // namespace chopsim
