#include "process_hooks.h"

#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include <cerrno>
#include <cstdlib>

#include "session.h"

namespace pipescope::inject {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
constexpr int kTerminationSignals[] = {SIGTERM, SIGINT, SIGQUIT};
constexpr int kMaxSignal = 65;

std::atomic<Session*> g_session{nullptr};
struct sigaction g_previous[kMaxSignal];
// The fatal path's progress: the first faulting thread saves the trace; others wait for it
// before they let their signal end the process.
enum FatalState : int { kNoFault, kSaving, kSaved };
std::atomic<int> g_fatal_state{kNoFault};

void restore_previous(int sig) noexcept { sigaction(sig, &g_previous[sig], nullptr); }

void call_previous(int sig, siginfo_t* info, void* context) noexcept {
  const struct sigaction& previous = g_previous[sig];
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(sig);
  }
}

bool previous_is_default(int sig) noexcept {
  const struct sigaction& previous = g_previous[sig];
  return (previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler == SIG_DFL;
}

// Saves what is framed, hands the signal back to whoever had it, and lets it strike again: a
// fault re-executes the faulting instruction; a sent signal (kill, abort) is sent once more.
void on_fatal_signal(int sig, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  int expected = kNoFault;
  if (g_fatal_state.compare_exchange_strong(expected, kSaving)) {
    if (Session* session = g_session.load(std::memory_order_acquire)) session->emergency_write(sig);
    g_fatal_state.store(kSaved);
  } else {
    for (int waited = 0; waited < kSecondFaultWaitMs && g_fatal_state.load() == kSaving; ++waited) {
      const timespec one_ms{0, 1'000'000};
      nanosleep(&one_ms, nullptr);
    }
  }
  restore_previous(sig);
  if (info == nullptr || info->si_code <= 0) raise(sig);
  errno = saved_errno;
}

void on_termination_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // The signal ends the process only when nobody else handles it.
  if (Session* session = g_session.load(std::memory_order_acquire)) {
    session->flush_from_signal(kTerminationFlushWaitMs, previous_is_default(sig) ? sig : 0);
  }
  const struct sigaction& previous = g_previous[sig];
  if (previous_is_default(sig)) {
    restore_previous(sig);
    raise(sig);  // delivered when this handler returns: the process ends as it would have
  } else if ((previous.sa_flags & SA_SIGINFO) != 0 || previous.sa_handler != SIG_IGN) {
    call_previous(sig, info, context);
  }
  errno = saved_errno;
}

void install(int sig, void (*handler)(int, siginfo_t*, void*)) noexcept {
  struct sigaction action {};
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  if (sigaction(sig, nullptr, &previous) != 0) return;
  // A signal the application ignores stays ignored: tracing must not change its fate.
  if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler == SIG_IGN) return;
  g_previous[sig] = previous;
  sigaction(sig, &action, nullptr);
}

// on_exit, not atexit: the status tells a failure (a Python exception exits 1 through the same
// path as a clean run) from success.
void finish_at_exit(int status, void* /*unused*/) {
  if (Session* session = g_session.load(std::memory_order_acquire)) session->finish_at_exit(status);
}

// The stack this library gave the thread, taken back (disabled first) when the thread ends.
struct OwnAlternateStack {
  void* memory = nullptr;
  size_t bytes = 0;
  ~OwnAlternateStack() {
    if (memory == nullptr) return;
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || current.ss_sp != memory ||
        (current.ss_flags & SS_ONSTACK) != 0)
      return;  // replaced since, or in use: leave it
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, nullptr) == 0) munmap(memory, bytes);
  }
};
thread_local OwnAlternateStack t_alternate_stack;

// Room for the handler and the trace writer's emergency path (no allocation, a few frames).
constexpr size_t kAlternateStackBytes = size_t{64} << 10;

}  // namespace

void ensure_alternate_signal_stack() noexcept {
  if (t_alternate_stack.memory != nullptr) return;
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
  void* memory = mmap(nullptr, kAlternateStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (memory == MAP_FAILED) return;
  stack_t stack{};
  stack.ss_sp = memory;
  stack.ss_size = kAlternateStackBytes;
  if (sigaltstack(&stack, nullptr) != 0) {
    munmap(memory, kAlternateStackBytes);
    return;
  }
  t_alternate_stack.memory = memory;
  t_alternate_stack.bytes = kAlternateStackBytes;
}

void install_process_hooks(Session& session) noexcept {
  Session* expected = nullptr;
  if (!g_session.compare_exchange_strong(expected, &session)) return;  // once per process
  on_exit(finish_at_exit, nullptr);
  for (const int sig : kFatalSignals) install(sig, on_fatal_signal);
  for (const int sig : kTerminationSignals) install(sig, on_termination_signal);
}

}  // namespace pipescope::inject
