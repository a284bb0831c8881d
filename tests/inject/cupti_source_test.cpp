// The CUPTI source against a fake CUPTI (a table of functions defined here): what it enables,
// how it puts GPU times on the trace clock, how buffers reach the trace, what it does when CUPTI
// refuses something or another tool takes CUPTI over. Then the real start path on this machine,
// which has libcupti but no driver.
#include "cupti_source.h"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cupti_test_support.h"
#include "cupti_tuning.h"
#include "external_correlation.h"
#include "loaded_trace.h"

namespace pipescope::inject {
namespace {

using testing::ActivityBuffer;
using testing::config_in;
using testing::make_temp_dir;
using testing::trace_in;
using trace::NoticeCode;

// ---- a fake CUPTI ------------------------------------------------------------------------------

struct FakeCupti {
  uint32_t version = CUPTI_API_VERSION;
  CUptiResult timestamp_registration = CUPTI_SUCCESS;
  std::map<int, CUptiResult> enable_failures;  // by CUpti_ActivityKind
  int64_t gpu_ahead_ns = 0;                    // cuptiGetTimestamp = trace clock + this
  size_t dropped = 0;                          // handed out once by cuptiActivityGetNumDroppedRecords

  std::set<int> enabled;
  std::vector<std::string> calls;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::vector<uint32_t> flush_flags;
  ActivityBuffer pending;  // delivered, in one CUPTI buffer, at the next flush
  std::vector<std::pair<int, uint64_t>> pushes;
  int pops = 0;
  std::set<CUpti_CallbackId> runtime_calls;  // on through cuptiActivityEnableRuntimeApi
  std::set<CUpti_CallbackId> driver_calls;   // on through cuptiActivityEnableDriverApi
  std::map<int, uint64_t> attributes;        // by CUpti_ActivityAttribute
  std::map<int, CUptiResult> attribute_failures;
  int latency_timestamps = -1;  // -1: never called
  int all_sync_records = -1;
  uint32_t flush_period_ms = 0;
};
FakeCupti* g_fake = nullptr;

CUptiResult fake_get_version(uint32_t* version) {
  *version = g_fake->version;
  return CUPTI_SUCCESS;
}
CUptiResult fake_enable(CUpti_ActivityKind kind) {
  g_fake->calls.push_back("enable " + std::to_string(kind));
  if (auto failure = g_fake->enable_failures.find(kind); failure != g_fake->enable_failures.end()) {
    return failure->second;
  }
  g_fake->enabled.insert(kind);
  return CUPTI_SUCCESS;
}
CUptiResult fake_disable(CUpti_ActivityKind kind) {
  g_fake->calls.push_back("disable " + std::to_string(kind));
  g_fake->enabled.erase(kind);
  return CUPTI_SUCCESS;
}
CUptiResult fake_register_callbacks(CUpti_BuffersCallbackRequestFunc requested,
                                    CUpti_BuffersCallbackCompleteFunc completed) {
  g_fake->calls.emplace_back("register callbacks");
  g_fake->requested = requested;
  g_fake->completed = completed;
  return CUPTI_SUCCESS;
}
CUptiResult fake_register_timestamp(CUpti_TimestampCallbackFunc timestamp) {
  g_fake->calls.emplace_back("register timestamp");
  if (g_fake->timestamp_registration == CUPTI_SUCCESS) g_fake->timestamp = timestamp;
  return g_fake->timestamp_registration;
}
// Hands the pending records over in a buffer CUPTI got from the source, as CUPTI does.
CUptiResult fake_flush_all(uint32_t flag) {
  g_fake->calls.push_back("flush " + std::to_string(flag));
  g_fake->flush_flags.push_back(flag);
  if (g_fake->pending.size() == 0 || g_fake->requested == nullptr) return CUPTI_SUCCESS;
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  g_fake->requested(&buffer, &size, &max_records);
  if (buffer == nullptr || size < g_fake->pending.size()) return CUPTI_SUCCESS;
  std::memcpy(buffer, g_fake->pending.data(), g_fake->pending.size());
  const size_t valid = g_fake->pending.size();
  g_fake->pending = ActivityBuffer();
  g_fake->completed(nullptr, 0, buffer, size, valid);
  return CUPTI_SUCCESS;
}
CUptiResult fake_dropped(CUcontext, uint32_t, size_t* dropped) {
  *dropped = g_fake->dropped;
  g_fake->dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult fake_get_timestamp(uint64_t* timestamp) {
  *timestamp = Session::now_ns() + static_cast<uint64_t>(g_fake->gpu_ahead_ns);
  return CUPTI_SUCCESS;
}
CUptiResult fake_push(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  g_fake->pushes.emplace_back(kind, id);
  return CUPTI_SUCCESS;
}
CUptiResult fake_pop(CUpti_ExternalCorrelationKind, uint64_t*) {
  ++g_fake->pops;
  return CUPTI_SUCCESS;
}
CUptiResult fake_result_string(CUptiResult result, const char** text) {
  *text = result == CUPTI_ERROR_NOT_COMPATIBLE ? "CUPTI_ERROR_NOT_COMPATIBLE" : "CUPTI_ERROR_UNKNOWN";
  return CUPTI_SUCCESS;
}

CUptiResult fake_one_call(std::set<CUpti_CallbackId>& calls, CUpti_CallbackId id, uint8_t enable) {
  if (enable != 0) {
    calls.insert(id);
  } else {
    calls.erase(id);
  }
  return CUPTI_SUCCESS;
}
CUptiResult fake_enable_runtime_api(CUpti_CallbackId id, uint8_t enable) {
  return fake_one_call(g_fake->runtime_calls, id, enable);
}
CUptiResult fake_enable_driver_api(CUpti_CallbackId id, uint8_t enable) {
  return fake_one_call(g_fake->driver_calls, id, enable);
}
CUptiResult fake_set_attribute(CUpti_ActivityAttribute attribute, size_t* size, void* value) {
  g_fake->calls.push_back("attribute " + std::to_string(attribute));
  if (auto failure = g_fake->attribute_failures.find(attribute); failure != g_fake->attribute_failures.end())
    return failure->second;
  uint64_t v = 0;
  std::memcpy(&v, value, std::min(*size, sizeof v));
  g_fake->attributes[attribute] = v;
  return CUPTI_SUCCESS;
}
CUptiResult fake_latency_timestamps(uint8_t enable) {
  g_fake->latency_timestamps = enable;
  return CUPTI_SUCCESS;
}
CUptiResult fake_all_sync_records(uint8_t enable) {
  g_fake->all_sync_records = enable;
  return CUPTI_SUCCESS;
}
CUptiResult fake_flush_period(uint32_t ms) {
  g_fake->flush_period_ms = ms;
  return CUPTI_SUCCESS;
}

CuptiApi fake_api() {
  CuptiApi api;
  api.path = "fake";
  api.get_version = &fake_get_version;
  api.activity_enable = &fake_enable;
  api.activity_disable = &fake_disable;
  api.activity_register_callbacks = &fake_register_callbacks;
  api.activity_flush_all = &fake_flush_all;
  api.activity_get_next_record = &testing::walk_test_buffer;
  api.get_result_string = &fake_result_string;
  api.activity_register_timestamp_callback = &fake_register_timestamp;
  api.activity_get_num_dropped_records = &fake_dropped;
  api.activity_push_external_correlation_id = &fake_push;
  api.activity_pop_external_correlation_id = &fake_pop;
  api.get_timestamp = &fake_get_timestamp;
  api.activity_enable_runtime_api = &fake_enable_runtime_api;
  api.activity_enable_driver_api = &fake_enable_driver_api;
  api.activity_set_attribute = &fake_set_attribute;
  api.activity_enable_latency_timestamps = &fake_latency_timestamps;
  api.activity_enable_all_sync_records = &fake_all_sync_records;
  api.activity_flush_period = &fake_flush_period;
  return api;
}

class CuptiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake_;
    forget_cupti_takeover_for_tests();
  }
  void TearDown() override {
    g_fake = nullptr;
    forget_cupti_takeover_for_tests();
  }

