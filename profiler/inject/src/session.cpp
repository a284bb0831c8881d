#include "session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "process_hooks.h"

#ifndef PIPESCOPE_VERSION
#define PIPESCOPE_VERSION "0.1.0"
#endif

namespace pipescope::inject {
namespace {

using trace::NoticeCode;

std::atomic<uint32_t> g_next_serial{1};
// String ids are per file: every session and every new file after fork takes a fresh generation,
// so that no cache keyed on it can hand out another file's ids.
std::atomic<uint32_t> g_next_generation{1};

// The calling thread's buffer in the session it last recorded into. A thread records into one
// session at a time (tests make several, one after another).
struct ThreadSlotData {
  uint32_t serial = 0;
  uint32_t generation = 0;
  trace::ThreadBuffer* buffer = nullptr;
  trace::TraceWriter* writer = nullptr;
  std::shared_ptr<std::atomic<bool>> session_alive;

  ~ThreadSlotData() { retire(); }

  void retire() noexcept {
    if (buffer != nullptr && session_alive && session_alive->load(std::memory_order_acquire)) {
      writer->retire_thread(buffer);
    }
    buffer = nullptr;
    writer = nullptr;
  }
};

thread_local ThreadSlotData t_slot;
thread_local uint32_t t_thread_id = 0;
thread_local bool t_holds_flush_gate = false;  // this thread is inside fork()'s pause

// mkdir -p with 0755 directories; existing directories are fine.
bool make_directories(const std::string& path, std::string& error) {
  std::string partial;
  size_t pos = 0;
  while (pos <= path.size()) {
    const size_t slash = std::min(path.find('/', pos), path.size());
    partial = path.substr(0, slash);
    pos = slash + 1;
    if (partial.empty() || partial == ".") continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + partial + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  return true;
}

std::string read_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

}  // namespace

Session& Session::instance() noexcept {
  // Built once, never destroyed: exit handlers, late threads and signal handlers may still
  // reach it while static destructors run.
  static Session* session = [] {
    const EnvLookup env = [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
    ConfigResult config = read_config(env);
    // Out of memory before main(): std::terminate is the only answer, as for any static.
    // NOLINTNEXTLINE(bugprone-unhandled-exception-at-new)
    return new Session(std::move(config.config), detect_launcher(env), std::move(config.warnings), true);
  }();
  return *session;
}

Session::Session(InjectConfig config, LauncherInfo launcher, std::vector<std::string> config_warnings,
                 bool owns_process)
    : config_(std::move(config)),
      launcher_(std::move(launcher)),
      config_warnings_(std::move(config_warnings)),
      owns_process_(owns_process),
      serial_(g_next_serial.fetch_add(1)),
      start_ns_(now_ns()),
      generation_(g_next_generation.fetch_add(1)),
      alive_(std::make_shared<std::atomic<bool>>(true)) {
  if (config_.disabled) state_.store(State::kOff);
  if (!config_.read_tsc) trace_clock::disable_tsc();  // for the whole process, as the variable is
  if (config_.kernel_sample_steps > 1) {
    sampling_message_ = "GPU activity (kernels, copies, memsets) recorded for 1 step in " +
                        std::to_string(config_.kernel_sample_steps) + " (PIPESCOPE_KERNEL_SAMPLE)";
  }
  if (config_.steps || (config_.window && config_.window->start_s > 0)) capturing_.store(false);
  if (config_.window) {
    capture_open_ns_.store(start_ns_ + static_cast<uint64_t>(config_.window->start_s * 1e9));
    if (config_.window->end_s) {
      capture_close_ns_.store(start_ns_ + static_cast<uint64_t>(*config_.window->end_s * 1e9));
    }
  }
}

Session::~Session() {
  finish();
  alive_->store(false, std::memory_order_release);
}

uint32_t Session::thread_id() noexcept {
  if (t_thread_id == 0) t_thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_thread_id;
}

trace::ThreadBuffer* Session::thread_buffer(Activation /*why*/, trace::FullBufferPolicy when_full) noexcept {
  if (t_slot.serial == serial_ && t_slot.generation == generation_.load(std::memory_order_relaxed) &&
      t_slot.buffer != nullptr) [[likely]] {
    if (when_full == trace::FullBufferPolicy::kDrainInline) t_slot.buffer->drain_inline_when_full();
    return t_slot.buffer;
  }
  State state = state_.load(std::memory_order_acquire);
  if (state == State::kIdle || state == State::kOpening) {
    if (!open_trace()) return nullptr;
  }
  // Past kOpen only while finish() still holds the writer: its last flush of CUPTI must find a ring.
  return buffer_for_this_thread(when_full);
}

trace::ThreadBuffer* Session::thread_buffer_if_open() noexcept {
  if (t_slot.serial == serial_ && t_slot.generation == generation_.load(std::memory_order_relaxed) &&
      t_slot.buffer != nullptr) [[likely]] {
    return t_slot.buffer;
  }
  // The writer, not the state: finish() still records its last notices after leaving kOpen.
  return buffer_for_this_thread();
}

trace::ThreadBuffer* Session::buffer_for_this_thread(trace::FullBufferPolicy when_full) noexcept {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer == nullptr) return nullptr;
  if (t_slot.serial == serial_ && t_slot.buffer != nullptr) t_slot.retire();
  trace::ThreadBuffer* buffer = nullptr;
  try {
    buffer = writer->register_thread(when_full);
  } catch (...) {
    buffer = nullptr;
  }
  if (buffer == nullptr) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      warn("too many recording threads; threads beyond the limit are not traced");
    }
    return nullptr;
  }
  ensure_alternate_signal_stack();  // a stack overflow on this thread still saves the trace
  t_slot.serial = serial_;
  t_slot.generation = generation_.load(std::memory_order_relaxed);
  t_slot.buffer = buffer;
  t_slot.writer = writer;
  t_slot.session_alive = alive_;
  return buffer;
}

