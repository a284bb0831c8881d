#include "child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pipescope::cli {
namespace {

constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
constexpr int kLeftToChild[] = {SIGINT, SIGQUIT};

std::atomic<pid_t> g_child{0};

void forward_to_child(int sig) {
  const int saved_errno = errno;
  const pid_t child = g_child.load();
  if (child > 0) kill(child, sig);
  errno = saved_errno;
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildEnd run_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> env = c_strings(environment);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction forward {};
  forward.sa_handler = forward_to_child;
  forward.sa_flags = SA_RESTART;
  struct sigaction saved[2] = {};

  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "pipescope record: cannot start %s: %s\n", argv[0].c_str(), std::strerror(errno));
    return {};
  }
  if (child == 0) {
    execvpe(args[0], args.data(), env.data());
    const int err = errno;
    std::fprintf(stderr, "pipescope record: cannot run %s: %s\n", argv[0].c_str(), std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child.store(child);
  for (size_t i = 0; i < std::size(kLeftToChild); ++i) sigaction(kLeftToChild[i], &ignore, &saved[i]);
  for (const int sig : kForwardedSignals) sigaction(sig, &forward, nullptr);

  int status = 0;
  pid_t waited = -1;
  do {
    waited = waitpid(child, &status, 0);
  } while (waited < 0 && errno == EINTR);
  for (size_t i = 0; i < std::size(kLeftToChild); ++i) sigaction(kLeftToChild[i], &saved[i], nullptr);

  ChildEnd end;
  end.started = true;
  if (waited == child && WIFSIGNALED(status)) {
    end.signal = WTERMSIG(status);
  } else if (waited == child && WIFEXITED(status)) {
    end.exit_code = WEXITSTATUS(status);
  } else {
    end.exit_code = 1;
  }
  return end;
}

void end_like(const ChildEnd& end) {
  if (end.signal == 0) std::exit(end.exit_code);
  std::fflush(nullptr);
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigaction(end.signal, &fallback, nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, end.signal);
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(end.signal);
  // A signal whose default action does not end a process (SIGCHLD, ...): the shell convention.
  std::_Exit(128 + end.signal);
}

}  // namespace pipescope::cli
