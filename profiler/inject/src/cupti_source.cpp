#include "cupti_source.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cupti_tuning.h"
#include "external_correlation.h"

namespace pipescope::inject {
namespace {

using trace::NoticeCode;
using trace::RecordKind;

std::atomic<CuptiSource*> g_source{nullptr};
// Set when another tool called one of the interposed CUPTI functions; the call it made.
std::atomic<bool> g_taken{false};
std::atomic<const char*> g_taken_by{nullptr};

// What the NCCL interposer calls around each call (external_correlation.h). Pops always go
// through, so that a push made before capture was lost is still matched in CUPTI's stack.
std::atomic<decltype(&cuptiActivityPushExternalCorrelationId)> g_push{nullptr};
std::atomic<decltype(&cuptiActivityPopExternalCorrelationId)> g_pop{nullptr};

void push_nccl_id(uint64_t external_id) {
  if (auto push = g_push.load(std::memory_order_acquire)) (void)push(kNcclExternalKind, external_id);
}
void pop_nccl_id() {
  uint64_t last = 0;
  if (auto pop = g_pop.load(std::memory_order_acquire)) (void)pop(kNcclExternalKind, &last);
}

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One stderr line per kind of problem (keyed by the CUPTI call's name, a string literal).
void warn_once(const char* key, const std::string& message) {
  static std::mutex mutex;
  static const char* said[32] = {};
  {
    std::lock_guard lock(mutex);
    for (const char*& slot : said) {
      if (slot == key) return;
      if (slot == nullptr) {
        slot = key;
        break;
      }
    }
  }
  std::fprintf(stderr, "pipescope: %s\n", message.c_str());
}

const char* cupti_kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_MEMORY2: return "MEMORY2";
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return "MEMORY_POOL";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_CONTEXT: return "CONTEXT";
    case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return "OVERHEAD";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_DEVICE: return "DEVICE";
    default: return "?";
  }
}

// What a kind that could not be enabled costs the trace, for its notice.
std::string what_is_lost(const ActivityKindPlan& plan) {
  switch (plan.kind) {
    case CUPTI_ACTIVITY_KIND_DEVICE: return "device names and memory sizes";
    case CUPTI_ACTIVITY_KIND_CONTEXT: return "the devices of synchronization records";
    default: break;
  }
  if (plan.for_record == RecordKind::kExternalCorrelation)
    return "the links from NCCL calls to their kernels";
  return std::string("`") + trace::record_kind_name(plan.for_record) + "` records";
}

bool wants_cupti(const trace::CaptureKinds& kinds) {
  for (RecordKind kind :
       {RecordKind::kKernel, RecordKind::kMemcpy, RecordKind::kMemset, RecordKind::kMemory, RecordKind::kSync,
        RecordKind::kApi, RecordKind::kOverhead, RecordKind::kExternalCorrelation}) {
    if (kinds.has(kind)) return true;
  }
  return false;
}

}  // namespace

