#include "nvtx_recorder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "loaded_trace.h"

namespace pipescope::inject {
namespace {

using testing::load_trace;
using testing::make_temp_dir;
using testing::trace_files_in;
using trace::NvtxEvent;
using trace::NvtxRecord;

InjectConfig config_in(const std::string& dir) {
  InjectConfig config;
  config.output_dir = dir;
  config.flush_ms = 50;
  config.buffer_bytes = size_t{1} << 20;
  return config;
}

NvtxAttributes named(const char* name) {
  NvtxAttributes attributes;
  attributes.message = NvtxMessage::of(name);
  return attributes;
}

NvtxAttributes named(const wchar_t* name) {
  NvtxAttributes attributes;
  attributes.message = NvtxMessage::of(name);
  return attributes;
}

NvtxAttributes named(const NvtxRegisteredString* name) {
  NvtxAttributes attributes;
  attributes.message = NvtxMessage::of(name);
  return attributes;
}

// One NVTX record as the tests state it: what happened, to which name, in which domain.
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

struct NvtxTrace {
  testing::LoadedTrace loaded;
  std::vector<NvtxRecord> records;

  std::vector<Event> events() const { return events_of(0); }
  // Only the records of thread `thread_id` (0: all).
  std::vector<Event> events_of(uint32_t thread_id) const {
    std::vector<Event> out;
    for (const NvtxRecord& r : records) {
      if (thread_id != 0 && r.thread_id != thread_id) continue;
      out.push_back({static_cast<NvtxEvent>(r.event), std::string(loaded.text(r.name_id)),
                     std::string(loaded.text(r.domain_id))});
    }
    return out;
  }
};

// Finishes `session` and reads the one trace it wrote, its NVTX records in time order.
NvtxTrace finish_and_load(Session& session, const std::string& dir) {
  session.finish();
  const std::vector<std::string> files = trace_files_in(dir);
  EXPECT_EQ(files.size(), 1u);
  if (files.size() != 1) return {};
  NvtxTrace out{load_trace(files[0]), {}};
  out.records = out.loaded.all<NvtxRecord>();
  // Each thread's records reach the file in chunks of their own: put them back in time order.
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const NvtxRecord& a, const NvtxRecord& b) { return a.timestamp_ns < b.timestamp_ns; });
  return out;
}

constexpr NvtxEvent kPush = NvtxEvent::kPush;
constexpr NvtxEvent kPop = NvtxEvent::kPop;
constexpr NvtxEvent kStart = NvtxEvent::kStart;
constexpr NvtxEvent kEnd = NvtxEvent::kEnd;
constexpr NvtxEvent kMark = NvtxEvent::kMark;

TEST(NvtxRecorder, NestedRangesOfAThreadAreRecordedInOrderWithTheirLevels) {
  const std::string dir = make_temp_dir("nvtx-nest");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  EXPECT_EQ(recorder.push(nullptr, named("outer")), 0);
  EXPECT_EQ(recorder.push(nullptr, named("inner")), 1);
  recorder.mark(nullptr, named("midpoint"));
  EXPECT_EQ(recorder.pop(nullptr), 1);
  EXPECT_EQ(recorder.pop(nullptr), 0);
  EXPECT_EQ(recorder.pop(nullptr), -1);  // nothing left open

  const NvtxTrace trace = finish_and_load(session, dir);
  const std::vector<Event> expected = {{kPush, "outer", ""}, {kPush, "inner", ""}, {kMark, "midpoint", ""},
                                       {kPop, "", ""},       {kPop, "", ""},       {kPop, "", ""}};
  EXPECT_EQ(trace.events(), expected);
  uint64_t previous_ns = 0;
  for (const NvtxRecord& r : trace.records) {
    EXPECT_EQ(r.thread_id, Session::thread_id());
    EXPECT_EQ(r.range_id, 0u);
    EXPECT_GE(r.timestamp_ns, previous_ns);
    previous_ns = r.timestamp_ns;
  }
}

