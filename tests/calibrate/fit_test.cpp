// Latency + bandwidth fits on synthetic timings with known parameters and noise, and the data a
// fit must refuse.
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "pipescope/calibrate/attention_fit.h"
#include "pipescope/calibrate/latency_bandwidth_fit.h"
#include "pipescope/calibrate/transfer_fit.h"

namespace pipescope::calibrate {
namespace {

// time = latency + bytes / bandwidth, times (1 + noise) with noise uniform in +-spread.
std::vector<TimedSize> line_points(double latency_s, double bytes_per_s, double spread, unsigned seed,
                                   double from = 1024, double to = 1 << 30) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(-spread, spread);
  std::vector<TimedSize> out;
  for (double x = from; x <= to; x *= 2) {
    out.push_back({x, (latency_s + x / bytes_per_s) * (1 + noise(rng)), "size " + std::to_string(x)});
  }
  return out;
}

TEST(FitLine, RecoversLatencyAndBandwidthThroughNoise) {
  const auto points = line_points(20e-6, 100e9, 0.02, 1);
  auto fit = fit_line(points, "test");
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_NEAR(fit->latency_s, 20e-6, 20e-6 * 0.05);
  EXPECT_NEAR(1 / fit->seconds_per_unit, 100e9, 100e9 * 0.03);
}

TEST(FitLine, ANegativeInterceptBecomesALineThroughTheOrigin) {
  // Pure bandwidth, a little noise: the unconstrained intercept may come out below zero.
  auto fit = fit_line(line_points(0, 50e9, 0.01, 7, 1 << 20), "test");
  ASSERT_TRUE(fit.ok());
  EXPECT_GE(fit->latency_s, 0);
  EXPECT_NEAR(1 / fit->seconds_per_unit, 50e9, 50e9 * 0.02);
}

TEST(FitLine, RefusesDegenerateData) {
  EXPECT_EQ(
      fit_line({{1024, 1e-5, "a"}}, "all_reduce over 8 ranks").error().message,
      "cannot fit all_reduce over 8 ranks from 1 point: latency and bandwidth need at least two message "
      "sizes");
  EXPECT_EQ(fit_line({{1024, 1e-5, "a"}, {1024, 1.1e-5, "b"}}, "x").error().message,
            "cannot fit x from 2 points of one size: latency and bandwidth need at least two message sizes");
  EXPECT_EQ(
      fit_line({{1024, 1e-5, "a"}, {4096, 1e-5, "b"}, {1 << 20, 1e-5, "c"}}, "x").error().message,
      "cannot fit x: the time does not grow with the size (all times equal, or larger sizes faster), so no "
      "bandwidth can be read from it");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(fit_line({{1024, nan, "a"}, {4096, 1e-5, "b"}}, "x").error().message.find("'a' has time nan s"),
            std::string::npos);
  EXPECT_NE(
      fit_line({{1024, -1e-5, "neg"}, {4096, 1e-5, "b"}}, "x").error().message.find("times must be positive"),
      std::string::npos);
}

TEST(FitLine, RefusesTimesThatDoNotGrowWithSize) {
  // Six sizes, one time: least squares leaves a slope of rounding noise (~1e-34 s/B), which
  // would read as a bandwidth of 1e21 GB/s.
  std::vector<TimedSize> equal;
  for (double x = 1 << 20; x <= (1 << 25); x *= 2) equal.push_back({x, 1e-5, "size " + std::to_string(x)});
  ASSERT_EQ(equal.size(), 6u);
  auto fit = fit_line(equal, "hbm/copy");
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().message.rfind("cannot fit hbm/copy: the time ", 0), 0u) << fit.error().message;
  // The same with 1% noise: a slope, but no growth a bandwidth could be read from.
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  for (TimedSize& p : equal) p.seconds *= 1 + noise(rng);
  auto noisy = fit_line(equal, "hbm/copy");
  ASSERT_FALSE(noisy.ok());
  EXPECT_NE(noisy.error().message.find("less than the 10% a bandwidth can be read from"), std::string::npos)
      << noisy.error().message;
  // 8x the size at 20 us fixed cost and 100 GB/s grows by 68%: a bandwidth.
  EXPECT_TRUE(
      fit_line({{1 << 20, 20e-6 + (1 << 20) / 100e9, "a"}, {8 << 20, 20e-6 + (8 << 20) / 100e9, "b"}}, "x")
          .ok());
}