bool Session::open_trace() noexcept {
  State expected = State::kIdle;
  if (!state_.compare_exchange_strong(expected, State::kOpening, std::memory_order_acq_rel)) {
    // Another thread is opening: wait for its outcome (a few file system calls).
    while ((expected = state_.load(std::memory_order_acquire)) == State::kOpening) {
      state_.wait(State::kOpening, std::memory_order_acquire);
    }
    return expected == State::kOpen;
  }
  State outcome = State::kOff;
  try {
    for (const std::string& warning : config_warnings_) warn(warning);
    std::string error;
    if (make_directories(config_.output_dir, error)) {
      const std::string rank = launcher_.rank ? std::to_string(*launcher_.rank) : "x";
      const std::string path = config_.output_dir + "/rank-" + rank + "." + std::to_string(getpid()) + ".pst";
      trace::WriterOptions options;
      options.clock = trace::TraceClock::kMonotonic;
      options.read_trace_clock_ns = &Session::now_ns;
      options.compress = config_.compress;
      options.thread_buffer_bytes = config_.buffer_bytes;
      options.when_full = trace::FullBufferPolicy::kDrop;
      auto writer = trace::TraceWriter::create(path, options);
      if (writer.ok()) {
        writer_ = std::move(*writer);
        live_writer_.store(writer_.get(), std::memory_order_release);
        outcome = State::kOpen;
      } else {
        error = writer.error().message;
      }
    }
    if (outcome == State::kOpen) {
      {
        std::lock_guard lock(info_mutex_);
        process_info_.rank = launcher_.rank;
        process_info_.local_rank = launcher_.local_rank;
        process_info_.world_size = launcher_.world_size;
        process_info_.local_world_size = launcher_.local_world_size;
        process_info_.node_rank = launcher_.node_rank;
        process_info_.restart_attempt = launcher_.restart_attempt;
        process_info_.run_id = launcher_.run_id;
        process_info_.launcher = launcher_.launcher;
        process_info_.command_line = read_command_line();
        process_info_.pipescope_version = PIPESCOPE_VERSION;
        process_info_.capture_kinds = config_.kinds.record_bits;
        write_process_info_locked();
      }
      wake_fd_.store(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), std::memory_order_seq_cst);
      {
        // A fork() while the new thread is still being set up could hand the child a lock the
        // thread's start-up holds (a sanitizer's allocator has no fork handler): the gate, which
        // fork() takes first, stays closed until the flusher runs its own code.
        std::lock_guard gate(flush_gate_);
        flusher_started_.store(false, std::memory_order_relaxed);
        flusher_ = std::thread([this] { flusher_main(); });
        flusher_started_.wait(false, std::memory_order_acquire);
      }
      if (owns_process_) install_process_hooks(*this);
    } else {
      warn("tracing is off in this process: " + error);
    }
  } catch (...) {
    outcome = State::kOff;
    warn("tracing is off in this process: out of memory while opening the trace");
  }
  state_.store(outcome, std::memory_order_release);
  state_.notify_all();
  if (outcome != State::kOpen) return false;

  // What was said before the file existed, and the window state at open.
  std::vector<PendingNotice> pending;
  {
    std::lock_guard lock(info_mutex_);
    pending.swap(pending_notices_);
  }
  for (const PendingNotice& notice : pending) append_notice(notice);
  if (config_.declared_stage) declare_stage(*config_.declared_stage);
  if (capturing() && (config_.window || config_.steps)) {
    append_notice({NoticeCode::kWindowOpened, 0, capture_open_ns(), "capture window open at trace start"});
  }
  return true;
}

