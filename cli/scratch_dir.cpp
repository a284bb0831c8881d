#include "scratch_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "pipescope/common/interrupted_cleanup.h"

namespace pipescope::cli {

Expected<std::string> make_scratch_dir(const std::string& tag, std::shared_ptr<void>& cleanup) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/pipescope-" + tag + "-XXXXXX";
  // Before the directory exists, so that no signal finds it made and not yet watched.
  interrupted_cleanup::install();
  if (mkdtemp(pattern.data()) == nullptr)
    return Error("cannot create a temporary directory under " + pattern + ": " + std::strerror(errno));
  const size_t slot = interrupted_cleanup::watch(pattern.c_str());
  cleanup = std::shared_ptr<void>(nullptr, [slot, path = pattern](void*) {
    // Removed before it is forgotten: a signal meanwhile finishes the removal.
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    interrupted_cleanup::forget(slot);
  });
  return pattern;
}

}  // namespace pipescope::cli
