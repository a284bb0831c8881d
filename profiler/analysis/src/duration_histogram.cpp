#include "pipescope/analysis/duration_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace pipescope::analysis {

size_t DurationBuckets::bucket_of(int64_t duration_ns) {
  if (duration_ns < kPerOctave) return duration_ns <= 0 ? 0 : static_cast<size_t>(duration_ns);
  const auto d = static_cast<uint64_t>(duration_ns);
  const int octave = 63 - std::countl_zero(d);  // >= kSubBits
  // The kSubBits bits below the leading one pick the bucket within the octave.
  const uint64_t within = (d >> (octave - kSubBits)) & static_cast<uint64_t>(kPerOctave - 1);
  const size_t bucket = static_cast<size_t>(kPerOctave) * static_cast<size_t>(octave - kSubBits + 1) + within;
  return std::min(bucket, kCount - 1);
}

int64_t DurationBuckets::lower_ns(size_t bucket) {
  if (bucket < static_cast<size_t>(kPerOctave)) return static_cast<int64_t>(bucket);
  const auto octave = static_cast<int>(bucket / static_cast<size_t>(kPerOctave)) + kSubBits - 1;
  const auto within = static_cast<int64_t>(bucket % static_cast<size_t>(kPerOctave));
  return (kPerOctave + within) << (octave - kSubBits);
}

void DurationRecorder::add_to_few(int64_t duration_ns) {
  few_.push_back(duration_ns);
  if (few_.size() < kFew) return;
  counts_ = std::make_unique<std::array<uint32_t, DurationBuckets::kCount>>();
  for (int64_t d : few_) ++(*counts_)[DurationBuckets::bucket_of(d)];
  std::vector<int64_t>().swap(few_);
}

SparseDurations DurationRecorder::buckets() const {
  SparseDurations out;
  if (counts_) {
    for (size_t b = 0; b < counts_->size(); ++b)
      if ((*counts_)[b] != 0) out.emplace_back(static_cast<uint16_t>(b), (*counts_)[b]);
    return out;
  }
  std::vector<size_t> used;
  used.reserve(few_.size());
  for (int64_t d : few_) used.push_back(DurationBuckets::bucket_of(d));
  std::sort(used.begin(), used.end());
  for (size_t b : used) {
    if (!out.empty() && out.back().first == b)
      ++out.back().second;
    else
      out.emplace_back(static_cast<uint16_t>(b), 1);
  }
  return out;
}

void merge_durations(SparseDurations& into, const SparseDurations& from) {
  SparseDurations merged;
  merged.reserve(into.size() + from.size());
  size_t i = 0, j = 0;
  while (i < into.size() || j < from.size()) {
    if (j == from.size() || (i < into.size() && into[i].first < from[j].first)) {
      merged.push_back(into[i++]);
    } else if (i == into.size() || from[j].first < into[i].first) {
      merged.push_back(from[j++]);
    } else {
      merged.emplace_back(into[i].first, into[i].second + from[j].second);
      ++i;
      ++j;
    }
  }
  into.swap(merged);
}

int64_t duration_percentile_ns(const SparseDurations& buckets, uint64_t count, double q, int64_t min_ns,
                               int64_t max_ns) {
  if (count == 0 || buckets.empty()) return 0;
  // The 0-based rank of the wanted duration among the sorted ones (the lower of two neighbours).
  const auto rank = static_cast<uint64_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(count - 1));
  uint64_t seen = 0;
  for (const auto& [bucket, n] : buckets) {
    if (seen + n > rank) {
      // Spread the bucket's n durations evenly over its width.
      const auto lower = static_cast<double>(DurationBuckets::lower_ns(bucket));
      const auto upper = static_cast<double>(DurationBuckets::lower_ns(bucket + 1u));
      const double within = (static_cast<double>(rank - seen) + 0.5) / static_cast<double>(n);
      const auto value = static_cast<int64_t>(std::llround(lower + (upper - lower) * within));
      return std::clamp(value, min_ns, max_ns);
    }
    seen += n;
  }
  return max_ns;
}

}  // namespace pipescope::analysis
