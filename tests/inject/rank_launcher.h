// Test support: starts the processes of a pretend job the way torchrun would (RANK,
// LOCAL_RANK, WORLD_SIZE, ... in each one's environment), optionally with LD_PRELOAD, captures
// every process's stdout, stderr and exit status, and never hangs: at the deadline everything
// still running is killed, with its process group.
//
//   LaunchOptions options;
//   options.argv = {program, "--id-dir", dir};
//   options.world_size = 8;
//   options.preload = PIPESCOPE_INJECT_SO;
//   LaunchResult result = launch_ranks(options);   // start + wait
//
// Or, to act on a running job (kill tests): RankProcesses job(options); job.start();
// job.wait_for_stdout(0, "ready"); job.send_signal(0, SIGKILL); auto result = job.wait();
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pipescope::inject::testing {

struct LaunchOptions {
  std::vector<std::string> argv;  // program and arguments, the same for every rank
  // Per-rank arguments instead of `argv` when set.
  std::function<std::vector<std::string>(int rank)> argv_for_rank;
  int world_size = 1;
  int local_world_size = 0;  // 0: all ranks on one node; else LOCAL_RANK = rank % it, GROUP_RANK = rank / it
  bool torchrun_env = true;  // false: no launcher variables at all (a plain process)
  std::string run_id = "pipescope-test";
  int restart_count = 0;
  std::string preload;  // LD_PRELOAD value; empty for none
  // Added after the launcher variables (a later entry wins); per rank when rank_env is set.
  std::vector<std::pair<std::string, std::string>> env;
  std::function<std::vector<std::pair<std::string, std::string>>(int rank)> rank_env;
  // Removed from the inherited environment; every launcher, PIPESCOPE_*, LD_PRELOAD and
  // injection variable of the test process itself is always removed.
  std::vector<std::string> env_remove;
  std::chrono::milliseconds timeout{120000};  // whole job, from start
};

struct RankResult {
  int rank = 0;
  pid_t pid = -1;
  std::string out;
  std::string err;
  int exit_code = -1;      // when it exited; -1 otherwise
  int term_signal = 0;     // the signal that killed it; 0 when it exited
  bool timed_out = false;  // killed by the launcher at the deadline

  bool exited_with(int code) const { return term_signal == 0 && exit_code == code; }
  bool killed_by(int signal_number) const { return term_signal == signal_number; }
  // "exit 0", "signal 11 (Segmentation fault)", "timed out": for failure messages.
  std::string status_text() const;
};

struct LaunchResult {
  std::vector<RankResult> ranks;  // index = rank
  bool timed_out = false;
  bool all_exited_with(int code) const;
  // Every rank's status, stdout and stderr, for a failing assertion's message.
  std::string describe() const;
};

class RankProcesses {
 public:
  explicit RankProcesses(LaunchOptions options);
  ~RankProcesses();  // kills and reaps whatever still runs
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  // Starts every rank. False (and nothing left running) if a process could not be started.
  bool start();
  pid_t pid(int rank) const;
  // Reads output until `needle` appears in `rank`'s stdout; false at the job's deadline or
  // when the process ended without printing it.
  bool wait_for_stdout(int rank, const std::string& needle);
  bool send_signal(int rank, int signal_number);
  // Waits for every process (killing all at the deadline) and returns what each did.
  LaunchResult wait();

 private:
  struct Child;
  bool pump(std::chrono::milliseconds max_wait);  // reads pipes, reaps; false when all are done
  void kill_all();

  LaunchOptions options_;
  std::vector<Child> children_;
  std::chrono::steady_clock::time_point deadline_;
  bool timed_out_ = false;
};

LaunchResult launch_ranks(const LaunchOptions& options);

}  // namespace pipescope::inject::testing