TEST(NvtxRecorder, EachThreadNestsItsOwnRanges) {
  const std::string dir = make_temp_dir("nvtx-threads");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  ASSERT_EQ(recorder.push(nullptr, named("main")), 0);
  uint32_t worker_id = 0;
  std::thread worker([&] {
    worker_id = Session::thread_id();
    // The main thread's open range does not deepen this thread's stack.
    EXPECT_EQ(recorder.push(nullptr, named("worker")), 0);
    EXPECT_EQ(recorder.push(nullptr, named("worker_inner")), 1);
    EXPECT_EQ(recorder.pop(nullptr), 1);
    EXPECT_EQ(recorder.pop(nullptr), 0);
  });
  worker.join();
  EXPECT_EQ(recorder.pop(nullptr), 0);

  const NvtxTrace trace = finish_and_load(session, dir);
  ASSERT_NE(worker_id, Session::thread_id());
  EXPECT_EQ(trace.events_of(Session::thread_id()), (std::vector<Event>{{kPush, "main", ""}, {kPop, "", ""}}));
  EXPECT_EQ(trace.events_of(worker_id),
            (std::vector<Event>{
                {kPush, "worker", ""}, {kPush, "worker_inner", ""}, {kPop, "", ""}, {kPop, "", ""}}));
}

TEST(NvtxRecorder, WideNamesAreStoredAsUtf8) {
  const std::string dir = make_temp_dir("nvtx-wide");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  recorder.push(nullptr, named(L"f\u00f6rward \u2713 \U0001D538"));
  recorder.pop(nullptr);
  const NvtxTrace trace = finish_and_load(session, dir);
  ASSERT_EQ(trace.records.size(), 2u);
  // ö = C3 B6, ✓ = E2 9C 93, 𝔸 = F0 9D 94 B8
  EXPECT_EQ(trace.loaded.text(trace.records[0].name_id), "f\xC3\xB6rward \xE2\x9C\x93 \xF0\x9D\x94\xB8");
}

TEST(WideToUtf8, ReplacesInvalidCodePointsAndCutsAtACharacterBoundary) {
  char out[8];
  const wchar_t invalid[] = {L'a', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), 0};
  ASSERT_EQ(wide_to_utf8(invalid, out, sizeof(out)), 7u);
  EXPECT_EQ(std::string(out, 7), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  // Four bytes of room: "ab" fits, "✓" (3 bytes) would cross the end and is left out whole.
  EXPECT_EQ(wide_to_utf8(L"ab\u2713", out, 4), 2u);
  EXPECT_EQ(wide_to_utf8(nullptr, out, sizeof(out)), 0u);
}

TEST(NvtxRecorder, RegisteredStringsNameRangesAndMarks) {
  const std::string dir = make_temp_dir("nvtx-registered");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  NvtxDomain* domain = recorder.create_domain("megatron");
  const NvtxRegisteredString* forward = recorder.register_string(domain, "forward");
  const NvtxRegisteredString* wide = recorder.register_string(nullptr, L"r\u00e9duction");
  ASSERT_NE(forward, nullptr);
  ASSERT_NE(wide, nullptr);
  recorder.push(domain, named(forward));
  recorder.mark(nullptr, named(wide));
  recorder.pop(domain);
  recorder.push(domain, named(forward));  // the second use takes the cached id
  recorder.pop(domain);
  const NvtxTrace trace = finish_and_load(session, dir);
  const std::vector<Event> expected = {{kPush, "forward", "megatron"},
                                       {kMark,
                                        "r\xC3\xA9"
                                        "duction",
                                        ""},
                                       {kPop, "", "megatron"},
                                       {kPush, "forward", "megatron"},
                                       {kPop, "", "megatron"}};
  EXPECT_EQ(trace.events(), expected);
}

TEST(NvtxRecorder, ARegisteredStringIsInternedAgainInAForkedChildsNewTrace) {
  const std::string dir = make_temp_dir("nvtx-fork");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  const NvtxRegisteredString* name = recorder.register_string(nullptr, "data_loader_batch");
  recorder.push(nullptr, named("parent_only"));  // takes id 1 in the parent's file
  recorder.pop(nullptr);
  recorder.push(nullptr, named(name));
  recorder.pop(nullptr);
  session.pause_flusher_for_fork();  // what the library's atfork handlers do
  const pid_t child = fork();
  if (child != 0) session.resume_flusher_after_fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    session.abandon_after_fork();
    recorder.push(nullptr, named(name));
    recorder.pop(nullptr);
    session.finish();
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  session.finish();
  const auto loaded = load_trace(dir + "/rank-x." + std::to_string(child) + ".pst");
  const auto records = loaded.all<NvtxRecord>();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(loaded.text(records[0].name_id), "data_loader_batch");
}

