// The one tracing session of a process: its configuration, its trace file (opened lazily, by
// the first CUDA initialization, NCCL communicator or NVTX range), the per-thread record
// buffers, the capture window, and the flusher thread. Every recording source (CUPTI, NCCL,
// NVTX) goes through it; nothing here knows CUPTI, NCCL or NVTX.
//
// Hot path contract: thread_buffer(), capturing() and StringCache lookups are lock-free and
// allocation-free once a thread has its buffer; only the first call per thread and the first
// sight of a string take the slow path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config.h"
#include "launcher_env.h"
#include "ongoing_calls.h"
#include "pipescope/trace/process_info.h"
#include "pipescope/trace/records.h"
#include "pipescope/trace/trace_writer.h"
#include "trace_clock.h"

namespace pipescope::inject {

// What made the process start tracing. Only these open a trace file; a launcher or helper
// process that never reaches one stays silent.
enum class Activation : uint8_t { kCuda, kNccl, kNvtx };

// A source that holds records outside the session's rings (CUPTI's activity buffers) and must
// hand them over before a flush, and hears when the capture window opens or closes.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Called on the flusher thread before each periodic flush, and once at exit (final=true).
  virtual void flush_into_session(bool final) = 0;
  virtual void on_capture_changed(bool capturing) = 0;
  // PIPESCOPE_KERNEL_SAMPLE: GPU activity records resume (a sampled step began) or pause.
  virtual void on_kernel_sampling_changed(bool sampled) { (void)sampled; }
};

class Session {
 public:
  // The process-wide session, created with the configuration read from the environment.
  static Session& instance() noexcept;

  // `owns_process`: the library's own session, which installs the fatal-signal and exit
  // handlers when its trace opens. Sessions made by tests leave the process alone.
  Session(InjectConfig config, LauncherInfo launcher, std::vector<std::string> config_warnings = {},
          bool owns_process = false);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const InjectConfig& config() const noexcept { return config_; }
  bool wants(trace::RecordKind kind) const noexcept { return config_.kinds.has(kind); }

  // The calling thread's buffer, opening the trace first when `why` is the process's first
  // activation. nullptr when tracing is off in this process (the output could not be created,
  // the thread limit is reached, the session has ended). Appends through it are lock-free.
  trace::ThreadBuffer* thread_buffer(Activation why) noexcept {
    return thread_buffer(why, trace::FullBufferPolicy::kDrop);
  }
  // The same with the policy of the thread's ring: kDrainInline for a thread that must not drop
  // and may block on the file (CUPTI's delivery thread). A ring registered as kDrop turns
  // kDrainInline when its thread asks for that (the flusher records notices into a dropping ring
  // and may be handed CUPTI's buffers during cuptiActivityFlushAll); it never turns back.
  trace::ThreadBuffer* thread_buffer(Activation why, trace::FullBufferPolicy when_full) noexcept;
  // The calling thread's buffer if the trace is already open; never opens it.
  trace::ThreadBuffer* thread_buffer_if_open() noexcept;
  bool is_open() const noexcept { return state_.load(std::memory_order_acquire) == State::kOpen; }

  // True while records should be kept: always, unless a time window or step range is set
  // and the process is outside it. Sources check it before building a record.
  bool capturing() const noexcept { return capturing_.load(std::memory_order_relaxed); }
  // The current capture window on the trace clock: [open_ns, close_ns); close_ns is UINT64_MAX
  // while open. Lets CUPTI filter records that were in flight across a boundary.
  uint64_t capture_open_ns() const noexcept { return capture_open_ns_.load(std::memory_order_relaxed); }
  uint64_t capture_close_ns() const noexcept { return capture_close_ns_.load(std::memory_order_relaxed); }

  // Steps are counted on the NVTX step range: NVTX calls these when such a range opens and
  // closes (outermost only). Step k (from 0) opens the window when k == steps.first and the
  // end of step steps.last closes it.
  void step_began() noexcept;
  void step_ended() noexcept;
  // Whether NVTX must count steps: a step window or kernel sampling is set.
  bool counts_steps() const noexcept { return config_.steps.has_value() || config_.kernel_sample_steps > 1; }
  // PIPESCOPE_KERNEL_SAMPLE: true while GPU activity is recorded (always when not sampling). Step
  // k (from 0) is sampled when k % N == N - 1; before the first step GPU activity is kept.
  bool kernel_sampled() const noexcept { return kernel_sampled_.load(std::memory_order_relaxed); }

  // Id of `text` in the trace's string table; 0 when the trace is not open. Takes a lock:
  // hot paths use a StringCache in front of it, keyed by string_generation().
  uint32_t intern(std::string_view text) noexcept;
  // Changes whenever string ids stop being valid (a new trace file, after fork).
  uint32_t string_generation() const noexcept { return generation_.load(std::memory_order_acquire); }

  // Records a notice (always captured, window or not). Safe from any thread; slow path.
  void notice(trace::NoticeCode code, uint64_t count, std::string_view message) noexcept;

  // Facts learned after the trace opened; each rewrites the process-info chunk.
  void learn_rank_from_nccl(int32_t rank, int32_t world_size) noexcept;
  void add_device(const trace::DeviceInfo& device) noexcept;

  // Sources register once (they live until exit). Not for hot paths.
  void add_source(RecordSource* source) noexcept;

  // Calls entered and not returned (the NCCL flight recorder): each flush writes them.
  OngoingCalls& ongoing_calls() noexcept { return ongoing_calls_; }

