// Calibration profiles: the shipped ones load and round-trip, interpolation gives the answers
// worked out by hand between grid points, and defective files are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hardware_test_support.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/nccl_tuning.h"

namespace pipescope::planner {
namespace {

using testing::read_source_file;
using testing::write_temp_file;

CalibrationProfile bundled(const std::string& name) {
  auto profile = load_calibration_profile(name);
  EXPECT_TRUE(profile.ok()) << profile.error().message;
  return profile.ok() ? *profile : CalibrationProfile{};
}

TEST(BundledProfiles, CoverTheA100H100AndH200) {
  EXPECT_EQ(known_profile_names(), (std::vector<std::string>{"a100-80gb", "h100-80gb", "h200-141gb"}));
}

TEST(BundledProfiles, TheH200sIsTheOneMeasuredOnAnH200AndSaysWhatCameFromTheH100s) {
  const CalibrationProfile h200 = bundled("h200-141gb");
  EXPECT_NE(h200.description.find("Measured with pipescope calibrate on NVIDIA H200"), std::string::npos)
      << h200.description;
  // GEMMs were measured there; the intra-node collectives one GPU cannot measure were not.
  EXPECT_EQ(h200.gemm.front().source.rfind("measured", 0), 0u) << h200.gemm.front().source;
  EXPECT_NE(h200.collective(CollectiveKind::kAllGather, LinkTier::kIntraNode).source.find("h100-80gb"),
            std::string::npos);
}

TEST(BundledProfiles, EachDescribesTheGpuItIsNamedFor) {
  for (const std::string& name : known_profile_names()) {
    const CalibrationProfile profile = bundled(name);
    EXPECT_EQ(profile.gpu, name);
    auto gpu = find_gpu(name);
    ASSERT_TRUE(gpu.ok()) << gpu.error().message;
    EXPECT_TRUE(check_profile_matches(profile, *gpu).ok());
    auto by_gpu = profile_for_gpu(*gpu);
    ASSERT_TRUE(by_gpu.ok()) << by_gpu.error().message;
    EXPECT_EQ(*by_gpu, profile);
  }
}

TEST(BundledProfiles, EmbeddedCopyMatchesTheFileOnDisk) {
  for (const std::string& name : known_profile_names()) {
    const std::string path =
        write_temp_file(name + ".json", read_source_file("calibrate/profiles/" + name + ".json"));
    auto from_disk = load_calibration_profile(path);
    ASSERT_TRUE(from_disk.ok()) << from_disk.error().message;
    EXPECT_EQ(*from_disk, bundled(name));
  }
}

TEST(BundledProfiles, RoundTripThroughWrite) {
  for (const std::string& name : known_profile_names()) {
    const CalibrationProfile profile = bundled(name);
    auto again = parse_calibration_profile(write_calibration_profile(profile), "written profile");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(*again, profile) << name;
  }
}

TEST(ProfileForGpu, AGpuWithoutAProfilePointsToCalibration) {
  auto gpu = find_gpu("b200-180gb");
  ASSERT_TRUE(gpu.ok());
  auto profile = profile_for_gpu(*gpu);
  ASSERT_FALSE(profile.ok());
  EXPECT_NE(profile.error().message.find("--calibration FILE"), std::string::npos) << profile.error().message;
}

TEST(CheckProfileMatches, RefusesAProfileForAnotherGpu) {
  auto gpu = find_gpu("a100-80gb");
  ASSERT_TRUE(gpu.ok());
  const Status status = check_profile_matches(bundled("h100-80gb"), *gpu);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "calibration profile is for GPU 'h100-80gb' but the cluster has 'a100-80gb'; pass a profile "
            "measured on a100-80gb with --calibration FILE");
}

TEST(LoadCalibrationProfile, UnknownNameListsTheKnownOnes) {
  auto profile = load_calibration_profile("b200");
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.error().message,
            "unknown calibration profile 'b200'; known profiles: a100-80gb, h100-80gb, h200-141gb (or pass a "
            "profile JSON file)");
}

