// load_run on directories a crash or a bad disk left behind: a rank's file cut anywhere in its
// first bytes, a damaged header or chunk, files that name no run beside one or two runs; and the
// idle trace a launcher process leaves beside its ranks'.
#include "pipescope/analysis/run_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "pipescope/analysis/report_builder.h"
#include "pipescope/trace/trace_writer.h"
#include "synthetic_run.h"
#include "trace_test_support.h"

namespace pipescope::analysis {
namespace {

namespace fs = std::filesystem;
using synthetic::SyntheticRunSpec;
using trace::test::ScratchDir;

// Two ranks, one pipeline of two stages: rank 1's file is the one the tests damage.
SyntheticRunSpec two_stages(const std::string& run_id = "job") {
  SyntheticRunSpec spec = synthetic::with_layout(1, 2, 1);
  spec.run_id = run_id;
  return spec;
}

// Copies every file of `from` into `into`, its name prefixed.
void copy_into(const ScratchDir& from, const ScratchDir& into, const std::string& prefix) {
  for (const auto& entry : fs::directory_iterator(from.path()))
    fs::copy_file(entry.path(), into.file(prefix + entry.path().filename().string()));
}

std::string write_two_stages(const ScratchDir& dir, const SyntheticRunSpec& spec = two_stages()) {
  EXPECT_TRUE(synthetic::write_synthetic_run(spec, dir.path()).ok());
  for (const auto& entry : fs::directory_iterator(dir.path()))
    if (entry.path().filename().string().starts_with("rank-1.")) return entry.path().string();
  return {};
}

bool has_warning(const LoadedRun& run, const std::string& part) {
  return std::any_of(run.warnings.begin(), run.warnings.end(),
                     [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

// Where the header and the process-info chunk end in a trace the writer made: file header,
// clock anchor chunk, process info chunk (docs/trace-format.md, section 4).
struct HeaderRegion {
  uint64_t header_end = 0;
  uint64_t process_info_end = 0;
};
HeaderRegion header_region(const std::vector<std::byte>& file) {
  auto decoded = trace::test::decode_all(file);
  EXPECT_TRUE(decoded.ok());
  HeaderRegion region;
  region.header_end = decoded->header.header_bytes;
  for (const auto& chunk : decoded->chunks) {
    if (chunk.type != trace::ChunkType::kProcessInfo) continue;
    region.process_info_end = chunk.end_offset;
    break;
  }
  return region;
}

TEST(RunLoader, AFileCutAnywhereInItsFirstBytesLeavesTheRestOfTheRunReadable) {
  ScratchDir dir;
  const std::string victim = write_two_stages(dir);
  const std::vector<std::byte> whole = trace::test::read_file(victim);
  const HeaderRegion region = header_region(whole);
  ASSERT_EQ(region.header_end, 72u);  // 64 fixed bytes + "node0", padded to a multiple of 8
  ASSERT_GT(region.process_info_end, region.header_end + 2 * 24);
  for (uint64_t cut = 1; cut <= region.process_info_end + 24; ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    trace::test::write_file(victim, std::span(whole).first(cut));
    auto run = load_run(dir.path(), {});
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->run_id, "job");
    EXPECT_EQ(run->world_size, 2);  // rank 0 states it
    if (cut < region.header_end) {
      // Nothing to recover: the file is named and left out, and rank 1 counts as missing.
      EXPECT_TRUE(has_warning(*run, fs::path(victim).filename().string() + " skipped: trace header"));
      ASSERT_EQ(run->global_rank, std::vector<int32_t>{0});
      EXPECT_EQ(run->missing_ranks, std::vector<int32_t>{1});
    } else if (cut < region.process_info_end) {
      // A header and no process info: the file names no run and joins the only one, as rank 1
      // (its name says so).
      EXPECT_TRUE(has_warning(*run, "names no run"));
      EXPECT_TRUE(has_warning(*run, "taken as part of run 'job'"));
      EXPECT_EQ(run->global_rank, (std::vector<int32_t>{0, 1}));
      EXPECT_EQ(run->ranks[1].records, 0u);  // only the clock anchor came before
    } else {
      EXPECT_FALSE(has_warning(*run, "names no run"));
      EXPECT_EQ(run->global_rank, (std::vector<int32_t>{0, 1}));
    }
  }
}

TEST(RunLoader, ADamagedHeaderIsSkippedWithWhatWasWrong) {
  ScratchDir dir;
  const std::string victim = write_two_stages(dir);
  std::vector<std::byte> bytes = trace::test::read_file(victim);
  bytes[66] ^= std::byte{0x20};  // a letter of the host name: the header checksum fails
  trace::test::write_file(victim, bytes);
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_TRUE(has_warning(*run, "skipped: trace header is damaged (checksum mismatch)"));
  EXPECT_EQ(run->missing_ranks, std::vector<int32_t>{1});
}

TEST(RunLoader, AZeroFilledFileIsACrashsLeftoverNotAForeignFile) {
  ScratchDir dir;
  write_two_stages(dir);
  trace::test::write_file(dir.file("rank-x.4242.pst"), std::vector<std::byte>(4096));
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_TRUE(has_warning(*run, "rank-x.4242.pst skipped"));
  EXPECT_EQ(run->ranks.size(), 2u);
}

TEST(RunLoader, AForeignFileIsStillRefusedAndADirectoryOfDamagedFilesNamesOne) {
  ScratchDir foreign;
  write_two_stages(foreign);
  const std::string text = "a text file that happens to be called .pst\n";
  trace::test::write_file(foreign.file("notes.pst"), trace::test::bytes_of_text(text));
  auto refused = load_run(foreign.path(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("notes.pst is not a readable pipescope trace"), std::string::npos);

  ScratchDir damaged;
  trace::test::write_file(damaged.file("rank-0.1.pst"), std::vector<std::byte>(10));
  auto none = load_run(damaged.path(), {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no readable trace"), std::string::npos);
  EXPECT_NE(none.error().message.find("rank-0.1.pst"), std::string::npos);
}

TEST(RunLoader, ACorruptChunkInTheMiddleKeepsWhatCameBeforeIt) {
  ScratchDir dir;
  SyntheticRunSpec spec = two_stages();
  spec.kernels_per_microbatch = 64;  // many chunks
  const std::string victim = write_two_stages(dir, spec);
  std::vector<std::byte> bytes = trace::test::read_file(victim);
  auto decoded = trace::test::decode_all(bytes);
  ASSERT_TRUE(decoded.ok());
  std::vector<uint64_t> records_chunks;
  for (const auto& c : decoded->chunks)
    if (c.type == trace::ChunkType::kRecords) records_chunks.push_back(c.file_offset);
  ASSERT_GE(records_chunks.size(), 4u);
  const uint64_t middle = records_chunks[records_chunks.size() / 2];
  bytes[middle + 24 + 5] ^= std::byte{0xff};  // inside the payload: the chunk's checksum fails
  trace::test::write_file(victim, bytes);

  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->ranks.size(), 2u);
  EXPECT_EQ(run->ranks[1].stop_reason, trace::StopReason::kCorrupt);
  EXPECT_EQ(run->ranks[1].valid_bytes, middle);  // every chunk before it
  EXPECT_GT(run->ranks[1].records, 0u);
  auto report = build_run_report(*run, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->files[1].stop, "corrupt");
  const std::string said = "rank 1: trace corrupt after " + std::to_string(middle) + " of " +
                           std::to_string(bytes.size()) + " bytes";
  EXPECT_TRUE(std::any_of(report->warnings.begin(), report->warnings.end(),
                          [&](const std::string& w) { return w.find(said) != std::string::npos; }));
}

TEST(RunLoader, FilesThatNameNoRunBesideTwoRunsAreNotGuessed) {
  ScratchDir dir, other;
  write_two_stages(dir, two_stages("job-a"));
  write_two_stages(other, two_stages("job-b"));
  copy_into(other, dir, "b-");
  // A third run's rank, killed before it wrote its process info: header only.
  const std::vector<std::byte> header = trace::test::read_file(dir.file("b-rank-0.10000.pst"));
  trace::test::write_file(dir.file("rank-5.777.pst"), std::span(header).first(72));

  auto refused = load_run(dir.path(), {});
  ASSERT_FALSE(refused.ok());
  const std::string& message = refused.error().message;
  EXPECT_NE(message.find("run 'job-a'"), std::string::npos) << message;
  EXPECT_NE(message.find("run 'job-b'"), std::string::npos) << message;
  EXPECT_NE(message.find("1 that name no run (rank-5.777.pst)"), std::string::npos) << message;
  EXPECT_EQ(message.find("run ''"), std::string::npos) << message;

  LoadOptions pick;
  pick.run_id = "job-b";
  auto picked = load_run(dir.path(), pick);
  ASSERT_TRUE(picked.ok()) << picked.error().message;
  EXPECT_EQ(picked->global_rank, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(has_warning(*picked, "rank-5.777.pst names no run"));
  EXPECT_TRUE(has_warning(*picked, "left out: " + dir.path() + " holds several runs"));
}

TEST(RunLoader, ARunWithoutIdIsChosenByAnEmptyRunId) {
  ScratchDir dir, other;
  write_two_stages(dir, two_stages(""));
  write_two_stages(other, two_stages("job-b"));
  copy_into(other, dir, "b-");
  auto refused = load_run(dir.path(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("a run without id"), std::string::npos) << refused.error().message;
  LoadOptions pick;
  pick.run_id = "";
  auto picked = load_run(dir.path(), pick);
  ASSERT_TRUE(picked.ok()) << picked.error().message;
  EXPECT_EQ(picked->run_id, "");
  EXPECT_EQ(picked->ranks.size(), 2u);
}

TEST(RunLoader, ALeftoverOfACrashedAttemptDoesNotTakeTheRanksOfTheRestart) {
  ScratchDir dir;
  SyntheticRunSpec restart = two_stages();
  restart.attempt = 1;
  write_two_stages(dir, restart);
  // Attempt 0's rank 1 died right after its header: same rank, another pid.
  const std::vector<std::byte> header = trace::test::read_file(dir.file("rank-1.10001.pst"));
  trace::test::write_file(dir.file("rank-1.555.pst"), std::span(header).first(72));
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->attempt, 1);
  EXPECT_EQ(run->ranks.size(), 2u);
  EXPECT_TRUE(has_warning(*run, "rank-1.555.pst names no run"));
  EXPECT_TRUE(has_warning(*run, "left out: its rank has a trace that names the run"));
}

// What the library leaves in a launcher (torchrun's agent, the parent of mp.spawn): its process
// info, without a rank unless `rank` states one, and one CUPTI overhead record; no GPU work,
// memory, NCCL or NVTX.
void write_idle_trace(const std::string& path, std::optional<int32_t> rank,
                      const std::string& run_id = "job") {
  trace::WriterOptions options;
  options.host = "node0";
  options.pid = 763;
  auto writer = trace::TraceWriter::create(path, options);
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  trace::ProcessInfo info;
  info.rank = rank;
  info.run_id = run_id;
  ASSERT_TRUE((*writer)->write_process_info(info).ok());
  auto overhead = trace::make_record<trace::OverheadRecord>();
  overhead.overhead_kind = static_cast<uint8_t>(trace::OverheadKind::kCuptiResource);
  overhead.start_ns = 1'000'000'000;
  overhead.end_ns = 1'000'001'000;
  ASSERT_TRUE((*writer)->register_thread()->append(overhead));
  ASSERT_TRUE((*writer)->close().ok());
}

TEST(RunLoader, AnIdleTraceWithoutRankBesideARunIsLeftOutAsTheLaunchers) {
  ScratchDir dir;
  write_two_stages(dir);
  write_idle_trace(dir.file("rank-x.763.pst"), std::nullopt);
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->global_rank, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(run->world_size, 2);
  EXPECT_TRUE(run->missing_ranks.empty());
  EXPECT_TRUE(
      has_warning(*run, "rank-x.763.pst recorded no GPU work, NCCL or NVTX (a launcher process?); left out"));
  EXPECT_EQ(run->warnings.size(), 1u);  // not numbered as a rank too

  // Nor does it split the directory when it states another run than its ranks (or none).
  ScratchDir other;
  write_two_stages(other);
  write_idle_trace(other.file("rank-x.763.pst"), std::nullopt, "");
  auto joined = load_run(other.path(), {});
  ASSERT_TRUE(joined.ok()) << joined.error().message;
  EXPECT_EQ(joined->run_id, "job");
  EXPECT_EQ(joined->ranks.size(), 2u);
}

TEST(RunLoader, AnIdleTraceThatStatesItsRankStillShows) {
  ScratchDir dir;
  write_two_stages(dir);
  write_idle_trace(dir.file("rank-2.763.pst"), 2);
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->global_rank, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(run->world_size, 3);
  EXPECT_FALSE(has_warning(*run, "left out"));
}

TEST(RunLoader, ADirectoryOfOnlyAnIdleTraceWithoutRankStillLoads) {
  ScratchDir dir;
  write_idle_trace(dir.file("rank-x.763.pst"), std::nullopt);
  auto run = load_run(dir.path(), {});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->global_rank, std::vector<int32_t>{0});
  EXPECT_EQ(run->ranks[0].records, 1u);
  EXPECT_FALSE(has_warning(*run, "left out"));
}

}  // namespace
}  // namespace pipescope::analysis
