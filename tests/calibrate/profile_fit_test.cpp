// From suite results to a profile the planner reads: what is replaced, what is kept, provenance.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pipescope/calibrate/profile_fit.h"
#include "synthetic_results.h"

namespace pipescope::calibrate {
namespace {

using planner::CollectiveKind;
using planner::LinkTier;

BenchResults results(const testing::SyntheticGpu& gpu = {}) {
  BenchResults r;
  Status s = add_bench_results(testing::synthetic_results_json(gpu), "gpu.json", r);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return r;
}

TEST(FitProfile, ReplacesWhatWasMeasuredAndKeepsTheRestWithItsSources) {
  auto fit = fit_profile(results(), {"", "", "pipescope calibrate fit gpu.json -o p.json", "pipescope test"});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  const planner::CalibrationProfile& p = fit->profile;
  EXPECT_EQ(p.gpu, "h100-80gb");
  EXPECT_EQ(p.gemm_interpolation, planner::GemmInterpolation::kLogShapeGrid);
  // Exact on the grid, with or without a wave term.
  EXPECT_NEAR(p.gemm_efficiency(8192, 8192, 8192), 0.7, 1e-9);
  EXPECT_NEAR(p.gemm_efficiency(1024, 8192, 8192), 0.63, 1e-9);
  EXPECT_NEAR(p.attention_efficiency(4096, 128, planner::AttentionPass::kForward), 0.5, 1e-9);
  EXPECT_NEAR(p.attention_efficiency(8192, 128, planner::AttentionPass::kBackward), 0.4, 1e-9);
  // Every hbm kernel ran at 2.8 TB/s against the datasheet's 3.35 TB/s.
  EXPECT_NEAR(p.hbm_bandwidth_fraction.value, 2.8e12 / 3.35e12, 1e-3);
  EXPECT_NEAR(p.copy(planner::CopyKind::kHostToDevice).bytes_per_s, 50e9, 1e3);
  // all_reduce over 8 ranks: the measured curve, whatever the cluster's NVLink figure says.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllReduce, 1e9, 8, LinkTier::kIntraNode, 1.0),
              20e-6 + 1e9 * 1.75 / 360e9, 1e-7);
  EXPECT_DOUBLE_EQ(p.overheads.cuda_context_bytes.value, 536870912);
  EXPECT_NE(p.overheads.cuda_context_bytes.source.find("measured"), std::string::npos);
  // Not measured here: kept from the bundled H100 profile, sources and all.
  auto bundled = planner::load_calibration_profile("h100-80gb");
  ASSERT_TRUE(bundled.ok());
  EXPECT_EQ(p.overheads.allocator_reserve_fraction, bundled->overheads.allocator_reserve_fraction);
  EXPECT_EQ(p.collective(CollectiveKind::kAllGather, LinkTier::kInterNode),
            bundled->collective(CollectiveKind::kAllGather, LinkTier::kInterNode));
  EXPECT_NE(std::find(fit->kept_from_base.begin(), fit->kept_from_base.end(),
                      "memory_overheads.allocator_reserve_fraction"),
            fit->kept_from_base.end());
  EXPECT_EQ(p.provenance.gpu_device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.provenance.driver_version, "580.65.06");
  EXPECT_EQ(p.provenance.command, "pipescope calibrate fit gpu.json -o p.json");
  EXPECT_EQ(p.provenance.date, "2026-11-22T10:00:00+00:00");
  for (const auto& point : p.gemm) EXPECT_NE(point.source.find("NVIDIA H100 80GB HBM3"), std::string::npos);
}

TEST(FitProfile, ACollectiveRegimeEndsAtTheSizeWhereTheProtocolSwitches) {
  // all_reduce over 8 ranks (busbw factor 2 * 7/8 = 1.75): 8 us + bytes * 1.75 / 5 GB/s up to
  // 64 KiB, 40 us + bytes * 1.75 / 150 GB/s from 128 KiB; 1% noise. The switch sits between the
  // two in nccl-tests' bytes, which the planner compares: sqrt(64 Ki * 128 Ki) = 92,682 bytes.
  BenchResults r;
  r.context["gpu_name"] = "NVIDIA H100 80GB HBM3";
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  for (double bytes = 64; bytes <= (1 << 30); bytes *= 2) {
    const double seconds = bytes <= 65536 ? 8e-6 + bytes * 1.75 / 5e9 : 40e-6 + bytes * 1.75 / 150e9;
    r.collectives.push_back({{"nccl/all_reduce/ranks:8/bytes:" + std::to_string(bytes), "nccl.json"},
                             "all_reduce",
                             8,
                             1,
                             bytes,
                             seconds * (1 + noise(rng))});
  }
  auto fit = fit_profile(r, {});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  const auto& measured = fit->profile.measured_collectives[static_cast<size_t>(LinkTier::kIntraNode)]
                                                          [static_cast<size_t>(CollectiveKind::kAllReduce)];
  ASSERT_EQ(measured.size(), 1u);
  ASSERT_EQ(measured[0].segments.size(), 2u);
  EXPECT_NEAR(measured[0].segments[0].max_bytes, std::sqrt(65536.0 * 131072.0), 1);
  // Priced on each side of the switch by the planner's own query, through the written file.
  auto read = planner::parse_calibration_profile(planner::write_calibration_profile(fit->profile), "p.json");
  ASSERT_TRUE(read.ok()) << read.error().message;
  auto time = [&](double bytes) {
    return read->collective_time_s(CollectiveKind::kAllReduce, bytes, 8, LinkTier::kIntraNode, 1.0);
  };
  EXPECT_NEAR(time(65536), 8e-6 + 65536 * 1.75 / 5e9, 0.03 * 30.9e-6);       // 30.9 us
  EXPECT_NEAR(time(131072), 40e-6 + 131072 * 1.75 / 150e9, 0.03 * 41.5e-6);  // 41.5 us
  EXPECT_NEAR(time(1 << 30), 40e-6 + (1 << 30) * 1.75 / 150e9, 0.03 * 12.6e-3);
  const FitSection& section =
      *std::find_if(fit->sections.begin(), fit->sections.end(),
                    [](const FitSection& s) { return s.what.rfind("all_reduce", 0) == 0; });
  EXPECT_NE(section.summary.find("up to 9.27e+04 B: busbw"), std::string::npos) << section.summary;
}

TEST(FitProfile, SaysWhenTheGpuWasThrottledWhileItMeasured) {
  BenchResults r = results();
  r.context["sm_clock_max_mhz"] = "1980";
  r.device_states.push_back({{"device/state/at:warm", "gpu.json"}, "warm", 1980, 2619, 520, 55, "none"});
  r.device_states.push_back(
      {{"device/state/at:end", "gpu.json"}, "end", 1410, 2619, 700, 86, "sw_power_cap"});
  auto fit = fit_profile(r, {});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  const auto& notes = fit->notes;
  EXPECT_NE(
      std::find(
          notes.begin(), notes.end(),
          "GPU after the warm-up (gpu.json): SM clock 1980 MHz of 1980, memory clock 2619 MHz, 520 W, 55 "
          "C, clock events: none"),
      notes.end());
  EXPECT_NE(
      std::find(notes.begin(), notes.end(),
                "GPU at the end (gpu.json): SM clock 1410 MHz of 1980, memory clock 2619 MHz, 700 W, 86 C, "
                "clock events: sw_power_cap - the GPU was throttled: what it measured then understates it"),
      notes.end());
}

TEST(FitProfile, TheWrittenProfileReadsBackAndANewerVersionIsRefused) {
  auto fit = fit_profile(results(), {});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  const std::string text = planner::write_calibration_profile(fit->profile);
  auto again = planner::parse_calibration_profile(text, "p.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, fit->profile);
  auto doc = nlohmann::json::parse(text);
  doc["schema_version"] = planner::kCalibrationSchemaVersion + 1;
  auto newer = planner::parse_calibration_profile(doc.dump(), "calibration profile 'p.json'");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().message.find(
                "calibration profile 'p.json': schema_version 4 is newer than this pipescope "
                "understands (3)"),
            0u);
}

TEST(FitProfile, NamesTheGpuItCannotPlace) {
  testing::SyntheticGpu gpu;
  gpu.gpu_name = "NVIDIA B300";
  auto fit = fit_profile(results(gpu), {});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.error().message,
            "the device 'NVIDIA B300' is none of the bundled GPUs (a100-80gb, b200-180gb, h100-80gb, "
            "h200-141gb); pass --gpu NAME for the closest, or add a GPU file");
  // Named, it is priced against that GPU's datasheet.
  auto named = fit_profile(results(gpu), {"h100-80gb", "", "", ""});
  EXPECT_TRUE(named.ok());
}

