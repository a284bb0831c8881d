// Kernel durations for percentiles: a log-linear histogram (HDR-histogram style) with 32 buckets
// per power of two, so a bucket spans at most 1/32 of its lower bound, and a percentile read
// back from it is within about 1.6 % of the exact one; below 32 ns every nanosecond has a bucket.
// A rank's scan records each kernel name's durations (DurationRecorder), then keeps only the
// buckets they used (SparseDurations), which is what a run of thousands of ranks holds at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace pipescope::analysis {

struct DurationBuckets {
  static constexpr int kSubBits = 5;
  static constexpr int64_t kPerOctave = int64_t{1} << kSubBits;
  // Up to 2^44 ns (4.9 hours); longer durations share the last bucket (max_ns stays exact).
  static constexpr int kTopOctave = 44;
  static constexpr size_t kCount = static_cast<size_t>(kPerOctave * (kTopOctave - kSubBits + 2));

  static size_t bucket_of(int64_t duration_ns);
  static int64_t lower_ns(size_t bucket);  // the bucket holds [lower_ns(b), lower_ns(b + 1))
};

// The used buckets of one histogram, in bucket order.
using SparseDurations = std::vector<std::pair<uint16_t, uint64_t>>;

// One kernel name's durations during a rank's scan. The first few are kept as they are; a name
// seen more often gets the dense histogram (5 KiB), so the thousands of names a compiled model
// launches a handful of times each cost little. Counts are 32-bit: 4 billion launches of one name
// would be a trace of over 256 GB.
class DurationRecorder {
 public:
  void add(int64_t duration_ns) {
    if (counts_) [[likely]] {
      ++(*counts_)[DurationBuckets::bucket_of(duration_ns)];
      return;
    }
    add_to_few(duration_ns);
  }
  SparseDurations buckets() const;

 private:
  static constexpr size_t kFew = 64;
  void add_to_few(int64_t duration_ns);
  std::vector<int64_t> few_;
  std::unique_ptr<std::array<uint32_t, DurationBuckets::kCount>> counts_;
};

// Adds `from` into `into`, both in bucket order.
void merge_durations(SparseDurations& into, const SparseDurations& from);

// The q-quantile (0 <= q <= 1) of `count` durations: the one of rank floor(q (count - 1)) in
// sorted order, placed within its bucket by its rank there and kept within [min_ns, max_ns];
// 0 when empty.
int64_t duration_percentile_ns(const SparseDurations& buckets, uint64_t count, double q, int64_t min_ns,
                               int64_t max_ns);

}  // namespace pipescope::analysis