std::vector<ActivityKindPlan> plan_activity_kinds(const trace::CaptureKinds& kinds,
                                                  bool nccl_launch_api_only) {
  std::vector<ActivityKindPlan> plan;
  auto add = [&](CUpti_ActivityKind kind, RecordKind record, bool follows_window) {
    plan.push_back({kind, record, follows_window});
  };
  // GPU activity follows PIPESCOPE_KERNEL_SAMPLE: the report's GPU shares need kernels, copies
  // and memsets from the same steps (and each costs CUPTI the same instrumentation).
  auto add_gpu_activity = [&](CUpti_ActivityKind kind, RecordKind record) {
    add(kind, record, true);
    plan.back().follows_sampling = true;
  };
  if (kinds.has(RecordKind::kKernel))
    add_gpu_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, RecordKind::kKernel);
  if (kinds.has(RecordKind::kMemcpy)) {
    add_gpu_activity(CUPTI_ACTIVITY_KIND_MEMCPY, RecordKind::kMemcpy);
    add_gpu_activity(CUPTI_ACTIVITY_KIND_MEMCPY2, RecordKind::kMemcpy);  // peer-to-peer copies
  }
  if (kinds.has(RecordKind::kMemset)) add_gpu_activity(CUPTI_ACTIVITY_KIND_MEMSET, RecordKind::kMemset);
  if (kinds.has(RecordKind::kMemory)) {
    // Allocations outlive a window: memory taken before it opens is still held inside it.
    add(CUPTI_ACTIVITY_KIND_MEMORY2, RecordKind::kMemory, false);
    add(CUPTI_ACTIVITY_KIND_MEMORY_POOL, RecordKind::kMemory, false);
  }
  if (kinds.has(RecordKind::kSync)) {
    add(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, RecordKind::kSync, true);
    add(CUPTI_ACTIVITY_KIND_CONTEXT, RecordKind::kNotice, false);  // context -> device, for sync
  }
  if (kinds.has(RecordKind::kApi)) {
    add(CUPTI_ACTIVITY_KIND_RUNTIME, RecordKind::kApi, true);
    add(CUPTI_ACTIVITY_KIND_DRIVER, RecordKind::kApi, true);
  }
  if (kinds.has(RecordKind::kOverhead)) add(CUPTI_ACTIVITY_KIND_OVERHEAD, RecordKind::kOverhead, true);
  if (kinds.has(RecordKind::kExternalCorrelation)) {
    add(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, RecordKind::kExternalCorrelation, true);
    // CUPTI writes an external-correlation record next to the API record of the call it
    // correlates ("the activity API record will be preceded by" one), so API records must be
    // on; they are dropped unless `api` is on. NCCL launches kernels through the driver API and
    // copies through its static runtime, whose record is the outer one: both kinds, and of them
    // only the launch and copy calls, unless asked for every call's.
    if (!kinds.has(RecordKind::kApi)) {
      add(CUPTI_ACTIVITY_KIND_RUNTIME, RecordKind::kExternalCorrelation, true);
      if (nccl_launch_api_only) plan.back().only_calls = nccl_launch_runtime_calls();
      add(CUPTI_ACTIVITY_KIND_DRIVER, RecordKind::kExternalCorrelation, true);
      if (nccl_launch_api_only) plan.back().only_calls = nccl_launch_driver_calls();
    }
  }
  add(CUPTI_ACTIVITY_KIND_DEVICE, RecordKind::kNotice, false);  // names and sizes of the GPUs
  return plan;
}

ClockOffset measure_clock_offset(decltype(&cuptiGetTimestamp) get_timestamp, uint64_t (*now_ns)()) {
  ClockOffset best;
  if (get_timestamp == nullptr) return best;
  for (int attempt = 0; attempt < 7; ++attempt) {
    const uint64_t before = now_ns();
    uint64_t gpu = 0;
    const CUptiResult status = get_timestamp(&gpu);
    const uint64_t after = now_ns();
    if (status != CUPTI_SUCCESS || gpu == 0 || after < before) continue;
    const uint64_t bracket = after - before;
    if (best.ok && bracket >= best.uncertainty_ns) continue;
    const uint64_t midpoint = before + bracket / 2;
    best = ClockOffset{static_cast<int64_t>(midpoint - gpu), bracket, true};
  }
  return best;
}

// ---- the session behind the conversion -------------------------------------------------------

class CuptiSource::Services final : public RecordServices {
 public:
  explicit Services(Session& session) : session_(session) {}
  uint32_t intern(std::string_view text) override { return session_.intern(text); }
  void add_device(const trace::DeviceInfo& device) override { session_.add_device(device); }

 private:
  Session& session_;
};

void CuptiSource::FreeDeleter::operator()(uint8_t* p) const noexcept { std::free(p); }

// calloc: a large request is fresh zero pages from the kernel, touched only when CUPTI writes.
uint8_t* CuptiSource::new_buffer() noexcept { return static_cast<uint8_t*>(std::calloc(1, buffer_bytes_)); }

