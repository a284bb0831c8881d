// GEMM efficiency fits on a synthetic GPU whose behaviour is known: a smooth efficiency surface
// in log shape times the wave-quantization loss of 128 x 256 tiles on 132 SMs.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "pipescope/calibrate/gemm_fit.h"

namespace pipescope::calibrate {
namespace {

constexpr double kPeak = 989e12;
const planner::GemmWaves kTrueWaves{132, 128, 256, ""};

double true_efficiency(int64_t m, int64_t n, int64_t k) {
  // Rises with each dimension's log, saturating near 0.8.
  const double size = std::log2(static_cast<double>(m)) + std::log2(static_cast<double>(n)) +
                      std::log2(static_cast<double>(k));
  const double smooth = 0.8 / (1 + std::exp(-(size - 30) / 3));
  return smooth * kTrueWaves.factor(m, n);
}

GemmSample sample(int64_t m, int64_t n, int64_t k, double noise = 0) {
  GemmSample s;
  s.id = {"gemm/bf16/m:" + std::to_string(m) + "/n:" + std::to_string(n) + "/k:" + std::to_string(k), "f"};
  s.dtype = "bf16";
  s.m = m;
  s.n = n;
  s.k = k;
  s.seconds = s.flops() / (true_efficiency(m, n, k) * kPeak) * (1 + noise);
  return s;
}

std::vector<GemmSample> grid_and_model_shapes(double spread) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> noise(-spread, spread);
  std::vector<GemmSample> samples;
  for (int64_t m : {1024, 2048, 4096, 8192, 16384}) {
    for (int64_t n : {1024, 2048, 4096, 8192, 16384}) {
      for (int64_t k : {1024, 2048, 4096, 8192, 16384}) samples.push_back(sample(m, n, k, noise(rng)));
    }
  }
  // Shapes a transformer layer produces, off the grid: these test the fit.
  for (int64_t tokens : {4096, 8192, 16384}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5120, 5120},
                        {13824, 5120},
                        {5120, 13824},
                        {3 * 5120, 5120},
                        {6912, 5120},
                        {1280, 5120},
                        {10240, 8192},
                        {1536, 8192}}) {
      samples.push_back(sample(tokens, n, k, noise(rng)));
    }
  }
  return samples;
}

TEST(FitGemm, FindsTheWaveTermAndPredictsShapesOffTheGrid) {
  auto fit = fit_gemm(grid_and_model_shapes(0.01), {kPeak, 132, "bf16", "synthetic"});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->interpolation, planner::GemmInterpolation::kLogShapeGrid);
  EXPECT_EQ(fit->points.size(), 125u);
  ASSERT_TRUE(fit->waves.enabled());
  EXPECT_EQ(fit->waves.sm_count, 132);
  // Without the wave term the same grid misses the off-grid shapes by far more.
  auto plain = fit_gemm(grid_and_model_shapes(0.01), {kPeak, 0, "bf16", "synthetic"});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->waves.enabled());
  EXPECT_LT(fit->quality.rms_relative_error, 0.5 * plain->quality.rms_relative_error);
  EXPECT_LT(fit->quality.rms_relative_error, 0.05);
  EXPECT_EQ(fit->quality.points, 24u);
}

TEST(FitGemm, RecoversTheTileShapeWhenShapesTellItApart) {
  // On multiples of 256, 128 x 256 and 256 x 128 tiles cut a GEMM into the same number of tiles;
  // token counts that are odd multiples of 128 tell them apart (4224 x 5120: 33 x 20 = 660
  // tiles = 5 full waves on 132 SMs, against 17 x 40 = 680 tiles, 5.15 waves).
  std::vector<GemmSample> samples = grid_and_model_shapes(0.005);
  for (int64_t tokens : {4224, 8320, 12416}) {
    for (int64_t n : {5120, 6912, 1280, 13824}) samples.push_back(sample(tokens, n, 5120));
  }
  auto fit = fit_gemm(samples, {kPeak, 132, "bf16", "synthetic"});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->waves.sm_count, 132);
  EXPECT_EQ(fit->waves.tile_m, 128);
  EXPECT_EQ(fit->waves.tile_n, 256);
  EXPECT_NE(fit->waves.source.find("128 x 256 output tiles on 132 SMs"), std::string::npos);
}

TEST(FitGemm, WithoutAGridFallsBackToTheTableInWork) {
  auto fit = fit_gemm({sample(4096, 4096, 4096), sample(8192, 8192, 8192), sample(1024, 1024, 8192)},
                      {kPeak, 132, "bf16", "synthetic"});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->interpolation, planner::GemmInterpolation::kLogFlops);
  EXPECT_EQ(fit->points.size(), 3u);
  EXPECT_EQ(fit->points.front().k, 8192);  // 1024 x 1024 x 8192 has the least work
  EXPECT_FALSE(fit->waves.enabled());
}

TEST(FitGemm, RefusesDegenerateResults) {
  EXPECT_EQ(fit_gemm({sample(4096, 4096, 4096)}, {kPeak, 132, "bf16", "s"}).error().message,
            "cannot fit GEMM efficiency from 1 bf16 shape: at least two distinct shapes are needed");
  EXPECT_EQ(fit_gemm({sample(4096, 4096, 4096), sample(4096, 4096, 4096)}, {kPeak, 132, "bf16", "s"})
                .error()
                .message,
            "cannot fit GEMM efficiency from 1 bf16 shape: at least two distinct shapes are needed");
  GemmSample too_fast = sample(8192, 8192, 8192);
  too_fast.seconds /= 10;
  EXPECT_NE(fit_gemm({sample(4096, 4096, 4096), too_fast}, {kPeak, 132, "bf16", "s"})
                .error()
                .message.find("x the datasheet peak"),
            std::string::npos);
  GemmSample negative = sample(2048, 2048, 2048);
  negative.seconds = -1;
  EXPECT_NE(fit_gemm({sample(4096, 4096, 4096), negative}, {kPeak, 132, "bf16", "s"})
                .error()
                .message.find("has time -1"),
            std::string::npos);
  EXPECT_EQ(fit_gemm({sample(4096, 4096, 4096)}, {kPeak, 132, "fp8", "s"}).error().message,
            "cannot fit GEMM efficiency from 0 fp8 shapes: at least two distinct shapes are needed");
}

}  // namespace
}  // namespace pipescope::calibrate