TEST(NvtxRecorder, DomainsAreRecordedByNameAndPopTheirOwnRanges) {
  const std::string dir = make_temp_dir("nvtx-domains");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  NvtxDomain* megatron = recorder.create_domain("megatron");
  NvtxDomain* wide = recorder.create_domain(L"d\u00f6main");
  EXPECT_EQ(recorder.push(nullptr, named("step")), 0);
  EXPECT_EQ(recorder.push(megatron, named("forward")), 0);  // levels count per domain
  EXPECT_EQ(recorder.push(megatron, named("attention")), 1);
  // The default domain's pop closes "step", under the megatron ranges still open.
  EXPECT_EQ(recorder.pop(nullptr), 0);
  EXPECT_EQ(recorder.pop(megatron), 1);
  recorder.mark(wide, named("checkpoint"));
  EXPECT_EQ(recorder.pop(megatron), 0);
  recorder.destroy_domain(wide);

  const NvtxTrace trace = finish_and_load(session, dir);
  const std::vector<Event> expected = {
      {kPush, "step", ""},   {kPush, "forward", "megatron"}, {kPush, "attention", "megatron"},
      {kPop, "", ""},        {kPop, "", "megatron"},         {kMark, "checkpoint", "d\xC3\xB6main"},
      {kPop, "", "megatron"}};
  EXPECT_EQ(trace.events(), expected);
}

TEST(NvtxRecorder, ColorAndCategoryAreKept) {
  const std::string dir = make_temp_dir("nvtx-color");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  NvtxAttributes attributes = named("colored");
  attributes.color = 0xFF76B900;
  attributes.category = 7;
  recorder.push(nullptr, attributes);
  recorder.pop(nullptr);
  const NvtxTrace trace = finish_and_load(session, dir);
  ASSERT_EQ(trace.records.size(), 2u);
  EXPECT_EQ(trace.records[0].color, 0xFF76B900u);
  EXPECT_EQ(trace.records[0].category, 7u);
}

TEST(NvtxRecorder, StartAndEndShareAProcessWideRangeIdAcrossThreads) {
  const std::string dir = make_temp_dir("nvtx-start-end");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  const uint64_t first = recorder.start(nullptr, named("prefetch"));
  const uint64_t second = recorder.start(nullptr, named("prefetch"));
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, second);
  std::thread([&] { recorder.end(nullptr, first); }).join();
  recorder.end(nullptr, second);
  const NvtxTrace trace = finish_and_load(session, dir);
  const std::vector<Event> expected = {
      {kStart, "prefetch", ""}, {kStart, "prefetch", ""}, {kEnd, "", ""}, {kEnd, "", ""}};
  ASSERT_EQ(trace.events(), expected);
  EXPECT_EQ(trace.records[0].range_id, first);
  EXPECT_EQ(trace.records[1].range_id, second);
  EXPECT_EQ(trace.records[2].range_id, first);
  EXPECT_NE(trace.records[2].thread_id, trace.records[0].thread_id);
  EXPECT_EQ(trace.records[3].range_id, second);
}

TEST(NvtxRecorder, MarksAloneDoNotMakeTheProcessWriteATrace) {
  const std::string dir = make_temp_dir("nvtx-marks");
  {
    Session session(config_in(dir), LauncherInfo{});
    NvtxRecorder recorder(session);
    recorder.mark(nullptr, named("hello"));
    recorder.pop(nullptr);
    recorder.end(nullptr, 12345);
    session.finish();
  }
  EXPECT_TRUE(trace_files_in(dir).empty());
}

