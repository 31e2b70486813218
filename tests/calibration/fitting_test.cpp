// The numerical building blocks: quantiles, goodness-of-fit statistics, Levenberg-Marquardt and weighted linear
// least squares, on problems with known answers.

#include "chopsim/calibration/fitting.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace chopsim {
namespace {

TEST(Quantile, InterpolatesLinearlyBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({4.0, 1.0, 3.0, 2.0}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0, 5.0}, 0.9), 4.6);  // numpy.quantile(..., 0.9)
  EXPECT_DOUBLE_EQ(quantile({7.0}, 0.9), 7.0);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

TEST(FitStats, PerfectAndImperfectPredictions) {
  const std::vector<double> measured{1.0, 10.0, 100.0};
  const FitStats perfect = fit_stats(measured, measured);
  EXPECT_EQ(perfect.points, 3u);
  EXPECT_DOUBLE_EQ(perfect.r2, 1.0);
  EXPECT_DOUBLE_EQ(perfect.median_rel_residual, 0.0);
  // 10 % high everywhere: relative residuals 0.1; R² on logs = 1 - 3 log(1.1)^2 / SS_tot.
  const FitStats high = fit_stats(measured, std::vector<double>{1.1, 11.0, 110.0});
  EXPECT_NEAR(high.median_rel_residual, 0.1, 1e-12);
  EXPECT_NEAR(high.p90_rel_residual, 0.1, 1e-12);
  const double ss_tot = 2.0 * std::pow(std::log(10.0), 2);
  EXPECT_NEAR(high.r2, 1.0 - 3.0 * std::pow(std::log(1.1), 2) / ss_tot, 1e-12);
  EXPECT_TRUE(std::isnan(fit_stats(std::vector<double>{2.0}, std::vector<double>{2.0}).r2));
}

TEST(LevenbergMarquardt, RecoversAnExponentialDecay) {
  // y = 3 exp(-0.7 x) + 0.5, from a start far away.
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) {
    x.push_back(0.2 * i);
    y.push_back(3.0 * std::exp(-0.7 * x.back()) + 0.5);
  }
  const ResidualFunction residuals = [&](std::span<const double> p, std::span<double> r) {
    for (std::size_t i = 0; i < x.size(); ++i) r[i] = p[0] * std::exp(-p[1] * x[i]) + p[2] - y[i];
  };
  const auto result = levenberg_marquardt(residuals, x.size(), {1.0, 0.1, 0.0});
  ASSERT_EQ(result.params.size(), 3u);
  EXPECT_NEAR(result.params[0], 3.0, 1e-6);
  EXPECT_NEAR(result.params[1], 0.7, 1e-6);
  EXPECT_NEAR(result.params[2], 0.5, 1e-6);
  EXPECT_LT(result.cost, 1e-12);
  EXPECT_TRUE(result.converged);
  // Deterministic: the same problem gives the same bits.
  const auto again = levenberg_marquardt(residuals, x.size(), {1.0, 0.1, 0.0});
  EXPECT_EQ(again.params, result.params);
}

TEST(LevenbergMarquardt, RosenbrockValley) {
  const ResidualFunction residuals = [](std::span<const double> p, std::span<double> r) {
    r[0] = 10.0 * (p[1] - p[0] * p[0]);
    r[1] = 1.0 - p[0];
  };
  const auto result = levenberg_marquardt(residuals, 2, {-1.2, 1.0});
  EXPECT_NEAR(result.params[0], 1.0, 1e-6);
  EXPECT_NEAR(result.params[1], 1.0, 1e-6);
}

TEST(WeightedLinearLeastSquares, ExactLineAndWeights) {
  const std::vector<std::vector<double>> rows{{1, 0}, {1, 1}, {1, 2}, {1, 3}};
  const std::vector<double> y{1, 3, 5, 7};
  const std::vector<double> w{1, 1, 1, 1};
  const auto c = weighted_linear_least_squares(rows, y, w);
  EXPECT_NEAR(c[0], 1.0, 1e-12);
  EXPECT_NEAR(c[1], 2.0, 1e-12);
  // An outlier with zero weight does not move the fit.
  const std::vector<std::vector<double>> rows2{{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}};
  const std::vector<double> y2{1, 3, 5, 7, 100};
  const std::vector<double> w2{1, 1, 1, 1, 0};
  const auto c2 = weighted_linear_least_squares(rows2, y2, w2);
  EXPECT_NEAR(c2[1], 2.0, 1e-9);
}

}  // namespace
}  // namespace chopsim
