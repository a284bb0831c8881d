#include "session.h"
#include "pipescope/analysis/rank_digest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "loaded_trace.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::inject {
namespace {

using testing::load_trace;
using testing::make_temp_dir;
using testing::trace_files_in;
using trace::NoticeCode;

InjectConfig config_in(const std::string& dir) {
  InjectConfig config;
  config.output_dir = dir;
  config.flush_ms = 50;
  config.buffer_bytes = size_t{1} << 20;
  return config;
}

trace::MemcpyRecord memcpy_record(uint64_t bytes) {
  auto record = trace::make_record<trace::MemcpyRecord>();
  record.bytes = bytes;
  record.start_ns = Session::now_ns();
  record.end_ns = record.start_ns + 1;
  return record;
}

std::string own_trace_name(const std::string& rank) {
  return "rank-" + rank + "." + std::to_string(getpid()) + ".pst";
}

TEST(Session, WritesNothingUntilTheProcessActivatesIt) {
  const std::string dir = make_temp_dir("idle");
  {
    Session session(config_in(dir), LauncherInfo{});
    EXPECT_EQ(session.thread_buffer_if_open(), nullptr);
    session.notice(NoticeCode::kKindUnavailable, 0, "said before any activation");
    session.finish();
  }
  EXPECT_TRUE(trace_files_in(dir).empty());
}

TEST(Session, UnknownRankNamesTheFileRankX) {
  const std::string dir = make_temp_dir("rankx");
  Session session(config_in(dir), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  EXPECT_EQ(session.trace_path(), dir + "/" + own_trace_name("x"));
  session.finish();
  EXPECT_EQ(trace_files_in(dir), std::vector<std::string>{dir + "/" + own_trace_name("x")});
}

TEST(Session, LauncherRankNamesTheFileAndFillsProcessInfo) {
  const std::string dir = make_temp_dir("rank7");
  LauncherInfo launcher;
  launcher.launcher = "torchrun";
  launcher.rank = 7;
  launcher.world_size = 8;
  launcher.local_rank = 3;
  launcher.run_id = "run-1";
  Session session(config_in(dir), launcher);
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  session.finish();
  const auto loaded = load_trace(dir + "/" + own_trace_name("7"));
  EXPECT_TRUE(loaded.ended_cleanly);
  EXPECT_EQ(loaded.process.rank, 7);
  EXPECT_EQ(loaded.process.world_size, 8);
  EXPECT_EQ(loaded.process.local_rank, 3);
  EXPECT_EQ(loaded.process.launcher, "torchrun");
  EXPECT_EQ(loaded.process.run_id, "run-1");
  EXPECT_EQ(loaded.process.capture_kinds, trace::default_capture_kinds().record_bits);
  EXPECT_FALSE(loaded.process.command_line.empty());
}

TEST(Session, RecordsOfManyThreadsAllReachTheFile) {
  const std::string dir = make_temp_dir("threads");
  Session session(config_in(dir), LauncherInfo{});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20'000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&session, t] {
      for (int i = 0; i < kPerThread; ++i) {
        trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kNccl);
        ASSERT_NE(buffer, nullptr);
        // The flusher drains every 50 ms; a full ring would drop, so pace the producers.
        while (!buffer->append(memcpy_record(uint64_t(t) * kPerThread + i))) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  session.finish();
  const auto loaded =
      load_trace(session.trace_path().empty() ? trace_files_in(dir).at(0) : session.trace_path());
  const auto copies = loaded.all<trace::MemcpyRecord>();
  EXPECT_EQ(copies.size(), size_t{kThreads} * kPerThread);
}

// The flusher fits the trace clock (trace_clock.h), and every clock anchor pairs the clock as the
// records read it with CLOCK_MONOTONIC: on the TSC or not, within the anchor's uncertainty and a
// microsecond.
TEST(Session, ClockAnchorsPairTheTraceClockWithClockMonotonic) {
  const std::string dir = make_temp_dir("clock");
  Session session(config_in(dir), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // fits at 20 and 220 ms
  std::printf("the trace clock %s\n", trace_clock::reads_tsc() ? "reads the TSC" : "is clock_gettime here");
  session.finish();
  const auto summary = trace::summarize_trace_file(trace_files_in(dir).at(0));
  ASSERT_TRUE(summary.ok());
  ASSERT_GE(summary->anchors.size(), 5u);  // one at the start, one per 50 ms flush
  for (const trace::ClockAnchorPayload& anchor : summary->anchors) {
    const auto apart = static_cast<int64_t>(anchor.trace_clock_ns - anchor.monotonic_ns);
    EXPECT_LE(std::abs(apart), static_cast<int64_t>(anchor.uncertainty_ns) + 1'000);
  }
}

// PIPESCOPE_TSC=0: the process's trace clock stays on clock_gettime, whatever the flusher sees.
TEST(Session, WithTheTscTurnedOffTheClockIsClockGettimes) {
  const std::string dir = make_temp_dir("no-tsc");
  InjectConfig config = config_in(dir);
  config.read_tsc = false;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the fits at 20 and 220 ms
  EXPECT_FALSE(trace_clock::reads_tsc());
  EXPECT_EQ(trace_clock::next_calibration_ns(), UINT64_MAX);
  session.finish();
}

TEST(Session, NoticesSaidBeforeOpeningAreWrittenWhenItOpens) {
  const std::string dir = make_temp_dir("pending");
  Session session(config_in(dir), LauncherInfo{});
  session.notice(NoticeCode::kInjectionConflict, 0, "CUDA_INJECTION64_PATH is set by another tool");
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  const auto conflicts = loaded.notices(NoticeCode::kInjectionConflict);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(loaded.text(conflicts[0].message_id), "CUDA_INJECTION64_PATH is set by another tool");
}

TEST(Session, DeclaredStageIsAStageMarkAtTheStartOfTheTrace) {
  const std::string dir = make_temp_dir("stage");
  InjectConfig config = config_in(dir);
  config.declared_stage = 2;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  session.finish();
  auto digest = analysis::scan_rank_trace(trace_files_in(dir).at(0), {});
  ASSERT_TRUE(digest.ok()) << digest.error().message;
  EXPECT_EQ(digest->declared_stage, 2);
}

TEST(Session, RankLearnedFromNcclIsRecordedInsideAnRankXFile) {
  const std::string dir = make_temp_dir("learn");
  Session session(config_in(dir), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNccl), nullptr);
  session.learn_rank_from_nccl(5, 16);
  session.learn_rank_from_nccl(0, 2);  // a later, smaller communicator does not override it
  session.finish();
  const auto loaded = load_trace(dir + "/" + own_trace_name("x"));
  EXPECT_EQ(loaded.process.rank, 5);
  EXPECT_EQ(loaded.process.world_size, 16);
  EXPECT_EQ(loaded.process.launcher, "nccl");
}

TEST(Session, UnwritableOutputTurnsTracingOffWithoutFailingTheCaller) {
  const std::string dir = make_temp_dir("ro");
  const std::string file = dir + "/not-a-dir";
  std::ofstream(file) << "x";
  Session session(config_in(file + "/traces"), LauncherInfo{});
  EXPECT_EQ(session.thread_buffer(Activation::kCuda), nullptr);
  EXPECT_EQ(session.thread_buffer(Activation::kNvtx), nullptr);
  session.finish();
}

TEST(Session, AnExistingFileOrSymlinkIsNeverReplaced) {
  const std::string dir = make_temp_dir("exists");
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep me";
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/" + own_trace_name("x")).c_str()), 0);
  Session session(config_in(dir), LauncherInfo{});
  EXPECT_EQ(session.thread_buffer(Activation::kNvtx), nullptr);
  session.finish();
  std::ifstream in(victim);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "keep me");
}

TEST(Session, StepWindowOpensAtStepFirstAndClosesAfterStepLast) {
  const std::string dir = make_temp_dir("steps");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{1, 2};
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  std::vector<bool> seen;
  for (int step = 0; step < 5; ++step) {
    session.step_began();
    seen.push_back(session.capturing());
    session.step_ended();
  }
  EXPECT_EQ(seen, (std::vector<bool>{false, true, true, false, false}));
  EXPECT_FALSE(session.capturing());
  EXPECT_LT(session.capture_open_ns(), session.capture_close_ns());
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  EXPECT_EQ(loaded.notices(NoticeCode::kWindowOpened).size(), 1u);
  EXPECT_EQ(loaded.notices(NoticeCode::kWindowClosed).size(), 1u);
}

// Hears the kernel-sampling switches a session sends its sources.
class SamplingListener final : public RecordSource {
 public:
  void flush_into_session(bool) override {}
  void on_capture_changed(bool) override {}
  void on_kernel_sampling_changed(bool sampled) override { heard.push_back(sampled); }
  std::vector<bool> heard;
};

TEST(Session, KernelSamplingKeepsKernelRecordsInOneStepOfN) {
  const std::string dir = make_temp_dir("sampling");
  InjectConfig config = config_in(dir);
  config.kernel_sample_steps = 3;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  SamplingListener listener;
  session.add_source(&listener);
  EXPECT_TRUE(session.counts_steps());
  EXPECT_TRUE(session.kernel_sampled());  // before the first step: kept
  std::vector<bool> sampled;
  for (int step = 0; step < 7; ++step) {
    session.step_began();
    sampled.push_back(session.kernel_sampled());
    EXPECT_TRUE(session.capturing());  // everything else stays on
    session.step_ended();
  }
  // The last step of every 3: never the first step, the least typical of a run.
  EXPECT_EQ(sampled, (std::vector<bool>{false, false, true, false, false, true, false}));
  EXPECT_EQ(listener.heard, (std::vector<bool>{false, true, false, true, false}));
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  const auto paused = loaded.notices(NoticeCode::kKernelSamplingPaused);
  const auto resumed = loaded.notices(NoticeCode::kKernelSamplingResumed);
  ASSERT_EQ(paused.size(), 3u);
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_EQ(paused[0].count, 0u);  // the step numbers, from 0
  EXPECT_EQ(resumed[0].count, 2u);
  EXPECT_EQ(paused[1].count, 3u);
  EXPECT_EQ(resumed[1].count, 5u);
  EXPECT_EQ(paused[2].count, 6u);
  EXPECT_LT(paused[0].timestamp_ns, resumed[0].timestamp_ns);
  EXPECT_EQ(loaded.text(paused[0].message_id),
            "GPU activity (kernels, copies, memsets) recorded for 1 step in 3 (PIPESCOPE_KERNEL_SAMPLE)");
}

TEST(Session, WithoutSamplingOrAStepWindowNoStepsAreCounted) {
  const std::string dir = make_temp_dir("no-sampling");
  Session session(config_in(dir), LauncherInfo{});
  EXPECT_FALSE(session.counts_steps());
  session.step_began();
  EXPECT_TRUE(session.kernel_sampled());
  session.finish();
}

TEST(Session, TimeWindowOpensAndClosesAtItsBoundaries) {
  const std::string dir = make_temp_dir("window");
  InjectConfig config = config_in(dir);
  config.window = CaptureWindow{0.2, 0.4};
  Session session(config, LauncherInfo{});
  EXPECT_FALSE(session.capturing());
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!session.capturing() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (session.capture_close_ns() == UINT64_MAX && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (session.capturing() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(session.capturing());
  // The boundaries are exact, whenever the flusher noticed them.
  EXPECT_EQ(session.capture_close_ns() - session.capture_open_ns(), 200'000'000u);
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  EXPECT_EQ(loaded.notices(NoticeCode::kWindowOpened).size(), 1u);
  EXPECT_EQ(loaded.notices(NoticeCode::kWindowClosed).size(), 1u);
}

TEST(Session, FullRingsDropAndTheTraceCountsTheDrops) {
  const std::string dir = make_temp_dir("drops");
  InjectConfig config = config_in(dir);
  config.flush_ms = 3'600'000;  // nothing drains until finish()
  config.buffer_bytes = size_t{64} << 10;
  Session session(config, LauncherInfo{});
  trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kNccl);
  ASSERT_NE(buffer, nullptr);
  uint64_t accepted = 0;
  uint64_t dropped = 0;
  for (int i = 0; i < 5000; ++i) (buffer->append(memcpy_record(i)) ? accepted : dropped)++;
  ASSERT_GT(dropped, 0u);
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  EXPECT_EQ(loaded.all<trace::MemcpyRecord>().size(), accepted);
  uint64_t noticed = 0;
  for (const auto& notice : loaded.notices(NoticeCode::kRecordsDropped)) noticed += notice.count;
  EXPECT_EQ(noticed, dropped);
}

TEST(Session, ADrainInlineThreadNeverDropsEvenWithAFullRing) {
  const std::string dir = make_temp_dir("inline");
  InjectConfig config = config_in(dir);
  config.flush_ms = 3'600'000;
  config.buffer_bytes = size_t{64} << 10;
  Session session(config, LauncherInfo{});
  trace::ThreadBuffer* buffer =
      session.thread_buffer(Activation::kCuda, trace::FullBufferPolicy::kDrainInline);
  ASSERT_NE(buffer, nullptr);
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(buffer->append(memcpy_record(i)));
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  EXPECT_EQ(loaded.all<trace::MemcpyRecord>().size(), 5000u);
  EXPECT_TRUE(loaded.notices(NoticeCode::kRecordsDropped).empty());
}

// The flusher thread records notices into a dropping ring first; CUPTI may then hand it buffers
// during cuptiActivityFlushAll, which must never drop.
TEST(Session, AThreadThatFirstRecordedIntoADroppingRingNeverDropsOnceItAsksToDrainInline) {
  const std::string dir = make_temp_dir("upgrade");
  InjectConfig config = config_in(dir);
  config.flush_ms = 3'600'000;
  config.buffer_bytes = size_t{64} << 10;
  Session session(config, LauncherInfo{});
  trace::ThreadBuffer* notices = session.thread_buffer(Activation::kNccl);
  ASSERT_NE(notices, nullptr);
  ASSERT_TRUE(notices->append(memcpy_record(0)));
  trace::ThreadBuffer* cupti =
      session.thread_buffer(Activation::kCuda, trace::FullBufferPolicy::kDrainInline);
  ASSERT_EQ(cupti, notices);  // one ring per thread
  for (int i = 1; i < 5000; ++i) ASSERT_TRUE(cupti->append(memcpy_record(i))) << i;
  // Asking for the dropping policy again does not turn it back.
  trace::ThreadBuffer* again = session.thread_buffer(Activation::kNccl);
  for (int i = 5000; i < 10000; ++i) ASSERT_TRUE(again->append(memcpy_record(i))) << i;
  session.finish();
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  EXPECT_EQ(loaded.all<trace::MemcpyRecord>().size(), 10000u);
  EXPECT_TRUE(loaded.notices(NoticeCode::kRecordsDropped).empty());
}

TEST(Session, EmergencyWriteSavesWhatTheRingsHoldWithoutAFlush) {
  const std::string dir = make_temp_dir("emergency");
  InjectConfig config = config_in(dir);
  config.flush_ms = 3'600'000;
  Session session(config, LauncherInfo{});
  trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kCuda);
  ASSERT_NE(buffer, nullptr);
  const uint32_t name = session.intern("kernel-name-from-before-the-crash");
  for (int i = 0; i < 100; ++i) buffer->append(memcpy_record(i));
  session.emergency_write();
  const auto loaded = load_trace(trace_files_in(dir).at(0));  // read while the session lives
  EXPECT_EQ(loaded.all<trace::MemcpyRecord>().size(), 100u);
  EXPECT_EQ(loaded.text(name), "kernel-name-from-before-the-crash");
  EXPECT_FALSE(loaded.ended_cleanly);
  EXPECT_EQ(loaded.stop_reason, trace::StopReason::kEndOfData);
  session.finish();
}

// A fatal signal's handler saves the calls still inside NCCL and which signal it was.
TEST(Session, EmergencyWriteSavesTheSignalAndTheCallsInFlight) {
  const std::string dir = make_temp_dir("emergency-calls");
  InjectConfig config = config_in(dir);
  config.flush_ms = 3'600'000;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNccl), nullptr);
  CallFacts call;
  call.comm_id = 77;
  call.sequence = 5;
  call.what = static_cast<uint8_t>(trace::NcclOpType::kAllGather);
  call.enter_ns = Session::now_ns();
  const OngoingCalls::Ticket ticket = session.ongoing_calls().enter(call);
  ASSERT_TRUE(ticket);
  session.emergency_write(SIGSEGV);
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  const auto signals = loaded.notices(NoticeCode::kProcessSignal);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].count, static_cast<uint64_t>(SIGSEGV));
  const auto calls = loaded.all<trace::NcclCallRecord>();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].comm_id, 77u);
  EXPECT_EQ(calls[0].sequence, 5u);
  EXPECT_EQ(calls[0].state, static_cast<uint8_t>(trace::NcclCallState::kInFlight));
  EXPECT_EQ(calls[0].thread_id, Session::thread_id());
  trace::NcclCallRecord returned;
  EXPECT_TRUE(session.ongoing_calls().leave(ticket, returned));  // written: the caller completes it
  EXPECT_EQ(returned.call_serial, calls[0].call_serial);
  session.finish();
}