bool kept(const ProfileFit& fit, const std::string& part) {
  return std::find(fit.kept_from_base.begin(), fit.kept_from_base.end(), part) != fit.kept_from_base.end();
}

TEST(FitProfile, AGpuWithoutAProfileIsFittedFromResultsThatMeasureEverythingItNeeds) {
  // B200 has no bundled profile: GEMM, attention, HBM, every intra-node collective and the
  // communicator's memory come from the results; the rest from the GPU-independent defaults.
  testing::SyntheticGpu b200;
  b200.gpu_name = "NVIDIA B200";
  b200.peak_bf16_flops_per_s = 2250e12;
  b200.every_collective = true;
  auto fit = fit_profile(results(b200), {});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  const planner::CalibrationProfile& p = fit->profile;
  EXPECT_EQ(p.gpu, "b200-180gb");
  EXPECT_EQ(fit->base_kind, BaseKind::kDefaults);
  EXPECT_NEAR(p.gemm_efficiency(8192, 8192, 8192), 0.7, 1e-9);
  EXPECT_NEAR(p.hbm_bandwidth_fraction.value, 2.8e12 / 8e12, 1e-3);  // B200's 8 TB/s
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllToAll, 1 << 30, 8, LinkTier::kIntraNode, 1.0),
              25e-6 + (1 << 30) * 0.875 / 300e9, 1e-6);
  EXPECT_DOUBLE_EQ(p.overheads.nccl_buffer_bytes_per_communicator.value, 805306368);
  const std::string prefix =
      "default for a GPU without a profile of its own, from the bundled h100-80gb profile: ";
  EXPECT_EQ(p.collective(CollectiveKind::kAllReduce, LinkTier::kInterNode).source.rfind(prefix, 0), 0u);
  EXPECT_EQ(p.overheads.allocator_reserve_fraction.source.rfind(prefix, 0), 0u);
  EXPECT_TRUE(kept(*fit, "collectives inter_node all_gather"));
  // The planner reads it back as a B200 profile.
  auto read = planner::parse_calibration_profile(planner::write_calibration_profile(p), "b200.json");
  ASSERT_TRUE(read.ok()) << read.error().message;
  auto gpu = planner::find_gpu("b200-180gb");
  ASSERT_TRUE(gpu.ok());
  EXPECT_TRUE(planner::check_profile_matches(*read, *gpu).ok());
}

