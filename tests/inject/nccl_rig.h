// Test support for the no-GPU NCCL rig: runs tests/inject/programs/nccl_ranks_program (or its
// dlopen/RTLD_LOCAL variant) as an 8-rank job against the fake libnccl.so.2, with or without
// libpipescope.so preloaded, and reads back what the job left: stdout, call logs, traces.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "rank_launcher.h"

namespace pipescope::inject::testing {

enum class RigVariant {
  kLinked,  // libnccl.so.2 an ordinary dependency of the executable
  kDlopen,  // libnccl.so.2 a dependency of a module opened with RTLD_LOCAL (as under Python)
};
const char* variant_name(RigVariant variant);
inline void PrintTo(RigVariant variant, std::ostream* out) { *out << variant_name(variant); }

struct RigOptions {
  RigVariant variant = RigVariant::kLinked;
  std::string preload;  // libpipescope.so, or empty
  bool nvtx = false;
  int steps = 1;
  int world_size = 8;
  std::vector<std::pair<std::string, std::string>> env;  // more variables for every rank
  std::vector<std::string> program_args;                 // more arguments for every rank
  // More variables for one rank (after `env`).
  std::function<std::vector<std::pair<std::string, std::string>>(int rank)> rank_env;
  // Signals sent while the job runs, as a scheduler or launcher ends a job: at `at_ms` after the
  // start, `signal` to `rank` (-1: every rank still running).
  struct Signal {
    int at_ms = 0;
    int rank = -1;
    int signal = 0;
  };
  std::vector<Signal> signals;
};

struct RigRun {
  std::string dir;        // the run's temp dir
  std::string id_dir;     // unique id hand-over and split rendezvous (FAKE_NCCL_RENDEZVOUS)
  std::string calls_dir;  // FAKE_NCCL_LOG: calls.<rank>.<pid>.log; program.<rank>.log
  std::string trace_dir;  // PIPESCOPE_OUTPUT
  LaunchResult result;
};

RigOptions rig_options(RigVariant variant, int steps = 1, bool nvtx = false);

// Runs the job (120 s limit; all processes killed past it).
RigRun run_nccl_ranks(const RigOptions& options);

// What nccl_ranks_program prints on each of the 8 ranks (index = rank), worked out by hand.
std::vector<std::string> expected_nccl_ranks_stdout();

// Lines of a text file (none when it cannot be read), and of a string.
std::vector<std::string> split_lines(const std::string& text);
std::vector<std::string> read_lines(const std::string& path);
// The calls the fake library received in `rank`'s process, and the calls the program made.
std::vector<std::string> fake_calls(const RigRun& run, int rank);
std::vector<std::string> program_calls(const RigRun& run, int rank);

// True for NCCL calls that only ask (version, rank, size, device, error text): an interposer
// may make such calls of its own, but no call that acts.
bool is_query_call(const std::string& line);

// Every line of `made` appears in `received`, once and in order; what else `received` holds
// is only queries.
::testing::AssertionResult forwarded_once_in_order(const std::vector<std::string>& made,
                                                   const std::vector<std::string>& received);

// Whether the shared library at `path` exports `symbol`. Checked in a forked child, so that
// loading the library (its constructor, its environment changes) leaves this process alone.
bool library_exports(const std::string& path, const char* symbol);

}  // namespace pipescope::inject::testing
