// What an interruption must not leave behind: a command's temporary output files (OutputFile,
// while one is written) and its private directories (converted Kineto traces). Each is listed
// here while it exists; the first listing installs a handler for SIGINT, SIGTERM, SIGHUP and
// SIGPIPE (Ctrl-C, a kill, a closed terminal, `pipescope report | head`) that removes those listed
// with system calls alone, then lets the signal end the process as it would have. A signal the
// process inherited as ignored stays ignored.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace pipescope::interrupted_cleanup {

constexpr size_t kNone = static_cast<size_t>(-1);

struct Made {
  bool made = false;    // whether `make` made the path
  size_t slot = kNone;  // its listing; kNone when nothing was made or all slots are taken
};

// Makes a file, or a flat directory (files and links, no subdirectories), and lists it in one
// step, so that no signal finds it made and not yet listed: `make` creates `path` (it may rewrite
// it, as mkdtemp does) and says whether it did. Meanwhile the four signals wait in this thread,
// and a handler that runs on another thread waits for the listing. With every slot taken the
// path is made but not cleaned up on an interruption. Not for signal handlers.
Made make_watched(std::string& path, const std::function<bool(std::string& path)>& make);

// Takes the path of `slot` off the list (it has been removed, or is to be kept).
void forget(size_t slot) noexcept;

}  // namespace pipescope::interrupted_cleanup
