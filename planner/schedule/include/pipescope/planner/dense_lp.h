// A small dense linear program solver for the path-bound master problem (partition_bound.h) and
// the interleaved layout's lower bound (interleaved_layout.h):
//   maximize c.y  subject to  A y <= b,  y >= 0,  with b >= 0,
// by the simplex method on a tableau, Bland's rule against cycling (the master is degenerate:
// most of b is 0). Tens to a few hundred rows and columns; nothing here allocates once the
// tableau is sized.
#pragma once

#include <vector>

namespace pipescope::planner::detail {

struct LinearProgram {
  int rows = 0, cols = 0;
  std::vector<double> a;  // rows x cols, row-major
  std::vector<double> b;  // rows, each >= 0
  std::vector<double> c;  // cols
};

struct LpSolution {
  bool optimal = false;      // false: unbounded, or the pivot limit was reached
  double value = 0;          // c.y
  std::vector<double> y;     // cols
  std::vector<double> dual;  // rows: the shadow price of each constraint, >= 0
  long long work = 0;        // tableau entries updated: what the solve cost
};

// Weights >= 0 that sum to at most 1 keep a convex combination of lower bounds a lower bound; a
// tableau's rounding must not break that (on degenerate masters the simplex has returned sums of
// 1.56), so the masters' solutions are clamped and scaled back rather than trusted.
void keep_a_combination(std::vector<double>& lambda);

class DenseLp {
 public:
  LpSolution solve(const LinearProgram& lp, int max_pivots = 10'000);

 private:
  // Solves the final basis again from the original program into basic_; false when singular.
  bool resolve_basis(const LinearProgram& lp);

  std::vector<double> basis_matrix_, basic_;
  std::vector<double> tableau_;  // (rows + 1) x (cols + rows + 1): constraints, then the objective
  std::vector<int> basis_;       // per row, its basic column
};

}  // namespace pipescope::planner::detail
