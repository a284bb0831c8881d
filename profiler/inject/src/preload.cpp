// The library's load-time work, in every process it is preloaded into: read the configuration,
// point the CUDA and NVTX injection variables at this library (so that CUDA and NVTX come to
// it when, and only when, the process uses them), and make forked children forget the parent's
// trace. Nothing here opens a file, starts a thread or loads another library.
#include <pthread.h>
#include <stdlib.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "export.h"
#include "loaded_library.h"
#include "session.h"

namespace pipescope::inject {
namespace {

// Sets `variable` to this library unless another tool already owns it; that tool keeps it and
// the trace says what was lost.
void claim_injection_variable(Session& session, const char* variable, const std::string& self,
                              const char* lost) {
  const char* current = std::getenv(variable);
  if (current == nullptr || current[0] == '\0') {
    setenv(variable, self.c_str(), 1);
    return;
  }
  char resolved[PATH_MAX];
  const std::string current_path = realpath(current, resolved) != nullptr ? resolved : current;
  if (current_path == self) return;
  session.notice(trace::NoticeCode::kInjectionConflict, 0,
                 std::string(variable) + " is set to " + current + " by another tool; " + lost);
}

void pause_flusher() { Session::instance().pause_flusher_for_fork(); }
void resume_flusher() { Session::instance().resume_flusher_after_fork(); }
void forget_parent_trace() { Session::instance().abandon_after_fork(); }

__attribute__((constructor)) void on_load() {
  Session& session = Session::instance();
  if (session.config().disabled) return;
  const std::string self_path = path_of_object_containing(reinterpret_cast<const void*>(&on_load));
  char resolved[PATH_MAX];
  const std::string self = realpath(self_path.c_str(), resolved) != nullptr ? resolved : self_path;
  if (!self.empty()) {
    claim_injection_variable(session, "CUDA_INJECTION64_PATH", self,
                             "kernels, copies, memory and synchronization are not captured");
    claim_injection_variable(session, "NVTX_INJECTION64_PATH", self, "NVTX ranges are not captured");
  }
  pthread_atfork(pause_flusher, resume_flusher, forget_parent_trace);
}

__attribute__((destructor)) void on_unload() { Session::instance().finish(); }

}  // namespace
}  // namespace pipescope::inject

// Lets a program (or a test) ask whether the library is loaded and where it writes.
PIPESCOPE_EXPORT const char* pipescope_version() { return PIPESCOPE_VERSION_STRING; }