// A profile small enough to work out by hand: GEMM points at 2^31, 2^34 and 2^37 FLOPs, a 2x2
// attention grid, and collective costs with round numbers.
CalibrationProfile hand_made() {
  CalibrationProfile p;
  p.gpu = "test-gpu";
  p.gemm = {{1024, 1024, 1024, 0.2, "s"}, {2048, 2048, 2048, 0.5, "s"}, {4096, 4096, 4096, 0.8, "s"}};
  p.attention_forward = {
      {1024, 64, 0.4, "s"}, {4096, 64, 0.6, "s"}, {1024, 128, 0.5, "s"}, {4096, 128, 0.7, "s"}};
  p.attention_backward = {{1024, 128, 0.3, "s"}, {4096, 128, 0.5, "s"}};
  p.hbm_bandwidth_fraction = {0.8, "s"};
  for (LinkTier tier : kLinkTiers) {
    for (CollectiveKind kind : kCollectiveKinds) {
      p.collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)] = {1e-5, 0, 0.5, "s"};
    }
  }
  // One entry in absolute form: busbw 10 GB/s whatever the cluster.
  p.collectives[static_cast<size_t>(LinkTier::kInterNode)][static_cast<size_t>(CollectiveKind::kSendRecv)] = {
      2e-5, 10e9, 0, "s"};
  // One entry whose latency was measured on 4 nodes of 8: priced with NCCL's tuning model.
  p.collectives[static_cast<size_t>(LinkTier::kInterNode)][static_cast<size_t>(CollectiveKind::kAllReduce)] =
      {1e-4, 0, 0.5, "s", 32, 4};
  p.overheads = {{1e9, "s"}, {0.1, "s"}, {5e8, "s"}, {0.05, "s"}};
  return p;
}

TEST(GemmEfficiency, IsExactAtGridPoints) {
  const CalibrationProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.gemm_efficiency(1024, 1024, 1024), 0.2);
  EXPECT_DOUBLE_EQ(p.gemm_efficiency(2048, 2048, 2048), 0.5);
}

TEST(GemmEfficiency, IsLinearInLogFlopsBetweenPoints) {
  const CalibrationProfile p = hand_made();
  // 2*2048*1024*1024 = 2^32 lies a third of the way from 2^31 to 2^34: 0.2 + (0.5 - 0.2) / 3.
  EXPECT_NEAR(p.gemm_efficiency(2048, 1024, 1024), 0.3, 1e-12);
  // 2*4096*4096*2048 = 2^36 lies two thirds of the way from 2^34 to 2^37: 0.5 + 2 * (0.8 - 0.5) / 3.
  EXPECT_NEAR(p.gemm_efficiency(4096, 4096, 2048), 0.7, 1e-12);
  // The order of m, n, k does not matter, only the work.
  EXPECT_NEAR(p.gemm_efficiency(1024, 2048, 1024), 0.3, 1e-12);
}

TEST(GemmEfficiency, HoldsTheEndsOfTheTable) {
  const CalibrationProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.gemm_efficiency(8192, 8192, 8192), 0.8);
  // 512^3 is an eighth of the smallest point's work and takes as long: efficiency 0.2 / 8.
  EXPECT_NEAR(p.gemm_efficiency(512, 512, 512), 0.025, 1e-12);
}

TEST(AttentionEfficiency, IsBilinearInLogSeqLenAndHeadDim) {
  const CalibrationProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.attention_efficiency(4096, 64, AttentionPass::kForward), 0.6);
  // 2048 is halfway from 1024 to 4096 in log scale.
  EXPECT_NEAR(p.attention_efficiency(2048, 64, AttentionPass::kForward), 0.5, 1e-12);
  EXPECT_NEAR(p.attention_efficiency(2048, 128, AttentionPass::kForward), 0.6, 1e-12);
  EXPECT_NEAR(p.attention_efficiency(2048, 96, AttentionPass::kForward), 0.55, 1e-12);
  // Outside the grid the nearest edge holds.
  EXPECT_NEAR(p.attention_efficiency(512, 96, AttentionPass::kForward), 0.45, 1e-12);
  EXPECT_NEAR(p.attention_efficiency(65536, 256, AttentionPass::kForward), 0.7, 1e-12);
}