void Session::write_process_info_locked() noexcept {
  if (writer_ == nullptr) return;
  try {
    (void)writer_->write_process_info(process_info_);
  } catch (...) {
  }
}

uint32_t Session::intern(std::string_view text) noexcept {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer == nullptr) return 0;
  try {
    return writer->intern(text);
  } catch (...) {
    return 0;
  }
}

void Session::append_notice(const PendingNotice& notice) noexcept {
  trace::ThreadBuffer* buffer = thread_buffer_if_open();
  if (buffer == nullptr) return;
  auto record = trace::make_record<trace::NoticeRecord>();
  record.code = static_cast<uint16_t>(notice.code);
  record.timestamp_ns = notice.timestamp_ns;
  record.count = notice.count;
  record.message_id = notice.message.empty() ? 0 : intern(notice.message);
  buffer->append(record);
}

void Session::declare_stage(int32_t stage) noexcept {
  trace::ThreadBuffer* buffer = thread_buffer_if_open();
  if (buffer == nullptr) return;
  try {
    auto record = trace::make_record<trace::NvtxRecord>();
    record.event = static_cast<uint8_t>(trace::NvtxEvent::kMark);
    record.timestamp_ns = now_ns();
    record.name_id = intern("stage=" + std::to_string(stage));
    buffer->append(record);
  } catch (...) {
  }
}

void Session::notice(NoticeCode code, uint64_t count, std::string_view message) noexcept {
  try {
    PendingNotice pending{code, count, now_ns(), std::string(message)};
    if (live_writer_.load(std::memory_order_acquire) != nullptr) {
      append_notice(pending);
      return;
    }
    std::lock_guard lock(info_mutex_);
    if (pending_notices_.size() < 256) pending_notices_.push_back(std::move(pending));
  } catch (...) {
  }
}

void Session::learn_rank_from_nccl(int32_t rank, int32_t world_size) noexcept {
  try {
    std::lock_guard lock(info_mutex_);
    if (process_info_.rank || launcher_.rank) return;
    launcher_.rank = rank;
    launcher_.world_size = world_size;
    if (launcher_.launcher.empty()) launcher_.launcher = "nccl";
    if (writer_ == nullptr) return;  // picked up when the trace opens
    process_info_.rank = rank;
    process_info_.world_size = world_size;
    process_info_.launcher = launcher_.launcher;
    write_process_info_locked();
  } catch (...) {
  }
}

void Session::add_device(const trace::DeviceInfo& device) noexcept {
  try {
    std::lock_guard lock(info_mutex_);
    for (const trace::DeviceInfo& known : process_info_.devices) {
      if (known.ordinal == device.ordinal && known.uuid == device.uuid) return;
    }
    process_info_.devices.push_back(device);
    write_process_info_locked();
  } catch (...) {
  }
}

void Session::add_source(RecordSource* source) noexcept {
  std::lock_guard lock(info_mutex_);
  const int count = source_count_.load(std::memory_order_relaxed);
  if (count == kMaxSources) return;
  sources_[count] = source;
  source_count_.store(count + 1, std::memory_order_release);
}