TEST(NvtxRecorder, NcclsOwnDomainIsSkippedByDefault) {
  const std::string dir = make_temp_dir("nvtx-nccl-off");
  {
    Session session(config_in(dir), LauncherInfo{});
    NvtxRecorder recorder(session);
    NvtxDomain* nccl = recorder.create_domain("NCCL");
    recorder.push(nccl, named("ncclAllReduce"));
    recorder.mark(nccl, named("mark"));
    recorder.end(nullptr, recorder.start(nccl, named("ncclGroup")));  // even through nvtxRangeEnd
    recorder.pop(nccl);
    session.finish();
  }
  EXPECT_TRUE(trace_files_in(dir).empty()) << "NCCL's ranges alone opened a trace";

  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  NvtxDomain* nccl = recorder.create_domain("NCCL");
  recorder.push(nullptr, named("step"));
  recorder.push(nccl, named("ncclAllReduce"));
  recorder.pop(nccl);
  recorder.pop(nullptr);
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(), (std::vector<Event>{{kPush, "step", ""}, {kPop, "", ""}}));
}

TEST(NvtxRecorder, TheNvtxNcclKindKeepsNcclsDomain) {
  const std::string dir = make_temp_dir("nvtx-nccl-on");
  InjectConfig config = config_in(dir);
  config.kinds = *trace::parse_capture_kinds("kernel,nvtx-nccl");
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  NvtxDomain* nccl = recorder.create_domain("NCCL");
  recorder.push(nccl, named("ncclAllReduce"));
  recorder.pop(nccl);
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(), (std::vector<Event>{{kPush, "ncclAllReduce", "NCCL"}, {kPop, "", "NCCL"}}));
}

TEST(NvtxRecorder, NothingIsRecordedWithoutTheNvtxKind) {
  const std::string dir = make_temp_dir("nvtx-kind-off");
  InjectConfig config = config_in(dir);
  config.kinds = *trace::parse_capture_kinds("kernel,nccl");
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  EXPECT_FALSE(recorder.active());
  EXPECT_EQ(recorder.push(nullptr, named("forward")), 0);  // levels still answered
  EXPECT_EQ(recorder.pop(nullptr), 0);
  session.finish();
  EXPECT_TRUE(trace_files_in(dir).empty());
}

// Four training steps, each a "train_step" range around forward and backward ranges.
void run_steps(NvtxRecorder& recorder, int steps) {
  for (int step = 0; step < steps; ++step) {
    recorder.push(nullptr, named("train_step"));
    recorder.push(nullptr, named("forward"));
    recorder.pop(nullptr);
    recorder.mark(nullptr, named("loss"));
    recorder.push(nullptr, named("backward"));
    recorder.pop(nullptr);
    recorder.pop(nullptr);
  }
}

std::vector<Event> one_step() {
  return {{kPush, "train_step", ""}, {kPush, "forward", ""}, {kPop, "", ""}, {kMark, "loss", ""},
          {kPush, "backward", ""},   {kPop, "", ""},         {kPop, "", ""}};
}

TEST(NvtxRecorder, StepsOneToTwoCaptureExactlyThoseSteps) {
  const std::string dir = make_temp_dir("nvtx-steps");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{1, 2};
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  run_steps(recorder, 4);
  EXPECT_FALSE(session.capturing());
  const NvtxTrace trace = finish_and_load(session, dir);
  std::vector<Event> expected = one_step();
  for (const Event& e : one_step()) expected.push_back(e);
  EXPECT_EQ(trace.events(), expected);
  EXPECT_EQ(trace.loaded.notices(trace::NoticeCode::kWindowOpened).size(), 1u);
  EXPECT_EQ(trace.loaded.notices(trace::NoticeCode::kWindowClosed).size(), 1u);
}

TEST(NvtxRecorder, OnlyTheOutermostStepRangeCountsAStep) {
  const std::string dir = make_temp_dir("nvtx-nested-steps");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{1, 1};
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  for (int i = 0; i < 3; ++i) {
    recorder.push(nullptr, named("step"));
    recorder.push(nullptr, named("optimizer_step"));  // matches too, but sits inside a step
    recorder.pop(nullptr);
    recorder.pop(nullptr);
  }
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(),
            (std::vector<Event>{
                {kPush, "step", ""}, {kPush, "optimizer_step", ""}, {kPop, "", ""}, {kPop, "", ""}}));
}