TEST(AttentionEfficiency, ReadsATableInAnyOrderBetweenTheTwoHeadDimsAroundIt) {
  CalibrationProfile p = hand_made();
  // Three columns, listed out of order: head_dim 256 at 0.2 / 0.4, 64 and 128 as in hand_made().
  p.attention_forward = {{4096, 128, 0.7, "s"}, {1024, 256, 0.2, "s"}, {1024, 64, 0.4, "s"},
                         {4096, 256, 0.4, "s"}, {1024, 128, 0.5, "s"}, {4096, 64, 0.6, "s"}};
  // seq 2048: the 128 column gives 0.6, the 256 column 0.3; head_dim 160 is a quarter of the way.
  EXPECT_NEAR(p.attention_efficiency(2048, 160, AttentionPass::kForward), 0.6 - 0.25 * 0.3, 1e-12);
  // Between 64 and 128 only those two columns count: 0.5 and 0.6 at seq 2048, halfway at 96.
  EXPECT_NEAR(p.attention_efficiency(2048, 96, AttentionPass::kForward), 0.55, 1e-12);
  EXPECT_NEAR(p.attention_efficiency(8192, 512, AttentionPass::kForward), 0.4, 1e-12);
}

TEST(AttentionEfficiency, BackwardHasItsOwnTable) {
  const CalibrationProfile p = hand_made();
  EXPECT_NEAR(p.attention_efficiency(2048, 128, AttentionPass::kBackward), 0.4, 1e-12);
  // A single head_dim column serves every head_dim.
  EXPECT_NEAR(p.attention_efficiency(2048, 64, AttentionPass::kBackward), 0.4, 1e-12);
}

TEST(HandMadeProfile, RoundTripsIncludingAbsoluteBusBandwidth) {
  const CalibrationProfile p = hand_made();
  auto again = parse_calibration_profile(write_calibration_profile(p), "written profile");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, p);
}

// A 2 x 2 x 2 shape grid with its wave term: 132 SMs, 128 x 128 tiles.
CalibrationProfile with_shape_grid() {
  CalibrationProfile p = hand_made();
  p.gemm_interpolation = GemmInterpolation::kLogShapeGrid;
  p.gemm.clear();
  for (int64_t m : {1024, 4096}) {
    for (int64_t n : {1024, 4096}) {
      for (int64_t k : {1024, 4096}) {
        // Efficiency 0.1 at the small corner, +0.2 per axis that is large.
        const double e = 0.1 + 0.2 * ((m > 1024) + (n > 1024) + (k > 1024));
        p.gemm.push_back({m, n, k, e, "s"});
      }
    }
  }
  p.gemm_waves = {132, 128, 128, "s"};
  return p;
}

TEST(GemmShapeGrid, IsTrilinearInLogShapeTimesTheWaveFactor) {
  const CalibrationProfile p = with_shape_grid();
  // 1024 x 1024 output: 64 tiles on 132 SMs, one partial wave at 64/132 of the machine.
  EXPECT_NEAR(p.gemm_waves.factor(1024, 1024), 64.0 / 132, 1e-12);
  // 4096 x 4096: 1024 tiles = 7.76 waves, rounded up to 8.
  EXPECT_NEAR(p.gemm_waves.factor(4096, 4096), (1024.0 / 132) / 8, 1e-12);
  EXPECT_NEAR(p.gemm_efficiency(4096, 4096, 4096), 0.7 * (1024.0 / 132) / 8, 1e-12);
  // 2048 is halfway in log between 1024 and 4096 along k: 0.1 + 0.2 * 0.5 before the waves.
  EXPECT_NEAR(p.gemm_efficiency(1024, 1024, 2048), 0.2 * 64.0 / 132, 1e-12);
  // m and n are told apart from k: the same FLOPs, different shapes, different efficiencies.
  EXPECT_NEAR(p.gemm_efficiency(2048, 1024, 1024), 0.2 * (128.0 / 132), 1e-12);
  // Beyond the grid the edge holds (before the wave factor of the shape asked for).
  EXPECT_NEAR(p.gemm_efficiency(1024, 1024, 65536), 0.3 * 64.0 / 132, 1e-12);
  // Below the smallest corner, its time: an eighth of the work, an eighth of the efficiency.
  EXPECT_NEAR(p.gemm_efficiency(512, 512, 512), 0.1 * (64.0 / 132) / 8, 1e-12);
}