void Session::step_began() noexcept {
  if (!counts_steps()) return;
  const int64_t step = steps_begun_.fetch_add(1, std::memory_order_relaxed);
  if (config_.steps && step == config_.steps->first) set_capturing(true, now_ns());
  // The last step of every N: a run's first step (allocation, autotuning, compilation) is the
  // least like the others, and is never the one recorded.
  if (config_.kernel_sample_steps > 1)
    set_kernel_sampled(step % config_.kernel_sample_steps == config_.kernel_sample_steps - 1, step);
}

void Session::step_ended() noexcept {
  if (!config_.steps) return;
  const int64_t step = steps_ended_.fetch_add(1, std::memory_order_relaxed);
  if (step == config_.steps->last) set_capturing(false, now_ns());
}

void Session::set_kernel_sampled(bool sampled, int64_t step) noexcept {
  if (kernel_sampled_.exchange(sampled, std::memory_order_relaxed) == sampled) return;
  // The notice goes first: its time opens (or closes) the interval the report reads kernels in,
  // and kernels launched after the switch are the only ones it changes.
  notice(sampled ? NoticeCode::kKernelSamplingResumed : NoticeCode::kKernelSamplingPaused,
         static_cast<uint64_t>(step), sampling_message_);
  const int count = source_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) sources_[i]->on_kernel_sampling_changed(sampled);
}

void Session::set_capturing(bool on, uint64_t at_ns) noexcept {
  if (window_done_.load(std::memory_order_relaxed)) return;
  if (capturing_.load(std::memory_order_relaxed) == on) return;
  if (on) {
    capture_open_ns_.store(at_ns, std::memory_order_relaxed);
    capture_close_ns_.store(UINT64_MAX, std::memory_order_relaxed);
  } else {
    capture_close_ns_.store(at_ns, std::memory_order_relaxed);
    window_done_.store(true, std::memory_order_relaxed);
  }
  capturing_.store(on, std::memory_order_release);
  if (on) {
    notice(NoticeCode::kWindowOpened, 0, config_.steps ? "step window opened" : "time window opened");
  } else {
    notice(NoticeCode::kWindowClosed, 0, config_.steps ? "step window closed" : "time window closed");
  }
  const int count = source_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) sources_[i]->on_capture_changed(on);
}

void Session::check_time_window(uint64_t now) noexcept {
  if (!config_.window || window_done_.load(std::memory_order_relaxed)) return;
  const uint64_t open_at = start_ns_ + static_cast<uint64_t>(config_.window->start_s * 1e9);
  const uint64_t close_at =
      config_.window->end_s ? start_ns_ + static_cast<uint64_t>(*config_.window->end_s * 1e9) : UINT64_MAX;
  if (now >= close_at) {
    if (!capturing()) set_capturing(true, open_at);
    set_capturing(false, close_at);
  } else if (now >= open_at) {
    set_capturing(true, open_at);
  }
}

void Session::flush_sources(bool final) noexcept {
  const int count = source_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) sources_[i]->flush_into_session(final);
}

void Session::report_drops() noexcept {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer == nullptr) return;
  const uint64_t dropped = writer->records_dropped();
  if (dropped > drops_reported_) {
    notice(NoticeCode::kRecordsDropped, dropped - drops_reported_,
           "per-thread record buffer full; raise PIPESCOPE_BUFFER_MB or lower PIPESCOPE_FLUSH_MS");
    drops_reported_ = dropped;
  }
}

