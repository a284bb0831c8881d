// libpipescope.so as the NVTX injection of a real program (tests/inject/programs/nvtx_program):
// the program's NVTX calls from two threads and from a second module land in the trace, and
// its output and exit status are what they are without the library.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <map>
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
using trace::NvtxEvent;
using trace::NvtxRecord;

struct RunResult {
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

// Runs the NVTX program with the test's environment, less anything that would inject a tool
// or configure pipescope, plus `extra`.
RunResult run_program(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.starts_with("LD_PRELOAD=") || text.starts_with("NVTX_INJECTION") ||
        text.starts_with("CUDA_INJECTION") || text.starts_with("PIPESCOPE_")) {
      continue;
    }
    env.emplace_back(text);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);

  const std::string dir = make_temp_dir("nvtx-run");
  const std::string out_path = dir + "/stdout";
  const std::string err_path = dir + "/stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string program = NVTX_PROGRAM;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = 0;
  RunResult result;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot start " << program << ": " << std::strerror(spawned);
    return result;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) ADD_FAILURE() << "waitpid failed";
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

struct Event {
  NvtxEvent event;
  std::string name;
  std::string domain;
  bool operator==(const Event&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Event& e) {
  static const char* const kNames[] = {"?", "push", "pop", "start", "end", "mark"};
  return out << kNames[static_cast<int>(e.event)] << "(" << e.name
             << (e.domain.empty() ? "" : " @" + e.domain) << ")";
}

// The program's NVTX records, per thread, in the order each thread made them.
std::map<uint32_t, std::vector<Event>> events_by_thread(const testing::LoadedTrace& trace) {
  std::map<uint32_t, std::vector<Event>> out;
  for (const NvtxRecord& r : trace.all<NvtxRecord>()) {
    out[r.thread_id].push_back({static_cast<NvtxEvent>(r.event), std::string(trace.text(r.name_id)),
                                std::string(trace.text(r.domain_id))});
  }
  return out;
}

constexpr NvtxEvent kPush = NvtxEvent::kPush;
constexpr NvtxEvent kPop = NvtxEvent::kPop;

// What the program's two threads record (NCCL's domain left out).
void expect_program_ranges(const std::string& dir) {
  const std::vector<std::string> files = trace_files_in(dir);
  ASSERT_EQ(files.size(), 1u) << "one trace for the one process";
  const testing::LoadedTrace trace = load_trace(files[0]);
  EXPECT_TRUE(trace.ended_cleanly);
  const auto threads = events_by_thread(trace);
  ASSERT_EQ(threads.size(), 2u);
  const std::vector<Event> main_thread = {
      {kPush, "program_main", ""},
      {NvtxEvent::kMark, "program_mark", ""},
      {kPush, "wide_r\xC3\xA4nge", ""},
      {kPop, "", ""},
      {kPush, "registered_range", "program_domain"},
      {kPop, "", "program_domain"},
      {NvtxEvent::kStart, "program_start_end", ""},
      {NvtxEvent::kEnd, "", ""},
      // The second module, initialized on its own.
      {kPush, "module_range", ""},
      {kPush, "module_registered", "module_domain"},
      {kPop, "", "module_domain"},
      {NvtxEvent::kMark, "module_mark", ""},
      {kPop, "", ""},
      {kPop, "", ""},
  };
  const std::vector<Event> worker = {{kPush, "worker_step", ""}, {kPop, "", ""},
                                     {kPush, "worker_step", ""}, {kPop, "", ""},
                                     {kPush, "worker_step", ""}, {kPop, "", ""}};
  for (const auto& [thread_id, events] : threads) {
    if (events.front().name == "program_main") {
      EXPECT_EQ(events, main_thread);
    } else {
      EXPECT_EQ(events, worker);
    }
  }
  for (const NvtxRecord& r : trace.all<NvtxRecord>()) {
    if (trace.text(r.name_id) == "registered_range") {
      EXPECT_EQ(r.color, 0xFF76B900u);
    }
  }
}

const RunResult& baseline() {
  static const RunResult result = run_program({});
  return result;
}

TEST(NvtxInjection, TheProgramRunsAsUsualWithoutTheLibrary) {
  EXPECT_EQ(baseline().exit_code, 3);
  EXPECT_EQ(baseline().out, "nvtx program: the module doubled 21 into 42\n");
}

TEST(NvtxInjection, PreloadedLibraryRecordsTheProgramsRangesAndChangesNothing) {
  const std::string dir = make_temp_dir("nvtx-preload");
  const RunResult run = run_program({{"LD_PRELOAD", PIPESCOPE_INJECT_LIBRARY}, {"PIPESCOPE_OUTPUT", dir}});
  EXPECT_EQ(run.exit_code, baseline().exit_code) << run.err;
  EXPECT_EQ(run.out, baseline().out);
  expect_program_ranges(dir);
}

TEST(NvtxInjection, PreloadedWithTheInjectionPathAlreadySetToTheLibrary) {
  const std::string dir = make_temp_dir("nvtx-preset");
  const RunResult run = run_program({{"LD_PRELOAD", PIPESCOPE_INJECT_LIBRARY},
                                     {"NVTX_INJECTION64_PATH", PIPESCOPE_INJECT_LIBRARY},
                                     {"PIPESCOPE_OUTPUT", dir}});
  EXPECT_EQ(run.exit_code, baseline().exit_code) << run.err;
  EXPECT_EQ(run.out, baseline().out);
  EXPECT_EQ(run.err.find("NVTX_INJECTION64_PATH is set"), std::string::npos) << run.err;
  expect_program_ranges(dir);
}

TEST(NvtxInjection, TheInjectionPathAloneLoadsTheLibraryWithoutPreload) {
  const std::string dir = make_temp_dir("nvtx-path-only");
  const RunResult run =
      run_program({{"NVTX_INJECTION64_PATH", PIPESCOPE_INJECT_LIBRARY}, {"PIPESCOPE_OUTPUT", dir}});
  EXPECT_EQ(run.exit_code, baseline().exit_code) << run.err;
  EXPECT_EQ(run.out, baseline().out);
  expect_program_ranges(dir);
}

TEST(NvtxInjection, WithoutTheNvtxKindTheProgramWritesNoTrace) {
  const std::string dir = make_temp_dir("nvtx-kind-off");
  const RunResult run = run_program({{"LD_PRELOAD", PIPESCOPE_INJECT_LIBRARY},
                                     {"PIPESCOPE_OUTPUT", dir},
                                     {"PIPESCOPE_KINDS", "kernel,nccl"}});
  EXPECT_EQ(run.exit_code, baseline().exit_code) << run.err;
  EXPECT_EQ(run.out, baseline().out);
  EXPECT_TRUE(trace_files_in(dir).empty());
}

TEST(NvtxInjection, TheNvtxNcclKindKeepsNcclsDomain) {
  const std::string dir = make_temp_dir("nvtx-nccl-kind");
  const RunResult run = run_program({{"LD_PRELOAD", PIPESCOPE_INJECT_LIBRARY},
                                     {"PIPESCOPE_OUTPUT", dir},
                                     {"PIPESCOPE_KINDS", "nvtx-nccl"}});
  EXPECT_EQ(run.exit_code, baseline().exit_code) << run.err;
  const std::vector<std::string> files = trace_files_in(dir);
  ASSERT_EQ(files.size(), 1u);
  const testing::LoadedTrace trace = load_trace(files[0]);
  int nccl_records = 0;
  for (const NvtxRecord& r : trace.all<NvtxRecord>()) {
    if (trace.text(r.domain_id) != "NCCL") continue;
    ++nccl_records;
    if (r.event == static_cast<uint8_t>(kPush)) {
      EXPECT_EQ(trace.text(r.name_id), "nccl_internal");
    }
  }
  EXPECT_EQ(nccl_records, 2);
}

}  // namespace
}  // namespace pipescope::inject