TEST(FitRegimes, FindsTheProtocolSwitchAndBothBandwidths) {
  // Small messages: 8 us + bytes / 5 GB/s up to 64 KiB; large: 40 us + bytes / 150 GB/s.
  auto points = line_points(8e-6, 5e9, 0.02, 3, 64, 65536);
  auto large = line_points(40e-6, 150e9, 0.02, 4, 131072, 1 << 30);
  points.insert(points.end(), large.begin(), large.end());
  auto regimes = fit_regimes(points, "test");
  ASSERT_TRUE(regimes.ok()) << regimes.error().message;
  ASSERT_EQ(regimes->size(), 2u);
  EXPECT_GT((*regimes)[0].max_x, 65536);
  EXPECT_LT((*regimes)[0].max_x, 131072);
  EXPECT_NEAR(1 / (*regimes)[0].line.seconds_per_unit, 5e9, 5e9 * 0.1);
  EXPECT_NEAR(1 / (*regimes)[1].line.seconds_per_unit, 150e9, 150e9 * 0.03);
  EXPECT_EQ((*regimes)[1].max_x, 0);
}

TEST(FitRegimes, NoiseAloneDoesNotBuyARegime) {
  auto regimes = fit_regimes(line_points(20e-6, 100e9, 0.02, 5), "test");
  ASSERT_TRUE(regimes.ok());
  EXPECT_EQ(regimes->size(), 1u);
}

TEST(FitCollectives, BusBandwidthFollowsNcclTestsAndOneRankIsSkipped) {
  std::vector<CollectiveSample> samples;
  // all_reduce over 8 ranks at busbw 200 GB/s: time = 15 us + size * 2 * 7/8 / 200e9.
  for (double size = 1 << 20; size <= (1 << 30); size *= 2) {
    samples.push_back({{"nccl/all_reduce/ranks:8/bytes:" + std::to_string(size), "f"},
                       "all_reduce",
                       8,
                       1,
                       size,
                       15e-6 + size * 1.75 / 200e9});
    samples.push_back({{"nccl/all_reduce/ranks:1", "f"}, "all_reduce", 1, 1, size, 5e-6});
  }
  std::vector<std::string> notes;
  auto fits = fit_collectives(samples, notes);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  ASSERT_EQ(fits->size(), 1u);
  const CollectiveFit& f = fits->front();
  EXPECT_EQ(f.tier, planner::LinkTier::kIntraNode);
  ASSERT_EQ(f.regimes.size(), 1u);
  EXPECT_NEAR(1 / f.regimes[0].line.seconds_per_unit, 200e9, 1e6);
  EXPECT_NEAR(f.regimes[0].line.latency_s, 15e-6, 1e-9);
  EXPECT_LT(f.quality.max_relative_error, 1e-6);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("over one rank skipped"), std::string::npos);
}

TEST(FitCollectives, RecoversBusBandwidthThroughNoiseAndFlagsTheOutlier) {
  // all_gather over 8 ranks: 25 us + size * 7/8 / 300 GB/s, 3% noise, one point 40% slow (a
  // throttled clock): busbw within 3%, the slow point flagged and only it.
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> noise(-0.03, 0.03);
  std::vector<CollectiveSample> samples;
  for (double size = 1 << 20; size <= (1 << 30); size *= 2) {
    const std::string name = "nccl/all_gather/ranks:8/bytes:" + std::to_string(static_cast<int64_t>(size));
    const double slow = size == (1 << 26) ? 1.4 : 1.0;
    samples.push_back(
        {{name, "f"}, "all_gather", 8, 1, size, (25e-6 + size * 0.875 / 300e9) * (1 + noise(rng)) * slow});
  }
  std::vector<std::string> notes;
  auto fits = fit_collectives(samples, notes);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  ASSERT_EQ(fits->size(), 1u);
  const CollectiveFit& f = fits->front();
  ASSERT_EQ(f.regimes.size(), 1u);
  EXPECT_NEAR(1 / f.regimes[0].line.seconds_per_unit, 300e9, 300e9 * 0.03);
  EXPECT_NEAR(f.regimes[0].line.latency_s, 25e-6, 25e-6 * 0.15);
  ASSERT_EQ(f.quality.flagged.size(), 1u);
  EXPECT_EQ(f.quality.flagged[0].name, "nccl/all_gather/ranks:8/bytes:67108864");
  EXPECT_NEAR(f.quality.flagged[0].relative_error(), 1 / 1.4 - 1, 0.05);
}

TEST(FitCollectives, AcrossNodesIsTheInterNodeTier) {
  std::vector<CollectiveSample> samples;
  for (double size = 1 << 20; size <= (1 << 26); size *= 2)
    samples.push_back({{"n", "f"}, "all_gather", 16, 2, size, 30e-6 + size * (15.0 / 16) / 40e9});
  std::vector<std::string> notes;
  auto fits = fit_collectives(samples, notes);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->front().tier, planner::LinkTier::kInterNode);
}