TEST(GemmShapeGrid, RoundTripsAndRefusesAnIncompleteGrid) {
  CalibrationProfile p = with_shape_grid();
  p.copies[static_cast<size_t>(CopyKind::kHostToDevice)] = {1e-5, 25e9, "s"};
  p.provenance.gpu_device_name = "NVIDIA H100 80GB HBM3";
  p.provenance.command = "pipescope calibrate fit gpu.json -o p.json";
  auto again = parse_calibration_profile(write_calibration_profile(p), "written profile");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, p);

  auto doc = nlohmann::json::parse(write_calibration_profile(p));
  doc["gemm"]["points"].erase(3);
  auto broken = parse_calibration_profile(doc.dump(), "calibration profile 'p.json'");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().message,
            "calibration profile 'p.json': field 'gemm.points' must hold every (m, n, k) combination of the "
            "values it uses for grid_in_log_mnk: 2 x 2 x 2 points, found 7");
}

TEST(MeasuredCollectives, PickTheNearestRankCountAndTheSizeRegime) {
  CalibrationProfile p = hand_made();
  auto& measured = p.measured_collectives[static_cast<size_t>(LinkTier::kIntraNode)]
                                         [static_cast<size_t>(CollectiveKind::kAllReduce)];
  measured = {{2, {{1e6, 5e-6, 10e9, "s"}, {0, 2e-5, 100e9, "s"}}, "s"},
              {8, {{1e6, 1e-5, 20e9, "s"}, {0, 3e-5, 200e9, "s"}}, "s"}};
  const auto tier = LinkTier::kIntraNode;
  const auto kind = CollectiveKind::kAllReduce;
  // 4 ranks: as near 2 as 8 in log2, so the first entry; a small message takes the first regime.
  EXPECT_NEAR(p.collective_time_s(kind, 1e5, 4, tier, 1e12), 5e-6 + 1e5 * 1.5 / 10e9, 1e-15);
  // 6 ranks are nearer 8; 1 GB is in the open-ended regime.
  EXPECT_NEAR(p.collective_time_s(kind, 1e9, 6, tier, 1e12), 3e-5 + 1e9 * (10.0 / 6) / 200e9, 1e-12);
  // Kinds without measured entries keep the single latency + busbw.
  EXPECT_NEAR(p.collective_time_s(CollectiveKind::kAllGather, 1e9, 8, tier, 100e9),
              1e-5 + 1e9 * (7.0 / 8) / 50e9, 1e-12);
  auto again = parse_calibration_profile(write_calibration_profile(p), "written profile");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, p);
}

TEST(MemoryBound, IsTheAchievedFractionOfHbm) {
  auto gpu = find_gpu("a100-80gb");
  ASSERT_TRUE(gpu.ok());
  const CalibrationProfile p = bundled("a100-80gb");
  EXPECT_DOUBLE_EQ(p.memory_bound_bytes_per_s(*gpu), p.hbm_bandwidth_fraction.value * 2039e9);
}

TEST(MemoryOverheads, AreAllPresentWithSources) {
  for (const std::string& name : known_profile_names()) {
    const CalibrationProfile profile = bundled(name);
    const MemoryOverheads& o = profile.memory_overheads();
    for (const SourcedValue* v : {&o.cuda_context_bytes, &o.allocator_reserve_fraction,
                                  &o.nccl_buffer_bytes_per_communicator, &o.memory_headroom_fraction}) {
      EXPECT_GT(v->value, 0) << name;
      EXPECT_FALSE(v->source.empty()) << name;
    }
    EXPECT_LT(o.memory_headroom_fraction.value, 1) << name;
  }
}

