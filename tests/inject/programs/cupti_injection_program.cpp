// Plays, in one process with libpipescope.so preloaded, the CUDA driver (it calls the library's
// InitializeInjection, as cuInit does when CUDA_INJECTION64_PATH names it) and a profiler linked
// against libcupti (it calls cuptiActivityRegisterCallbacks through the global scope, which the
// preloaded library interposes). With the argument "no-cuda" it skips the driver's part.
// Prints what each call returned; exits 7, a status of its own that must come through.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const bool cuda = !(argc > 1 && std::strcmp(argv[1], "no-cuda") == 0);
  if (cuda) {
    auto initialize = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "InitializeInjection"));
    if (initialize == nullptr) return 3;
    std::printf("InitializeInjection %d\n", initialize());
  }
  using Register = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  auto interposed = reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks"));
  // As PyTorch's libcupti is: a dependency of a module opened with RTLD_LOCAL.
  void* cupti = dlopen(CUPTI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  auto real =
      cupti != nullptr ? reinterpret_cast<Register>(dlsym(cupti, "cuptiActivityRegisterCallbacks")) : nullptr;
  if (interposed == nullptr || real == nullptr || interposed == real) return 4;
  // Null callbacks: CUPTI answers CUPTI_ERROR_INVALID_PARAMETER and changes nothing.
  const int through_pipescope = interposed(nullptr, nullptr);
  const int direct = real(nullptr, nullptr);
  std::printf("cuptiActivityRegisterCallbacks %d %d\n", through_pipescope, direct);
  return 7;
}
