// What an interruption must not leave behind: a command's temporary output files (OutputFile,
// while one is written) and its private directories (converted Kineto traces). Each is listed
// here while it exists; the first listing installs a handler for SIGINT, SIGTERM, SIGHUP and
// SIGPIPE (Ctrl-C, a kill, a closed terminal, `pipescope report | head`) that removes those listed
// with system calls alone, then lets the signal end the process as it would have. A signal the
// process inherited as ignored stays ignored.
#pragma once

#include <cstddef>

namespace pipescope::interrupted_cleanup {

// Installs the handler now (watch() does too): call it before creating what is to be watched, so
// that no signal finds the path made and not yet listed.
void install() noexcept;

// A slot for `path`: a file, or a flat directory (files and links, no subdirectories) removed
// with what it holds. kNone when all are taken (the path is then only not cleaned up on an
// interruption). Not for signal handlers.
constexpr size_t kNone = static_cast<size_t>(-1);
size_t watch(const char* path) noexcept;
void forget(size_t slot) noexcept;

}  // namespace pipescope::interrupted_cleanup