TEST(Session, ExitRecordsTheStatusTheProcessExitsWith) {
  const std::string dir = make_temp_dir("exit-status");
  Session session(config_in(dir), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNvtx), nullptr);
  session.finish_at_exit(3);
  const auto loaded = load_trace(trace_files_in(dir).at(0));
  const auto exits = loaded.notices(NoticeCode::kProcessExit);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].count, 3u);
  EXPECT_TRUE(loaded.ended_cleanly);
}

TEST(Session, AForkedChildNeverWritesTheParentsTrace) {
  const std::string dir = make_temp_dir("fork");
  Session session(config_in(dir), LauncherInfo{});
  trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kNvtx);
  ASSERT_NE(buffer, nullptr);
  for (int i = 0; i < 10; ++i) buffer->append(memcpy_record(i));
  session.pause_flusher_for_fork();  // the library's atfork handlers, in their order
  const pid_t child = fork();
  if (child != 0) session.resume_flusher_after_fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    session.abandon_after_fork();
    trace::ThreadBuffer* own = session.thread_buffer(Activation::kNvtx);
    if (own != nullptr) own->append(memcpy_record(999));
    session.finish();
    _exit(own != nullptr ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  session.finish();
  const auto parent = load_trace(dir + "/" + own_trace_name("x"));
  EXPECT_TRUE(parent.ended_cleanly);
  EXPECT_EQ(parent.all<trace::MemcpyRecord>().size(), 10u);
  const auto child_trace = load_trace(dir + "/rank-x." + std::to_string(child) + ".pst");
  ASSERT_EQ(child_trace.all<trace::MemcpyRecord>().size(), 1u);
  EXPECT_EQ(child_trace.all<trace::MemcpyRecord>()[0].bytes, 999u);
}

