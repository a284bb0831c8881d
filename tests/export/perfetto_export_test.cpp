// The Perfetto export engine on simulated runs: what a failure leaves behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pipescope/export/export.h"
#include "synthetic_run.h"
#include "trace_test_support.h"

namespace pipescope::exporter {
namespace {

namespace fs = std::filesystem;
using trace::test::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every rank's trace of a small simulated run, on offset 0.
std::vector<ExportRank> ranks_of(const ScratchDir& dir, synthetic::SyntheticRunSpec spec = {}) {
  auto truth = synthetic::write_synthetic_run(spec, dir.path());
  EXPECT_TRUE(truth.ok());
  std::vector<ExportRank> ranks;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".pst") continue;
    ranks.push_back(ExportRank{entry.path().string(), {}, std::stoi(name.substr(5)), 0});
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const ExportRank& a, const ExportRank& b) { return a.rank < b.rank; });
  return ranks;
}

TEST(PerfettoExport, AFailedExportLeavesTheEarlierOutputAsItWas) {
  ScratchDir traces, out;
  synthetic::SyntheticRunSpec spec;
  spec.tp = 1;
  spec.pp = 2;
  spec.dp = 1;
  ExportOptions options;
  options.ranks = ranks_of(traces, spec);
  ASSERT_EQ(options.ranks.size(), 2u);
  // The second rank's file is gone by the time the export reaches it.
  options.ranks[1].path = traces.file("vanished.pst");
  options.output_path = out.file("trace.json");
  std::ofstream(options.output_path) << "an earlier export";
  auto summary = export_perfetto(options);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.error().message.find("vanished.pst"), std::string::npos);
  EXPECT_EQ(slurp(options.output_path), "an earlier export");
  EXPECT_EQ(std::distance(fs::directory_iterator(out.path()), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace pipescope::exporter
