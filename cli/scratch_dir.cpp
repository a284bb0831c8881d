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
  int error = 0;
  const auto made = interrupted_cleanup::make_watched(pattern, [&error](std::string& path) {
    if (mkdtemp(path.data()) != nullptr) return true;
    error = errno;
    return false;
  });
  if (!made.made)
    return Error("cannot create a temporary directory under " + pattern + ": " + std::strerror(error));
  const size_t slot = made.slot;
  cleanup = std::shared_ptr<void>(nullptr, [slot, path = pattern](void*) {
    // Removed before it is forgotten: a signal meanwhile finishes the removal.
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    interrupted_cleanup::forget(slot);
  });
  return pattern;
}

}  // namespace pipescope::cli
