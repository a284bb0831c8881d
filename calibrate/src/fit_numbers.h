// Small helpers every fit of pipescope_calibrate uses: the median of repeated measurements and
// numbers written for people. Internal to calibrate/src.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace pipescope::calibrate::detail {

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// `digits` significant digits ("%g"): 672.1, 0.9703, 1.2e+04.
inline std::string significant(double value, int digits = 3) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*g", digits, value);
  return text;
}

// `digits` decimals ("%.*f"): fixed(0.97031, 2) is "0.97".
inline std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace pipescope::calibrate::detail