  std::string dir_ = make_temp_dir("cupti_source");
  FakeCupti fake_;
  CuptiApi api_ = fake_api();
};

CUpti_ActivityKernel10 kernel_at(uint64_t start_ns) {
  CUpti_ActivityKernel10 a{};
  a.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  a.name = "flash_fwd_kernel";
  a.start = start_ns;
  a.end = start_ns + 100;
  return a;
}

bool has_kind(const std::vector<ActivityKindPlan>& plan, CUpti_ActivityKind kind) {
  return std::any_of(plan.begin(), plan.end(), [&](const ActivityKindPlan& p) { return p.kind == kind; });
}

// ---- what is enabled -------------------------------------------------------------------------

TEST(CuptiPlan, DefaultKindsEnableTheirActivityKindsAndNoApiRecordsOfTheirOwn) {
  const auto plan = plan_activity_kinds(trace::default_capture_kinds());
  std::vector<CUpti_ActivityKind> kinds;
  kinds.reserve(plan.size());
  for (const ActivityKindPlan& p : plan) kinds.push_back(p.kind);
  const std::vector<CUpti_ActivityKind> expected = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
      CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMCPY2,
      CUPTI_ACTIVITY_KIND_MEMSET,
      CUPTI_ACTIVITY_KIND_MEMORY2,
      CUPTI_ACTIVITY_KIND_MEMORY_POOL,
      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
      CUPTI_ACTIVITY_KIND_CONTEXT,
      CUPTI_ACTIVITY_KIND_OVERHEAD,
      CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
      CUPTI_ACTIVITY_KIND_RUNTIME,  // carries the external correlations of NCCL's copies
      CUPTI_ACTIVITY_KIND_DRIVER,   // and of its kernel launches
      CUPTI_ACTIVITY_KIND_DEVICE,
  };
  EXPECT_EQ(kinds, expected);
  for (const ActivityKindPlan& p : plan) {
    if (p.kind == CUPTI_ACTIVITY_KIND_RUNTIME || p.kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      EXPECT_EQ(p.for_record, trace::RecordKind::kExternalCorrelation)
          << "API records are kept only under `api`";
    }
  }
  for (const ActivityKindPlan& p : plan) {
    const bool whole_run = p.kind == CUPTI_ACTIVITY_KIND_MEMORY2 ||
                           p.kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL ||
                           p.kind == CUPTI_ACTIVITY_KIND_CONTEXT || p.kind == CUPTI_ACTIVITY_KIND_DEVICE;
    EXPECT_EQ(p.follows_window, !whole_run) << p.kind;
  }
}

