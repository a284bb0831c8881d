// Runs a command as a child and reports how it ended, so that `pipescope record` can end the
// same way: the same exit code, or the same fatal signal re-raised.
#pragma once

#include <string>
#include <vector>

namespace pipescope::cli {

struct ChildEnd {
  bool started = false;  // false: fork failed (nothing ran)
  int exit_code = 0;     // when it exited
  int signal = 0;        // when a signal ended it
};

// Forks, execs `argv` (PATH search) with `environment` (NAME=value entries), and waits.
// While waiting, SIGINT and SIGQUIT are left to the child (the terminal sends them to both),
// and SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are passed on to it. A command that cannot be run
// gives exit code 127 (not found) or 126 (not executable), with one line on stderr.
ChildEnd run_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment);

// Ends this process the way the child ended: exit(code), or the same signal with its default
// action (core dump included).
[[noreturn]] void end_like(const ChildEnd& end);

}  // namespace pipescope::cli
