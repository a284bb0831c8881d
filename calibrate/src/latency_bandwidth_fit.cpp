#include "pipescope/calibrate/latency_bandwidth_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include <Eigen/Dense>

namespace pipescope::calibrate {
namespace {

// Relative-error least squares over points[begin, end): rows (1, x) / t against 1.
std::optional<LineFit> solve(const std::vector<TimedSize>& points, size_t begin, size_t end) {
  const Eigen::Index n = static_cast<Eigen::Index>(end - begin);
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const TimedSize& p = points[begin + static_cast<size_t>(i)];
    a(i, 0) = 1 / p.seconds;
    a(i, 1) = p.x / p.seconds;
  }
  Eigen::Vector2d coefficients = a.colPivHouseholderQr().solve(b);
  if (coefficients(0) < 0) {  // latency cannot be negative: the best line through the origin
    const double slope = a.col(1).dot(b) / a.col(1).squaredNorm();
    coefficients = {0, slope};
  }
  if (!(coefficients(1) > 0) || !std::isfinite(coefficients(1))) return std::nullopt;
  return LineFit{coefficients(0), coefficients(1)};
}

double squared_relative_error(const std::vector<TimedSize>& points, size_t begin, size_t end,
                              const LineFit& f) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i) {
    const double e = (f.predict(points[i].x) - points[i].seconds) / points[i].seconds;
    sum += e * e;
  }
  return sum;
}

size_t distinct_sizes(const std::vector<TimedSize>& points, size_t begin, size_t end) {
  std::set<double> sizes;
  for (size_t i = begin; i < end; ++i) sizes.insert(points[i].x);
  return sizes.size();
}

}  // namespace

Expected<LineFit> fit_line(const std::vector<TimedSize>& points, const std::string& what) {
  for (const TimedSize& p : points) {
    if (!(p.seconds > 0) || !std::isfinite(p.seconds) || !(p.x >= 0) || !std::isfinite(p.x)) {
      return Error{"cannot fit " + what + ": '" + p.name + "' has time " + std::to_string(p.seconds) +
                   " s at size " + std::to_string(p.x) + "; times must be positive and finite"};
    }
  }
  if (distinct_sizes(points, 0, points.size()) < 2) {
    return Error{"cannot fit " + what + " from " + std::to_string(points.size()) +
                 (points.size() == 1 ? " point" : " points of one size") +
                 ": latency and bandwidth need at least two message sizes"};
  }
  auto fit = solve(points, 0, points.size());
  if (!fit) {
    return Error{"cannot fit " + what + ": the time does not grow with the size (all times equal, or " +
                 "larger sizes faster), so no bandwidth can be read from it"};
  }
  return *fit;
}

Expected<std::vector<Regime>> fit_regimes(std::vector<TimedSize> points, const std::string& what,
                                          int max_regimes) {
  auto whole = fit_line(points, what);
  if (!whole.ok()) return whole.error();
  std::sort(points.begin(), points.end(), [](const TimedSize& a, const TimedSize& b) { return a.x < b.x; });
  const size_t n = points.size();
  constexpr size_t kMinPoints = 3;
  // best[r][j]: least squared relative error of points [0, j) in r regimes; from[r][j] the start
  // of the last of them. Breaks never split points of equal size.
  const double inf = std::numeric_limits<double>::infinity();
  const size_t regimes = static_cast<size_t>(std::max(1, max_regimes));
  std::vector<std::vector<double>> best(regimes + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(regimes + 1, std::vector<size_t>(n + 1, 0));
  std::vector<std::vector<std::optional<LineFit>>> line(n + 1, std::vector<std::optional<LineFit>>(n + 1));
  best[0][0] = 0;
  for (size_t r = 1; r <= regimes; ++r) {
    for (size_t j = kMinPoints; j <= n; ++j) {
      if (j < n && points[j].x == points[j - 1].x) continue;
      for (size_t i = 0; i + kMinPoints <= j; ++i) {
        if (best[r - 1][i] == inf || (i > 0 && points[i].x == points[i - 1].x)) continue;
        if (distinct_sizes(points, i, j) < 2) continue;
        if (!line[i][j]) line[i][j] = solve(points, i, j);
        if (!line[i][j]) continue;
        const double cost = best[r - 1][i] + squared_relative_error(points, i, j, *line[i][j]);
        if (cost < best[r][j]) {
          best[r][j] = cost;
          from[r][j] = i;
        }
      }
    }
  }
  // BIC: n ln(SSE / n) + (parameters) ln n, with three parameters per regime beyond the first
  // (its latency, slope and where it starts).
  size_t chosen = 1;
  double chosen_score = inf;
  for (size_t r = 1; r <= regimes; ++r) {
    if (best[r][n] == inf) continue;
    const double sse = std::max(best[r][n], 1e-300);
    const double score = static_cast<double>(n) * std::log(sse / static_cast<double>(n)) +
                         static_cast<double>(3 * r - 1) * std::log(static_cast<double>(n));
    if (score < chosen_score) {
      chosen_score = score;
      chosen = r;
    }
  }
  if (chosen_score == inf) return std::vector<Regime>{{0, *whole, n}};
  std::vector<Regime> out(chosen);
  size_t end = n;
  for (size_t r = chosen; r >= 1; --r) {
    const size_t begin = from[r][end];
    Regime& regime = out[r - 1];
    regime.line = *line[begin][end];
    regime.points = end - begin;
    // The boundary sits halfway (in log) between the last point of this regime and the next one.
    regime.max_x = end < n ? std::sqrt(std::max(points[end - 1].x, 1.0) * points[end].x) : 0;
    end = begin;
  }
  return out;
}

}  // namespace pipescope::calibrate