TEST(CuptiPlan, ApiTurnsOnRuntimeAndDriverOnce) {
  const auto plan = plan_activity_kinds(*trace::parse_capture_kinds("api,nccl"));
  for (CUpti_ActivityKind api : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    EXPECT_EQ(
        std::count_if(plan.begin(), plan.end(), [&](const ActivityKindPlan& p) { return p.kind == api; }), 1);
  }
  EXPECT_FALSE(has_kind(plan, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST(CuptiPlan, NvtxAloneNeedsOnlyTheDeviceKind) {
  const auto plan = plan_activity_kinds(*trace::parse_capture_kinds("nvtx"));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].kind, CUPTI_ACTIVITY_KIND_DEVICE);
}

// ---- versions ----------------------------------------------------------------------------------

TEST(CuptiVersion, OnlyTheBuildsMajorVersionIsRead) {
  EXPECT_EQ(cupti_major_version(130001), 13u);
  EXPECT_EQ(cupti_major_version(28), 0u);  // CUDA 12.9 counted API versions 1..28
  EXPECT_TRUE(check_cupti_version(130000).ok());
  EXPECT_TRUE(check_cupti_version(130205).ok());  // a later 13.x keeps the 13 structs
  const Status newer = check_cupti_version(140000);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("CUDA 14.x"), std::string::npos) << newer.error().message;
  const Status older = check_cupti_version(28);
  ASSERT_FALSE(older.ok());
  EXPECT_NE(older.error().message.find("CUDA 12.9 or older"), std::string::npos) << older.error().message;
}

TEST_F(CuptiSourceTest, AnUnknownMajorVersionIsRefusedBeforeCuptiIsTouched) {
  fake_.version = 140000;
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  {
    CuptiSource source(session, api_);
    EXPECT_FALSE(source.start());
    EXPECT_FALSE(source.capturing_gpu());
  }
  EXPECT_TRUE(fake_.calls.empty());  // no callbacks, no kinds
  EXPECT_EQ(active_cupti_source(), nullptr);
  session.finish();
  const auto refused = trace_in(dir_).notices(NoticeCode::kUnsupportedVersion);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].count, 140000u);
}

// ---- starting ----------------------------------------------------------------------------------

