// The NCCL API as libpipescope.so exports it: preloaded, these definitions come before
// libnccl's in symbol lookup, so the application's calls arrive here and go on to the real
// library (nccl_real.h) through NcclRecorder. Only the calls below are interposed; every other
// nccl* function goes straight to NCCL.
//
// <nccl.h> is included so that the compiler holds each definition to NCCL's own declaration: a
// signature that drifted from the header is an error here, not a corrupted call at run time.
#include <nccl.h>

#include "export.h"
#include "nccl_recorder.h"

namespace {
pipescope::inject::nccl::NcclRecorder& recorder() {
  return pipescope::inject::nccl::NcclRecorder::instance();
}
}  // namespace

PIPESCOPE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return recorder().comm_init_rank(comm, nranks, commId, rank);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                     int rank, ncclConfig_t* config) {
  return recorder().comm_init_rank_config(comm, nranks, commId, rank, config);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                       ncclUniqueId* commIds, ncclConfig_t* config) {
  return recorder().comm_init_rank_scalable(newcomm, nranks, myrank, nId, commIds, config);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return recorder().comm_init_all(comm, ndev, devlist);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                            ncclConfig_t* config) {
  return recorder().comm_split(comm, color, key, newcomm, config);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return recorder().comm_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
}

PIPESCOPE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return recorder().comm_finalize(comm); }

PIPESCOPE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return recorder().comm_destroy(comm); }

PIPESCOPE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return recorder().comm_abort(comm); }

PIPESCOPE_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return recorder().comm_revoke(comm, revokeFlags);
}

PIPESCOPE_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  return recorder().all_reduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return recorder().all_gather(sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                                cudaStream_t stream) {
  return recorder().reduce_scatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                            ncclDataType_t datatype, int root, ncclComm_t comm,
                                            cudaStream_t stream) {
  return recorder().broadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  return recorder().bcast(buff, count, datatype, root, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  return recorder().reduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return recorder().all_to_all(sendbuff, recvbuff, count, datatype, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  return recorder().gather(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  return recorder().scatter(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                       ncclComm_t comm, cudaStream_t stream) {
  return recorder().send(sendbuff, count, datatype, peer, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                       ncclComm_t comm, cudaStream_t stream) {
  return recorder().recv(recvbuff, count, datatype, peer, comm, stream);
}

PIPESCOPE_EXPORT ncclResult_t ncclGroupStart() { return recorder().group_start(); }

PIPESCOPE_EXPORT ncclResult_t ncclGroupEnd() { return recorder().group_end(); }

PIPESCOPE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return recorder().comm_get_async_error(comm, asyncError);
}
