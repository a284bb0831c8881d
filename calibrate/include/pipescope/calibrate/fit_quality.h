// How well a fitted model reproduces the measurements it came from.
#pragma once

#include <string>
#include <vector>

namespace pipescope::calibrate {

// Relative errors beyond this are flagged as points that do not fit (noise of a repeated
// benchmark on a quiet GPU stays well within it; a throttled clock or a bad shape does not).
inline constexpr double kFlagRelativeError = 0.15;

struct FlaggedPoint {
  std::string name;  // the benchmark entry
  double measured = 0;
  double predicted = 0;
  double relative_error() const { return measured != 0 ? (predicted - measured) / measured : 0; }
};

struct FitQuality {
  size_t points = 0;  // measurements compared
  double rms_relative_error = 0;
  double max_relative_error = 0;  // largest |relative error|
  std::vector<FlaggedPoint> flagged;

  // Adds one comparison (measured and predicted in the same unit, e.g. seconds).
  void add(const std::string& name, double measured, double predicted);
  // Turns the running sums into the RMS; call once after the last add().
  void finish();

 private:
  double sum_squares_ = 0;
};

}  // namespace pipescope::calibrate