TEST_F(CuptiSourceTest, StartRegistersTheClockFirstThenEnablesEveryPlannedKind) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_EQ(active_cupti_source(), &source);
  ASSERT_GE(fake_.calls.size(), 2u);
  const auto registered = std::find(fake_.calls.begin(), fake_.calls.end(), "register timestamp");
  ASSERT_NE(registered, fake_.calls.end());
  ASSERT_NE(registered + 1, fake_.calls.end());
  EXPECT_EQ(*(registered + 1), "register callbacks");
  EXPECT_EQ(std::find(fake_.calls.begin(), registered,
                      std::string("enable ") + std::to_string(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)),
            registered);
  // Whole kinds, except the API records NCCL's links need: those call by call.
  std::set<int> planned;
  for (const ActivityKindPlan& p : plan_activity_kinds(session.config().kinds)) {
    if (p.only_calls.empty()) planned.insert(p.kind);
  }
  EXPECT_EQ(fake_.enabled, planned);
  EXPECT_FALSE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_DRIVER));
  const auto runtime = nccl_launch_runtime_calls();
  const auto driver = nccl_launch_driver_calls();
  EXPECT_EQ(fake_.runtime_calls, std::set<CUpti_CallbackId>(runtime.begin(), runtime.end()));
  EXPECT_EQ(fake_.driver_calls, std::set<CUpti_CallbackId>(driver.begin(), driver.end()));
  // CUPTI then reports on the trace clock itself: no offset.
  ASSERT_NE(fake_.timestamp, nullptr);
  const uint64_t before = Session::now_ns();
  const uint64_t reported = fake_.timestamp();
  EXPECT_GE(reported, before);
  EXPECT_LE(reported, Session::now_ns());
  EXPECT_EQ(source.clock_offset_ns(), 0);
}

TEST_F(CuptiSourceTest, WithoutATimestampCallbackAMeasuredOffsetPutsGpuTimesOnTheTraceClock) {
  fake_.timestamp_registration = CUPTI_ERROR_NOT_COMPATIBLE;
  fake_.gpu_ahead_ns = 5'000'000'000;  // CUPTI's clock reads 5 s ahead of CLOCK_MONOTONIC
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_NEAR(static_cast<double>(source.clock_offset_ns()), -5e9, 1e6);

  const uint64_t gpu_start = Session::now_ns() + 5'000'000'000;
  fake_.pending.add(kernel_at(gpu_start));
  source.flush_into_session(false);
  session.finish();
  const auto trace = trace_in(dir_);
  const auto kernels = trace.all<trace::KernelRecord>();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_NEAR(static_cast<double>(kernels[0].start_ns), static_cast<double>(gpu_start - 5'000'000'000), 1e6);
  const auto clock = trace.notices(NoticeCode::kClockOffsetApplied);
  ASSERT_EQ(clock.size(), 1u);
  EXPECT_NE(std::string(trace.text(clock[0].message_id)).find("CUPTI_ERROR_NOT_COMPATIBLE"),
            std::string::npos);
}

TEST_F(CuptiSourceTest, AKindCuptiRefusesIsNamedInTheTraceAndTheRestRun) {
  fake_.enable_failures[CUPTI_ACTIVITY_KIND_MEMORY_POOL] = CUPTI_ERROR_NOT_COMPATIBLE;
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_MEMORY2));
  session.finish();
  const auto trace = trace_in(dir_);
  const auto unavailable = trace.notices(NoticeCode::kKindUnavailable);
  ASSERT_EQ(unavailable.size(), 1u);
  const std::string message(trace.text(unavailable[0].message_id));
  EXPECT_NE(message.find("MEMORY_POOL"), std::string::npos) << message;
  EXPECT_NE(message.find("`memory`"), std::string::npos) << message;
  EXPECT_NE(message.find("CUPTI_ERROR_NOT_COMPATIBLE"), std::string::npos) << message;
}