  // Flushes rings and sources now (the flusher's work), from any thread but a signal handler.
  void flush_now() noexcept;
  // Flushes everything and closes the file (exit). Later calls do nothing.
  void finish() noexcept;
  // The same at exit(), with the status the process exits with (a kProcessExit notice).
  void finish_at_exit(int status) noexcept;
  // Async-signal-safe: frames what the rings already hold and writes it, with the calls still
  // in flight and a kProcessSignal notice for `signal` (0: none), without CUPTI, locks that may be
  // held, or allocation. For fatal signals.
  void emergency_write(int signal = 0) noexcept;
  // Around fork(): before it, wait (at most about a second) until the flusher is between two
  // flushes and hold it there, so that the child never inherits a flush in progress (an
  // allocator or stdio lock held by the flusher); after it, the parent lets the flusher go on.
  void pause_flusher_for_fork() noexcept;
  void resume_flusher_after_fork() noexcept;
  // The child of a fork: forget the parent's trace without touching it.
  void abandon_after_fork() noexcept;
  // Wakes the flusher and waits up to `timeout_ms` for one flush to complete; that flush says
  // that `ending_signal` (0: none) ends the process. Async-signal-safe (SIGTERM/SIGINT).
  void flush_from_signal(int timeout_ms, int ending_signal = 0) noexcept;

  // The trace clock (trace_clock.h): CLOCK_MONOTONIC in ns. CUPTI is set to report on it, too.
  static uint64_t now_ns() noexcept { return trace_clock::now_ns(); }
  // The kernel's id of the calling thread, cached.
  static uint32_t thread_id() noexcept;

  // The path of the open trace file, or "" (tests and messages).
  std::string trace_path() const;

 private:
  enum class State : uint8_t { kIdle, kOpening, kOpen, kOff, kFinished };
  struct PendingNotice {
    trace::NoticeCode code;
    uint64_t count;
    uint64_t timestamp_ns;
    std::string message;
  };

  bool open_trace() noexcept;  // one thread runs it; others wait for the outcome
  trace::ThreadBuffer* buffer_for_this_thread(
      trace::FullBufferPolicy when_full = trace::FullBufferPolicy::kDrop) noexcept;
  void write_process_info_locked() noexcept;
  void flusher_main();
  void set_capturing(bool on, uint64_t at_ns) noexcept;
  void set_kernel_sampled(bool sampled, int64_t step) noexcept;
  void check_time_window(uint64_t now) noexcept;
  void report_drops() noexcept;
  void warn(const std::string& message) noexcept;
  void append_notice(const PendingNotice& notice) noexcept;
  // PIPESCOPE_STAGE: an NVTX mark "stage=<k>" at the start of the trace.
  void declare_stage(int32_t stage) noexcept;
  void flush_sources(bool final) noexcept;
  // The calls still in flight, and a termination signal's notice.
  void write_ongoing_calls() noexcept;
  void stop_flusher() noexcept;

  InjectConfig config_;
  LauncherInfo launcher_;
  std::vector<std::string> config_warnings_;  // printed when the trace opens
  const bool owns_process_;
  const uint32_t serial_;  // tells this session's thread slots from another's
  const uint64_t start_ns_;
  std::atomic<State> state_{State::kIdle};
  std::atomic<uint32_t> generation_;  // changes when a fork child abandons the parent's trace
  std::unique_ptr<trace::TraceWriter> writer_;
  std::atomic<trace::TraceWriter*> live_writer_{nullptr};  // what signal handlers may touch
  std::shared_ptr<std::atomic<bool>> alive_;               // read by exiting threads

  std::atomic<bool> capturing_{true};
  std::atomic<uint64_t> capture_open_ns_{0};
  std::atomic<uint64_t> capture_close_ns_{UINT64_MAX};
  std::atomic<int64_t> steps_begun_{0};
  std::atomic<int64_t> steps_ended_{0};
  std::atomic<bool> window_done_{false};
  std::atomic<bool> kernel_sampled_{true};
  std::string sampling_message_;  // the kernel-sampling notices' text, made once

  std::mutex info_mutex_;  // process_info_, sources_, pending_notices_
  trace::ProcessInfo process_info_;
  std::vector<PendingNotice> pending_notices_;  // said before the trace opened
  static constexpr int kMaxSources = 4;
  RecordSource* sources_[kMaxSources] = {};
  std::atomic<int> source_count_{0};

  std::atomic<bool> flusher_stop_{false};
  std::timed_mutex flush_gate_;  // held by the flusher during a flush, and by fork() around it
  std::atomic<bool> flusher_started_{false};
  std::thread flusher_;
  std::atomic<uint64_t> flushes_completed_{0};
  std::atomic<bool> flush_requested_{false};
  std::atomic<int> ending_signal_{0};  // a termination signal's number, for the flusher to record
  OngoingCalls ongoing_calls_;
  // eventfd a signal handler writes to wake the flusher. A handler on another thread may be
  // about to write it when finish() closes it: handlers count themselves in wake_writers_ before
  // reading it, and finish() takes it (-1) first and closes it only once none is left, so the
  // number is never written after it could name another file.
  std::atomic<int> wake_fd_{-1};
  std::atomic<int> wake_writers_{0};
  void wake_flusher() noexcept;  // async-signal-safe
  void close_wake_fd() noexcept;
  uint64_t drops_reported_ = 0;
  std::atomic<bool> write_failure_reported_{false};
};

}  // namespace pipescope::inject
