// Collectives, point-to-point calls and the small helpers around them in the fake NCCL. They
// check their arguments the way NCCL does (live communicator, known type and operation, root
// or peer inside the communicator), log the call, and move no data.
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "fake_state.h"
#include "op_rendezvous.h"

namespace pipescope::fake_nccl {
namespace {

// Reduction operators made by ncclRedOpCreatePreMulSum and not yet destroyed.
struct CustomOps {
  std::mutex mutex;
  std::set<int> live;
  int next = ncclNumOps;
};
CustomOps& custom_ops() {
  static CustomOps* instance = new CustomOps;
  return *instance;
}

bool known_op(ncclRedOp_t op) {
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < ncclNumOps) return true;
  std::lock_guard lock(custom_ops().mutex);
  return custom_ops().live.count(op) != 0;
}

// `rank_arg` is the root or peer, when the call has one.
ncclResult_t check_op(const ncclComm* comm, const char* function, ncclDataType_t type, bool reduces,
                      ncclRedOp_t op, std::optional<int> rank_arg) {
  if (ncclResult_t rc = check_usable(comm, function); rc != ncclSuccess) return rc;
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= ncclNumTypes)
    return fail(ncclInvalidArgument, std::string(function) + ": bad datatype");
  if (reduces && !known_op(op))
    return fail(ncclInvalidArgument, std::string(function) + ": bad reduction op");
  if (rank_arg && (*rank_arg < 0 || *rank_arg >= comm->size)) {
    return fail(ncclInvalidArgument, std::string(function) + ": root/peer " + std::to_string(*rank_arg) +
                                         " outside a communicator of " + std::to_string(comm->size));
  }
  return ncclSuccess;
}

// A valid call waits for its counterparts when FAKE_NCCL_WAIT asks for it (op_rendezvous.h).
ncclResult_t meet(ncclResult_t rc, ncclComm* comm, const char* function) {
  return rc == ncclSuccess && waiting_enabled() ? arrive_collective(comm, function) : rc;
}
ncclResult_t meet_p2p(ncclResult_t rc, ncclComm* comm, bool send, int peer, const char* function) {
  return rc == ncclSuccess && waiting_enabled() ? arrive_p2p(comm, send, peer, function) : rc;
}

constexpr ncclRedOp_t kNoOp = ncclSum;
constexpr std::nullopt_t kNoRank = std::nullopt;

}  // namespace
}  // namespace pipescope::fake_nccl

using namespace pipescope::fake_nccl;

