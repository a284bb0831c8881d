#include "pipescope/calibrate/latency_bandwidth_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include <Eigen/Dense>

#include "pipescope/calibrate/fit_quality.h"

namespace pipescope::calibrate {
namespace {

// Relative-error least squares over the points of [begin, end) that `keep` allows (all when
// empty): rows (1, x) / t against 1.
std::optional<LineFit> solve(const std::vector<TimedSize>& points, size_t begin, size_t end,
                             const std::vector<bool>& keep = {}) {
  Eigen::Index n = 0;
  for (size_t i = begin; i < end; ++i) n += keep.empty() || keep[i - begin];
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  Eigen::Index row = 0;
  for (size_t i = begin; i < end; ++i) {
    if (!keep.empty() && !keep[i - begin]) continue;
    a(row, 0) = 1 / points[i].seconds;
    a(row, 1) = points[i].x / points[i].seconds;
    ++row;
  }
  Eigen::Vector2d coefficients = a.colPivHouseholderQr().solve(b);
  if (coefficients(0) < 0) {  // latency cannot be negative: the best line through the origin
    const double slope = a.col(1).dot(b) / a.col(1).squaredNorm();
    coefficients = {0, slope};
  }
  if (!(coefficients(1) > 0) || !std::isfinite(coefficients(1))) return std::nullopt;
  return LineFit{coefficients(0), coefficients(1)};
}

double relative_error(const TimedSize& p, const LineFit& f) {
  return (f.predict(p.x) - p.seconds) / p.seconds;
}

// A point this far off counts kFlagRelativeError^2 at most: one throttled measurement must not buy a
// regime of its own.
double capped_squared_error(const std::vector<TimedSize>& points, size_t begin, size_t end,
                            const LineFit& f) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i) {
    const double e = relative_error(points[i], f);
    sum += std::min(e * e, kFlagRelativeError * kFlagRelativeError);
  }
  return sum;
}

size_t distinct_sizes(const std::vector<TimedSize>& points, size_t begin, size_t end,
                      const std::vector<bool>& keep = {});

// One round of trimming: the line again without the points it misses by more than the flag
// threshold, as long as two sizes remain. Those points stay in the fit's quality, flagged.
std::optional<LineFit> solve_trimmed(const std::vector<TimedSize>& points, size_t begin, size_t end) {
  auto first = solve(points, begin, end);
  if (!first) return first;
  std::vector<bool> keep(end - begin, true);
  bool trimmed = false;
  for (size_t i = begin; i < end; ++i) {
    if (std::abs(relative_error(points[i], *first)) > kFlagRelativeError) {
      keep[i - begin] = false;
      trimmed = true;
    }
  }
  if (!trimmed || distinct_sizes(points, begin, end, keep) < 2) return first;
  auto second = solve(points, begin, end, keep);
  return second ? second : first;
}

size_t distinct_sizes(const std::vector<TimedSize>& points, size_t begin, size_t end,
                      const std::vector<bool>& keep) {
  std::set<double> sizes;
  for (size_t i = begin; i < end; ++i) {
    if (keep.empty() || keep[i - begin]) sizes.insert(points[i].x);
  }
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
  auto fit = solve_trimmed(points, 0, points.size());
  if (!fit) {
    return Error{"cannot fit " + what + ": the time does not grow with the size (all times equal, or " +
                 "larger sizes faster), so no bandwidth can be read from it"};
  }
  // Equal times give a slope of rounding noise (1e-34 s/B: "1e21 GB/s"), not a bandwidth: the
  // line must grow measurably over the sizes measured.
  const auto [smallest, largest] = std::minmax_element(
      points.begin(), points.end(), [](const TimedSize& a, const TimedSize& b) { return a.x < b.x; });
  const double growth = (fit->predict(largest->x) - fit->predict(smallest->x)) / fit->predict(smallest->x);
  if (growth < kMinRelativeGrowth) {
    char text[200];
    std::snprintf(text, sizeof(text),
                  "the time grows by only %.3g%% from size %.4g to %.4g (less than the %.0f%% a bandwidth "
                  "can be read from; all times about equal?)",
                  growth * 100, smallest->x, largest->x, kMinRelativeGrowth * 100);
    return Error{"cannot fit " + what + ": " + text};
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
        if (!line[i][j]) line[i][j] = solve_trimmed(points, i, j);
        if (!line[i][j]) continue;
        const double cost = best[r - 1][i] + capped_squared_error(points, i, j, *line[i][j]);
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
