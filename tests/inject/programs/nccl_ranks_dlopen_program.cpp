// The NCCL ranks program reached the way Python reaches NCCL: this executable does not link
// libnccl; it opens a module that does with RTLD_LOCAL, so libnccl.so.2 comes in as a local
// dependency of that module and dlsym(RTLD_NEXT / RTLD_DEFAULT) cannot see its symbols.
// Arguments and output are nccl_ranks_program's (see nccl_ranks.h).
#include <dlfcn.h>

#include <cstdio>

#ifndef NCCL_RANKS_MODULE_PATH
#error "NCCL_RANKS_MODULE_PATH must name nccl_ranks_module.so"
#endif

int main(int argc, char** argv) {
  void* module = dlopen(NCCL_RANKS_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    std::fprintf(stderr, "nccl_ranks_dlopen: %s\n", dlerror());
    return 2;
  }
  // The point of this variant: the library is loaded but not in the global scope.
  if (dlsym(RTLD_DEFAULT, "fake_nccl_is_fake") != nullptr) {
    std::fprintf(stderr, "nccl_ranks_dlopen: libnccl.so.2 is visible globally; the variant tests nothing\n");
    return 2;
  }
  using Main = int (*)(int, char**);
  auto entry = reinterpret_cast<Main>(dlsym(module, "nccl_ranks_module_main"));
  if (entry == nullptr) {
    std::fprintf(stderr, "nccl_ranks_dlopen: %s\n", dlerror());
    return 2;
  }
  return entry(argc, argv);
}
