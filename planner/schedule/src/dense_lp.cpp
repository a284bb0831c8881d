#include "dense_lp.h"

#include <cmath>

namespace pipescope::planner::detail {

LpSolution DenseLp::solve(const LinearProgram& lp, int max_pivots) {
  constexpr double kEps = 1e-12;
  const int m = lp.rows, n = lp.cols, width = n + m + 1;
  tableau_.assign(static_cast<size_t>(m + 1) * width, 0.0);
  basis_.resize(static_cast<size_t>(m));
  const auto cell = [&](int row, int col) -> double& {
    return tableau_[static_cast<size_t>(row) * width + col];
  };
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) cell(i, j) = lp.a[static_cast<size_t>(i) * n + j];
    cell(i, n + i) = 1;  // slack
    cell(i, width - 1) = lp.b[i];
    basis_[i] = n + i;
  }
  for (int j = 0; j < n; ++j) cell(m, j) = -lp.c[j];

  LpSolution out;
  for (int pivots = 0;; ++pivots) {
    out.work += static_cast<long long>(m + 1) * width;
    if (pivots == max_pivots) return out;
    // Bland's rule: the first column that improves, then the first row among the tightest.
    int enter = -1;
    for (int j = 0; j < n + m && enter < 0; ++j) {
      if (cell(m, j) < -kEps) enter = j;
    }
    if (enter < 0) break;
    int leave = -1;
    double best = 0;
    for (int i = 0; i < m; ++i) {
      if (cell(i, enter) <= kEps) continue;
      const double ratio = cell(i, width - 1) / cell(i, enter);
      if (leave < 0 || ratio < best - kEps || (std::abs(ratio - best) <= kEps && basis_[i] < basis_[leave])) {
        leave = i;
        best = ratio;
      }
    }
    if (leave < 0) return out;  // unbounded
    const double pivot = cell(leave, enter);
    for (int j = 0; j < width; ++j) cell(leave, j) /= pivot;
    for (int i = 0; i <= m; ++i) {
      if (i == leave) continue;
      const double factor = cell(i, enter);
      if (factor == 0) continue;
      for (int j = 0; j < width; ++j) cell(i, j) -= factor * cell(leave, j);
    }
    basis_[leave] = enter;
  }
  out.optimal = true;
  out.value = cell(m, width - 1);
  out.y.assign(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < m; ++i) {
    if (basis_[i] < n) out.y[basis_[i]] = cell(i, width - 1);
  }
  out.dual.assign(static_cast<size_t>(m), 0.0);
  for (int i = 0; i < m; ++i) out.dual[i] = cell(m, n + i);
  return out;
}

}  // namespace pipescope::planner::detail
