#include "rank_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

extern char** environ;

namespace pipescope::inject::testing {

struct RankProcesses::Child {
  RankResult result;
  int out_fd = -1;
  int err_fd = -1;
  bool reaped = false;
  std::chrono::steady_clock::time_point reaped_at;
};

namespace {

// How long pipes may stay open after their process ended (a grandchild holding them).
constexpr auto kDrainAfterExit = std::chrono::seconds(2);

// Variables of the test process that would change what the child does: launcher ranks, the
// injection library and its configuration, another tool's injection.
bool inherited_but_dropped(std::string_view name) {
  static constexpr std::string_view kExact[] = {"RANK",
                                                "LOCAL_RANK",
                                                "WORLD_SIZE",
                                                "LOCAL_WORLD_SIZE",
                                                "GROUP_RANK",
                                                "GROUP_WORLD_SIZE",
                                                "ROLE_RANK",
                                                "ROLE_NAME",
                                                "ROLE_WORLD_SIZE",
                                                "MASTER_ADDR",
                                                "MASTER_PORT",
                                                "LD_PRELOAD",
                                                "CUDA_INJECTION64_PATH",
                                                "NVTX_INJECTION64_PATH",
                                                "NODE_RANK"};
  static constexpr std::string_view kPrefixes[] = {
      "PIPESCOPE_", "TORCHELASTIC_", "SLURM_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID", "FAKE_NCCL_"};
  if (std::find(std::begin(kExact), std::end(kExact), name) != std::end(kExact)) return true;
  for (std::string_view prefix : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

void set_var(std::vector<std::pair<std::string, std::string>>& env, const std::string& name,
             const std::string& value) {
  for (auto& entry : env) {
    if (entry.first == name) {
      entry.second = value;
      return;
    }
  }
  env.emplace_back(name, value);
}

std::vector<std::string> environment_for(const LaunchOptions& options, int rank) {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string name(text.substr(0, equals));
    if (inherited_but_dropped(name)) continue;
    if (std::find(options.env_remove.begin(), options.env_remove.end(), name) != options.env_remove.end())
      continue;
    env.emplace_back(name, std::string(text.substr(equals + 1)));
  }
  if (options.torchrun_env) {
    const int local_world = options.local_world_size > 0 ? options.local_world_size : options.world_size;
    const int nodes = (options.world_size + local_world - 1) / local_world;
    // What torchrun (torch.distributed.elastic) puts in each worker's environment.
    set_var(env, "RANK", std::to_string(rank));
    set_var(env, "LOCAL_RANK", std::to_string(rank % local_world));
    set_var(env, "WORLD_SIZE", std::to_string(options.world_size));
    set_var(env, "LOCAL_WORLD_SIZE", std::to_string(local_world));
    set_var(env, "GROUP_RANK", std::to_string(rank / local_world));
    set_var(env, "GROUP_WORLD_SIZE", std::to_string(nodes));
    set_var(env, "ROLE_RANK", std::to_string(rank));
    set_var(env, "ROLE_NAME", "default");
    set_var(env, "ROLE_WORLD_SIZE", std::to_string(options.world_size));
    set_var(env, "MASTER_ADDR", "127.0.0.1");
    set_var(env, "MASTER_PORT", "29500");
    set_var(env, "TORCHELASTIC_RUN_ID", options.run_id);
    set_var(env, "TORCHELASTIC_RESTART_COUNT", std::to_string(options.restart_count));
    set_var(env, "TORCHELASTIC_MAX_RESTARTS", "0");
    set_var(env, "TORCHELASTIC_USE_AGENT_STORE", "True");
    set_var(env, "OMP_NUM_THREADS", "1");
  }
  if (!options.preload.empty()) set_var(env, "LD_PRELOAD", options.preload);
  for (const auto& [name, value] : options.env) set_var(env, name, value);
  if (options.rank_env) {
    for (const auto& [name, value] : options.rank_env(rank)) set_var(env, name, value);
  }
  std::vector<std::string> flat;
  flat.reserve(env.size());
  for (const auto& [name, value] : env) flat.push_back(name + "=" + value);
  return flat;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Appends what `fd` has now; closes it at end of file.
void drain(int& fd, std::string& into) {
  char buffer[4096];
  while (fd >= 0) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      into.append(buffer, static_cast<size_t>(got));
    } else if (got == 0) {
      close_fd(fd);
    } else if (errno != EINTR) {
      if (errno != EAGAIN) close_fd(fd);
      return;
    }
  }
}

}  // namespace

std::string RankResult::status_text() const {
  if (timed_out) return "timed out (killed)";
  if (term_signal != 0) return "signal " + std::to_string(term_signal) + " (" + strsignal(term_signal) + ")";
  if (exit_code >= 0) return "exit " + std::to_string(exit_code);
  return "not started";
}

bool LaunchResult::all_exited_with(int code) const {
  return !ranks.empty() &&
         std::all_of(ranks.begin(), ranks.end(), [code](const RankResult& r) { return r.exited_with(code); });
}

std::string LaunchResult::describe() const {
  std::string text;
  for (const RankResult& rank : ranks) {
    text += "rank " + std::to_string(rank.rank) + " (pid " + std::to_string(rank.pid) +
            "): " + rank.status_text() + "\n  stdout: " + rank.out + "\n  stderr: " + rank.err + "\n";
  }
  return text;
}

RankProcesses::RankProcesses(LaunchOptions options) : options_(std::move(options)) {}

RankProcesses::~RankProcesses() {
  kill_all();
  for (Child& child : children_) {
    close_fd(child.out_fd);
    close_fd(child.err_fd);
    if (!child.reaped && child.result.pid > 0) waitpid(child.result.pid, nullptr, 0);
  }
}

bool RankProcesses::start() {
  deadline_ = std::chrono::steady_clock::now() + options_.timeout;
  children_.resize(static_cast<size_t>(options_.world_size));
  for (int rank = 0; rank < options_.world_size; ++rank) {
    Child& child = children_[static_cast<size_t>(rank)];
    child.result.rank = rank;
    std::vector<std::string> argv = options_.argv_for_rank ? options_.argv_for_rank(rank) : options_.argv;
    std::vector<std::string> envp = environment_for(options_, rank);
    std::vector<char*> argv_pointers = pointers_to(argv);
    std::vector<char*> envp_pointers = pointers_to(envp);
    int out_pipe[2];
    int err_pipe[2];
    if (argv.empty() || pipe2(out_pipe, O_CLOEXEC) != 0) {
      kill_all();
      return false;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      close(out_pipe[0]);
      close(out_pipe[1]);
      kill_all();
      return false;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec: the test process may have threads.
      setpgid(0, 0);  // its own group, so that a timeout kills what it started, too
      // A job starts with default signal handling, whatever the test runner ignores or blocks
      // (a background shell ignores SIGINT, and that would survive exec).
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
        if (signal_number != SIGKILL && signal_number != SIGSTOP)
          sigaction(signal_number, &default_action, nullptr);
      }
      sigset_t nothing;
      sigemptyset(&nothing);
      sigprocmask(SIG_SETMASK, &nothing, nullptr);
      const int null_fd = open("/dev/null", O_RDONLY);
      if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
      dup2(out_pipe[1], STDOUT_FILENO);
      dup2(err_pipe[1], STDERR_FILENO);
      close_range(3, ~0u, 0);  // nothing of the test process leaks into the job
      execve(argv_pointers[0], argv_pointers.data(), envp_pointers.data());
      static const char kFailed[] = "rank_launcher: execve failed\n";
      [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, kFailed, sizeof(kFailed) - 1);
      _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      kill_all();
      return false;
    }
    setpgid(pid, pid);  // also from the parent, so the group exists before any kill
    child.result.pid = pid;
    child.out_fd = out_pipe[0];
    child.err_fd = err_pipe[0];
    fcntl(child.out_fd, F_SETFL, O_NONBLOCK);
    fcntl(child.err_fd, F_SETFL, O_NONBLOCK);
  }
  return true;
}

