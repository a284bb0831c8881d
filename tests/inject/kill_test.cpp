// The training job comes first: a traced program that crashes, is killed or is interrupted
// ends exactly as it would without the library, and leaves a readable trace of what was
// recorded up to then. Bad PIPESCOPE_* values give a warning and the defaults.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "loaded_trace.h"
#include "pipescope/trace/capture_kinds.h"
#include "rank_launcher.h"

namespace pipescope::inject::testing {
namespace {

constexpr int kNoPeriodicFlushMs = 3'600'000;  // only the signal path can have written the records

#if defined(__SANITIZE_THREAD__)
#define PIPESCOPE_KILL_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PIPESCOPE_KILL_TEST_UNDER_TSAN 1
#endif
#endif
#ifdef PIPESCOPE_KILL_TEST_UNDER_TSAN
constexpr bool kUnderThreadSanitizer = true;
#else
constexpr bool kUnderThreadSanitizer = false;
#endif

struct CrashRun {
  RankResult result;
  std::vector<std::string> traces;
};

LaunchOptions crash_options(const std::string& mode, const std::string& dir, bool preload, int flush_ms) {
  LaunchOptions options;
  options.argv = {CRASH_PROGRAM, mode};
  options.world_size = 1;
  options.timeout = std::chrono::milliseconds(60'000);
  if (preload) options.preload = PIPESCOPE_INJECT_SO;
  options.env = {{"PIPESCOPE_OUTPUT", dir},
                 {"PIPESCOPE_FLUSH_MS", std::to_string(flush_ms)},
                 {"FAKE_NCCL_RENDEZVOUS", dir},
                 {"ASAN_OPTIONS", "handle_segv=0:handle_abort=0"}};
  return options;
}

CrashRun run_crash(const std::string& mode, bool preload, int flush_ms = kNoPeriodicFlushMs) {
  const std::string dir = make_temp_dir("kill-" + mode);
  LaunchResult launched = launch_ranks(crash_options(mode, dir, preload, flush_ms));
  return {launched.ranks.at(0), trace_files_in(dir)};
}

// What crash_program records before it dies: the communicator, an all-reduce, a grouped pair.
void expect_its_nccl_calls(const std::string& path) {
  const LoadedTrace trace = load_trace(path);
  EXPECT_NE(trace.stop_reason, trace::StopReason::kCorrupt) << path;
  EXPECT_GE(trace.all<trace::NcclCommRecord>().size(), 1u) << path;
  EXPECT_GE(trace.all<trace::NcclOpRecord>().size(), 3u) << path;
}

class KillTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KillTest, EndsAsWithoutTheLibraryAndLeavesAReadableTrace) {
  if (kUnderThreadSanitizer && std::string(GetParam()) == "stack-overflow") {
    // Under ThreadSanitizer (scripts/test-tsan.sh) the overflowed program ends as it should but its
    // handler writes nothing, with a 64 KiB or a 1 MiB alternate stack alike: the sanitizer's
    // signal handling, not the library's. The uninstrumented library is tested here in every build.
    GTEST_SKIP() << "a stack overflow under ThreadSanitizer writes no trace; the main build tests it";
  }
  const CrashRun plain = run_crash(GetParam(), false);
  const CrashRun traced = run_crash(GetParam(), true);
  EXPECT_EQ(traced.result.status_text(), plain.result.status_text());
  EXPECT_EQ(traced.result.out, plain.result.out);
  EXPECT_FALSE(plain.result.timed_out);
  ASSERT_EQ(traced.traces.size(), 1u) << traced.result.err;
  expect_its_nccl_calls(traced.traces[0]);
}

INSTANTIATE_TEST_SUITE_P(CrashModes, KillTest,
                         ::testing::Values("segv", "stack-overflow", "segv-two-threads", "abort",
                                           "sigterm-self", "sigint-self", "exit3"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(KillTestSignals, AnApplicationsOwnSigintHandlerStillRuns) {
  const CrashRun traced = run_crash("sigint-handled", true);
  EXPECT_TRUE(traced.result.exited_with(42)) << traced.result.status_text() << traced.result.err;
  ASSERT_EQ(traced.traces.size(), 1u);
  expect_its_nccl_calls(traced.traces[0]);
}

TEST(KillTestSignals, SigkillLosesAtMostOneFlushPeriod) {
  const std::string dir = make_temp_dir("kill-sigkill");
  RankProcesses job(crash_options("sleep", dir, true, 50));
  ASSERT_TRUE(job.start());
  ASSERT_TRUE(job.wait_for_stdout(0, "crash_program: sleep ready"));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // several 50 ms flush periods
  job.send_signal(0, SIGKILL);
  const LaunchResult result = job.wait();
  EXPECT_TRUE(result.ranks[0].killed_by(SIGKILL)) << result.describe();
  const auto traces = trace_files_in(dir);
  ASSERT_EQ(traces.size(), 1u);
  const LoadedTrace trace = load_trace(traces[0]);
  EXPECT_FALSE(trace.ended_cleanly);
  EXPECT_NE(trace.stop_reason, trace::StopReason::kCorrupt);
  // The all-reduces of the 300+ ms before the kill, minus at most one 50 ms period of them.
  EXPECT_GE(trace.all<trace::NcclOpRecord>().size(), 10u);
}

TEST(KillTestSignals, SigtermFromOutsideFlushesBeforeTheDefaultActionEndsIt) {
  const std::string dir = make_temp_dir("kill-sigterm");
  RankProcesses job(crash_options("sleep", dir, true, kNoPeriodicFlushMs));
  ASSERT_TRUE(job.start());
  ASSERT_TRUE(job.wait_for_stdout(0, "crash_program: sleep ready"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  job.send_signal(0, SIGTERM);
  const LaunchResult result = job.wait();
  EXPECT_TRUE(result.ranks[0].killed_by(SIGTERM)) << result.describe();
  const auto traces = trace_files_in(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_GE(load_trace(traces[0]).all<trace::NcclOpRecord>().size(), 5u);
}

TEST(KillTestEnvironment, BadValuesWarnOnceEachAndTheDefaultsApply) {
  const std::string dir = make_temp_dir("kill-badenv");
  LaunchOptions options = crash_options("exit3", dir, true, 1000);
  options.env.emplace_back("PIPESCOPE_FLUSH_MS", "soon");
  options.env.emplace_back("PIPESCOPE_KINDS", "kernel,gpu");
  options.env.emplace_back("PIPESCOPE_BUFFER_MB", "-4");
  options.env.emplace_back("PIPESCOPE_STEPS", "9:1");
  const RankResult result = launch_ranks(options).ranks.at(0);
  EXPECT_TRUE(result.exited_with(3)) << result.status_text();
  EXPECT_EQ(result.out, "crash_program: exit3 ready\n");
  int warnings = 0;
  for (size_t at = result.err.find("pipescope: "); at != std::string::npos;
       at = result.err.find("pipescope: ", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 4) << result.err;
  const auto traces = trace_files_in(dir);
  ASSERT_EQ(traces.size(), 1u);
  const LoadedTrace trace = load_trace(traces[0]);
  EXPECT_TRUE(trace.ended_cleanly);
  EXPECT_EQ(trace.process.capture_kinds, trace::default_capture_kinds().record_bits);
  expect_its_nccl_calls(traces[0]);
}

}  // namespace
}  // namespace pipescope::inject::testing
