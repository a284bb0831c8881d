// The NCCL ranks program as a loadable module that depends on libnccl.so.2, like a Python
// extension module (torch's libtorch_cuda.so) does. nccl_ranks_dlopen_program opens it.
#include "nccl_ranks.h"

extern "C" __attribute__((visibility("default"))) int nccl_ranks_module_main(int argc, char** argv) {
  return pipescope::test_programs::nccl_ranks_main(argc, argv);
}