TEST(FitProfile, AGpuWithoutAProfileNamesWhatItsResultsLackAndHowToGoOn) {
  testing::SyntheticGpu b200;
  b200.gpu_name = "NVIDIA B200";  // all_reduce only, no communicator memory
  b200.peak_bf16_flops_per_s = 2250e12;
  auto fit = fit_profile(results(b200), {});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(
      fit.error().message,
      "no calibration profile of b200-180gb to keep what the results do not measure, and they lack "
      "collectives intra_node all_gather, collectives intra_node reduce_scatter, collectives intra_node "
      "all_to_all, collectives intra_node send_recv, memory_overheads.nccl_buffer_bytes_per_communicator: "
      "measure them (pipescope calibrate run on all of a node's GPUs, with PyTorch for attention) or pass "
      "--base NAME|FILE for them (e.g. --base h100-80gb; the profile's sources then say which numbers came "
      "from it)");
}

TEST(FitProfile, AnotherGpusProfileAsBaseIsTakenOverAndSaysSo) {
  testing::SyntheticGpu h200;
  h200.gpu_name = "NVIDIA H200";
  auto fit = fit_profile(results(h200), {"", "h100-80gb", "", ""});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_EQ(fit->base_kind, BaseKind::kOtherGpu);
  const planner::CalibrationProfile& p = fit->profile;
  EXPECT_EQ(p.gpu, "h200-141gb");
  auto h100 = planner::load_calibration_profile("h100-80gb");
  ASSERT_TRUE(h100.ok());
  // Kept from the H100 profile: the same number, its source prefixed with where it came from.
  const auto& gather = p.collective(CollectiveKind::kAllGather, LinkTier::kIntraNode);
  EXPECT_EQ(gather.bus_bandwidth_fraction,
            h100->collective(CollectiveKind::kAllGather, LinkTier::kIntraNode).bus_bandwidth_fraction);
  EXPECT_EQ(gather.source, "from the bundled h100-80gb profile (another GPU, given as --base): " +
                               h100->collective(CollectiveKind::kAllGather, LinkTier::kIntraNode).source);
  EXPECT_NE(p.description.find("the bundled h100-80gb profile (another GPU, given as --base)"),
            std::string::npos);
  // Measured here: this run's numbers and sources.
  EXPECT_EQ(p.gemm.front().source.rfind("measured", 0), 0u);
  // The H100's measured losses, which these results do not measure, are kept as the H100's: a
  // plan prices them as not measured on this GPU. Absent ones stay absent.
  ASSERT_FALSE(h100->losses.sustained_gemm_fraction.source.empty());
  EXPECT_EQ(p.losses.sustained_gemm_fraction.value, h100->losses.sustained_gemm_fraction.value);
  EXPECT_EQ(p.losses.sustained_gemm_fraction.source,
            "from the bundled h100-80gb profile (another GPU, given as --base): " +
                h100->losses.sustained_gemm_fraction.source);
  EXPECT_FALSE(planner::is_measured_source(p.losses.sustained_gemm_fraction.source));
  ASSERT_TRUE(h100->losses.eager_kernel_fixed_s.source.empty());
  EXPECT_TRUE(p.losses.eager_kernel_fixed_s.source.empty());
}

