#include "step_rhythm.h"

#include <algorithm>

namespace pipescope::analysis {

std::vector<int64_t> step_starts_from_rhythm(std::span<const int64_t> enters_ns) {
  std::vector<int64_t> starts;
  if (enters_ns.size() < 3) return starts;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < enters_ns.size(); ++i) gaps.push_back(enters_ns[i] - enters_ns[i - 1]);
  std::vector<int64_t> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const int64_t median = sorted[sorted.size() / 2];
  const int64_t longest = *std::max_element(gaps.begin(), gaps.end());
  if (longest <= 4 * median) return {enters_ns.begin(), enters_ns.end()};  // one call per step
  for (size_t i = 0; i < gaps.size(); ++i)
    if (gaps[i] > 4 * median) starts.push_back(enters_ns[i + 1]);
  return starts;
}

}  // namespace pipescope::analysis
