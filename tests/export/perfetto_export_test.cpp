// The Perfetto export engine on simulated runs: what a failure leaves behind.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "pipescope/export/export.h"
#include "synthetic_run.h"
#include "trace_test_support.h"

namespace pipescope::exporter {
namespace {

namespace fs = std::filesystem;
using trace::test::ScratchDir;

// Every rank's trace of a simulated run, put on the simulation's true clock (each rank wrote
// true time + its own offset).
std::vector<ExportRank> ranks_of(const ScratchDir& dir, synthetic::SyntheticRunSpec spec = {}) {
  auto truth = synthetic::write_synthetic_run(spec, dir.path());
  EXPECT_TRUE(truth.ok());
  std::vector<ExportRank> ranks;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".pst") continue;
    const int rank = std::stoi(name.substr(5));
    ranks.push_back(
        ExportRank{entry.path().string(), {}, rank, -truth->clock_offset_ns[static_cast<size_t>(rank)]});
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const ExportRank& a, const ExportRank& b) { return a.rank < b.rank; });
  return ranks;
}

TEST(PerfettoExport, AFailedExportLeavesTheEarlierOutputAsItWas) {
  ScratchDir traces, out;
  ExportOptions options;
  options.ranks = ranks_of(traces, synthetic::with_layout(1, 2, 1));
  ASSERT_EQ(options.ranks.size(), 2u);
  // The second rank's file is gone by the time the export reaches it.
  options.ranks[1].path = traces.file("vanished.pst");
  options.output_path = out.file("trace.json");
  std::ofstream(options.output_path) << "an earlier export";
  auto summary = export_perfetto(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.error().message.find("vanished.pst"), std::string::npos);
  EXPECT_EQ(trace::test::read_text(options.output_path), "an earlier export");
  EXPECT_EQ(std::distance(fs::directory_iterator(out.path()), fs::directory_iterator()), 1);
}

struct Flows {
  size_t arrows = 0;                                     // a start and an end with the same id
  size_t backwards = 0;                                  // of those, ending before they start
  size_t unmatched = 0;                                  // a start or an end alone
  size_t ends_on_streams = 0, ends_on_nccl_threads = 0;  // tracks 1000+ and 2000+ (perfetto_export.cpp)
};

Flows flows_in(const nlohmann::json& doc) {
  std::map<uint64_t, double> starts, ends;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "s") starts[e["id"].get<uint64_t>()] = e["ts"].get<double>();
    if (e["ph"] == "f") ends[e["id"].get<uint64_t>()] = e["ts"].get<double>();
  }
  Flows f;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "f") continue;
    const int64_t tid = e["tid"].get<int64_t>();
    f.ends_on_streams += tid >= 1000 && tid < 2000 ? 1 : 0;
    f.ends_on_nccl_threads += tid >= 2000 && tid < 3000 ? 1 : 0;
  }
  for (const auto& [id, start] : starts) {
    auto end = ends.find(id);
    if (end == ends.end()) {
      ++f.unmatched;
      continue;
    }
    ++f.arrows;
    if (end->second < start) ++f.backwards;
  }
  f.unmatched += ends.size() - f.arrows;
  return f;
}

// A pipeline of 4 stages x 8 micro-batches x 3 steps: each of the 4 pipelines carries
// 3 x 8 activations forward and 3 x 8 gradients back over each of its 3 links.
constexpr size_t kTransfers = 4 * 3 * 3 * 8 * 2;

TEST(PerfettoExport, EveryP2pArrowPointsForwardInTime) {
  for (const bool gpu : {true, false}) {
    SCOPED_TRACE(gpu ? "arrows end at the recv's kernel" : "host calls only: at the recv call's return");
    ScratchDir traces, out;
    synthetic::SyntheticRunSpec spec;
    spec.gpu = gpu;
    ExportOptions options;
    options.ranks = ranks_of(traces, spec);
    options.output_path = out.file("trace.json");
    ASSERT_TRUE(export_perfetto(options).ok());
    const Flows f = flows_in(nlohmann::json::parse(trace::test::read_text(options.output_path)));
    EXPECT_EQ(f.arrows, kTransfers);
    EXPECT_EQ(f.unmatched, 0u);
    EXPECT_EQ(f.backwards, 0u);
    EXPECT_EQ(f.ends_on_streams, gpu ? kTransfers : 0u);
    EXPECT_EQ(f.ends_on_nccl_threads, gpu ? 0u : kTransfers);
  }
}

TEST(PerfettoExport, ALargeOutputIsWarnedAbout) {
  ScratchDir traces, out;
  ExportOptions options;
  options.ranks = ranks_of(traces);
  options.output_path = out.file("trace.json");
  auto quiet = export_perfetto(options);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->warnings.empty());
  // The same export against a threshold below its size (the real one is 300 MiB).
  options.large_output_bytes = quiet->bytes_written - 1;
  auto warned = export_perfetto(options);
  ASSERT_TRUE(warned.ok());
  ASSERT_EQ(warned->warnings.size(), 1u);
  EXPECT_NE(warned->warnings[0].find("viewers slow down"), std::string::npos);
  EXPECT_NE(warned->warnings[0].find("--ranks"), std::string::npos);
  const auto mib = std::llround(static_cast<double>(quiet->bytes_written) / (1 << 20));
  EXPECT_NE(warned->warnings[0].find("holds " + std::to_string(mib) + " MiB"), std::string::npos)
      << warned->warnings[0];
  EXPECT_EQ(warned->bytes_written, quiet->bytes_written);
}

}  // namespace
}  // namespace pipescope::exporter
