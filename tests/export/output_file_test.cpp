// OutputFile: an output is replaced whole once complete, or not at all.
#include "pipescope/export/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

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

}  // namespace
}  // namespace pipescope::exporter