// Edits one field of the shipped A100 profile and returns the parse error.
std::string error_after(void (*edit)(nlohmann::json&)) {
  auto doc = nlohmann::json::parse(read_source_file("calibrate/profiles/a100-80gb.json"));
  edit(doc);
  auto profile = parse_calibration_profile(doc.dump(), "calibration profile 'p.json'");
  return profile.ok() ? "(parsed)" : profile.error().message;
}

TEST(ParseCalibrationProfile, RefusesANewerSchemaVersion) {
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["schema_version"] = 4; }),
            "calibration profile 'p.json': schema_version 4 is newer than this pipescope understands (3); "
            "upgrade pipescope, or write the file with schema_version 3");
}

TEST(ParseCalibrationProfile, ReadsVersionOneFiles) {
  // The shipped profiles are version 1; a measured profile is written as version 2.
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["schema_version"] = 1; }), "(parsed)");
}

TEST(ParseCalibrationProfile, EveryListedLossReadsAndWritesUnderItsOwnName) {
  auto doc = nlohmann::json::parse(read_source_file("calibrate/profiles/a100-80gb.json"));
  doc["schema_version"] = 3;
  doc["losses"] = nlohmann::json::object();
  std::set<const SourcedValue*> members;
  CalibrationProfile members_of;
  for (size_t i = 0; i < kTrainingLossFields.size(); ++i) {
    const std::string name(kTrainingLossFields[i].name);
    doc["losses"][name] = {{"value", 0.5 + 0.01 * static_cast<double>(i)}, {"source", "measured: " + name}};
    members.insert(&(members_of.losses.*kTrainingLossFields[i].member));
  }
  EXPECT_EQ(members.size(), kTrainingLossFields.size()) << "two names for one loss";
  auto profile = parse_calibration_profile(doc.dump(), "p.json");
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  for (size_t i = 0; i < kTrainingLossFields.size(); ++i) {
    const std::string name(kTrainingLossFields[i].name);
    EXPECT_EQ(profile->losses.*kTrainingLossFields[i].member,
              (SourcedValue{0.5 + 0.01 * static_cast<double>(i), "measured: " + name}))
        << name;
  }
  const auto written = nlohmann::json::parse(write_calibration_profile(*profile));
  EXPECT_EQ(written["losses"], doc["losses"]);
}

