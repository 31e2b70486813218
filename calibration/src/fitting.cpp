#include "chopsim/calibration/fitting.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "chopsim/common/error.hpp"

namespace chopsim {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

FitStats fit_stats(std::span<const double> measured, std::span<const double> predicted) {
  if (measured.size() != predicted.size()) throw ModelError("fit_stats: measured and predicted differ in length");
  FitStats stats;
  stats.points = measured.size();
  std::vector<double> relative;
  relative.reserve(measured.size());
  double mean_log = 0.0;
  for (const double m : measured) mean_log += std::log(m);
  mean_log /= std::max<std::size_t>(1, measured.size());
  double ss_res = 0.0, ss_tot = 0.0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    relative.push_back(std::fabs(predicted[i] - measured[i]) / measured[i]);
    const double residual = std::log(predicted[i]) - std::log(measured[i]);
    ss_res += residual * residual;
    const double spread = std::log(measured[i]) - mean_log;
    ss_tot += spread * spread;
  }
  stats.r2 = (measured.size() >= 2 && ss_tot > 0.0) ? 1.0 - ss_res / ss_tot : kNaN;
  stats.median_rel_residual = quantile(relative, 0.5);
  stats.p90_rel_residual = quantile(relative, 0.9);
  return stats;
}

namespace {

double half_squared_norm(const Eigen::VectorXd& r) { return 0.5 * r.squaredNorm(); }

Eigen::VectorXd evaluate(const ResidualFunction& function, std::size_t count, const Eigen::VectorXd& params) {
  Eigen::VectorXd r(static_cast<Eigen::Index>(count));
  function(std::span<const double>(params.data(), static_cast<std::size_t>(params.size())),
           std::span<double>(r.data(), count));
  return r;
}

/// Central differences with a step relative to the parameter's size.
Eigen::MatrixXd jacobian(const ResidualFunction& function, std::size_t count, const Eigen::VectorXd& params) {
  Eigen::MatrixXd j(static_cast<Eigen::Index>(count), params.size());
  Eigen::VectorXd shifted = params;
  for (Eigen::Index k = 0; k < params.size(); ++k) {
    const double h = 1e-6 * std::max(1.0, std::fabs(params[k]));
    shifted[k] = params[k] + h;
    const Eigen::VectorXd plus = evaluate(function, count, shifted);
    shifted[k] = params[k] - h;
    const Eigen::VectorXd minus = evaluate(function, count, shifted);
    shifted[k] = params[k];
    j.col(k) = (plus - minus) / (2.0 * h);
  }
  return j;
}

}  // namespace

LevenbergMarquardtResult levenberg_marquardt(const ResidualFunction& residuals, std::size_t residual_count,
                                             std::vector<double> start, const LevenbergMarquardtOptions& options) {
  LevenbergMarquardtResult result;
  Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(start.data(), static_cast<Eigen::Index>(start.size()));
  Eigen::VectorXd r = evaluate(residuals, residual_count, x);
  double cost = half_squared_norm(r);
  if (!std::isfinite(cost)) throw ModelError("levenberg_marquardt: residuals are not finite at the start point");
  double lambda = 1e-3;
  int stalls = 0;
  for (int iteration = 0; iteration < options.max_iterations && x.size() > 0; ++iteration) {
    result.iterations = iteration + 1;
    const Eigen::MatrixXd j = jacobian(residuals, residual_count, x);
    const Eigen::MatrixXd jtj = j.transpose() * j;
    const Eigen::VectorXd gradient = j.transpose() * r;
    bool improved = false;
    // Raise the damping until a step lowers the cost (or give up at a huge damping: a minimum).
    while (lambda < 1e12) {
      Eigen::MatrixXd a = jtj;
      for (Eigen::Index k = 0; k < a.rows(); ++k) a(k, k) += lambda * std::max(jtj(k, k), 1e-12);
      const Eigen::VectorXd step = a.ldlt().solve(-gradient);
      const Eigen::VectorXd candidate = x + step;
      const Eigen::VectorXd candidate_r = evaluate(residuals, residual_count, candidate);
      const double candidate_cost = half_squared_norm(candidate_r);
      if (std::isfinite(candidate_cost) && candidate_cost < cost) {
        const double gain = (cost - candidate_cost) / std::max(cost, 1e-300);
        x = candidate;
        r = candidate_r;
        cost = candidate_cost;
        lambda = std::max(lambda / 10.0, 1e-12);
        improved = true;
        stalls = gain < options.relative_tolerance ? stalls + 1 : 0;
        break;
      }
      lambda *= 10.0;
    }
    if (!improved || stalls >= 3 || cost == 0.0) {
      result.converged = true;
      break;
    }
  }
  result.params.assign(x.data(), x.data() + x.size());
  result.cost = cost;
  return result;
}

std::vector<double> weighted_linear_least_squares(const std::vector<std::vector<double>>& rows,
                                                  std::span<const double> y, std::span<const double> weights) {
  if (rows.size() != y.size() || rows.size() != weights.size())
    throw ModelError("weighted_linear_least_squares: rows, y and weights differ in length");
  if (rows.empty()) return {};
  const auto columns = static_cast<Eigen::Index>(rows.front().size());
  Eigen::MatrixXd a(static_cast<Eigen::Index>(rows.size()), columns);
  Eigen::VectorXd b(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (static_cast<Eigen::Index>(rows[i].size()) != columns)
      throw ModelError("weighted_linear_least_squares: rows of different lengths");
    const double w = std::sqrt(std::max(weights[i], 0.0));
    for (Eigen::Index k = 0; k < columns; ++k)
      a(static_cast<Eigen::Index>(i), k) = w * rows[i][static_cast<std::size_t>(k)];
    b[static_cast<Eigen::Index>(i)] = w * y[i];
  }
  const Eigen::VectorXd solution = a.colPivHouseholderQr().solve(b);
  return {solution.data(), solution.data() + solution.size()};
}

}  // namespace chopsim