TEST(FitBandwidths, OneLinePerVariant) {
  std::vector<BandwidthSample> samples;
  for (double bytes = 1 << 20; bytes <= (1 << 30); bytes *= 4) {
    samples.push_back({{"hbm/copy", "f"}, "hbm", "copy", bytes, 3e-6 + bytes / 2.8e12});
    samples.push_back({{"memcpy/h2d", "f"}, "memcpy", "h2d", bytes, 10e-6 + bytes / 50e9});
  }
  auto fits = fit_bandwidths(samples);
  ASSERT_TRUE(fits.ok());
  ASSERT_EQ(fits->size(), 2u);
  EXPECT_EQ((*fits)[0].variant, "copy");
  EXPECT_NEAR((*fits)[0].bytes_per_s(), 2.8e12, 1e6);
  EXPECT_NEAR((*fits)[1].bytes_per_s(), 50e9, 1e3);
}

TEST(FitBandwidths, RecoversBandwidthThroughNoiseAndFlagsTheOutlier) {
  // memcpy/h2d at 8 us + bytes / 25 GB/s, 2% noise, the 64 MiB copy twice as slow.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  std::vector<BandwidthSample> samples;
  for (double bytes = 1 << 12; bytes <= (1 << 30); bytes *= 4) {
    const std::string name = "memcpy/h2d/bytes:" + std::to_string(static_cast<int64_t>(bytes));
    const double slow = bytes == (1 << 26) ? 2.0 : 1.0;
    samples.push_back({{name, "f"}, "memcpy", "h2d", bytes, (8e-6 + bytes / 25e9) * (1 + noise(rng)) * slow});
  }
  auto fits = fit_bandwidths(samples);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  ASSERT_EQ(fits->size(), 1u);
  const BandwidthFit& f = fits->front();
  EXPECT_NEAR(f.bytes_per_s(), 25e9, 25e9 * 0.03);
  EXPECT_NEAR(f.line.latency_s, 8e-6, 8e-6 * 0.1);
  ASSERT_EQ(f.quality.flagged.size(), 1u);
  EXPECT_EQ(f.quality.flagged[0].name, "memcpy/h2d/bytes:67108864");
}

TEST(FitBandwidths, SizesTheL2CacheServesAreLeftOut) {
  // A copy moves twice its operand: 3 us + moved / 2.8 TB/s from HBM, but operands up to 64 MiB
  // stay in a 50 MiB L2 (read and write both resident) and run at 8 TB/s.
  std::vector<BandwidthSample> samples;
  for (int64_t operand = 1 << 20; operand <= (int64_t{1} << 30); operand *= 2) {
    const double moved = 2.0 * static_cast<double>(operand);
    const double bandwidth = operand <= (64 << 20) ? 8e12 : 2.8e12;
    BandwidthSample s{
        {"hbm/copy/bytes:" + std::to_string(operand), "f"}, "hbm", "copy", moved, 3e-6 + moved / bandwidth};
    s.operand_bytes = operand;
    samples.push_back(s);
  }
  auto fits = fit_bandwidths(samples, 50e6);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  EXPECT_EQ(fits->front().cached_sizes, 7u);  // 1 to 64 MiB: within 2 x 50 MB
  EXPECT_NEAR(fits->front().bytes_per_s(), 2.8e12, 1e6);
  auto unfiltered = fit_bandwidths(samples);
  ASSERT_TRUE(unfiltered.ok());
  EXPECT_EQ(unfiltered->front().cached_sizes, 0u);
  EXPECT_GT(std::abs(unfiltered->front().bytes_per_s() - 2.8e12), 0.01 * 2.8e12);
}

TEST(FitBandwidths, ANormPerRowWidth) {
  std::vector<BandwidthSample> samples;
  for (int64_t hidden : {4096, 8192}) {
    const double bandwidth = hidden == 4096 ? 2.5e12 : 2.2e12;
    for (double moved = 1 << 28; moved <= 8.0 * (1 << 30); moved *= 2) {
      BandwidthSample s{
          {"hbm/norm/hidden:" + std::to_string(hidden), "f"}, "hbm", "norm", moved, moved / bandwidth};
      s.hidden = hidden;
      samples.push_back(s);
    }
  }
  auto fits = fit_bandwidths(samples);
  ASSERT_TRUE(fits.ok()) << fits.error().message;
  ASSERT_EQ(fits->size(), 2u);
  EXPECT_EQ((*fits)[0].name(), "hbm norm hidden 4096");
  EXPECT_NEAR((*fits)[0].bytes_per_s(), 2.5e12, 1e6);
  EXPECT_EQ((*fits)[1].name(), "hbm norm hidden 8192");
  EXPECT_NEAR((*fits)[1].bytes_per_s(), 2.2e12, 1e6);
}