TEST(ParseCalibrationProfile, TrainingLossesReadBackAndAreCheckedEachOnItsOwn) {
  auto doc = nlohmann::json::parse(read_source_file("calibrate/profiles/a100-80gb.json"));
  doc["schema_version"] = 3;
  doc["losses"] = {{"sustained_gemm_fraction", {{"value", 0.97}, {"source", "measured: s"}}},
                   {"overlap_gemm_slowdown", {{"value", 0.42}, {"source", "measured: i"}}},
                   {"launch_gap_s", {{"value", 1e-6}, {"source", "measured: g"}}},
                   {"eager_kernel_fixed_s", {{"value", 1.5e-6}, {"source", "measured: e"}}},
                   {"unvectorized_bandwidth_fraction", {{"value", 0.44}, {"source", "measured: u"}}}};
  auto profile = parse_calibration_profile(doc.dump(), "p.json");
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  EXPECT_EQ(profile->losses.sustained_gemm_fraction, (SourcedValue{0.97, "measured: s"}));
  EXPECT_EQ(profile->losses.launch_gap_s, (SourcedValue{1e-6, "measured: g"}));
  EXPECT_EQ(profile->losses.eager_kernel_fixed_s, (SourcedValue{1.5e-6, "measured: e"}));
  EXPECT_EQ(profile->losses.unvectorized_fraction(), 0.44);
  EXPECT_EQ(profile->losses.sustained_fraction(), 0.97);
  EXPECT_EQ(profile->losses.dgrad_ratio(), 1.0);  // absent: no loss
  EXPECT_EQ(profile->losses.overlap_memory_bound_slowdown, SourcedValue{});
  auto again = parse_calibration_profile(write_calibration_profile(*profile), "written profile");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, *profile);
  // A profile without losses writes none, and reads back with none.
  CalibrationProfile lossless = *profile;
  lossless.losses = {};
  const std::string written = write_calibration_profile(lossless);
  EXPECT_EQ(written.find("\"losses\""), std::string::npos);
  auto lossless_again = parse_calibration_profile(written, "written profile");
  ASSERT_TRUE(lossless_again.ok()) << lossless_again.error().message;
  EXPECT_TRUE(lossless_again->losses.empty());

  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        d["losses"] = {{"sustained_gemm_fraction", {{"value", 1.2}, {"source", "x"}}}};
      }),
      "calibration profile 'p.json': field 'losses.sustained_gemm_fraction.value' must be a fraction in "
      "(0, 1], got 1.2");
  EXPECT_EQ(error_after([](nlohmann::json& d) {
              d["losses"] = {{"overlap_gemm_slowdown", {{"value", -0.1}, {"source", "x"}}}};
            }),
            "calibration profile 'p.json': field 'losses.overlap_gemm_slowdown.value' must be a number >= 0, "
            "got -0.1");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        d["losses"] = {{"host_gap", {{"value", 1}, {"source", "x"}}}};
      }),
      "calibration profile 'p.json': unknown field 'losses.host_gap' (known here: "
      "sustained_gemm_fraction, dgrad_time_ratio, wgrad_time_ratio, overlap_gemm_slowdown, "
      "overlap_memory_bound_slowdown, launch_gap_s, eager_kernel_fixed_s, unvectorized_bandwidth_fraction, "
      "unfused_scores_forward_fraction, unfused_scores_backward_fraction)");
  EXPECT_EQ(error_after([](nlohmann::json& d) {
              d["losses"] = {{"unvectorized_bandwidth_fraction", {{"value", 0}, {"source", "x"}}}};
            }),
            "calibration profile 'p.json': field 'losses.unvectorized_bandwidth_fraction.value' must be a "
            "fraction in (0, 1], got 0");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        d["losses"] = {{"launch_gap_s", {{"value", -1e-6}, {"source", "x"}}}};
      }),
      "calibration profile 'p.json': field 'losses.launch_gap_s.value' must be a number >= 0, got -1e-06");
}

TEST(ParseCalibrationProfile, DefectsNameTheField) {
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["gemm"]["points"][2]["efficiency"] = 1.5; }),
            "calibration profile 'p.json': field 'gemm.points[2].efficiency' must be a fraction in (0, 1], "
            "got 1.5");
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["gemm"]["points"][1].erase("source"); }),
            "calibration profile 'p.json': field 'gemm.points[1].source' is missing");
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["gemm"]["points"][3]["m"] = 1; }),
            "calibration profile 'p.json': field 'gemm.points[3]': points must be in strictly increasing "
            "2*m*n*k order");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) { d["collectives"]["inter_node"]["all_gather"]["latency_s"] = -1; }),
      "calibration profile 'p.json': field 'collectives.inter_node.all_gather.latency_s' must be a positive "
      "number, got -1");
  EXPECT_EQ(error_after([](nlohmann::json& d) {
              d["collectives"]["intra_node"]["send_recv"]["bus_bandwidth_bytes_per_s"] = 1e9;
            }),
            "calibration profile 'p.json': field 'collectives.intra_node.send_recv' needs exactly one of "
            "'bus_bandwidth_bytes_per_s' and 'bus_bandwidth_fraction'");
  EXPECT_EQ(error_after([](nlohmann::json& d) { d["collectives"]["intra_node"].erase("all_to_all"); }),
            "calibration profile 'p.json': field 'collectives.intra_node.all_to_all' is missing");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) { d["memory_overheads"]["memory_headroom_fraction"]["value"] = 0; }),
      "calibration profile 'p.json': field 'memory_overheads.memory_headroom_fraction.value' must be a "
      "fraction in (0, 1), got 0");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) { d["memory_bound"]["hbm_bandwidth_fraction"] = 0.8; }),
      "calibration profile 'p.json': field 'memory_bound.hbm_bandwidth_fraction' must be an object, got 0.8");
}

