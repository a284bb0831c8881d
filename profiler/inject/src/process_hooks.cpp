#include "process_hooks.h"

#include <signal.h>

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
  if (Session* session = g_session.load(std::memory_order_acquire)) session->emergency_write();
  restore_previous(sig);
  if (info == nullptr || info->si_code <= 0) raise(sig);
  errno = saved_errno;
}

void on_termination_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (Session* session = g_session.load(std::memory_order_acquire)) {
    session->flush_from_signal(kTerminationFlushWaitMs);
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

void finish_at_exit() {
  if (Session* session = g_session.load(std::memory_order_acquire)) session->finish();
}

}  // namespace

void install_process_hooks(Session& session) noexcept {
  Session* expected = nullptr;
  if (!g_session.compare_exchange_strong(expected, &session)) return;  // once per process
  std::atexit(finish_at_exit);
  for (const int sig : kFatalSignals) install(sig, on_fatal_signal);
  for (const int sig : kTerminationSignals) install(sig, on_termination_signal);
}

}  // namespace pipescope::inject
