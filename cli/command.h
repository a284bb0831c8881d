// How subcommands plug into the `pipescope` binary: each file registers its options on a
// CLI11 subcommand and returns the function that runs it after a successful parse.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace pipescope::cli {

// Exit codes of docs/design.md's command-line contract.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and could not do its job
inline constexpr int kExitUsage = 2;    // bad usage or bad input

using CommandRunner = std::function<int()>;

// `run` must own (capture) the storage its options were bound to: CLI11 writes into it
// during parse, after the add_*_command function has returned.
struct Command {
  CLI::App* app;
  CommandRunner run;
};

Command add_record_command(CLI::App& root);
Command add_report_command(CLI::App& root);
Command add_export_command(CLI::App& root);
Command add_plan_command(CLI::App& root);
Command add_search_command(CLI::App& root);
Command add_calibrate_command(CLI::App& root);
Command add_inspect_command(CLI::App& root);

// One line on stderr, "pipescope <command>: <message>"; returns kExitUsage.
int usage_error(const std::string& command, const std::string& message);

// Whether this binary was built with the profiler and the GPU suite (PIPESCOPE_PROFILER); the
// planner-only build's `record` and `calibrate run` refuse in one line unless told where a
// profiler build's library or suite is.
inline constexpr bool kProfilerBuilt = PIPESCOPE_PROFILER_BUILT != 0;

// The refusal: "pipescope <command>: this pipescope is the planner-only build ... set <variable>".
int needs_profiler_build(const std::string& command, const std::string& what, const std::string& variable);

}  // namespace pipescope::cli