CuptiSource::CuptiSource(Session& session, const CuptiApi& api)
    : session_(session),
      api_(api),
      buffer_bytes_(session.config().cupti.activity_buffer_bytes),
      zeroed_buffers_(session.config().cupti.zeroed_buffers) {
  // String ids belong to one session's file; sessions made one after another in a process
  // (tests) all start at generation 1, so the name caches also key on which source this is.
  static std::atomic<uint32_t> sources_made{0};
  generation_salt_ = sources_made.fetch_add(1, std::memory_order_relaxed) << 20;
  free_buffers_.reserve(kMaxBuffers);
  owned_buffers_.reserve(kMaxBuffers);
  completed_.reserve(kMaxBuffers);
  for (size_t i = 0; i < kPreallocatedBuffers; ++i) {
    std::unique_ptr<uint8_t, FreeDeleter> buffer(new_buffer());
    if (buffer == nullptr) break;
    free_buffers_.push_back(buffer.get());
    owned_buffers_.push_back(std::move(buffer));
  }
}

CuptiSource::~CuptiSource() {
  CuptiSource* self = this;
  if (g_source.compare_exchange_strong(self, nullptr)) {
    external_correlation_hooks().active.store(false, std::memory_order_release);
  }
  stop_converter();
}

CuptiSource* active_cupti_source() noexcept { return g_source.load(std::memory_order_acquire); }

bool cupti_taken_by_another_tool() noexcept { return g_taken.load(std::memory_order_acquire); }

void forget_cupti_takeover_for_tests() noexcept {
  g_taken.store(false);
  g_taken_by.store(nullptr);
}

void cupti_taken_over(const char* call) noexcept {
  g_taken_by.store(call, std::memory_order_relaxed);
  if (CuptiSource* source = active_cupti_source()) source->lose_capture(call);
  g_taken.store(true, std::memory_order_release);
}

bool CuptiSource::call_ok(const char* function, const std::string& call, CUptiResult result, NoticeCode code,
                          const std::string& consequence) noexcept {
  if (result == CUPTI_SUCCESS) return true;
  try {
    const std::string message = call + " failed: " + cupti_result_text(api_, result) + "; " + consequence;
    warn_once(function, "CUPTI " + message);
    session_.notice(code, 0, message);
  } catch (...) {
  }
  return false;
}

void CuptiSource::use_measured_clock(const std::string& why) noexcept {
  const ClockOffset offset = measure_clock_offset(api_.get_timestamp, &Session::now_ns);
  clock_offset_ns_.store(offset.offset_ns, std::memory_order_relaxed);
  measured_clock_.store(true, std::memory_order_relaxed);
  try {
    warn_once("clock", "CUPTI " + why + "; GPU times are put on the trace clock by a measured offset");
    if (offset.ok) {
      session_.notice(NoticeCode::kClockOffsetApplied, offset.uncertainty_ns,
                      why + "; GPU times are CUPTI's clock plus a measured offset of " +
                          std::to_string(offset.offset_ns) + " ns (to within " +
                          std::to_string(offset.uncertainty_ns) + " ns), re-measured at every flush");
    } else {
      session_.notice(NoticeCode::kClockOffsetApplied, 0,
                      why +
                          "; cuptiGetTimestamp is unavailable too, so GPU times are CUPTI's own clock, "
                          "not aligned with host events");
    }
  } catch (...) {
  }
}

