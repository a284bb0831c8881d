// Runs a program to completion and captures what it printed, for tests of command-line tools.
#pragma once

#include <string>
#include <vector>

namespace pipescope::testing {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

CommandResult run_command(const std::vector<std::string>& argv);

// The `pipescope` binary of this build with `args`.
CommandResult run_pipescope(const std::vector<std::string>& args);

// Number of lines in `text` (a last line without '\n' counts).
int line_count(const std::string& text);

}  // namespace pipescope::testing
