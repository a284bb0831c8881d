// time = latency + x * seconds_per_unit, fitted by least squares on relative error, whole or in
// size regimes. Collectives, copies and memory-bound kernels all follow it (x: bytes, scaled by
// the collective's bus-bandwidth factor where there is one).
#pragma once

#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::calibrate {

struct TimedSize {
  double x = 0;  // bytes (times the bus-bandwidth factor for collectives)
  double seconds = 0;
  std::string name;
};

struct LineFit {
  double latency_s = 0;
  double seconds_per_unit = 0;  // 1 / bandwidth
  double predict(double x) const { return latency_s + x * seconds_per_unit; }
};

// The fitted time must grow at least this much (relative) from the smallest size to the largest
// for its slope to mean a bandwidth; the suite's sweeps span 8x to 1e8x in size.
inline constexpr double kMinRelativeGrowth = 0.10;

// Weighted least squares with weights 1/seconds^2, so that a 10 us point and a 10 ms point count
// alike. A negative intercept is refitted through the origin. Points the line misses by more than
// kFlagRelativeError are left out of one refit (they stay in the caller's quality, flagged), so a
// throttled measurement does not bend the bandwidth. `what` names the curve in errors.
// Refuses fewer than two distinct sizes and a time that does not grow with size by
// kMinRelativeGrowth.
Expected<LineFit> fit_line(const std::vector<TimedSize>& points, const std::string& what);

struct Regime {
  double max_x = 0;  // 0 on the last regime: no upper bound
  LineFit line;
  size_t points = 0;
};

// Up to `max_regimes` consecutive size regimes (at least three points each), the count chosen by
// the Bayesian information criterion on relative residuals (each capped at kFlagRelativeError, so
// that neither noise nor one outlier buys a regime); each regime's line trimmed as fit_line's.
// Points are sorted by x inside; equal sizes are allowed (repeats).
Expected<std::vector<Regime>> fit_regimes(std::vector<TimedSize> points, const std::string& what,
                                          int max_regimes = 3);

}  // namespace pipescope::calibrate