bool CuptiSource::start() noexcept {
  std::lock_guard lock(mutex_);
  if (running_.load() || lost_.load()) return running_.load();
  try {
    const std::string all_lost = "GPU activity (kernels, copies, memory, synchronization) is not captured";
    if (!api_.complete()) {
      session_.notice(NoticeCode::kKindUnavailable, 0, "CUPTI lacks required functions; " + all_lost);
      return false;
    }
    uint32_t version = 0;
    if (!call_ok("cuptiGetVersion", "cuptiGetVersion", api_.get_version(&version),
                 NoticeCode::kKindUnavailable, all_lost)) {
      return false;
    }
    if (const Status supported = check_cupti_version(version); !supported.ok()) {
      warn_once("version", supported.error().message);
      session_.notice(NoticeCode::kUnsupportedVersion, version, supported.error().message);
      return false;
    }
    if (cupti_taken_by_another_tool()) {
      const char* by = g_taken_by.load();
      session_.notice(NoticeCode::kCaptureLost, 0,
                      std::string("another tool took CUPTI (it called ") + (by != nullptr ? by : "CUPTI") +
                          ") before CUDA initialized; " + all_lost);
      return false;
    }

    CuptiSource* expected = nullptr;
    if (!g_source.compare_exchange_strong(expected, this)) {
      session_.notice(NoticeCode::kKindUnavailable, 0, "a CUPTI source already runs in this process");
      return false;
    }

    const CuptiTuning& tuning = session_.config().cupti;
    // A refused knob costs speed or detail, never records: one stderr line, no notice.
    apply_cupti_tuning(
        api_, tuning,
        [&](const char* function, const std::string& call, CUptiResult r, const std::string& kept) {
          warn_once(function, "CUPTI " + call + " failed: " + cupti_result_text(api_, r) + "; " + kept);
        });

    // The clock goes first: CUPTI applies a timestamp callback only to records of kinds enabled
    // after it is registered.
    std::string clock_problem;
    if (!tuning.clock_callback) {
      clock_problem = "was asked not to call back for timestamps (PIPESCOPE_CUPTI_CLOCK=offset)";
    } else if (api_.activity_register_timestamp_callback == nullptr) {
      clock_problem = "this CUPTI has no cuptiActivityRegisterTimestampCallback";
    } else if (const CUptiResult r = api_.activity_register_timestamp_callback(&CuptiSource::timestamp_now);
               r != CUPTI_SUCCESS) {
      clock_problem = "cuptiActivityRegisterTimestampCallback failed: " + cupti_result_text(api_, r);
    }

    if (!call_ok(
            "cuptiActivityRegisterCallbacks", "cuptiActivityRegisterCallbacks",
            api_.activity_register_callbacks(&CuptiSource::buffer_requested, &CuptiSource::buffer_completed),
            NoticeCode::kKindUnavailable, all_lost)) {
      g_source.store(nullptr);
      return false;
    }
    if (tuning.convert_on_own_thread && !converter_.joinable()) {
      try {
        converter_ = std::thread([this] { converter_main(); });
        converter_running_.store(true, std::memory_order_release);
      } catch (...) {  // no thread: buffers are converted in CUPTI's callback, as before
      }
    }

    plan_ = plan_activity_kinds(session_.config().kinds, tuning.nccl_launch_api_only);
    enabled_.assign(plan_.size(), false);
    std::vector<bool> available(plan_.size(), false);
    bool any_data = false;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const CUptiResult r = set_entry_enabled(plan_[i], true);
      const std::string call = std::string("cuptiActivityEnable(") + cupti_kind_name(plan_[i].kind) +
                               (plan_[i].only_calls.empty() ? ")" : ", launch and copy calls only)");
      if (call_ok("cuptiActivityEnable", call, r, NoticeCode::kKindUnavailable,
                  what_is_lost(plan_[i]) + " are not captured")) {
        available[i] = true;
        enabled_[i] = true;
        any_data = any_data || plan_[i].for_record != RecordKind::kNotice;
      }
    }
    available_ = available;
    if (!any_data) {
      for (size_t i = 0; i < plan_.size(); ++i) {
        if (enabled_[i]) (void)set_entry_enabled(plan_[i], false);
      }
      enabled_.assign(plan_.size(), false);
      g_source.store(nullptr);
      return false;
    }
    if (!clock_problem.empty()) use_measured_clock(clock_problem);

    const bool window_open = session_.capturing();
    window_open_ = window_open;
    kernels_sampled_ = session_.kernel_sampled();
    apply_enables_locked();
    const bool correlating = [&] {
      for (size_t i = 0; i < plan_.size(); ++i) {
        if (plan_[i].kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION && available_[i]) return true;
      }
      return false;
    }();
    if (correlating && api_.activity_push_external_correlation_id != nullptr &&
        api_.activity_pop_external_correlation_id != nullptr) {
      g_push.store(api_.activity_push_external_correlation_id, std::memory_order_release);
      g_pop.store(api_.activity_pop_external_correlation_id, std::memory_order_release);
      ExternalCorrelationHooks& hooks = external_correlation_hooks();
      hooks.push = &push_nccl_id;
      hooks.pop = &pop_nccl_id;
      hooks.active.store(window_open, std::memory_order_release);
      correlating_ = true;
    }
    running_.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    CuptiSource* self = this;
    g_source.compare_exchange_strong(self, nullptr);
    return false;
  }
}

