// OutputFile: an output is replaced whole once complete, or not at all.
#include "pipescope/export/output_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trace_test_support.h"

namespace pipescope::exporter {
namespace {

namespace fs = std::filesystem;
using trace::test::ScratchDir;

size_t entries(const ScratchDir& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()));
}

TEST(OutputFile, TheTargetChangesOnlyAtCommit) {
  ScratchDir dir;
  const std::string target = dir.file("report.html");
  std::ofstream(target) << "earlier";
  auto out = OutputFile::create(target);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(fs::path(out->temp_path()).parent_path(), fs::path(target).parent_path());
  std::ofstream(out->temp_path()) << "new";
  EXPECT_EQ(trace::test::read_text(target), "earlier");
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(trace::test::read_text(target), "new");
  EXPECT_EQ(entries(dir), 1u);  // the temporary file became the target
}

TEST(OutputFile, DroppedUncommittedItLeavesTheTargetAndNoTemporaryFile) {
  ScratchDir dir;
  const std::string target = dir.file("trace.json");
  std::ofstream(target) << "earlier";
  {
    auto out = OutputFile::create(target);
    ASSERT_TRUE(out.ok());
    std::ofstream(out->temp_path()) << "half of a new one";
    EXPECT_EQ(entries(dir), 2u);
  }
  EXPECT_EQ(trace::test::read_text(target), "earlier");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(OutputFile, ANewFileGetsTheUsualModeNotATemporaryFilesMode) {
  ScratchDir dir;
  const mode_t old_mask = umask(022);
  auto out = OutputFile::create(dir.file("x.sqlite"));
  umask(old_mask);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->commit().ok());
  struct stat st {};
  ASSERT_EQ(stat(dir.file("x.sqlite").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // 0666 less the umask, as fopen would create it
}

TEST(OutputFile, APathThatCannotTakeAFileFailsAtCreate) {
  ScratchDir dir;
  auto missing = OutputFile::create(dir.file("no-such-dir/out.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos);
  auto directory = OutputFile::create(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message.find("is a directory"), std::string::npos);
  EXPECT_EQ(entries(dir), 0u);
}

TEST(OutputFile, ALinkIsWrittenThroughAndStaysALink) {
  ScratchDir dir;
  std::ofstream(dir.file("real.json")) << "earlier";
  fs::create_symlink("real.json", dir.file("link.json"));  // relative, as `ln -s` makes them
  fs::create_symlink(dir.file("made.json"), dir.file("dangling.json"));
  for (const char* name : {"link.json", "dangling.json"}) {
    auto out = OutputFile::create(dir.file(name));
    ASSERT_TRUE(out.ok()) << out.error().message;
    std::ofstream(out->temp_path()) << "new through " << name;
    ASSERT_TRUE(out->commit().ok());
    EXPECT_TRUE(fs::is_symlink(dir.file(name))) << name;
  }
  EXPECT_EQ(trace::test::read_text(dir.file("real.json")), "new through link.json");
  EXPECT_EQ(trace::test::read_text(dir.file("made.json")), "new through dangling.json");
  EXPECT_EQ(entries(dir), 4u);
}

TEST(OutputFile, AReplacedFileKeepsItsPermissions) {
  ScratchDir dir;
  const std::string target = dir.file("private.sqlite");
  std::ofstream(target) << "earlier";
  ASSERT_EQ(chmod(target.c_str(), 0600), 0);
  auto out = OutputFile::create(target);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->commit().ok());
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(OutputFile, AnInterruptionRemovesTheTemporaryFileAndStillEndsTheProcess) {
  ScratchDir dir;
  const std::string target = dir.file("report.html");
  std::ofstream(target) << "earlier";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto out = OutputFile::create(target);
    if (!out.ok()) _exit(3);
    std::ofstream(out->temp_path()) << "half of a new one";
    raise(SIGINT);  // Ctrl-C in the middle of the write
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(trace::test::read_text(target), "earlier");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(OutputFile, AnIgnoredInterruptionStaysIgnored) {
  ScratchDir dir;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGHUP, SIG_IGN);  // as under nohup
    auto out = OutputFile::create(dir.file("trace.json"));
    if (!out.ok()) _exit(3);
    raise(SIGHUP);
    _exit(out->commit().ok() ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::exists(dir.file("trace.json")));
}

}  // namespace
}  // namespace pipescope::exporter
