// `pipescope record`: flags become PIPESCOPE_* variables, the library leads LD_PRELOAD, and the
// command ends exactly as the child did.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.h"

namespace pipescope::testing {
namespace {

const std::string kLibrary = PIPESCOPE_INJECT_LIBRARY;
const std::string kNvtxProgram = PIPESCOPE_NVTX_PROGRAM;  // opens NVTX ranges: a process that traces

std::string temp_dir(const std::string& tag) {
  std::string pattern = ::testing::TempDir() + "pipescope-record-" + tag + "-XXXXXX";
  return mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

class RecordCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kLibrary.empty()) GTEST_SKIP() << "libpipescope.so is not built in sanitizer builds";
    dir_ = temp_dir("run");
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(RecordCommand, ExitCodeOfTheCommandComesBack) {
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--", "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(line_count(r.err), 1) << r.err;  // what it wrote: nothing
}

TEST_F(RecordCommand, ASignalThatEndsTheCommandEndsRecordToo) {
  EXPECT_EQ(run_pipescope({"record", "-o", dir_, "--", "/bin/sh", "-c", "kill -TERM $$"}).exit_code,
            128 + 15);
  EXPECT_EQ(run_pipescope({"record", "-o", dir_, "--", "/bin/sh", "-c", "kill -KILL $$"}).exit_code, 128 + 9);
}

TEST_F(RecordCommand, OutputOfAProcessThatNeverTracesIsUntouchedAndNoFileAppears) {
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--", "/bin/echo", "hello"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  // It ends with one line that says nothing was traced, and what usually causes that.
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("pipescope record: no process traced, nothing written to " + dir_, 0), 0u) << r.err;
  EXPECT_NE(r.err.find("LD_PRELOAD"), std::string::npos) << r.err;
}

// A program that opens NVTX ranges traces; the line counts this run's files only, not those an
// earlier run left in the directory.
TEST_F(RecordCommand, ItEndsSayingHowManyTracesOfHowManyMiBThisRunWrote) {
  std::ofstream(dir_ + "/rank-0.1.pst") << "an earlier run's trace";
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--", kNvtxProgram});
  ASSERT_EQ(r.exit_code, 3) << r.err;  // the program's own status
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_EQ(last.rfind("pipescope record: 1 trace, ", 0), 0u) << r.err;
  EXPECT_NE(last.find(" MiB, in " + dir_ + "\n"), std::string::npos) << r.err;
}

TEST_F(RecordCommand, FlagsBecomeTheLibrarysEnvironment) {
  const std::string echo_environment =
      std::string("echo \"$PIPESCOPE_OUTPUT|$PIPESCOPE_KINDS|$PIPESCOPE_FLUSH_MS|") +
      "$PIPESCOPE_BUFFER_MB|$PIPESCOPE_STEPS|$PIPESCOPE_NVTX_STEP|$PIPESCOPE_KERNEL_SAMPLE|" +
      "${PIPESCOPE_WINDOW-unset}|$LD_PRELOAD\"";
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--kinds", "kernel,nccl", "--flush-ms", "200",
                                         "--buffer-mb", "8", "--steps", "1:2", "--nvtx-step", "^iter",
                                         "--kernel-sample", "10", "--", "/bin/sh", "-c", echo_environment});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string library = std::filesystem::canonical(kLibrary).string();
  EXPECT_EQ(r.out, dir_ + "|kernel,nccl|200|8|1:2|^iter|10|unset|" + library + "\n");
}

TEST_F(RecordCommand, KernelSamplingBelowOneStepIsAUsageError) {
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--kernel-sample", "0", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--kernel-sample"), std::string::npos) << r.err;
}

TEST_F(RecordCommand, AnEarlierPreloadIsKeptAfterTheLibrary) {
  const CommandResult r = run_command({"/usr/bin/env", "LD_PRELOAD=libm.so.6", PIPESCOPE_CLI_PATH, "record",
                                       "-o", dir_, "--", "/bin/sh", "-c", "echo \"$LD_PRELOAD\""});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::filesystem::canonical(kLibrary).string() + ":libm.so.6\n");
}

TEST_F(RecordCommand, ACommandThatCannotRunGives127AndOneLine) {
  const CommandResult r = run_pipescope({"record", "-o", dir_, "--", "/no/such/program"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(line_count(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/no/such/program"), std::string::npos);
}

TEST_F(RecordCommand, AnUnwritableOutputDirIsAUsageError) {
  const std::string file = dir_ + "/file";
  ASSERT_EQ(run_command({"/usr/bin/touch", file}).exit_code, 0);
  const CommandResult r = run_pipescope({"record", "-o", file + "/traces", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(line_count(r.err), 1) << r.err;
}

}  // namespace
}  // namespace pipescope::testing