CUptiResult CuptiSource::set_entry_enabled(const ActivityKindPlan& entry, bool on) noexcept {
  if (entry.only_calls.empty())
    return on ? api_.activity_enable(entry.kind) : api_.activity_disable(entry.kind);
  const auto one_call = entry.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? api_.activity_enable_runtime_api
                                                                  : api_.activity_enable_driver_api;
  // A CUPTI without per-call control records every call of the kind, as before it had one.
  if (one_call == nullptr) return on ? api_.activity_enable(entry.kind) : api_.activity_disable(entry.kind);
  for (const CUpti_CallbackId id : entry.only_calls) {
    if (const CUptiResult r = one_call(id, on ? 1 : 0); r != CUPTI_SUCCESS) return r;
  }
  return CUPTI_SUCCESS;
}

void CuptiSource::apply_enables_locked() noexcept {
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (!available_[i]) continue;
    const bool want =
        (!plan_[i].follows_window || window_open_) && (!plan_[i].follows_sampling || kernels_sampled_);
    if (enabled_[i] == want) continue;
    const CUptiResult r = set_entry_enabled(plan_[i], want);
    const char* function = want ? "cuptiActivityEnable" : "cuptiActivityDisable";
    if (call_ok(function, std::string(function) + "(" + cupti_kind_name(plan_[i].kind) + ")", r,
                NoticeCode::kKindUnavailable, "at a capture-window or kernel-sampling edge")) {
      enabled_[i] = want;
    }
  }
}

void CuptiSource::flush_into_session(bool final) {
  {
    std::lock_guard lock(mutex_);
    if (!running_.load(std::memory_order_acquire)) return;
    if (measured_clock_.load(std::memory_order_relaxed)) {
      // CUPTI's own clock is CLOCK_REALTIME on Linux, which NTP steps and slews.
      const ClockOffset offset = measure_clock_offset(api_.get_timestamp, &Session::now_ns);
      if (offset.ok) clock_offset_ns_.store(offset.offset_ns, std::memory_order_relaxed);
    }
    // A forced flush also hands over buffers with records still in flight: only at the end.
    (void)call_ok("cuptiActivityFlushAll", "cuptiActivityFlushAll",
                  api_.activity_flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0),
                  NoticeCode::kKindUnavailable, "GPU activity of this flush may be missing");
  }
  // What CUPTI handed over goes into this flush: the converter catches up first. Unlocked, so
  // that a kernel-sampling switch on the application's thread never waits for a conversion.
  wait_until_converted(final ? 10'000 : 2'000);
  std::lock_guard lock(mutex_);
  if (running_.load(std::memory_order_acquire)) report_cupti_drops_locked();
}

void CuptiSource::on_capture_changed(bool capturing) {
  std::lock_guard lock(mutex_);
  if (!running_.load(std::memory_order_acquire)) return;
  window_open_ = capturing;
  apply_enables_locked();
  if (correlating_) external_correlation_hooks().active.store(capturing, std::memory_order_release);
}

void CuptiSource::on_kernel_sampling_changed(bool sampled) {
  std::lock_guard lock(mutex_);
  if (!running_.load(std::memory_order_acquire)) return;
  kernels_sampled_ = sampled;
  apply_enables_locked();
}