// A call the parent has in flight (on another thread, say) is not the child's: its trace never
// shows it.
TEST(Session, AForkedChildDoesNotInheritTheParentsCallsInFlight) {
  const std::string dir = make_temp_dir("fork-calls");
  Session session(config_in(dir), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kNccl), nullptr);
  CallFacts call;
  call.comm_id = 5;
  const OngoingCalls::Ticket ticket = session.ongoing_calls().enter(call);
  ASSERT_TRUE(ticket);
  session.pause_flusher_for_fork();
  const pid_t child = fork();
  if (child != 0) session.resume_flusher_after_fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    session.abandon_after_fork();
    const bool traced = session.thread_buffer(Activation::kNvtx) != nullptr;
    CallFacts own;
    own.comm_id = 6;
    (void)session.ongoing_calls().enter(own);  // the child's own call, in flight at its exit
    session.finish();
    _exit(traced ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto child_calls =
      load_trace(dir + "/rank-x." + std::to_string(child) + ".pst").all<trace::NcclCallRecord>();
  ASSERT_EQ(child_calls.size(), 1u);
  EXPECT_EQ(child_calls[0].comm_id, 6u);
  EXPECT_EQ(child_calls[0].thread_id, static_cast<uint32_t>(child));  // its main thread's id is its pid
  trace::NcclCallRecord returned;
  (void)session.ongoing_calls().leave(ticket, returned);
  session.finish();
}