TEST_F(CuptiSourceTest, WhenNoKindCanBeEnabledTheSourceDoesNotRun) {
  for (int kind = 0; kind < CUPTI_ACTIVITY_KIND_COUNT; ++kind)
    fake_.enable_failures[kind] = CUPTI_ERROR_UNKNOWN;
  Session session(config_in(dir_, "kernel"), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  EXPECT_FALSE(source.start());
  EXPECT_EQ(active_cupti_source(), nullptr);
  session.finish();
  EXPECT_EQ(trace_in(dir_).notices(NoticeCode::kKindUnavailable).size(),
            2u);  // kernel, device
}

// ---- buffers -----------------------------------------------------------------------------------

TEST_F(CuptiSourceTest, AFlushBringsCuptisBuffersIntoTheTraceAndTheLastOneIsForced) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  session.add_source(&source);
  fake_.pending.add(kernel_at(Session::now_ns()));
  source.flush_into_session(false);
  fake_.pending.add(kernel_at(Session::now_ns()));
  session.finish();  // flushes its sources one last time
  EXPECT_EQ(fake_.flush_flags, (std::vector<uint32_t>{0, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}));
  const auto trace = trace_in(dir_);
  const auto kernels = trace.all<trace::KernelRecord>();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(trace.text(kernels[0].name_id), "flash_fwd_kernel");
}

TEST_F(CuptiSourceTest, RecordsCuptiDroppedBecomeANotice) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  fake_.dropped = 17;
  source.flush_into_session(false);
  source.flush_into_session(false);  // CUPTI's count starts over once read
  session.finish();
  const auto dropped = trace_in(dir_).notices(NoticeCode::kCuptiBufferDropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].count, 17u);
}

TEST_F(CuptiSourceTest, ThePoolRefusesBuffersBeyondItsLimitAndSaysSo) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  std::vector<uint8_t*> taken;
  for (size_t i = 0; i < CuptiSource::kMaxBuffers; ++i) {
    uint8_t* buffer = nullptr;
    size_t size = 0;
    size_t max_records = 99;
    CuptiSource::buffer_requested(&buffer, &size, &max_records);
    ASSERT_NE(buffer, nullptr) << i;
    EXPECT_EQ(size, session.config().cupti.activity_buffer_bytes);
    EXPECT_EQ(max_records, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 8, 0u);  // CUPTI's record alignment
    taken.push_back(buffer);
  }
  uint8_t* refused = reinterpret_cast<uint8_t*>(1);
  size_t size = 1;
  size_t max_records = 0;
  CuptiSource::buffer_requested(&refused, &size, &max_records);
  EXPECT_EQ(refused, nullptr);
  EXPECT_EQ(size, 0u);
  // A completed buffer goes back to the pool and is handed out again.
  CuptiSource::buffer_completed(nullptr, 0, taken.back(), session.config().cupti.activity_buffer_bytes, 0);
  source.flush_into_session(false);  // the converter has given it back once a flush returns
  uint8_t* again = nullptr;
  CuptiSource::buffer_requested(&again, &size, &max_records);
  EXPECT_EQ(again, taken.back());
  fake_.dropped = 250;  // what CUPTI lost while it had no buffer
  source.flush_into_session(false);
  session.finish();
  const auto trace = trace_in(dir_);
  const auto dropped = trace.notices(NoticeCode::kCuptiBufferDropped);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].count, 250u);
  EXPECT_NE(std::string(trace.text(dropped[0].message_id)).find("refused 1 buffer request"),
            std::string::npos);
}

// ---- the capture window ------------------------------------------------------------------------

TEST_F(CuptiSourceTest, AClosedWindowTurnsOffAllButTheWholeRunKinds) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_TRUE(external_correlation_hooks().active.load());
  source.on_capture_changed(false);
  EXPECT_EQ(fake_.enabled, (std::set<int>{CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL,
                                          CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_DEVICE}));
  EXPECT_FALSE(external_correlation_hooks().active.load());
  source.on_capture_changed(true);
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(external_correlation_hooks().active.load());
  session.finish();
}

