#include "pipescope/calibrate/fit_quality.h"

#include <algorithm>
#include <cmath>

namespace pipescope::calibrate {

void FitQuality::add(const std::string& name, double measured, double predicted) {
  const FlaggedPoint point{name, measured, predicted};
  const double error = std::abs(point.relative_error());
  ++points;
  sum_squares_ += error * error;
  max_relative_error = std::max(max_relative_error, error);
  if (error > kFlagRelativeError) flagged.push_back(point);
}

void FitQuality::finish() {
  rms_relative_error = points > 0 ? std::sqrt(sum_squares_ / static_cast<double>(points)) : 0;
}

}  // namespace pipescope::calibrate