TEST(Session, NoFlushRunsWhileAForkIsUnderWayAndFlushesGoOnAfterIt) {
  const std::string dir = make_temp_dir("fork-gate");
  InjectConfig config = config_in(dir);
  config.flush_ms = 60'000;  // flushes only when asked
  Session session(config, LauncherInfo{});
  trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kNvtx);
  ASSERT_NE(buffer, nullptr);
  for (int i = 0; i < 5; ++i) buffer->append(memcpy_record(i));
  const std::string path = trace_files_in(dir).at(0);
  session.pause_flusher_for_fork();
  session.flush_from_signal(300);  // the flusher wakes but must wait at the gate
  EXPECT_TRUE(load_trace(path).all<trace::MemcpyRecord>().empty());
  session.resume_flusher_after_fork();
  session.flush_from_signal(10'000);
  EXPECT_EQ(load_trace(path).all<trace::MemcpyRecord>().size(), 5u);
  session.finish();
}

// A signal handler on another thread may ask for a flush while the session finishes: it never
// writes the wake-up descriptor after finish() closed it (which a file opened next could reuse).
// scripts/test-tsan.sh runs this under ThreadSanitizer too.
TEST(Session, ASignalFlushRacingTheEndNeverWritesAClosedDescriptor) {
  for (int round = 0; round < 20; ++round) {
    const std::string dir = make_temp_dir("wake-race");
    InjectConfig config = config_in(dir);
    config.flush_ms = 60'000;
    Session session(config, LauncherInfo{});
    trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kNvtx);
    ASSERT_NE(buffer, nullptr);
    buffer->append(memcpy_record(round));
    std::atomic<bool> stop{false};
    std::thread handler([&] {
      while (!stop.load()) session.flush_from_signal(0);
    });
    session.finish();
    stop.store(true);
    handler.join();
    // A descriptor opened after the end gets no stray 8-byte wake-ups.
    const std::string probe = dir + "/probe";
    const int fd = open(probe.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    session.flush_from_signal(0);
    struct stat st {};
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 0);
    close(fd);
  }
}