void CuptiSource::lose_capture(const char* call) noexcept {
  std::lock_guard lock(mutex_);
  if (lost_.load(std::memory_order_acquire)) return;
  external_correlation_hooks().active.store(false, std::memory_order_release);
  if (running_.load(std::memory_order_acquire)) {
    // Leave CUPTI as the other tool expects to find it: none of our kinds on, our buffers
    // delivered. Its own registration and enables come after this returns.
    for (size_t i = 0; i < plan_.size(); ++i) {
      if (enabled_[i]) (void)set_entry_enabled(plan_[i], false);
      enabled_[i] = false;
    }
    (void)api_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    wait_until_converted(10'000);
    report_cupti_drops_locked();
  }
  running_.store(false, std::memory_order_release);
  lost_.store(true, std::memory_order_release);
  try {
    const std::string message = std::string("another tool called ") + (call != nullptr ? call : "CUPTI") +
                                " and took CUPTI over: GPU activity after this point is not in the trace";
    warn_once("capture lost", message);
    session_.notice(NoticeCode::kCaptureLost, 0, message);
  } catch (...) {
  }
}

// ---- buffers ---------------------------------------------------------------------------------

void CuptiSource::take_buffer(uint8_t** buffer, size_t* size) noexcept {
  *buffer = nullptr;
  *size = 0;
  std::lock_guard lock(pool_mutex_);
  if (free_buffers_.empty() && owned_buffers_.size() < kMaxBuffers) {
    std::unique_ptr<uint8_t, FreeDeleter> fresh(new_buffer());
    if (fresh != nullptr) {
      free_buffers_.push_back(fresh.get());
      owned_buffers_.push_back(std::move(fresh));
    }
  }
  if (free_buffers_.empty()) {
    // CUPTI drops records while it has no buffer, and counts them: the trace gets that count.
    buffers_refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *buffer = free_buffers_.back();
  *size = buffer_bytes_;
  free_buffers_.pop_back();
}

void CuptiSource::give_back(uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  // Zeroed here, on CUPTI's delivery thread, so that CUPTI need not on the application's.
  if (zeroed_buffers_) std::memset(buffer, 0, buffer_bytes_);
  std::lock_guard lock(pool_mutex_);
  free_buffers_.push_back(buffer);  // capacity reserved: never allocates
}

void CuptiSource::process_buffer(uint8_t* buffer, size_t valid_bytes) noexcept {
  // CUPTI hands over whole buffers at once: its thread drains into the file rather than drop.
  trace::ThreadBuffer* out = session_.thread_buffer(Activation::kCuda, trace::FullBufferPolicy::kDrainInline);
  if (out != nullptr && valid_bytes > 0) {
    ConversionSettings settings;
    settings.record_bits = session_.config().kinds.record_bits;
    // Capturing: [open, open-ended). Not capturing: either closed for good, [open, close), or
    // not yet opened (a step window before its first step), when nothing is inside.
    const bool capturing = session_.capturing();
    settings.window_open_ns = session_.capture_open_ns();
    settings.window_close_ns = session_.capture_close_ns();
    if (!capturing && settings.window_close_ns == UINT64_MAX) settings.window_open_ns = UINT64_MAX;
    settings.clock_offset_ns = clock_offset_ns_.load(std::memory_order_relaxed);
    settings.string_generation = session_.string_generation() + generation_salt_;
    settings.callback_name = api_.get_callback_name;
    Services services(session_);
    const BufferStats stats = process_activity_buffer(buffer, valid_bytes, api_.activity_get_next_record,
                                                      settings, services, contexts_, *out);
    if (stats.walk_error != CUPTI_SUCCESS) {
      walk_errors_.fetch_add(1, std::memory_order_relaxed);
      try {
        warn_once("cuptiActivityGetNextRecord",
                  "CUPTI cuptiActivityGetNextRecord failed: " + cupti_result_text(api_, stats.walk_error) +
                      "; the rest of an activity buffer was skipped");
      } catch (...) {
      }
    }
  }
  give_back(buffer);
  // The dropped count is CUPTI's, and CUPTI is ours only until another tool takes it. A flush
  // holds the lock while CUPTI calls back here; it asks itself once the flush returns.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock() && running_.load(std::memory_order_acquire)) report_cupti_drops_locked();
}

void CuptiSource::report_cupti_drops_locked() noexcept {
  if (api_.activity_get_num_dropped_records == nullptr) return;
  size_t dropped = 0;
  // Since CUDA 6 every buffer is global: context null, stream 0. Reading resets CUPTI's count.
  if (api_.activity_get_num_dropped_records(nullptr, 0, &dropped) != CUPTI_SUCCESS || dropped == 0) return;
  // A refused request costs nothing until CUPTI drops records for want of it.
  const uint64_t refused = buffers_refused_.exchange(0, std::memory_order_relaxed);
  try {
    std::string message = "CUPTI dropped activity records for lack of buffer space";
    if (refused != 0) {
      message += "; pipescope refused " + std::to_string(refused) + " buffer request(s) with " +
                 std::to_string(kMaxBuffers) + " buffers of " + std::to_string(buffer_bytes_ >> 20) +
                 " MiB outstanding";
    }
    session_.notice(NoticeCode::kCuptiBufferDropped, dropped, message);
  } catch (...) {
  }
}

void CUPTIAPI CuptiSource::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  CuptiSource* source = active_cupti_source();
  if (source == nullptr) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  source->take_buffer(buffer, size);
}

void CUPTIAPI CuptiSource::buffer_completed(CUcontext /*context*/, uint32_t /*stream*/, uint8_t* buffer,
                                            size_t /*size*/, size_t valid_bytes) {
  // Without a source the buffer's owner is gone with it; there is nothing safe to do.
  if (CuptiSource* source = active_cupti_source()) source->complete(buffer, valid_bytes);
}

// ---- the converter thread --------------------------------------------------------------------

void CuptiSource::complete(uint8_t* buffer, size_t valid_bytes) noexcept {
  if (buffer == nullptr) return;
  if (converter_running_.load(std::memory_order_acquire)) {
    {
      std::lock_guard lock(completed_mutex_);
      if (!converter_stop_) {
        completed_.push_back({buffer, valid_bytes});  // capacity reserved: never allocates
        completed_cv_.notify_one();
        return;
      }
    }
  }
  process_buffer(buffer, valid_bytes);
}

void CuptiSource::converter_main() noexcept {
  std::vector<CompletedBuffer> batch;
  try {
    batch.reserve(kMaxBuffers);
  } catch (...) {
  }
  std::unique_lock lock(completed_mutex_);
  for (;;) {
    completed_cv_.wait(lock, [&] { return converter_stop_ || !completed_.empty(); });
    if (completed_.empty()) return;  // stopping, nothing left
    batch.swap(completed_);
    buffers_converting_ = batch.size();
    lock.unlock();
    for (const CompletedBuffer& done : batch) process_buffer(done.buffer, done.valid_bytes);
    batch.clear();
    lock.lock();
    buffers_converting_ = 0;
    converted_cv_.notify_all();
  }
}

void CuptiSource::wait_until_converted(int timeout_ms) noexcept {
  if (!converter_running_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(completed_mutex_);
  converted_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                         [&] { return completed_.empty() && buffers_converting_ == 0; });
}

void CuptiSource::stop_converter() noexcept {
  if (!converter_.joinable()) return;
  {
    std::lock_guard lock(completed_mutex_);
    converter_stop_ = true;
    completed_cv_.notify_one();
  }
  converter_.join();  // it converts what is queued first
  converter_running_.store(false, std::memory_order_release);
}

uint64_t CUPTIAPI CuptiSource::timestamp_now() {
  // Once another tool owns CUPTI it gets CUPTI's default Linux clock back, not ours.
  return g_taken.load(std::memory_order_relaxed) ? realtime_ns() : Session::now_ns();
}

// ---- the injection entry's work ------------------------------------------------------------------

CuptiSource* start_cupti_injection(Session& session) noexcept {
  try {
    if (CuptiSource* running = active_cupti_source()) return running;
    if (session.config().disabled) return nullptr;
    // CUDA initializing is what makes this process trace, whatever it captures.
    if (session.thread_buffer(Activation::kCuda) == nullptr) return nullptr;  // tracing is off here
    if (!wants_cupti(session.config().kinds)) return nullptr;

    // The table and the source live until exit: CUPTI may call back at any time.
    static std::mutex table_mutex;
    static CuptiApi* table = nullptr;
    {
      std::lock_guard lock(table_mutex);
      if (table == nullptr) {
        auto api = load_cupti_api(std::getenv("CUDA_HOME"));
        if (!api.ok()) {
          warn_once("load", api.error().message);
          session.notice(NoticeCode::kKindUnavailable, 0,
                         api.error().message + "; GPU activity is not captured");
          return nullptr;
        }
        table = new CuptiApi(std::move(*api));
        set_cupti_handle_for_forwarding(table->handle);
      }
    }
    auto* source = new CuptiSource(session, *table);
    if (!source->start()) {
      delete source;
      return nullptr;
    }
    session.add_source(source);
    return source;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace pipescope::inject
