// What the library's own session installs in the process once its trace is open: an exit
// handler that flushes everything, fatal-signal handlers that save what the rings hold and
// then let the process die exactly as it would have, and SIGTERM/SIGINT/SIGQUIT handlers that
// give the flusher a bounded moment before deferring to the application's own handling.
#pragma once

namespace pipescope::inject {

class Session;

void install_process_hooks(Session& session) noexcept;

// How long a terminating signal waits for the flusher (ms).
inline constexpr int kTerminationFlushWaitMs = 500;

}  // namespace pipescope::inject