TEST_F(CuptiSourceTest, NcclCallsAreBracketedWithCustom0Ids) {
  Session session(config_in(dir_, "nccl"), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  ExternalCorrelationHooks& hooks = external_correlation_hooks();
  ASSERT_TRUE(hooks.active.load());
  ASSERT_NE(hooks.push, nullptr);
  ASSERT_NE(hooks.pop, nullptr);
  hooks.push(42);
  hooks.pop();
  ASSERT_EQ(fake_.pushes.size(), 1u);
  EXPECT_EQ(fake_.pushes[0].first, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  EXPECT_EQ(fake_.pushes[0].second, 42u);
  EXPECT_EQ(fake_.pops, 1);
  session.finish();
}

// ---- another tool --------------------------------------------------------------------------------

TEST_F(CuptiSourceTest, AnotherToolTakingCuptiOverGetsItCleanAndTheTraceSaysWhen) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  session.add_source(&source);
  fake_.pending.add(kernel_at(Session::now_ns()));  // still in CUPTI's buffer
  const uint64_t before = Session::now_ns();
  cupti_taken_over("cuptiActivityRegisterCallbacks");
  EXPECT_TRUE(source.lost());
  EXPECT_TRUE(fake_.enabled.empty());  // none of pipescope's kinds left on
  EXPECT_EQ(fake_.flush_flags, (std::vector<uint32_t>{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}));
  EXPECT_FALSE(external_correlation_hooks().active.load());

  // From here on pipescope leaves CUPTI alone, and its clock is CUPTI's default again.
  const size_t calls = fake_.calls.size();
  source.on_capture_changed(false);
  source.flush_into_session(false);
  session.finish();
  EXPECT_EQ(fake_.calls.size(), calls);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const double realtime = static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
  EXPECT_NEAR(static_cast<double>(CuptiSource::timestamp_now()), realtime, 1e9);

  const auto trace = trace_in(dir_);
  EXPECT_EQ(trace.all<trace::KernelRecord>().size(), 1u);  // flushed before handing over
  const auto lost = trace.notices(NoticeCode::kCaptureLost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_GE(lost[0].timestamp_ns, before);
  EXPECT_NE(std::string(trace.text(lost[0].message_id)).find("cuptiActivityRegisterCallbacks"),
            std::string::npos);
}

TEST_F(CuptiSourceTest, CuptiTakenBeforeCudaInitializedIsNeverTouched) {
  cupti_taken_over("cuptiSubscribe");
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  EXPECT_FALSE(source.start());
  EXPECT_TRUE(fake_.calls.empty());
  session.finish();
  const auto trace = trace_in(dir_);
  const auto lost = trace.notices(NoticeCode::kCaptureLost);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_NE(std::string(trace.text(lost[0].message_id)).find("cuptiSubscribe"), std::string::npos);
}

// ---- the real start path, on a machine without a driver ------------------------------------------

TEST(CuptiInjection, WithoutADriverTheProcessGoesOnAndTheTraceSaysWhy) {
  forget_cupti_takeover_for_tests();
  const std::string dir = make_temp_dir("cupti_no_driver");
  Session session(config_in(dir), LauncherInfo{});
  CuptiSource* source = start_cupti_injection(session);
  if (source != nullptr) GTEST_SKIP() << "this machine has a working CUDA driver: CUPTI started";
  ASSERT_TRUE(session.is_open());  // CUDA initializing is what opens a process's trace
  session.finish();
  const auto trace = trace_in(dir);
  const auto unavailable = trace.notices(NoticeCode::kKindUnavailable);
  ASSERT_FALSE(unavailable.empty());
  // Either libcupti was not found, or it was and refused the kinds without a driver.
  const std::string first(trace.text(unavailable[0].message_id));
  EXPECT_TRUE(first.find("CUPTI not found") != std::string::npos ||
              first.find("cuptiActivityEnable(CONCURRENT_KERNEL)") != std::string::npos)
      << first;
}

// ---- what capture costs: NCCL's API records, tuning, kernel sampling -----------------------------

TEST(CuptiPlan, NcclLinksNeedOnlyTheLaunchAndCopyCallsUnlessAskedForAll) {
  const auto lean = plan_activity_kinds(trace::default_capture_kinds(), /*nccl_launch_api_only=*/true);
  const auto all = plan_activity_kinds(trace::default_capture_kinds(), /*nccl_launch_api_only=*/false);
  for (const auto& [plan, only] : {std::pair{&lean, true}, std::pair{&all, false}}) {
    int api_entries = 0;
    for (const ActivityKindPlan& p : *plan) {
      if (p.kind != CUPTI_ACTIVITY_KIND_RUNTIME && p.kind != CUPTI_ACTIVITY_KIND_DRIVER) continue;
      ++api_entries;
      EXPECT_EQ(p.only_calls.empty(), !only) << p.kind;
    }
    EXPECT_EQ(api_entries, 2);
  }
  // PyTorch launches its own kernels through the runtime: those calls are not among NCCL's.
  const auto runtime = nccl_launch_runtime_calls();
  EXPECT_EQ(std::count(runtime.begin(), runtime.end(), CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000), 0);
  EXPECT_EQ(std::count(runtime.begin(), runtime.end(), CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020), 1);
  const auto driver = nccl_launch_driver_calls();
  EXPECT_EQ(std::count(driver.begin(), driver.end(), CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx), 1);
  // Asked for `api` itself, every call's record is kept, whatever the NCCL setting.
  for (const ActivityKindPlan& p : plan_activity_kinds(*trace::parse_capture_kinds("api,nccl"), true))
    EXPECT_TRUE(p.only_calls.empty()) << p.kind;
}

TEST(CuptiPlan, GpuActivityAloneFollowsTheKernelSampling) {
  for (const ActivityKindPlan& p : plan_activity_kinds(trace::default_capture_kinds())) {
    const bool gpu_activity = p.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
                              p.kind == CUPTI_ACTIVITY_KIND_MEMCPY || p.kind == CUPTI_ACTIVITY_KIND_MEMCPY2 ||
                              p.kind == CUPTI_ACTIVITY_KIND_MEMSET;
    EXPECT_EQ(p.follows_sampling, gpu_activity) << p.kind;
  }
}

TEST_F(CuptiSourceTest, TuningReachesCuptiBeforeItsCallbacksAreRegistered) {
  InjectConfig config = config_in(dir_);
  config.cupti.device_buffer_bytes = size_t{32} << 20;
  config.cupti.device_buffers_preallocated = 4;
  config.cupti.host_pinned_device_buffers = true;
  config.cupti.per_thread_buffers = false;
  config.cupti.latency_timestamps = true;
  config.cupti.flush_period_ms = 10;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  const std::map<int, uint64_t> expected = {
      {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, uint64_t{32} << 20},
      {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 4},
      {CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1},
      {CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 0},
      {CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 1},  // the default: our buffers come zeroed
  };
  EXPECT_EQ(fake_.attributes, expected);
  EXPECT_EQ(fake_.latency_timestamps, 1);
  EXPECT_EQ(fake_.flush_period_ms, 10u);
  EXPECT_EQ(fake_.all_sync_records, 0);  // the default: polls that found the work unfinished are left out
  const auto registered = std::find(fake_.calls.begin(), fake_.calls.end(), "register callbacks");
  ASSERT_NE(registered, fake_.calls.end());
  for (auto it = registered; it != fake_.calls.end(); ++it)
    EXPECT_NE(it->rfind("attribute", 0), 0u) << *it << " comes after the callbacks";
}

TEST_F(CuptiSourceTest, UnsetKnobsLeaveCuptisDefaultsAlone) {
  InjectConfig config = config_in(dir_);
  config.cupti.zeroed_buffers = false;
  config.cupti.all_sync_records = true;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_TRUE(fake_.attributes.empty());
  EXPECT_EQ(fake_.latency_timestamps, -1);
  EXPECT_EQ(fake_.all_sync_records, -1);
  EXPECT_EQ(fake_.flush_period_ms, 0u);
}

TEST_F(CuptiSourceTest, AKnobCuptiRefusesCostsNoRecordsAndNoNotice) {
  fake_.attribute_failures[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = CUPTI_ERROR_NOT_COMPATIBLE;
  InjectConfig config = config_in(dir_);
  config.cupti.device_buffer_bytes = size_t{64} << 20;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  fake_.pending.add(kernel_at(Session::now_ns()));
  source.flush_into_session(false);
  session.finish();
  const auto trace = trace_in(dir_);
  EXPECT_EQ(trace.all<trace::KernelRecord>().size(), 1u);
  EXPECT_TRUE(trace.notices(NoticeCode::kKindUnavailable).empty());
}

TEST_F(CuptiSourceTest, TheOffsetClockRegistersNoTimestampCallbackAndSaysWhy) {
  InjectConfig config = config_in(dir_);
  config.cupti.clock_callback = false;
  fake_.gpu_ahead_ns = 2'000'000'000;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_EQ(std::count(fake_.calls.begin(), fake_.calls.end(), "register timestamp"), 0);
  EXPECT_NEAR(static_cast<double>(source.clock_offset_ns()), -2e9, 1e6);
  session.finish();
  const auto trace = trace_in(dir_);
  const auto clock = trace.notices(NoticeCode::kClockOffsetApplied);
  ASSERT_EQ(clock.size(), 1u);
  EXPECT_NE(std::string(trace.text(clock[0].message_id)).find("PIPESCOPE_CUPTI_CLOCK=offset"),
            std::string::npos);
}

TEST_F(CuptiSourceTest, WithoutPerCallControlNcclLinksRecordEveryApiCall) {
  api_.activity_enable_runtime_api = nullptr;
  api_.activity_enable_driver_api = nullptr;
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_DRIVER));
}

TEST_F(CuptiSourceTest, KernelSamplingTurnsGpuActivityRecordsOffAndOnWithinTheWindow) {
  Session session(config_in(dir_), LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  const std::set<int> all_on = fake_.enabled;
  const std::set<CUpti_CallbackId> calls_on = fake_.runtime_calls;
  source.on_kernel_sampling_changed(false);
  std::set<int> without_kernels = all_on;
  for (int kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                   CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET})
    without_kernels.erase(kind);
  EXPECT_EQ(fake_.enabled, without_kernels);
  EXPECT_TRUE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_MEMORY2));  // memory, sync and NCCL stay
  EXPECT_EQ(fake_.runtime_calls, calls_on);  // NCCL's links stay for the calls of every step
  source.on_kernel_sampling_changed(true);
  EXPECT_EQ(fake_.enabled, all_on);
  // A closed window wins over a sampled step.
  source.on_capture_changed(false);
  source.on_kernel_sampling_changed(false);
  source.on_kernel_sampling_changed(true);
  EXPECT_FALSE(fake_.enabled.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  source.on_capture_changed(true);
  EXPECT_EQ(fake_.enabled, all_on);
}