AttentionSample attention(bool backward, int64_t seq, int64_t head_dim, double efficiency, double peak) {
  AttentionSample s;
  s.id = {"attention/" + std::string(backward ? "backward" : "forward") + "/seq:" + std::to_string(seq), "f"};
  s.backward = backward;
  s.batch = 1;
  s.heads = 32;
  s.seq = seq;
  s.head_dim = head_dim;
  s.causal = true;
  s.flops = 4.0 * seq * seq * head_dim * 32 / 2 * (backward ? 2.5 : 1);
  s.seconds = s.flops / (efficiency * peak);
  s.kernel = "torch sdpa flash";
  return s;
}

TEST(FitAttention, RecoversTheGridAndNamesTheKernel) {
  const double peak = 989e12;
  std::vector<AttentionSample> samples;
  for (int64_t seq : {1024, 2048, 4096}) {
    for (int64_t dim : {64, 128}) {
      const double e = 0.3 + 0.1 * std::log2(seq / 1024.0) + (dim == 128 ? 0.05 : 0);
      samples.push_back(attention(false, seq, dim, e, peak));
      samples.push_back(attention(true, seq, dim, e * 0.8, peak));
    }
  }
  auto fit = fit_attention(samples, peak, "test run");
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->kernels, "torch sdpa flash");
  ASSERT_EQ(fit->forward.size(), 6u);
  planner::CalibrationProfile table;
  table.attention_forward = fit->forward;
  table.attention_backward = fit->backward;
  EXPECT_NEAR(table.attention_efficiency(4096, 128, planner::AttentionPass::kForward), 0.55, 1e-9);
  EXPECT_NEAR(table.attention_efficiency(2048, 64, planner::AttentionPass::kBackward), 0.32, 1e-9);
  EXPECT_LT(fit->quality.max_relative_error, 1e-9);
}

TEST(FitAttention, RecoversTheGridThroughNoisyRepeatsAndFlagsTheOutlier) {
  // Five repeats per shape with 4% noise: the median holds each grid value within 2%. One
  // repeat of the forward at 2048 ran at half speed: flagged, and the median ignores it.
  const double peak = 989e12;
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> noise(-0.04, 0.04);
  std::vector<AttentionSample> samples;
  for (int64_t seq : {1024, 2048, 4096, 8192}) {
    const double e = 0.35 + 0.08 * std::log2(seq / 1024.0);
    for (int repeat = 0; repeat < 5; ++repeat) {
      AttentionSample f = attention(false, seq, 128, e, peak);
      f.seconds *= 1 + noise(rng);
      if (seq == 2048 && repeat == 0) {
        f.seconds *= 2;
        f.id.name += "/slow";
      }
      samples.push_back(f);
      AttentionSample b = attention(true, seq, 128, 0.8 * e, peak);
      b.seconds *= 1 + noise(rng);
      samples.push_back(b);
    }
  }
  auto fit = fit_attention(samples, peak, "test run");
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  planner::CalibrationProfile table;
  table.attention_forward = fit->forward;
  table.attention_backward = fit->backward;
  for (int64_t seq : {1024, 2048, 4096, 8192}) {
    const double e = 0.35 + 0.08 * std::log2(seq / 1024.0);
    EXPECT_NEAR(table.attention_efficiency(seq, 128, planner::AttentionPass::kForward), e, e * 0.02) << seq;
    EXPECT_NEAR(table.attention_efficiency(seq, 128, planner::AttentionPass::kBackward), 0.8 * e, e * 0.02)
        << seq;
  }
  ASSERT_EQ(fit->quality.flagged.size(), 1u);
  EXPECT_EQ(fit->quality.flagged[0].name, "attention/forward/seq:2048/slow");
  EXPECT_EQ(fit->quality.points, 40u);
}

TEST(FitAttention, RefusesOneSequenceLength) {
  auto fit = fit_attention({attention(false, 4096, 128, 0.5, 1e15), attention(true, 4096, 128, 0.4, 1e15)},
                           1e15, "t");
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().message,
            "cannot fit forward attention efficiency from 1 sequence length: at least two are needed");
}

}  // namespace
}  // namespace pipescope::calibrate
