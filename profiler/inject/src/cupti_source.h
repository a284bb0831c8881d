// The CUPTI activity source: enables the activity kinds the configuration asks for, hands CUPTI
// buffers from a small pool, turns completed buffers into trace records on the thread CUPTI
// delivers them on, and puts GPU times on the trace clock. One per process (CUPTI's buffer
// callbacks carry no user pointer).
//
// It never fights another tool: when one takes CUPTI over (cupti_injection.cpp's interposers
// call cupti_taken_over), it flushes what it has, writes when capture was lost, and stops
// touching CUPTI. Every CUPTI error is one "pipescope:" line and a notice; the process goes on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "cupti_api.h"
#include "cupti_records.h"
#include "session.h"

namespace pipescope::inject {

// One CUPTI activity kind to enable, and whether it follows the capture window (turned off
// while the window is closed) or stays on for the whole run.
struct ActivityKindPlan {
  CUpti_ActivityKind kind;
  trace::RecordKind for_record;  // the record kind it serves (kNotice for bookkeeping kinds)
  bool follows_window;
  // GPU activity (kernels, copies, memsets) under PIPESCOPE_KERNEL_SAMPLE: on only in sampled steps.
  bool follows_sampling = false;
  // RUNTIME or DRIVER: when not empty, only these calls' records (cuptiActivityEnableRuntimeApi
  // or cuptiActivityEnableDriverApi, one call id at a time) instead of every call's.
  std::span<const CUpti_CallbackId> only_calls = {};
};

// The CUPTI kinds that capture `kinds`: kernel -> CONCURRENT_KERNEL, memcpy -> MEMCPY and
// MEMCPY2 (peer copies), memset, memory -> MEMORY2 and MEMORY_POOL, sync -> SYNCHRONIZATION
// (+ CONTEXT, to know their devices), api -> RUNTIME and DRIVER, overhead, nccl ->
// EXTERNAL_CORRELATION (+ the RUNTIME and DRIVER records that carry it: with
// `nccl_launch_api_only`, only those of the launch and copy calls NCCL makes), and DEVICE always.
std::vector<ActivityKindPlan> plan_activity_kinds(const trace::CaptureKinds& kinds,
                                                  bool nccl_launch_api_only = true);

// GPU-to-trace clock offset measured around one cuptiGetTimestamp() call: the best of a few
// tries (the smallest bracket). Used when CUPTI cannot report on the trace clock itself.
struct ClockOffset {
  int64_t offset_ns = 0;
  uint64_t uncertainty_ns = 0;
  bool ok = false;
};
ClockOffset measure_clock_offset(decltype(&cuptiGetTimestamp) get_timestamp, uint64_t (*now_ns)());

class CuptiSource final : public RecordSource {
 public:
  // Buffers CUPTI writes into (PIPESCOPE_CUPTI_BUFFER_MB each, 8 MiB unless set, as in CUPTI's
  // samples), two made up front, at most 32 outstanding. Beyond that CUPTI is refused a buffer
  // and counts what it drops, which the trace then reports.
  static constexpr size_t kPreallocatedBuffers = 2;
  static constexpr size_t kMaxBuffers = 32;

  // `api` (the real libcupti or a test's fakes) must outlive the source.
  CuptiSource(Session& session, const CuptiApi& api);
  ~CuptiSource() override;
  CuptiSource(const CuptiSource&) = delete;
  CuptiSource& operator=(const CuptiSource&) = delete;

  // Checks the version, puts CUPTI on the trace clock, registers the buffer callbacks and
  // enables the kinds of session.config().kinds. False when nothing can be captured; the trace
  // says why (kUnsupportedVersion, kKindUnavailable, kCaptureLost). Call once.
  bool start() noexcept;

  void flush_into_session(bool final) override;
  void on_capture_changed(bool capturing) override;
  void on_kernel_sampling_changed(bool sampled) override;

  // Another tool called `call` (cuptiActivityRegisterCallbacks, cuptiSubscribe, cuptiFinalize):
  // flush, note the time, stop using CUPTI. Idempotent.
  void lose_capture(const char* call) noexcept;

  bool capturing_gpu() const noexcept { return running_.load(std::memory_order_acquire); }
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  int64_t clock_offset_ns() const noexcept { return clock_offset_ns_.load(std::memory_order_relaxed); }

  // CUPTI's callbacks (static: CUPTI passes no user pointer), public for tests' fake CUPTIs.
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                        size_t valid_bytes);
  static uint64_t CUPTIAPI timestamp_now();