TEST(ParseCalibrationProfile, ALatencysScaleIsAGroupOverSeveralNodes) {
  EXPECT_EQ(
      error_after(
          [](nlohmann::json& d) { d["collectives"]["inter_node"]["all_gather"].erase("latency_nodes"); }),
      "calibration profile 'p.json': field 'collectives.inter_node.all_gather' needs both or neither of "
      "'latency_ranks' and 'latency_nodes'");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        d["collectives"]["inter_node"]["all_gather"]["latency_ranks"] = 30;
        d["collectives"]["inter_node"]["all_gather"]["latency_nodes"] = 4;
      }),
      "calibration profile 'p.json': field 'collectives.inter_node.all_gather': latency_ranks 30 over "
      "latency_nodes 4 is not a group spread evenly over two or more nodes, as NCCL's tuning model needs");
  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        d["collectives"]["inter_node"]["all_gather"]["latency_ranks"] = 8;
        d["collectives"]["inter_node"]["all_gather"]["latency_nodes"] = 1;
      }),
      "calibration profile 'p.json': field 'collectives.inter_node.all_gather': latency_ranks 8 over "
      "latency_nodes 1 is not a group spread evenly over two or more nodes, as NCCL's tuning model needs");
}

// An inter-node latency measured on 32 ranks over 4 nodes: at that scale a small all-reduce costs
// the measured latency (NCCL's tree with LL is the least of its latencies, and the measurement's
// excess over it is kept); over 128 nodes NCCL's latency grows, the excess stays.
TEST(InterNodeCollectives, GrowFromTheScaleTheirLatencyWasMeasuredAt) {
  const CalibrationProfile p = hand_made();
  constexpr double kLink = 50e9;
  const double excess = 1e-4 - nccl_least_latency_s(CollectiveKind::kAllReduce, {32, 4});
  const CollectiveTime measured_scale =
      p.collective_cost(CollectiveKind::kAllReduce, 1, 32, 4, LinkTier::kInterNode, kLink);
  EXPECT_NEAR(measured_scale.latency_s, 1e-4, 1e-12);
  const CollectiveTime large =
      p.collective_cost(CollectiveKind::kAllReduce, 1, 1024, 128, LinkTier::kInterNode, kLink);
  EXPECT_NEAR(large.latency_s, nccl_least_latency_s(CollectiveKind::kAllReduce, {1024, 128}) + excess, 1e-12);
  // Without the group's node count, or for an entry that does not state its scale, one latency.
  EXPECT_NEAR(
      p.collective_cost(CollectiveKind::kAllReduce, 1, 1024, 0, LinkTier::kInterNode, kLink).latency_s, 1e-4,
      1e-15);
  EXPECT_NEAR(
      p.collective_cost(CollectiveKind::kAllGather, 1, 1024, 128, LinkTier::kInterNode, kLink).latency_s,
      1e-5, 1e-15);
  // Large buffers: NCCL's ring with Simple at the entry's bus bandwidth.
  const CollectiveTime big =
      p.collective_cost(CollectiveKind::kAllReduce, 1e10, 64, 8, LinkTier::kInterNode, kLink);
  EXPECT_NEAR(big.transfer_s, 1e10 * bus_bandwidth_factor(CollectiveKind::kAllReduce, 64) / (0.5 * kLink),
              1e-9);
}

TEST(ParseCalibrationProfile, AttentionGridMustBeComplete) {
  EXPECT_EQ(
      error_after([](nlohmann::json& d) {
        auto point = d["attention"]["forward"]["points"][0];
        point["head_dim"] = 64;
        d["attention"]["forward"]["points"].push_back(point);
      }),
      "calibration profile 'p.json': field 'attention.forward.points' must hold every (seq_len, head_dim) "
      "combination of the values it uses: 2 x 2 = 4 points, found 3");
}

}  // namespace
}  // namespace pipescope::planner
