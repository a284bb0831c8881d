#include "nccl_rig.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "loaded_trace.h"

#ifndef NCCL_RANKS_PROGRAM
#error "NCCL_RANKS_PROGRAM must name tests/inject/programs' nccl_ranks_program"
#endif
#ifndef NCCL_RANKS_DLOPEN_PROGRAM
#error "NCCL_RANKS_DLOPEN_PROGRAM must name nccl_ranks_dlopen_program"
#endif

namespace pipescope::inject::testing {

const char* variant_name(RigVariant variant) { return variant == RigVariant::kLinked ? "linked" : "dlopen"; }

RigOptions rig_options(RigVariant variant, int steps, bool nvtx) {
  RigOptions options;
  options.variant = variant;
  options.steps = steps;
  options.nvtx = nvtx;
  return options;
}

RigRun run_nccl_ranks(const RigOptions& options) {
  RigRun run;
  run.dir = make_temp_dir(std::string("nccl-rig-") + variant_name(options.variant));
  run.id_dir = run.dir + "/id";
  run.calls_dir = run.dir + "/calls";
  run.trace_dir = run.dir + "/traces";
  for (const std::string& dir : {run.id_dir, run.calls_dir, run.trace_dir}) mkdir(dir.c_str(), 0700);

  LaunchOptions launch;
  launch.world_size = options.world_size;
  launch.preload = options.preload;
  const std::string program =
      options.variant == RigVariant::kLinked ? NCCL_RANKS_PROGRAM : NCCL_RANKS_DLOPEN_PROGRAM;
  launch.argv_for_rank = [&](int rank) {
    std::vector<std::string> argv = {program,
                                     "--id-dir",
                                     run.id_dir,
                                     "--steps",
                                     std::to_string(options.steps),
                                     "--call-log",
                                     run.calls_dir + "/program." + std::to_string(rank) + ".log"};
    if (options.nvtx) argv.push_back("--nvtx");
    argv.insert(argv.end(), options.program_args.begin(), options.program_args.end());
    return argv;
  };
  launch.env = {{"FAKE_NCCL_RENDEZVOUS", run.id_dir},
                {"FAKE_NCCL_LOG", run.calls_dir},
                {"PIPESCOPE_OUTPUT", run.trace_dir}};
  launch.env.insert(launch.env.end(), options.env.begin(), options.env.end());
  launch.rank_env = options.rank_env;
  if (options.signals.empty()) {
    run.result = launch_ranks(launch);
    return run;
  }
  RankProcesses job(launch);
  if (!job.start()) return run;
  const auto start = std::chrono::steady_clock::now();
  std::vector<RigOptions::Signal> signals = options.signals;
  std::stable_sort(
      signals.begin(), signals.end(),
      [](const RigOptions::Signal& a, const RigOptions::Signal& b) { return a.at_ms < b.at_ms; });
  for (const RigOptions::Signal& s : signals) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(s.at_ms));
    for (int rank = 0; rank < options.world_size; ++rank)
      if (s.rank < 0 || s.rank == rank) job.send_signal(rank, s.signal);
  }
  run.result = job.wait();
  return run;
}

// rank = tp + 2 * (dp + 2 * pp); the first-stage communicator holds ranks 0-3 in rank order;
// the fake's device is LOCAL_RANK; its version is the header's.
std::vector<std::string> expected_nccl_ranks_stdout() {
  const std::string version = " nccl " + std::to_string(NCCL_VERSION_CODE) + "\n";
  return {
      "rank 0/8 local 0: world 0/8 tp 0/2 pp 0/2 dp 0/2 stage 0/4 device 0" + version,
      "rank 1/8 local 1: world 1/8 tp 1/2 pp 0/2 dp 0/2 stage 1/4 device 1" + version,
      "rank 2/8 local 2: world 2/8 tp 0/2 pp 0/2 dp 1/2 stage 2/4 device 2" + version,
      "rank 3/8 local 3: world 3/8 tp 1/2 pp 0/2 dp 1/2 stage 3/4 device 3" + version,
      "rank 4/8 local 4: world 4/8 tp 0/2 pp 1/2 dp 0/2 stage none device 4" + version,
      "rank 5/8 local 5: world 5/8 tp 1/2 pp 1/2 dp 0/2 stage none device 5" + version,
      "rank 6/8 local 6: world 6/8 tp 0/2 pp 1/2 dp 1/2 stage none device 6" + version,
      "rank 7/8 local 7: world 7/8 tp 1/2 pp 1/2 dp 1/2 stage none device 7" + version,
  };
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fake_calls(const RigRun& run, int rank) {
  const pid_t pid = run.result.ranks.at(static_cast<size_t>(rank)).pid;
  return read_lines(run.calls_dir + "/calls." + std::to_string(rank) + "." + std::to_string(pid) + ".log");
}

std::vector<std::string> program_calls(const RigRun& run, int rank) {
  return read_lines(run.calls_dir + "/program." + std::to_string(rank) + ".log");
}

bool is_query_call(const std::string& line) {
  static const char* const kQueries[] = {"ncclGetVersion ",       "ncclCommCount ",      "ncclCommUserRank ",
                                         "ncclCommCuDevice ",     "ncclGetErrorString ", "ncclGetLastError ",
                                         "ncclCommGetAsyncError "};
  for (const char* query : kQueries) {
    if (line.rfind(query, 0) == 0) return true;
  }
  return false;
}

::testing::AssertionResult forwarded_once_in_order(const std::vector<std::string>& made,
                                                   const std::vector<std::string>& received) {
  size_t next = 0;  // first line of `received` not yet matched or skipped
  for (size_t i = 0; i < made.size(); ++i) {
    size_t j = next;
    while (j < received.size() && received[j] != made[i]) {
      if (!is_query_call(received[j])) {
        return ::testing::AssertionFailure()
               << "the library received a call the program did not make (or not "
               << "in this order) before the program's call #" << i << "\n  received: " << received[j]
               << "\n  expected: " << made[i];
      }
      ++j;
    }
    if (j == received.size()) {
      return ::testing::AssertionFailure()
             << "the program's call #" << i << " never reached the library: " << made[i];
    }
    next = j + 1;
  }
  for (size_t j = next; j < received.size(); ++j) {
    if (!is_query_call(received[j])) {
      return ::testing::AssertionFailure()
             << "the library received a call after the program's last one: " << received[j];
    }
  }
  return ::testing::AssertionSuccess();
}

bool library_exports(const std::string& path, const char* symbol) {
  const pid_t pid = fork();
  if (pid == 0) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    _exit(library != nullptr && dlsym(library, symbol) != nullptr ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace pipescope::inject::testing
