// `pipescope inspect` on traces written by the real writer: what a user sees for a clean
// file, a file cut short by a killed process, and input that is not a trace at all.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_writer.h"
#include "run_command.h"

namespace pipescope::testing {
namespace {

namespace fs = std::filesystem;
using namespace pipescope::trace;

class InspectCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = fs::temp_directory_path() / "pipescope-inspect-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A rank-2 trace with 3 kernels and 2 NCCL ops, closed cleanly.
  std::string write_trace(const std::string& name) {
    std::string path = dir_ / name;
    WriterOptions options;
    options.host = "node07";
    options.pid = 31337;
    auto writer = TraceWriter::create(path, options);
    EXPECT_TRUE(writer.ok());
    ProcessInfo info;
    info.rank = 2;
    info.world_size = 16;
    info.local_rank = 2;
    info.run_id = "job-981";
    info.launcher = "torchrun";
    info.devices.push_back(DeviceInfo{2, {}, 0, 0x3b, 0, 80ull << 30, "NVIDIA H100 80GB HBM3"});
    EXPECT_TRUE((*writer)->write_process_info(info).ok());
    ThreadBuffer* buffer = (*writer)->register_thread();
    for (int i = 0; i < 3; ++i) buffer->append(make_record<KernelRecord>());
    for (int i = 0; i < 2; ++i) buffer->append(make_record<NcclOpRecord>());
    EXPECT_TRUE((*writer)->close().ok());
    return path;
  }

  fs::path dir_;
};

TEST_F(InspectCommand, CleanTraceShowsRankRecordsAndFullRecovery) {
  const std::string path = write_trace("rank-2.31337.pst");
  const CommandResult r = run_pipescope({"inspect", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("host node07, pid 31337"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 2 of 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("records: 5 (kernel 3, nccl_op 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closed cleanly: 5 records written, 0 dropped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(complete)"), std::string::npos) << r.out;
}

TEST_F(InspectCommand, JsonCarriesSchemaVersionAndCounts) {
  const std::string path = write_trace("rank-2.31337.pst");
  const CommandResult r = run_pipescope({"inspect", "--json", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema_version"], 1);
  ASSERT_EQ(doc["traces"].size(), 1u);
  const auto& t = doc["traces"][0];
  EXPECT_EQ(t["process"]["rank"], 2);
  EXPECT_EQ(t["process"]["world_size"], 16);
  EXPECT_EQ(t["process"]["devices"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t["records"]["kernel"], 3);
  EXPECT_EQ(t["records"]["nccl_op"], 2);
  EXPECT_EQ(t["records_total"], 5);
  EXPECT_EQ(t["closed_cleanly"], true);
  EXPECT_EQ(t["recovery"]["status"], "complete");
  EXPECT_EQ(t["recovery"]["valid_bytes"], t["recovery"]["total_bytes"]);
}

// CLOCK_MONOTONIC read 5 us late: a trace clock that strays, as a badly fitted TSC line would.
uint64_t monotonic_five_us_late() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec) - 5'000;
}

// The anchors say how closely a CLOCK_MONOTONIC trace clock followed the kernel's; for another
// clock they cannot, and nothing is said.
TEST_F(InspectCommand, AnchorsSayHowCloseTheTraceClockStayedToClockMonotonic) {
  const std::string exact = write_trace("rank-2.31337.pst");
  const CommandResult r = run_pipescope({"inspect", exact});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(the trace clock within 0 ns of CLOCK_MONOTONIC at them)"), std::string::npos)
      << r.out;

  for (const TraceClock clock : {TraceClock::kMonotonic, TraceClock::kRealtime}) {
    const std::string path = dir_ / ("clock-" + std::to_string(static_cast<int>(clock)) + ".pst");
    WriterOptions options;
    options.clock = clock;
    options.read_trace_clock_ns = clock == TraceClock::kMonotonic ? &monotonic_five_us_late : nullptr;
    auto writer = TraceWriter::create(path, options);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->close().ok());
    const CommandResult inspected = run_pipescope({"inspect", "--json", path});
    ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
    const auto stray = nlohmann::json::parse(inspected.out)["traces"][0]["trace_clock_stray_ns"];
    const CommandResult text = run_pipescope({"inspect", path});
    if (clock == TraceClock::kMonotonic) {
      ASSERT_TRUE(stray.is_number()) << inspected.out;
      EXPECT_GT(stray.get<uint64_t>(), 3'000u);  // 5 us less the anchors' uncertainty
      EXPECT_LE(stray.get<uint64_t>(), 5'000u);
      EXPECT_NE(text.out.find("ns of CLOCK_MONOTONIC at them"), std::string::npos) << text.out;
    } else {
      EXPECT_TRUE(stray.is_null()) << inspected.out;
      EXPECT_EQ(text.out.find("CLOCK_MONOTONIC"), std::string::npos) << text.out;
    }
  }
}

TEST_F(InspectCommand, TruncatedTraceReportsWhatWasRecovered) {
  const std::string path = write_trace("rank-2.31337.pst");
  fs::resize_file(path, fs::file_size(path) - 5);  // cuts into the end chunk
  const CommandResult r = run_pipescope({"inspect", "--json", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out)["traces"][0];
  EXPECT_EQ(t["recovery"]["status"], "truncated");
  EXPECT_EQ(t["closed_cleanly"], false);
  EXPECT_EQ(t["records_total"], 5);  // the records chunk came before the cut
  EXPECT_LT(t["recovery"]["valid_bytes"].get<uint64_t>(), t["recovery"]["total_bytes"].get<uint64_t>());
}

TEST_F(InspectCommand, DirectoryArgumentReadsEveryTrace) {
  write_trace("rank-0.1.pst");
  write_trace("rank-1.2.pst");
  const CommandResult r = run_pipescope({"inspect", "--json", dir_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["traces"].size(), 2u);
}

TEST_F(InspectCommand, ForeignFileIsOneLineAndExitTwoButOthersStillShown) {
  const std::string good = write_trace("rank-0.1.pst");
  const std::string foreign = dir_ / "notes.pst";
  std::ofstream(foreign) << "these are not trace bytes\n";
  const CommandResult r = run_pipescope({"inspect", good, foreign});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("not a pipescope trace"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("rank 2 of 16"), std::string::npos) << r.out;
}

TEST_F(InspectCommand, EmptyFileAndMissingFileAndEmptyDirAreClearErrors) {
  const std::string empty = dir_ / "rank-x.5.pst";
  std::ofstream created(empty);
  created.close();
  CommandResult r = run_pipescope({"inspect", empty});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("empty file"), std::string::npos) << r.err;

  r = run_pipescope({"inspect", (dir_ / "missing.pst").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;

  fs::create_directory(dir_ / "empty-dir");
  r = run_pipescope({"inspect", (dir_ / "empty-dir").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no *.pst"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pipescope::testing
