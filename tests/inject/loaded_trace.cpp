#include "loaded_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

namespace pipescope::inject::testing {
namespace {

// The directories make_temp_dir() made in this process (not in a forked child, whose own list
// this is not), removed after the last test when all passed.
class TempDirs final : public ::testing::Environment {
 public:
  void add(std::string path) {
    std::lock_guard lock(mutex_);
    paths_.emplace_back(getpid(), std::move(path));
  }

  void TearDown() override {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    std::lock_guard lock(mutex_);
    for (const auto& [pid, path] : paths_) {
      std::error_code ignored;
      if (pid == getpid()) std::filesystem::remove_all(path, ignored);
    }
    paths_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<pid_t, std::string>> paths_;
};

// Registered before main() runs the tests, as gtest asks of an environment; gtest owns it.
TempDirs* const g_temp_dirs = static_cast<TempDirs*>(::testing::AddGlobalTestEnvironment(new TempDirs));

}  // namespace

LoadedTrace load_trace(const std::string& path) {
  auto loaded = read_trace(path);
  if (!loaded.ok()) {
    ADD_FAILURE() << loaded.error().message;
    LoadedTrace empty;
    empty.path = path;
    return empty;
  }
  return std::move(*loaded);
}

LoadedTrace trace_in(const std::string& dir) {
  const std::vector<std::string> files = trace_files_in(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? LoadedTrace{} : load_trace(files[0]);
}

std::string make_temp_dir(const std::string& tag) {
  std::string pattern = ::testing::TempDir() + "pipescope-" + tag + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern;
    return pattern;
  }
  g_temp_dirs->add(pattern);
  return pattern;
}

}  // namespace pipescope::inject::testing