void Session::flusher_main() {
  // Signals go to the application's threads, never to this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "pipescope-flush");
  flusher_started_.store(true, std::memory_order_release);
  flusher_started_.notify_one();
  uint64_t next_flush = now_ns() + uint64_t{config_.flush_ms} * 1'000'000u;
  while (!flusher_stop_.load(std::memory_order_acquire)) {
    trace_clock::calibrate();
    const uint64_t now = now_ns();
    // A fit still due after calibrate() is another session's flusher at work: look again in a
    // millisecond rather than spin until it has finished.
    uint64_t calibrate_at = trace_clock::next_calibration_ns();
    if (calibrate_at <= now) calibrate_at = now + 1'000'000;
    uint64_t wake_at = std::min(next_flush, calibrate_at);
    if (config_.window && !window_done_.load(std::memory_order_relaxed)) {
      const uint64_t open_at = start_ns_ + static_cast<uint64_t>(config_.window->start_s * 1e9);
      if (open_at > now) wake_at = std::min(wake_at, open_at);
      if (config_.window->end_s) {
        const uint64_t close_at = start_ns_ + static_cast<uint64_t>(*config_.window->end_s * 1e9);
        if (close_at > now) wake_at = std::min(wake_at, close_at);
      }
    }
    if (wake_at > now) {
      // The flusher's own thread: finish() closes the fd only after joining it.
      const int wake_fd = wake_fd_.load(std::memory_order_acquire);
      pollfd fd{wake_fd, POLLIN, 0};
      const auto timeout_ms = static_cast<int>((wake_at - now + 999'999) / 1'000'000);
      (void)poll(&fd, 1, timeout_ms);
      uint64_t drained = 0;
      (void)!read(wake_fd, &drained, sizeof(drained));
    }
    if (flusher_stop_.load(std::memory_order_acquire)) break;
    std::lock_guard gate(flush_gate_);
    check_time_window(now_ns());
    const bool requested = flush_requested_.exchange(false);
    if (requested || now_ns() >= next_flush) {
      flush_now();
      next_flush = now_ns() + uint64_t{config_.flush_ms} * 1'000'000u;
    }
  }
}

void Session::write_ongoing_calls() noexcept {
  trace::ThreadBuffer* buffer = thread_buffer_if_open();
  if (buffer != nullptr) ongoing_calls_.write_open(*buffer, now_ns());
  if (const int signal = ending_signal_.exchange(0); signal != 0)
    notice(NoticeCode::kProcessSignal, static_cast<uint64_t>(signal), "ended by a termination signal");
}

void Session::flush_now() noexcept {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer == nullptr) return;
  flush_sources(false);
  write_ongoing_calls();
  try {
    const Status flushed = writer->flush();
    // A failed write (disk full, I/O error) leaves the file readable up to its last chunk and
    // the writer discarding from then on: say so once; the job goes on.
    if (!flushed.ok() && !write_failure_reported_.exchange(true)) {
      warn("tracing stopped in this process: " + flushed.error().message);
    }
  } catch (...) {
  }
  report_drops();  // after the drain, so that the notice finds room even in a full ring
  flushes_completed_.fetch_add(1, std::memory_order_release);
}

void Session::stop_flusher() noexcept {
  if (!flusher_.joinable()) return;
  flusher_stop_.store(true, std::memory_order_release);
  wake_flusher();
  try {
    flusher_.join();
  } catch (...) {
    flusher_.detach();
  }
}

void Session::finish() noexcept {
  State expected = State::kOpen;
  if (!state_.compare_exchange_strong(expected, State::kFinished, std::memory_order_acq_rel)) {
    if (expected == State::kIdle) state_.store(State::kFinished, std::memory_order_release);
    return;
  }
  stop_flusher();
  flush_sources(true);
  write_ongoing_calls();  // other threads may still be inside a call
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer != nullptr) {
    try {
      (void)writer->flush();
    } catch (...) {
    }
  }
  report_drops();
  writer = live_writer_.exchange(nullptr, std::memory_order_acq_rel);
  if (writer != nullptr) {
    try {
      (void)writer->close();
    } catch (...) {
    }
  }
  close_wake_fd();
}

void Session::wake_flusher() noexcept {
  wake_writers_.fetch_add(1, std::memory_order_seq_cst);
  const int fd = wake_fd_.load(std::memory_order_seq_cst);
  if (fd >= 0) {
    const uint64_t one = 1;
    (void)!write(fd, &one, sizeof(one));
  }
  wake_writers_.fetch_sub(1, std::memory_order_seq_cst);
}

