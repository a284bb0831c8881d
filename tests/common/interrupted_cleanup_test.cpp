// The cleanup on interruption: what make_watched lists goes when one of the four signals ends the
// process, including a signal that comes while the path is being made. Each case runs in a forked
// child, which the signal ends.
#include "pipescope/common/interrupted_cleanup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace pipescope::interrupted_cleanup {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  Scratch() {
    std::string pattern = ::testing::TempDir() + "interrupted-cleanup-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::string& path() const { return path_; }
  bool empty() const { return fs::is_empty(path_); }

 private:
  std::string path_;
};

// The wait status of a child that ran `body` with SIGTERM at its default action, then exited 0.
int status_of_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// A private directory made with mkdtemp, holding one file, as the Kineto conversion's is.
bool make_dir_with_a_file(std::string& path) {
  if (mkdtemp(path.data()) == nullptr) return false;
  std::ofstream(path + "/rank-0.pst") << "converted";
  return true;
}

TEST(InterruptedCleanup, ASignalEndsTheProcessAndTakesWhatIsListedAlong) {
  Scratch scratch;
  const int status = status_of_child([&] {
    std::string dir = scratch.path() + "/pipescope-kineto-XXXXXX";
    std::string file = scratch.path() + "/.report.html.partial-1";
    if (!make_watched(dir, make_dir_with_a_file).made) _exit(3);
    if (!make_watched(file, [](std::string& path) {
           return static_cast<bool>(std::ofstream(path) << "x");
         }).made)
      _exit(3);
    kill(getpid(), SIGTERM);
    _exit(4);  // not reached: the signal ends the child
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(scratch.empty());
}

TEST(InterruptedCleanup, ASignalWhileThePathIsMadeIsHandledOnceItIsListed) {
  Scratch scratch;
  const int status = status_of_child([&] {
    std::string dir = scratch.path() + "/pipescope-kineto-XXXXXX";
    make_watched(dir, [](std::string& path) {
      const bool made = make_dir_with_a_file(path);
      kill(getpid(), SIGTERM);  // made, and not yet listed
      return made;
    });
    _exit(4);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(scratch.empty());
}

TEST(InterruptedCleanup, AHandlerOnAnotherThreadWaitsForTheListing) {
  Scratch scratch;
  const int status = status_of_child([&] {
    // Started before make_watched holds the signals in this thread, so it takes them.
    std::thread other([] {
      for (;;) pause();
    });
    other.detach();
    std::string dir = scratch.path() + "/pipescope-kineto-XXXXXX";
    make_watched(dir, [](std::string& path) {
      const bool made = make_dir_with_a_file(path);
      kill(getpid(), SIGTERM);  // delivered to the other thread, which must wait for the listing
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return made;
    });
    for (;;) pause();  // the handler on the other thread ends the process
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(scratch.empty());
}

TEST(InterruptedCleanup, WhatIsForgottenIsLeftAndAFailedMakeListsNothing) {
  Scratch scratch;
  const int status = status_of_child([&] {
    std::string kept = scratch.path() + "/report.html";
    const Made made =
        make_watched(kept, [](std::string& path) { return static_cast<bool>(std::ofstream(path)); });
    if (!made.made || made.slot == kNone) _exit(3);
    forget(made.slot);
    std::string missing = scratch.path() + "/no/such/dir-XXXXXX";
    const Made failed =
        make_watched(missing, [](std::string& path) { return mkdtemp(path.data()) != nullptr; });
    if (failed.made || failed.slot != kNone) _exit(5);
    kill(getpid(), SIGTERM);
    _exit(4);
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_TRUE(fs::exists(scratch.path() + "/report.html"));
}

TEST(InterruptedCleanup, ASignalInheritedAsIgnoredStaysIgnored) {
  Scratch scratch;
  const int status = status_of_child([&] {
    signal(SIGTERM, SIG_IGN);
    std::string file = scratch.path() + "/.trace.json.partial-1";
    if (!make_watched(file, [](std::string& path) { return static_cast<bool>(std::ofstream(path)); }).made)
      _exit(3);
    kill(getpid(), SIGTERM);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::exists(scratch.path() + "/.trace.json.partial-1"));
}

}  // namespace
}  // namespace pipescope::interrupted_cleanup
