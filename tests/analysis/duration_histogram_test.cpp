// Kernel-duration percentiles from the log-linear histogram: buckets tile the durations without
// gaps, and percentiles come back within the bucket resolution of the exact ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "pipescope/analysis/duration_histogram.h"

namespace pipescope::analysis {
namespace {

TEST(DurationBuckets, TileEveryDurationWithBucketsAtMostAThirtySecondWide) {
  for (int64_t d : {0, 1, 31, 32, 33, 63, 64, 65, 1000, 131'072, 262'143, 1'321'123, 999'999'999}) {
    const size_t b = DurationBuckets::bucket_of(d);
    EXPECT_LE(DurationBuckets::lower_ns(b), d) << d;
    EXPECT_GT(DurationBuckets::lower_ns(b + 1), d) << d;
    const double width = static_cast<double>(DurationBuckets::lower_ns(b + 1) - DurationBuckets::lower_ns(b));
    EXPECT_LE(width, std::max(1.0, static_cast<double>(d) / 32)) << d;
  }
  // Consecutive buckets meet: no duration falls between two.
  for (size_t b = 0; b + 1 < DurationBuckets::kCount; ++b) {
    EXPECT_EQ(DurationBuckets::bucket_of(DurationBuckets::lower_ns(b)), b);
    EXPECT_EQ(DurationBuckets::bucket_of(DurationBuckets::lower_ns(b + 1) - 1), b);
  }
  // Beyond 2^44 ns everything shares the last bucket.
  EXPECT_EQ(DurationBuckets::bucket_of(int64_t{1} << 50), DurationBuckets::kCount - 1);
  EXPECT_EQ(DurationBuckets::bucket_of(-5), 0u);
}

// The exact q-quantile as duration_percentile_ns ranks it: the value at rank floor(q (n - 1)).
int64_t exact(std::vector<int64_t> v, double q) {
  const auto rank = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank), v.end());
  return v[rank];
}

TEST(DurationPercentiles, AreWithinTheBucketResolutionOfTheExactOnes) {
  std::mt19937_64 rng(7);
  // Kernel-like durations: a few microseconds to a few milliseconds, log-uniform, plus a mode.
  std::uniform_real_distribution<double> log_us(std::log(2.0), std::log(5000.0));
  std::normal_distribution<double> mode(262'000, 8'000);
  for (size_t n : {10u, 64u, 65u, 1000u, 100'000u}) {
    DurationRecorder recorder;
    std::vector<int64_t> all;
    for (size_t i = 0; i < n; ++i) {
      const auto d = static_cast<int64_t>(i % 3 == 0 ? mode(rng) : 1000 * std::exp(log_us(rng)));
      recorder.add(d);
      all.push_back(d);
    }
    const SparseDurations buckets = recorder.buckets();
    const int64_t lo = *std::min_element(all.begin(), all.end());
    const int64_t hi = *std::max_element(all.begin(), all.end());
    for (double q : {0.0, 0.1, 0.5, 0.9, 0.99, 1.0}) {
      const double want = static_cast<double>(exact(all, q));
      const double got = static_cast<double>(duration_percentile_ns(buckets, n, q, lo, hi));
      EXPECT_NEAR(got, want, want / 32 + 1) << "n " << n << " q " << q;
    }
  }
}

TEST(DurationPercentiles, MergeAcrossRanksAsIfOneRankRanThemAll) {
  DurationRecorder a, b, both;
  for (int64_t d = 1000; d < 2000; d += 7) {
    a.add(d);
    both.add(d);
  }
  for (int64_t d = 1500; d < 900'000; d += 977) {
    b.add(d);
    both.add(d);
  }
  SparseDurations merged = a.buckets();
  merge_durations(merged, b.buckets());
  EXPECT_EQ(merged, both.buckets());
  uint64_t count = 0;
  for (const auto& [bucket, n] : merged) count += n;
  EXPECT_EQ(count, 143u + 920u);
}

TEST(DurationPercentiles, OneDurationIsItselfAndNoneIsZero) {
  DurationRecorder one;
  one.add(262'144);
  EXPECT_EQ(duration_percentile_ns(one.buckets(), 1, 0.5, 262'144, 262'144), 262'144);
  EXPECT_EQ(duration_percentile_ns({}, 0, 0.5, 0, 0), 0);
}

}  // namespace
}  // namespace pipescope::analysis