void Session::close_wake_fd() noexcept {
  const int fd = wake_fd_.exchange(-1, std::memory_order_seq_cst);
  if (fd < 0) return;
  // Bounded: a handler stopped between its count and its write (another signal) must not hang the
  // exit; then the fd stays open rather than risk a write into whatever file reuses its number.
  const timespec step{0, 100'000};
  for (int waited = 0; waited < 1000; ++waited) {
    if (wake_writers_.load(std::memory_order_seq_cst) == 0) {
      close(fd);
      return;
    }
    nanosleep(&step, nullptr);
  }
}

void Session::finish_at_exit(int status) noexcept {
  if (is_open()) notice(NoticeCode::kProcessExit, static_cast<uint64_t>(static_cast<uint32_t>(status)), "");
  finish();
}

void Session::emergency_write(int signal) noexcept {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  if (writer == nullptr) return;
  // Static: a signal handler allocates nothing, and one fatal signal is handled at a time.
  alignas(8) static std::byte extra[32 << 10];
  size_t used = 0;
  uint32_t records = 0;
  if (signal != 0) {
    auto notice = trace::make_record<trace::NoticeRecord>();
    notice.code = static_cast<uint16_t>(NoticeCode::kProcessSignal);
    notice.timestamp_ns = now_ns();
    notice.count = static_cast<uint64_t>(signal);
    std::memcpy(extra, &notice, sizeof(notice));
    used = sizeof(notice);
    records = 1;
  }
  uint32_t calls = 0;
  used += ongoing_calls_.write_open(std::span(extra).subspan(used), now_ns(), calls);
  (void)writer->emergency_write(std::span<const std::byte>(extra, used), records + calls);
}

void Session::flush_from_signal(int timeout_ms, int ending_signal) noexcept {
  if (live_writer_.load(std::memory_order_acquire) == nullptr || wake_fd_.load(std::memory_order_acquire) < 0)
    return;
  if (ending_signal != 0) ending_signal_.store(ending_signal, std::memory_order_release);
  const uint64_t before = flushes_completed_.load(std::memory_order_acquire);
  flush_requested_.store(true, std::memory_order_release);
  wake_flusher();
  const timespec step{0, 1'000'000};
  for (int waited = 0; waited < timeout_ms; ++waited) {
    if (flushes_completed_.load(std::memory_order_acquire) != before) return;
    nanosleep(&step, nullptr);
  }
}

void Session::pause_flusher_for_fork() noexcept {
  // Bounded: a flush stuck on a hung file system must not hang the application's fork(); the
  // child is safe without the pause as far as the trace goes (it never touches the parent's).
  t_holds_flush_gate = flush_gate_.try_lock_for(std::chrono::seconds(1));
}

void Session::resume_flusher_after_fork() noexcept {
  if (!t_holds_flush_gate) return;
  t_holds_flush_gate = false;
  flush_gate_.unlock();
}

void Session::abandon_after_fork() noexcept {
  // The parent's writer, flusher thread and locks belong to the parent: the child keeps none of
  // them (the thread does not exist here, a lock may be held forever) and never writes the file.
  (void)writer_.release();
  live_writer_.store(nullptr, std::memory_order_release);
  new (&flusher_) std::thread();  // the parent's thread handle, dropped without join/terminate
  new (&info_mutex_) std::mutex();
  new (&flush_gate_) std::timed_mutex();
  t_holds_flush_gate = false;
  // The child's one thread: no handler of the parent's can be writing the fd.
  if (const int fd = wake_fd_.exchange(-1); fd >= 0) close(fd);
  wake_writers_.store(0);
  flusher_stop_.store(false);
  source_count_.store(0);
  pending_notices_.clear();
  process_info_ = trace::ProcessInfo{};
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_release);
  t_thread_id = 0;  // the forking thread has a new kernel id in the child
  trace_clock::reset_after_fork();
  ongoing_calls_.abandon_after_fork();
  const State state = state_.load(std::memory_order_acquire);
  if (state == State::kOpen || state == State::kOpening)
    state_.store(State::kIdle, std::memory_order_release);
}

std::string Session::trace_path() const {
  trace::TraceWriter* writer = live_writer_.load(std::memory_order_acquire);
  return writer != nullptr ? writer->path() : "";
}

void Session::warn(const std::string& message) noexcept {
  std::fprintf(stderr, "pipescope: %s\n", message.c_str());
}

}  // namespace pipescope::inject
