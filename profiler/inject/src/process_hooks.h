// What the library's own session installs in the process once its trace is open: an exit
// handler that flushes everything, fatal-signal handlers that save what the rings hold and
// then let the process die exactly as it would have, and SIGTERM/SIGINT/SIGQUIT handlers that
// give the flusher a bounded moment before deferring to the application's own handling.
#pragma once

namespace pipescope::inject {

class Session;

void install_process_hooks(Session& session) noexcept;

// Gives the calling thread an alternate signal stack when it has none, so that a stack overflow
// still runs the fatal-signal handler (which is installed with SA_ONSTACK). A stack the
// application installed (Python's faulthandler does) is left alone. Freed when the thread ends.
void ensure_alternate_signal_stack() noexcept;

// How long a second thread that faults while the first saves the trace waits for it (ms).
inline constexpr int kSecondFaultWaitMs = 2000;

// How long a terminating signal waits for the flusher (ms).
inline constexpr int kTerminationFlushWaitMs = 500;

}  // namespace pipescope::inject
