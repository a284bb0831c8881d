// A module linked against the real libnccl.so.2, opened by nccl_local_program with RTLD_LOCAL as
// Python opens extension modules: libnccl comes in as its dependency, outside the global scope.
#include <nccl.h>

#include <cerrno>

// Creates a one-rank communicator. Each result and the errno each call left are returned.
extern "C" __attribute__((visibility("default"))) ncclResult_t nccl_local_module_init(
    ncclResult_t* get_id_result, int* get_id_errno, int* init_errno) {
  ncclUniqueId id;
  errno = 0;
  *get_id_result = ncclGetUniqueId(&id);
  *get_id_errno = errno;
  ncclComm_t comm = nullptr;
  errno = 0;
  const ncclResult_t result = ncclCommInitRank(&comm, 1, id, 0);
  *init_errno = errno;
  if (result == ncclSuccess) ncclCommDestroy(comm);
  return result;
}