TEST(Session, AFullDiskWarnsOnceAndTheCallerGoesOn) {
  const std::string dir = make_temp_dir("full");
  int err_pipe[2];
  ASSERT_EQ(pipe(err_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The file may grow to 64 KiB: the header and the first chunks fit, later flushes do not.
    dup2(err_pipe[1], 2);
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &limit);
    InjectConfig config = config_in(dir);
    config.compress = false;
    config.flush_ms = 3'600'000;
    Session session(config, LauncherInfo{});
    trace::ThreadBuffer* buffer = session.thread_buffer(Activation::kCuda);
    if (buffer == nullptr) _exit(1);
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 1000; ++i) buffer->append(memcpy_record(i));
      session.flush_now();
    }
    session.finish();
    _exit(0);
  }
  close(err_pipe[1]);
  std::string err;
  char chunk[512];
  for (ssize_t n; (n = read(err_pipe[0], chunk, sizeof(chunk))) > 0;)
    err.append(chunk, static_cast<size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("pipescope: tracing stopped in this process"), std::string::npos) << err;
  const auto loaded = load_trace(trace_files_in(dir).at(0));  // what fitted is readable
  EXPECT_NE(loaded.stop_reason, trace::StopReason::kCorrupt);
  EXPECT_GT(loaded.all<trace::MemcpyRecord>().size(), 0u);
}

}  // namespace
}  // namespace pipescope::inject