TEST_F(CuptiSourceTest, BuffersComeBackToCuptiZeroed) {
  InjectConfig config = config_in(dir_);
  config.cupti.activity_buffer_bytes = size_t{1} << 20;
  Session session(config, LauncherInfo{});
  ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
  CuptiSource source(session, api_);
  ASSERT_TRUE(source.start());
  uint8_t* buffer = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  CuptiSource::buffer_requested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  ASSERT_EQ(size, size_t{1} << 20);
  EXPECT_TRUE(std::all_of(buffer, buffer + size, [](uint8_t b) { return b == 0; }));
  std::memset(buffer, 0xab, size);
  CuptiSource::buffer_completed(nullptr, 0, buffer, size, 0);
  source.flush_into_session(false);
  uint8_t* again = nullptr;
  CuptiSource::buffer_requested(&again, &size, &max_records);
  ASSERT_EQ(again, buffer);
  EXPECT_TRUE(std::all_of(again, again + size, [](uint8_t b) { return b == 0; }));
  CuptiSource::buffer_completed(nullptr, 0, again, size, 0);
}

TEST_F(CuptiSourceTest, BuffersConvertOnTheirOwnThreadOrInCuptisCallbackAlike) {
  for (const bool own_thread : {true, false}) {
    SCOPED_TRACE(own_thread ? "converter thread" : "in the callback");
    const std::string dir = make_temp_dir("cupti_convert");
    InjectConfig config = config_in(dir);
    config.cupti.convert_on_own_thread = own_thread;
    config.cupti.activity_buffer_bytes = size_t{1} << 20;
    {
      Session session(config, LauncherInfo{});
      ASSERT_NE(session.thread_buffer(Activation::kCuda), nullptr);
      CuptiSource source(session, api_);
      ASSERT_TRUE(source.start());
      session.add_source(&source);
      uint8_t* buffer = nullptr;
      size_t size = 0;
      size_t max_records = 0;
      CuptiSource::buffer_requested(&buffer, &size, &max_records);
      ASSERT_NE(buffer, nullptr);
      ActivityBuffer records;
      for (int i = 0; i < 100; ++i) records.add(kernel_at(Session::now_ns() + i));
      std::memcpy(buffer, records.data(), records.size());
      CuptiSource::buffer_completed(nullptr, 0, buffer, size, records.size());
      if (!own_thread) {
        // Converted before the callback returned: the buffer is back in the pool.
        uint8_t* again = nullptr;
        CuptiSource::buffer_requested(&again, &size, &max_records);
        EXPECT_EQ(again, buffer);
        CuptiSource::buffer_completed(nullptr, 0, again, size, 0);
      }
      session.finish();
    }
    EXPECT_EQ(trace_in(dir).all<trace::KernelRecord>().size(), 100u);
  }
}

}  // namespace
}  // namespace pipescope::inject
