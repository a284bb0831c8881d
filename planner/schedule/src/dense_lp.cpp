#include "pipescope/planner/dense_lp.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
  // The tableau's right-hand side drifts over many degenerate pivots (a master of 25 rows has
  // returned weights summing to 1.0007 where the program allows 1), so the basic solution is
  // solved again from the original program, and clamped to y >= 0.
  if (!resolve_basis(lp)) return out;
  out.optimal = true;
  out.y.assign(static_cast<size_t>(n), 0.0);
  out.value = 0;
  for (int i = 0; i < m; ++i) {
    if (basis_[i] < n) out.y[basis_[i]] = std::max(0.0, basic_[i]);
  }
  for (int j = 0; j < n; ++j) out.value += lp.c[j] * out.y[j];
  out.dual.assign(static_cast<size_t>(m), 0.0);
  for (int i = 0; i < m; ++i) out.dual[i] = cell(m, n + i);
  return out;
}

bool DenseLp::resolve_basis(const LinearProgram& lp) {
  const int m = lp.rows, n = lp.cols;
  // B x = b, B's column i the original column of basis_[i] (a slack's is a unit vector), by
  // Gaussian elimination with partial pivoting on an augmented copy.
  basis_matrix_.assign(static_cast<size_t>(m) * (m + 1), 0.0);
  const auto at = [&](int row, int col) -> double& {
    return basis_matrix_[static_cast<size_t>(row) * (m + 1) + col];
  };
  for (int i = 0; i < m; ++i) {
    const int column = basis_[i];
    for (int r = 0; r < m; ++r)
      at(r, i) = column < n ? lp.a[static_cast<size_t>(r) * n + column] : (r == column - n ? 1.0 : 0.0);
  }
  for (int r = 0; r < m; ++r) at(r, m) = lp.b[r];
  for (int col = 0; col < m; ++col) {
    int best = col;
    for (int r = col + 1; r < m; ++r)
      if (std::abs(at(r, col)) > std::abs(at(best, col))) best = r;
    if (std::abs(at(best, col)) < 1e-300) return false;  // singular: the tableau lost the basis
    if (best != col) {
      for (int k = 0; k <= m; ++k) std::swap(at(best, k), at(col, k));
    }
    for (int r = col + 1; r < m; ++r) {
      const double factor = at(r, col) / at(col, col);
      if (factor == 0) continue;
      for (int k = col; k <= m; ++k) at(r, k) -= factor * at(col, k);
    }
  }
  basic_.assign(static_cast<size_t>(m), 0.0);
  for (int r = m - 1; r >= 0; --r) {
    double value = at(r, m);
    for (int k = r + 1; k < m; ++k) value -= at(r, k) * basic_[k];
    basic_[r] = value / at(r, r);
  }
  return true;
}

void keep_a_combination(std::vector<double>& lambda) {
  double sum = 0;
  for (double& l : lambda) {
    l = std::max(l, 0.0);
    sum += l;
  }
  if (sum > 1) {
    for (double& l : lambda) l /= sum;
  }
}

}  // namespace pipescope::planner::detail