TEST(NvtxRecorder, TheStepRegexIgnoresCaseAndMatchesAnywhereInTheName) {
  const std::string dir = make_temp_dir("nvtx-regex");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{2, 2};
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  for (const char* name : {"ITERATION 0", "forward", "Train_Step 1", "global Step 2", "Step 3"}) {
    recorder.push(nullptr, named(name));
    recorder.pop(nullptr);
  }
  const NvtxTrace trace = finish_and_load(session, dir);
  // "forward" is no step; the third step is "global Step 2".
  EXPECT_EQ(trace.events(), (std::vector<Event>{{kPush, "global Step 2", ""}, {kPop, "", ""}}));
}

TEST(NvtxRecorder, ACustomStepRegexReplacesTheDefault) {
  const std::string dir = make_temp_dir("nvtx-custom-regex");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{0, 0};
  config.nvtx_step_regex = "^epoch";
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  for (const char* name : {"train_step", "my epoch", "EPOCH 7", "Epoch 8"}) {
    recorder.push(nullptr, named(name));
    recorder.pop(nullptr);
  }
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(), (std::vector<Event>{{kPush, "EPOCH 7", ""}, {kPop, "", ""}}));
}

TEST(NvtxRecorder, StartEndStepRangesCountStepsToo) {
  const std::string dir = make_temp_dir("nvtx-start-steps");
  InjectConfig config = config_in(dir);
  config.steps = StepWindow{1, 1};
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  for (int i = 0; i < 3; ++i) {
    const uint64_t step = recorder.start(nullptr, named("iteration"));
    recorder.mark(nullptr, named("inside"));
    std::thread([&] { recorder.end(nullptr, step); }).join();  // ended on another thread
  }
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(),
            (std::vector<Event>{{kStart, "iteration", ""}, {kMark, "inside", ""}, {kEnd, "", ""}}));
}

TEST(NvtxRecorder, StepsAreCountedEvenWhenNvtxIsNotRecorded) {
  const std::string dir = make_temp_dir("nvtx-steps-only");
  InjectConfig config = config_in(dir);
  config.kinds = *trace::parse_capture_kinds("kernel");
  config.steps = StepWindow{1, 1};
  Session session(config, LauncherInfo{});
  NvtxRecorder recorder(session);
  EXPECT_TRUE(recorder.active());
  recorder.push(nullptr, named("train_step"));
  recorder.pop(nullptr);
  EXPECT_FALSE(session.capturing());
  recorder.push(nullptr, named("train_step"));
  EXPECT_TRUE(session.capturing());
  recorder.pop(nullptr);
  EXPECT_FALSE(session.capturing());
  session.finish();
  EXPECT_TRUE(trace_files_in(dir).empty()) << "NVTX opened a trace although it is not recorded";
}

TEST(NvtxRecorder, RangesDeeperThanTheTrackedStackAreStillRecorded) {
  const std::string dir = make_temp_dir("nvtx-deep");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  constexpr int kDepth = NvtxRecorder::kMaxTrackedDepth + 6;
  for (int i = 0; i < kDepth; ++i) EXPECT_EQ(recorder.push(nullptr, named("level")), i);
  for (int i = kDepth; i-- > 0;) EXPECT_EQ(recorder.pop(nullptr), i);
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.records.size(), 2u * kDepth);
}

TEST(NvtxRecorder, ASecondSessionOnTheSameThreadGetsItsOwnStringIds) {
  const std::string first_dir = make_temp_dir("nvtx-first");
  {
    Session session(config_in(first_dir), LauncherInfo{});
    NvtxRecorder recorder(session);
    recorder.push(nullptr, named("alpha"));
    recorder.pop(nullptr);
    session.finish();
  }
  // "alpha" had id 1 in the first file; here "beta" comes first. A stale cache would name
  // the second range "beta".
  const std::string dir = make_temp_dir("nvtx-second");
  Session session(config_in(dir), LauncherInfo{});
  NvtxRecorder recorder(session);
  recorder.push(nullptr, named("beta"));
  recorder.push(nullptr, named("alpha"));
  recorder.pop(nullptr);
  recorder.pop(nullptr);
  const NvtxTrace trace = finish_and_load(session, dir);
  EXPECT_EQ(trace.events(),
            (std::vector<Event>{{kPush, "beta", ""}, {kPush, "alpha", ""}, {kPop, "", ""}, {kPop, "", ""}}));
}

}  // namespace
}  // namespace pipescope::inject