TEST(FitProfile, OneRankCollectivesAloneFitNothing) {
  BenchResults r;
  r.context["gpu_name"] = "NVIDIA H100 80GB HBM3";
  for (double bytes = 1024; bytes <= (1 << 20); bytes *= 4)
    r.collectives.push_back({{"nccl/all_reduce/ranks:1", "nccl.json"}, "all_reduce", 1, 1, bytes, 5e-6});
  auto fit = fit_profile(r, {});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(
      fit.error().message.rfind("nothing fitted: the results hold no measurement the profile has a place "
                                "for; all_reduce over one rank skipped",
                                0),
      0u)
      << fit.error().message;
}

TEST(FitProfile, ForwardOnlyAttentionKeepsTheBasesBackward) {
  testing::SyntheticGpu gpu;
  gpu.attention_backward = false;
  auto fit = fit_profile(results(gpu), {});
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  auto bundled = planner::load_calibration_profile("h100-80gb");
  ASSERT_TRUE(bundled.ok());
  EXPECT_EQ(fit->profile.attention_backward, bundled->attention_backward);
  EXPECT_NEAR(fit->profile.attention_efficiency(4096, 128, planner::AttentionPass::kForward), 0.5, 1e-9);
  EXPECT_TRUE(kept(*fit, "attention backward"));
  EXPECT_FALSE(kept(*fit, "attention forward"));
}

}  // namespace
}  // namespace pipescope::calibrate
