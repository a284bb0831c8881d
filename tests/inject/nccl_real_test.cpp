// Finding the real NCCL: in a process without it nothing resolves (the interposed call then
// returns ncclSystemError), and a libnccl loaded with RTLD_LOCAL is found through the link map
// with its pnccl* twins. Runs in the preload test binary, which may load the real libnccl.so.2.
#include "nccl_real.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace pipescope::inject::nccl {
namespace {

TEST(NcclReal, ALibncclLoadedLocallyIsFoundWithItsStrongTwins) {
  void* nccl = dlopen(NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(nccl, nullptr) << dlerror();
  ASSERT_EQ(dlsym(RTLD_DEFAULT, "pncclAllReduce"), nullptr);  // out of the global scope, as under Python
  NcclLibrary library;
  const NcclFunctions* functions = library.functions();
  ASSERT_NE(functions, nullptr);
  EXPECT_EQ(reinterpret_cast<void*>(functions->all_reduce), dlsym(nccl, "pncclAllReduce"));
  EXPECT_EQ(reinterpret_cast<void*>(functions->comm_init_rank), dlsym(nccl, "pncclCommInitRank"));
  EXPECT_EQ(reinterpret_cast<void*>(functions->group_end), dlsym(nccl, "pncclGroupEnd"));
  EXPECT_EQ(reinterpret_cast<void*>(functions->comm_revoke), dlsym(nccl, "pncclCommRevoke"));
  EXPECT_EQ(reinterpret_cast<void*>(functions->comm_cu_device), dlsym(nccl, "pncclCommCuDevice"));
  // Without a driver there is no capture query: the question is skipped, not failed.
  EXPECT_EQ(library.stream_capture(reinterpret_cast<cudaStream_t>(0x10)), Capture::kUnknown);
  dlclose(nccl);
}

}  // namespace
}  // namespace pipescope::inject::nccl