FAKE_NCCL_API ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclAllReduce", datatype, true, op, kNoRank), comm, "ncclAllReduce");
  log_call(describe_all_reduce(sendbuff, recvbuff, count, datatype, op, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclAllGather", datatype, false, kNoOp, kNoRank), comm, "ncclAllGather");
  log_call(describe_unrooted("ncclAllGather", sendbuff, recvbuff, sendcount, datatype, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclAlltoAll", datatype, false, kNoOp, kNoRank), comm, "ncclAlltoAll");
  log_call(describe_unrooted("ncclAlltoAll", sendbuff, recvbuff, count, datatype, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclReduceScatter", datatype, true, op, kNoRank), comm, "ncclReduceScatter");
  log_call(describe_reduce_scatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclBroadcast", datatype, false, kNoOp, root), comm, "ncclBroadcast");
  log_call(describe_rooted("ncclBroadcast", sendbuff, recvbuff, count, datatype, root, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  const ncclResult_t rc = meet(check_op(comm, "ncclBcast", datatype, false, kNoOp, root), comm, "ncclBcast");
  log_call(describe_bcast(buff, count, datatype, root, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  const ncclResult_t rc = meet(check_op(comm, "ncclReduce", datatype, true, op, root), comm, "ncclReduce");
  log_call(describe_reduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclGather", datatype, false, kNoOp, root), comm, "ncclGather");
  log_call(describe_rooted("ncclGather", sendbuff, recvbuff, count, datatype, root, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  const ncclResult_t rc =
      meet(check_op(comm, "ncclScatter", datatype, false, kNoOp, root), comm, "ncclScatter");
  log_call(describe_rooted("ncclScatter", sendbuff, recvbuff, count, datatype, root, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  const ncclResult_t rc =
      meet_p2p(check_op(comm, "ncclSend", datatype, false, kNoOp, peer), comm, true, peer, "ncclSend");
  log_call(describe_p2p("ncclSend", sendbuff, count, datatype, peer, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                     ncclComm_t comm, cudaStream_t stream) {
  const ncclResult_t rc =
      meet_p2p(check_op(comm, "ncclRecv", datatype, false, kNoOp, peer), comm, false, peer, "ncclRecv");
  log_call(describe_p2p("ncclRecv", recvbuff, count, datatype, peer, comm, stream, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                     ncclScalarResidence_t residence, ncclComm_t comm) {
  ncclResult_t rc = check_usable(comm, "ncclRedOpCreatePreMulSum");
  if (rc == ncclSuccess && (op == nullptr || scalar == nullptr))
    rc = fail(ncclInvalidArgument, "NULL op or scalar");
  if (rc == ncclSuccess) {
    std::lock_guard lock(custom_ops().mutex);
    *op = static_cast<ncclRedOp_t>(custom_ops().next++);
    custom_ops().live.insert(*op);
  }
  log_call(CallText("ncclRedOpCreatePreMulSum")
               .ptr("op", op)
               .ptr("scalar", scalar)
               .num("datatype", datatype)
               .num("residence", residence)
               .ptr("comm", comm)
               .result(rc)
               .str());
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  ncclResult_t rc = check_usable(comm, "ncclRedOpDestroy");
  if (rc == ncclSuccess) {
    std::lock_guard lock(custom_ops().mutex);
    if (custom_ops().live.erase(op) == 0) rc = fail(ncclInvalidArgument, "not a custom reduction op");
  }
  log_call(CallText("ncclRedOpDestroy").num("op", op).ptr("comm", comm).result(rc).str());
  return rc;
}

// Host memory stands in for device memory: nothing ever reads it.
FAKE_NCCL_API ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  ncclResult_t rc = ncclSuccess;
  if (ptr == nullptr) {
    rc = fail(ncclInvalidArgument, "ptr is NULL");
  } else if ((*ptr = std::malloc(size == 0 ? 1 : size)) == nullptr) {
    rc = fail(ncclSystemError, "out of memory");
  }
  log_call(
      CallText("ncclMemAlloc").ptr("ptr", ptr).num("size", static_cast<long long>(size)).result(rc).str());
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclMemFree(void* ptr) {
  const std::string line = CallText("ncclMemFree").ptr("ptr", ptr).result(ncclSuccess).str();
  std::free(ptr);
  log_call(line);
  return ncclSuccess;
}

FAKE_NCCL_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  ncclResult_t rc = check_usable(comm, "ncclCommRegister");
  if (rc == ncclSuccess && handle == nullptr) rc = fail(ncclInvalidArgument, "handle is NULL");
  if (rc == ncclSuccess) *handle = buff;
  log_call(CallText("ncclCommRegister")
               .ptr("comm", comm)
               .ptr("buff", buff)
               .num("size", static_cast<long long>(size))
               .ptr("handle", handle)
               .result(rc)
               .str());
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  const ncclResult_t rc = check_usable(comm, "ncclCommDeregister");
  log_call(CallText("ncclCommDeregister").ptr("comm", comm).ptr("handle", handle).result(rc).str());
  return rc;
}

FAKE_NCCL_WEAK_ALIAS(ncclAllReduce);
FAKE_NCCL_WEAK_ALIAS(ncclAllGather);
FAKE_NCCL_WEAK_ALIAS(ncclAlltoAll);
FAKE_NCCL_WEAK_ALIAS(ncclReduceScatter);
FAKE_NCCL_WEAK_ALIAS(ncclBroadcast);
FAKE_NCCL_WEAK_ALIAS(ncclBcast);
FAKE_NCCL_WEAK_ALIAS(ncclReduce);
FAKE_NCCL_WEAK_ALIAS(ncclGather);
FAKE_NCCL_WEAK_ALIAS(ncclScatter);
FAKE_NCCL_WEAK_ALIAS(ncclSend);
FAKE_NCCL_WEAK_ALIAS(ncclRecv);
FAKE_NCCL_WEAK_ALIAS(ncclRedOpCreatePreMulSum);
FAKE_NCCL_WEAK_ALIAS(ncclRedOpDestroy);
FAKE_NCCL_WEAK_ALIAS(ncclMemAlloc);
FAKE_NCCL_WEAK_ALIAS(ncclMemFree);
FAKE_NCCL_WEAK_ALIAS(ncclCommRegister);
FAKE_NCCL_WEAK_ALIAS(ncclCommDeregister);