pid_t RankProcesses::pid(int rank) const { return children_.at(static_cast<size_t>(rank)).result.pid; }

bool RankProcesses::send_signal(int rank, int signal_number) {
  const Child& child = children_.at(static_cast<size_t>(rank));
  return !child.reaped && child.result.pid > 0 && kill(child.result.pid, signal_number) == 0;
}

void RankProcesses::kill_all() {
  for (Child& child : children_) {
    // Only unreaped children: until waitpid, neither the pid nor its group id can be reused.
    if (child.result.pid <= 0 || child.reaped) continue;
    kill(-child.result.pid, SIGKILL);  // the group: what the rank started dies with it
    kill(child.result.pid, SIGKILL);
  }
}

bool RankProcesses::pump(std::chrono::milliseconds max_wait) {
  std::vector<pollfd> fds;
  for (const Child& child : children_) {
    if (child.out_fd >= 0) fds.push_back({child.out_fd, POLLIN, 0});
    if (child.err_fd >= 0) fds.push_back({child.err_fd, POLLIN, 0});
  }
  const auto now = std::chrono::steady_clock::now();
  const auto until_deadline = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now);
  // Short slices: a child's exit shows in waitpid, not in poll, while a grandchild keeps a pipe.
  const auto slice = std::clamp(std::min(max_wait, until_deadline), std::chrono::milliseconds(0),
                                std::chrono::milliseconds(20));
  if (!fds.empty()) {
    poll(fds.data(), fds.size(), static_cast<int>(slice.count()));
  } else if (slice.count() > 0) {
    usleep(static_cast<useconds_t>(slice.count()) * 1000);
  }
  bool running = false;
  for (Child& child : children_) {
    drain(child.out_fd, child.result.out);
    drain(child.err_fd, child.result.err);
    if (!child.reaped && child.result.pid > 0) {
      int status = 0;
      if (waitpid(child.result.pid, &status, WNOHANG) == child.result.pid) {
        child.reaped = true;
        child.reaped_at = std::chrono::steady_clock::now();
        if (WIFEXITED(status)) child.result.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) child.result.term_signal = WTERMSIG(status);
      }
    }
    if (child.reaped && std::chrono::steady_clock::now() - child.reaped_at > kDrainAfterExit) {
      close_fd(child.out_fd);
      close_fd(child.err_fd);
    }
    if ((!child.reaped && child.result.pid > 0) || child.out_fd >= 0 || child.err_fd >= 0) running = true;
  }
  if (running && std::chrono::steady_clock::now() >= deadline_ && !timed_out_) {
    timed_out_ = true;
    for (Child& child : children_) {
      if (!child.reaped && child.result.pid > 0) child.result.timed_out = true;
    }
    kill_all();
  }
  return running;
}

bool RankProcesses::wait_for_stdout(int rank, const std::string& needle) {
  const Child& child = children_.at(static_cast<size_t>(rank));
  while (child.result.out.find(needle) == std::string::npos) {
    if (timed_out_ || !pump(std::chrono::milliseconds(20)))
      return child.result.out.find(needle) != std::string::npos;
    if (child.reaped && child.out_fd < 0) return child.result.out.find(needle) != std::string::npos;
  }
  return true;
}

LaunchResult RankProcesses::wait() {
  while (pump(std::chrono::milliseconds(20))) {
  }
  LaunchResult result;
  result.timed_out = timed_out_;
  for (const Child& child : children_) result.ranks.push_back(child.result);
  return result;
}

LaunchResult launch_ranks(const LaunchOptions& options) {
  RankProcesses job(options);
  if (!job.start()) {
    LaunchResult failed;
    failed.ranks.resize(static_cast<size_t>(options.world_size));
    return failed;
  }
  return job.wait();
}

}  // namespace pipescope::inject::testing
