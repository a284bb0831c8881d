// The CUDA driver's injection entry point, and the CUPTI calls through which another tool takes
// CUPTI over. Only in libpipescope.so: these define exported symbols (exports.map: cupti*,
// InitializeInjection), which the unit tests' binaries must not carry.
//
// The preload constructor points CUDA_INJECTION64_PATH at this library, so the driver calls
// InitializeInjection while CUDA initializes: CUPTI is set up then, never in processes that do
// not use CUDA. The interposers see calls that other tools (the PyTorch profiler, JAX's
// profiler) make to libcupti: pipescope itself calls CUPTI only through its dlsym'd table, and
// libcupti binds its own calls internally (-Bsymbolic), so every call that lands here is
// someone else's. pipescope steps aside and forwards, returning CUPTI's result unchanged.
#include <cupti.h>

#include <atomic>
#include <cerrno>

#include "cupti_api.h"
#include "cupti_source.h"
#include "export.h"
#include "session.h"

namespace pipescope::inject {
namespace {

// Steps aside (cupti_source.cpp), then finds the real function. errno is the caller's again
// when the real function runs.
template <class Fn>
Fn take_over_and_find(const char* name, Fn self) noexcept {
  const int saved_errno = errno;
  cupti_taken_over(name);
  auto real = reinterpret_cast<Fn>(real_cupti_symbol(name));
  errno = saved_errno;
  return real == self ? nullptr : real;
}

}  // namespace
}  // namespace pipescope::inject

// The driver ignores the value on failure paths that matter to us, but CUPTI's samples return 1:
// the process must go on whatever happened to CUPTI (the trace says what).
PIPESCOPE_EXPORT int InitializeInjection(void) {
  static std::atomic<bool> initialized{false};
  if (initialized.exchange(true)) return 1;
  const int saved_errno = errno;
  (void)pipescope::inject::start_cupti_injection(pipescope::inject::Session::instance());
  errno = saved_errno;
  return 1;
}

PIPESCOPE_EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed) {
  auto real = pipescope::inject::take_over_and_find("cuptiActivityRegisterCallbacks",
                                                    &cuptiActivityRegisterCallbacks);
  return real != nullptr ? real(requested, completed) : CUPTI_ERROR_NOT_INITIALIZED;
}

PIPESCOPE_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                                     CUpti_CallbackFunc callback, void* userdata) {
  auto real = pipescope::inject::take_over_and_find("cuptiSubscribe", &cuptiSubscribe);
  return real != nullptr ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

PIPESCOPE_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                                        CUpti_CallbackFunc callback, void* userdata,
                                                        CUpti_SubscriberParams* params) {
  auto real = pipescope::inject::take_over_and_find("cuptiSubscribe_v2", &cuptiSubscribe_v2);
  return real != nullptr ? real(subscriber, callback, userdata, params) : CUPTI_ERROR_NOT_INITIALIZED;
}

PIPESCOPE_EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) {
  auto real = pipescope::inject::take_over_and_find("cuptiFinalize", &cuptiFinalize);
  return real != nullptr ? real() : CUPTI_ERROR_NOT_INITIALIZED;
}
