// Temporary output files that an interruption (Ctrl-C, SIGTERM, SIGHUP) must not leave behind:
// OutputFile lists each one here while it is being written, and the first listing installs a
// handler that removes those listed, then lets the signal end the process as it would have.
#pragma once

#include <cstddef>

namespace pipescope::exporter::interrupted_outputs {

// A slot for `path`, or kNone when all are taken (the file is then only not cleaned up on an
// interruption). Not for signal handlers.
constexpr size_t kNone = static_cast<size_t>(-1);
size_t watch(const char* path) noexcept;
void forget(size_t slot) noexcept;

}  // namespace pipescope::exporter::interrupted_outputs
