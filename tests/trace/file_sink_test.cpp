// The trace file on disk: created exclusively, never through a symlink, and after a failed
// write (disk full, file-size limit) left readable up to its last whole chunk.
#include "pipescope/trace/trace_file_sink.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "pipescope/trace/trace_writer.h"
#include "trace_test_support.h"

namespace pipescope::trace {
namespace {

using test::bytes_of_text;
using test::contains;
using test::read_text;
using test::ScratchDir;

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST(TraceFileSink, AppendsPiecesBackToBack) {
  ScratchDir dir;
  const std::string path = dir.file("pieces.bin");
  auto sink = TraceFileSink::create(path);
  ASSERT_TRUE(sink.ok()) << sink.error().message;
  const std::span<const std::byte> pieces[] = {bytes_of_text("abc"), {}, bytes_of_text("defg")};
  ASSERT_TRUE(sink->append(pieces).ok());
  ASSERT_TRUE(sink->append(std::span(pieces).first(1)).ok());
  EXPECT_FALSE(sink->failed());
  EXPECT_EQ(sink->path(), path);
  sink->close();
  EXPECT_EQ(read_text(path), "abcdefgabc");
  EXPECT_FALSE(sink->append(pieces).ok()) << "a closed sink writes nothing";
  EXPECT_EQ(read_text(path), "abcdefgabc");
}

TEST(TraceFileSink, CreatedFileIsReadableByOthersButNotExecutable) {
  ScratchDir dir;
  const mode_t old_mask = umask(022);
  auto sink = TraceFileSink::create(dir.file("mode.bin"));
  umask(old_mask);
  ASSERT_TRUE(sink.ok()) << sink.error().message;
  struct stat st {};
  ASSERT_EQ(stat(dir.file("mode.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(TraceFileSink, RefusesToReplaceAnExistingFile) {
  ScratchDir dir;
  const std::string path = dir.file("rank-0.pst");
  test::write_file(path, bytes_of_text("an earlier run's trace"));
  auto sink = TraceFileSink::create(path);
  ASSERT_FALSE(sink.ok());
  EXPECT_TRUE(contains(sink.error().message, path)) << sink.error().message;
  EXPECT_TRUE(contains(sink.error().message, "exists")) << sink.error().message;
  EXPECT_EQ(read_text(path), "an earlier run's trace");

  auto writer = TraceWriter::create(path, WriterOptions{});
  EXPECT_FALSE(writer.ok());
  EXPECT_EQ(read_text(path), "an earlier run's trace");
}

TEST(TraceFileSink, RefusesASymlinkToAFileThatDoesNotExistYet) {
  ScratchDir dir;
  const std::string target = dir.file("elsewhere.txt");
  const std::string link = dir.file("rank-0.pst");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0) << std::strerror(errno);
  auto sink = TraceFileSink::create(link);
  EXPECT_FALSE(sink.ok());
  EXPECT_FALSE(exists(target)) << "create() followed the link and made its target";
}

TEST(TraceFileSink, RefusesASymlinkAndLeavesAnExistingTargetAlone) {
  ScratchDir dir;
  const std::string target = dir.file("precious.txt");
  const std::string link = dir.file("rank-0.pst");
  test::write_file(target, bytes_of_text("do not truncate"));
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0) << std::strerror(errno);
  auto sink = TraceFileSink::create(link);
  EXPECT_FALSE(sink.ok());
  auto writer = TraceWriter::create(link, WriterOptions{});
  EXPECT_FALSE(writer.ok());
  EXPECT_EQ(read_text(target), "do not truncate");
  struct stat st {};
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(TraceFileSink, RefusesAPathInAMissingDirectory) {
  ScratchDir dir;
  auto sink = TraceFileSink::create(dir.file("no-such-dir/rank-0.pst"));
  ASSERT_FALSE(sink.ok());
  EXPECT_TRUE(contains(sink.error().message, "no-such-dir")) << sink.error().message;
}

// What the child of the write-failure test saw, sent to the parent through a pipe.
struct ChildReport {
  uint64_t flushes_ok = 0;
  uint64_t size_at_failure = 0;
  uint64_t size_at_end = 0;
  uint64_t records_written = 0;
  uint64_t records_dropped = 0;
  uint64_t later_calls_ok = 0;  // flush, anchor and close after the failure that succeeded
};

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : ~uint64_t{0};
}

constexpr rlim_t kFileSizeLimitBytes = 16384;
constexpr uint32_t kRecordsPerRound = 100;

// Runs in the forked child: never returns, reports through `report_fd` and the exit code.
[[noreturn]] void write_until_the_file_size_limit(const std::string& path, int report_fd) {
  alarm(30);                 // a hung child dies rather than hanging the suite
  signal(SIGXFSZ, SIG_IGN);  // then a write past the limit fails with EFBIG instead of killing us
  rlimit limit{};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
  const rlim_t original_limit = limit.rlim_cur;
  limit.rlim_cur = kFileSizeLimitBytes;
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
  WriterOptions o;
  o.host = "node0017";
  auto created = TraceWriter::create(path, o);
  if (!created.ok()) _exit(11);
  TraceWriter& writer = **created;
  ThreadBuffer* buffer = writer.register_thread();
  ChildReport report;
  bool failed = false;
  uint32_t seq = 0;
  for (int round = 0; round < 10 && !failed; ++round) {
    for (uint32_t i = 0; i < kRecordsPerRound; ++i) {
      KernelRecord r = make_record<KernelRecord>();
      r.correlation_id = seq++;
      if (!buffer->append(r)) _exit(12);
    }
    if (writer.flush().ok()) {
      ++report.flushes_ok;
    } else {
      failed = true;
    }
  }
  if (!failed) _exit(13);
  report.size_at_failure = file_size(path);
  // Room again (as when a full disk is cleaned up): a chunk written now would follow a
  // partial one, and everything after the partial chunk would read as corrupt.
  limit.rlim_cur = original_limit;
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(15);
  for (uint32_t i = 0; i < kRecordsPerRound; ++i) (void)buffer->append(make_record<KernelRecord>());
  report.later_calls_ok += writer.flush().ok() ? 1 : 0;
  report.later_calls_ok += writer.write_clock_anchor().ok() ? 1 : 0;
  report.later_calls_ok += writer.close().ok() ? 1 : 0;
  report.size_at_end = file_size(path);
  report.records_written = writer.records_written();
  report.records_dropped = writer.records_dropped();
  if (write(report_fd, &report, sizeof(report)) != static_cast<ssize_t>(sizeof(report))) _exit(14);
  _exit(0);
}

TEST(TraceWriter, FailedWriteLeavesAFileThatReadsUpToItsLastWholeChunk) {
  ScratchDir dir;
  const std::string path = dir.file("limited.pst");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0) << std::strerror(errno);
  if (child == 0) {
    close(fds[0]);
    write_until_the_file_size_limit(path, fds[1]);
  }
  close(fds[1]);
  ChildReport report;
  size_t got = 0;
  while (got < sizeof(report)) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(&report) + got, sizeof(report) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(got, sizeof(report));

  // Header 72 + anchor 56 = 128 bytes; each round adds a records chunk of 24 + 100 * 64 = 6424
  // bytes and an anchor of 56: 128 + 2 * 6480 = 13088 bytes after two rounds. The third
  // records chunk would end at 19512, past the 16384-byte limit, so it is cut at 16384.
  EXPECT_EQ(report.flushes_ok, 2u);
  EXPECT_EQ(report.size_at_failure, kFileSizeLimitBytes);
  EXPECT_EQ(report.size_at_end, kFileSizeLimitBytes)
      << "nothing may be written after a failed write, even once writes would succeed again";
  EXPECT_EQ(report.later_calls_ok, 0u);
  EXPECT_EQ(report.records_written, 200u);
  EXPECT_EQ(report.records_dropped, 200u);  // the cut round and the one after it

  auto trace = test::decode_file(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(trace->stop_reason, StopReason::kTruncated) << trace->stop_detail;
  EXPECT_EQ(trace->valid_bytes, 13088u);
  EXPECT_EQ(trace->count_chunks(ChunkType::kEnd), 0u);
  const auto kernels = trace->all_of<KernelRecord>();
  ASSERT_EQ(kernels.size(), 200u);
  for (uint32_t i = 0; i < 200; ++i) ASSERT_EQ(kernels[i].correlation_id, i);
}

}  // namespace
}  // namespace pipescope::trace