 private:
  class Services;
  void take_buffer(uint8_t** buffer, size_t* size) noexcept;
  void process_buffer(uint8_t* buffer, size_t valid_bytes) noexcept;
  void give_back(uint8_t* buffer) noexcept;
  // CUPTI's completion callback: queues the buffer for the converter thread (or converts it
  // here, PIPESCOPE_CUPTI_CONVERT=callback, or when the thread could not start).
  void complete(uint8_t* buffer, size_t valid_bytes) noexcept;
  void converter_main() noexcept;
  // Waits (at most `timeout_ms`) until every queued buffer is in the session's rings.
  void wait_until_converted(int timeout_ms) noexcept;
  void stop_converter() noexcept;
  void report_cupti_drops_locked() noexcept;
  // Turns each available kind on or off as the window and the kernel sampling now want it.
  void apply_enables_locked() noexcept;
  // cuptiActivityEnable/Disable of plan_[i], or its call ids one at a time.
  CUptiResult set_entry_enabled(const ActivityKindPlan& entry, bool on) noexcept;
  uint8_t* new_buffer() noexcept;
  // Success, or one stderr line per `function` and a notice "<call> failed: <error>; <consequence>".
  bool call_ok(const char* function, const std::string& call, CUptiResult result, trace::NoticeCode code,
               const std::string& consequence) noexcept;
  void use_measured_clock(const std::string& why) noexcept;

  Session& session_;
  const CuptiApi& api_;
  ContextDevices contexts_;
  std::vector<ActivityKindPlan> plan_;
  std::vector<bool> available_;  // per plan_ entry: cuptiActivityEnable succeeded at start
  std::vector<bool> enabled_;    // per plan_ entry: on now
  bool window_open_ = true;      // what the session last said, under mutex_
  bool kernels_sampled_ = true;
  const size_t buffer_bytes_;     // each host buffer handed to CUPTI
  const bool zeroed_buffers_;     // CUPTI was told our buffers come zeroed
  bool correlating_ = false;      // the NCCL external-correlation hooks are ours
  uint32_t generation_salt_ = 0;  // added to the session's string generation for the name caches

  std::mutex mutex_;  // CUPTI calls outside the buffer callbacks; plan_, available_, enabled_
  std::atomic<bool> running_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> measured_clock_{false};
  std::atomic<int64_t> clock_offset_ns_{0};

  std::mutex pool_mutex_;  // owned_buffers_, free_buffers_
  struct FreeDeleter {
    void operator()(uint8_t* p) const noexcept;
  };
  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> owned_buffers_;
  std::vector<uint8_t*> free_buffers_;
  std::atomic<uint64_t> buffers_refused_{0};
  std::atomic<uint64_t> walk_errors_{0};

  // Completed buffers wait here for the converter. CUPTI calls its completion callback while the
  // application's CUDA calls can wait on it (measured: launches slow down with the time the
  // callback takes), so the callback only queues; converting and zeroing happen on our thread.
  struct CompletedBuffer {
    uint8_t* buffer;
    size_t valid_bytes;
  };
  std::mutex completed_mutex_;  // completed_, buffers_converting_, converter_stop_
  std::condition_variable completed_cv_;
  std::condition_variable converted_cv_;
  std::vector<CompletedBuffer> completed_;  // capacity kMaxBuffers: the callback never allocates
  size_t buffers_converting_ = 0;
  bool converter_stop_ = false;
  std::atomic<bool> converter_running_{false};
  std::thread converter_;
};

// The source CUPTI's callbacks and the interposers reach; null when none runs.
CuptiSource* active_cupti_source() noexcept;

// The interposers' entry: another tool called `call`. Before a source runs this only marks
// CUPTI as taken, so that the source then does not start and fight it.
void cupti_taken_over(const char* call) noexcept;
bool cupti_taken_by_another_tool() noexcept;
// Tests only: forget that another tool took CUPTI (a process can lose CUPTI only once).
void forget_cupti_takeover_for_tests() noexcept;

// What InitializeInjection does, on `session`: open its trace (Activation::kCuda), load CUPTI
// (load_cupti_api), start a source and register it with the session. Never fails the process:
// when CUPTI cannot run the trace says why. Returns the running source, or null. The source and
// the loaded table live until exit.
CuptiSource* start_cupti_injection(Session& session) noexcept;

}  // namespace pipescope::inject
