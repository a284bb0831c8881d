// Opens nccl_local_module with RTLD_LOCAL (as Python does) and reports what NCCL returned, so
// that a test can compare a run under the preloaded library with a run without it.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

using InitFn = ncclResult_t (*)(ncclResult_t*, int*, int*);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODULE\n", argv[0]);
    return 2;
  }
  void* module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", argv[1], dlerror());
    return 3;
  }
  // libnccl must be out of the global scope, or the test would not test the RTLD_LOCAL case.
  std::printf("nccl in global scope: %s\n",
              dlsym(RTLD_DEFAULT, "pncclGetUniqueId") != nullptr ? "yes" : "no");
  auto init = reinterpret_cast<InitFn>(dlsym(module, "nccl_local_module_init"));
  if (init == nullptr) return 4;
  ncclResult_t get_id_result = ncclInternalError;
  int get_id_errno = -1;
  int init_errno = -1;
  const ncclResult_t result = init(&get_id_result, &get_id_errno, &init_errno);
  std::printf("ncclGetUniqueId: %d errno %d\n", get_id_result, get_id_errno);
  std::printf("ncclCommInitRank: %d errno %d\n", result, init_errno);
  return 0;
}
