#include <algorithm>
#include <bit>
#include <cmath>

#include "pipescope/analysis/rank_digest.h"

namespace pipescope::analysis {

bool BucketSeries::place(int64_t at_ns, size_t& index, bool merge_as_max) {
  if (values_.empty()) [[unlikely]]
    origin_ns_ = at_ns - (at_ns % width_ns_ + width_ns_) % width_ns_;
  if (at_ns < origin_ns_) at_ns = origin_ns_;  // out of order before the first bucket: clamp
  while (at_ns >= origin_ns_ + static_cast<int64_t>(capacity_) * width_ns_) {
    // Twice as wide: bucket i takes old buckets 2i and 2i+1.
    const size_t merged = (values_.size() + 1) / 2;
    for (size_t i = 0; i < merged; ++i) {
      const double a = values_[2 * i];
      const double b = 2 * i + 1 < values_.size() ? values_[2 * i + 1] : 0.0;
      values_[i] = merge_as_max ? std::max(a, b) : a + b;
    }
    values_.resize(merged);
    width_ns_ *= 2;
  }
  index = static_cast<size_t>((at_ns - origin_ns_) / width_ns_);
  if (index >= values_.size()) {
    // Grown as a run is long (a short one keeps a few hundred buckets), never past the bound:
    // not a doubling vector's slack.
    if (index >= values_.capacity())
      values_.reserve(std::min(capacity_, std::max({index + 1, 2 * values_.size(), size_t{64}})));
    values_.resize(index + 1, 0.0);
  }
  return true;
}

void BucketSeries::add_span(int64_t start_ns, int64_t end_ns) {
  if (end_ns <= start_ns) return;
  size_t first = 0, last = 0;
  // An empty series takes its origin from the start (from the end, the part of the span before
  // the end's bucket would be clamped away). The end may widen the buckets: the start's index
  // is taken after it.
  if (values_.empty()) place(start_ns, first, false);
  place(end_ns - 1, last, false);
  place(start_ns, first, false);
  start_ns = std::max(start_ns, origin_ns_);
  for (size_t i = first; i <= last && i < values_.size(); ++i) {
    const int64_t bucket_start = origin_ns_ + static_cast<int64_t>(i) * width_ns_;
    const int64_t from = std::max(start_ns, bucket_start);
    const int64_t to = std::min(end_ns, bucket_start + width_ns_);
    if (to > from) values_[i] += static_cast<double>(to - from);
  }
}

void BucketSeries::add_max(int64_t at_ns, double value) {
  max_mode_ = true;
  size_t index = 0;
  place(at_ns, index, true);
  values_[index] = std::max(values_[index], value);
}

}  // namespace pipescope::analysis
