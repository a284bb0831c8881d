// libpipescope.so preloaded into a program that plays the CUDA driver and another CUPTI tool
// (tests/inject/programs/cupti_injection_program.cpp), on a machine without a GPU driver: the
// injection entry opens the trace and says why CUPTI could not run, the CUPTI interposers hand
// the other tool libcupti's own answer, and the program's output and exit status are its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loaded_trace.h"

extern char** environ;

namespace pipescope::inject {
namespace {

using testing::load_trace;
using testing::make_temp_dir;
using testing::trace_files_in;

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The program under LD_PRELOAD, writing its trace into `trace_dir`; the test's own injection
// and pipescope settings are not passed on.
ProgramRun run_program(const std::string& trace_dir, const char* argument) {
  std::vector<std::string> env = {"LD_PRELOAD=" PIPESCOPE_INJECT_LIBRARY, "PIPESCOPE_OUTPUT=" + trace_dir};
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with("LD_PRELOAD=") && !text.starts_with("CUDA_INJECTION") &&
        !text.starts_with("PIPESCOPE_")) {
      env.emplace_back(text);
    }
  }
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string output_dir = make_temp_dir("cupti-run");
  const std::string out_path = output_dir + "/stdout";
  const std::string err_path = output_dir + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string program = CUPTI_INJECTION_PROGRAM;
  std::string arg = argument != nullptr ? argument : "";
  char* argv[] = {program.data(), argument != nullptr ? arg.data() : nullptr, nullptr};
  pid_t pid = 0;
  ProgramRun run;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << program;
    return run;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

// Whatever the library says goes to stderr, one line each, prefixed "pipescope: ".
void expect_only_pipescope_lines(const std::string& err) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.rfind("pipescope: ", 0), 0u) << line;
  }
}

TEST(CuptiInjectionEntry, WithoutADriverTheTraceSaysCuptiCouldNotRunAndTheProgramIsUnchanged) {
  const std::string dir = make_temp_dir("cupti-entry");
  const ProgramRun run = run_program(dir, nullptr);
  EXPECT_EQ(run.exit_code, 7);
  // CUPTI_ERROR_INVALID_PARAMETER (1) both ways: the interposer returns what libcupti says.
  EXPECT_EQ(run.out, "InitializeInjection 1\ncuptiActivityRegisterCallbacks 1 1\n");
  expect_only_pipescope_lines(run.err);
  const std::vector<std::string> files = trace_files_in(dir);
  ASSERT_EQ(files.size(), 1u) << "initializing CUDA opens the process's trace";
  const testing::LoadedTrace trace = load_trace(files[0]);
  EXPECT_TRUE(trace.ended_cleanly);
  const auto unavailable = trace.notices(trace::NoticeCode::kKindUnavailable);
  ASSERT_FALSE(unavailable.empty());
  const std::string why(trace.text(unavailable[0].message_id));
  EXPECT_TRUE(why.find("CONCURRENT_KERNEL") != std::string::npos ||
              why.find("CUPTI not found") != std::string::npos)
      << why;
  EXPECT_TRUE(trace.all<trace::KernelRecord>().empty());
}

TEST(CuptiInjectionEntry, AProcessThatNeverInitializesCudaWritesNothingAndStillReachesCupti) {
  const std::string dir = make_temp_dir("cupti-no-cuda");
  const ProgramRun run = run_program(dir, "no-cuda");
  EXPECT_EQ(run.exit_code, 7);
  // libcupti came in RTLD_LOCAL, as PyTorch's does: the interposer still finds it.
  EXPECT_EQ(run.out, "cuptiActivityRegisterCallbacks 1 1\n");
  EXPECT_EQ(run.err, "");
  EXPECT_TRUE(trace_files_in(dir).empty());
}

}  // namespace
}  // namespace pipescope::inject
