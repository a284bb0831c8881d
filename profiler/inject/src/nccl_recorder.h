// What each interposed NCCL call does around the real one: forward with the same arguments,
// return the same result with errno as the real call left it, and record the call — an
// nccl_comm record for creation and teardown, an nccl_op record for each collective and
// send/recv, with the communicator identity and sequence number that pair it across ranks.
//
// The exported `nccl*` definitions (nccl_interpose.cpp, in libpipescope.so only) are one line
// each into NcclRecorder::instance(). Tests and the benchmark build their own recorder over a
// test Session, their own registry and an NcclLibrary of stand-in functions.
//
// Communicators whose rank and size NCCL cannot report yet — created inside a group, or
// nonblocking (`config->blocking = 0`, the call returns ncclInProgress) — are asked later: at the
// outermost ncclGroupEnd that succeeds, else at their first use outside a group, after
// ncclCommGetAsyncError says ncclSuccess (NCCL itself checks the same before each operation).
// Their nccl_comm record is written then, with the creation call's times. Until then ops
// carry comm_id and sequence (known at creation) but device kUnknownDevice.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "nccl_comms.h"
#include "nccl_real.h"
#include "session.h"

namespace pipescope::inject::nccl {

// Bytes of one element of `datatype`; 0 for a type this build does not know.
uint32_t datatype_bytes(ncclDataType_t datatype) noexcept;

class NcclRecorder {
 public:
  // The process's, over Session::instance() and the loaded NCCL.
  static NcclRecorder& instance() noexcept;

  // `launcher_rank`: the process's rank in the job from its launcher, if known (else the rank of
  // the first communicator created with ncclCommInitRank* stands in).
  NcclRecorder(Session& session, NcclLibrary& library, CommRegistry& registry,
               std::optional<int32_t> launcher_rank) noexcept;
  NcclRecorder(const NcclRecorder&) = delete;
  NcclRecorder& operator=(const NcclRecorder&) = delete;

  // Creation and teardown.
  ncclResult_t comm_init_rank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) noexcept;
  ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank,
                                     ncclConfig_t* config) noexcept;
  ncclResult_t comm_init_rank_scalable(ncclComm_t* comm, int nranks, int rank, int id_count,
                                       ncclUniqueId* comm_ids, ncclConfig_t* config) noexcept;
  ncclResult_t comm_init_all(ncclComm_t* comms, int ndev, const int* devlist) noexcept;
  ncclResult_t comm_split(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                          ncclConfig_t* config) noexcept;
  ncclResult_t comm_shrink(ncclComm_t comm, int* exclude_ranks, int exclude_count, ncclComm_t* newcomm,
                           ncclConfig_t* config, int shrink_flags) noexcept;
  ncclResult_t comm_finalize(ncclComm_t comm) noexcept;
  ncclResult_t comm_destroy(ncclComm_t comm) noexcept;
  ncclResult_t comm_abort(ncclComm_t comm) noexcept;
  ncclResult_t comm_revoke(ncclComm_t comm, int revoke_flags) noexcept;

  // Collectives and point-to-point.
  ncclResult_t all_reduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t all_gather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t broadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         int root, ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t bcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                     cudaStream_t stream) noexcept;
  ncclResult_t reduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                      ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t all_to_all(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t gather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                      ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t scatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream) noexcept;
  ncclResult_t send(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                    cudaStream_t stream) noexcept;
  ncclResult_t recv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                    cudaStream_t stream) noexcept;

  // Groups.
  ncclResult_t group_start() noexcept;
  ncclResult_t group_end() noexcept;

  // A nonblocking communicator's state: operations that returned ncclInProgress on it stay in
  // flight until this says they completed or failed.
  ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* async_error) noexcept;

  const CommRegistry& registry() const noexcept { return registry_; }

 private:
  struct OpCall {
    trace::NcclOpType op;
    ncclComm_t comm;
    cudaStream_t stream;
    size_t count;
    ncclDataType_t datatype;
    uint8_t reduce_op;  // 0xFF: the op does not reduce
    int32_t peer;       // send/recv peer, root, or kNoPeer
  };
  template <class Fn>
  Fn real(Fn NcclFunctions::*member, const char* name) noexcept;
  template <class Call>
  ncclResult_t record_op(const OpCall& call, Call&& real_call) noexcept;
  template <class Call>
  ncclResult_t record_teardown(trace::NcclCommEvent event, ncclComm_t handle, Call&& real_call) noexcept;
  // A creation call; `after(facts, result)` describes and registers what it made.
  // `facts`: what the arguments say, known before the call (the flight record's identity).
  template <class Call, class After>
  ncclResult_t record_creation(CommFacts facts, Call&& real_call, After&& after) noexcept;
  CommFacts described_init_rank(std::span<const std::byte> ids, int rank, int nranks) noexcept;

  // The flight recorder (ongoing_calls.h): a call is published when entered and, if a flush
  // wrote it in flight meanwhile, completed by a kReturned record when it returns.
  OngoingCalls::Ticket enter_operation(const OpCall& call, const Comm* comm, uint8_t flags,
                                       const GroupState& group, uint64_t enter_ns, uint64_t bytes,
                                       uint8_t datatype) noexcept;
  OngoingCalls::Ticket enter_comm_call(trace::NcclCommEvent event, const CommFacts& facts,
                                       uint64_t enter_ns) noexcept;
  void left(OngoingCalls::Ticket ticket, uint64_t exit_ns, ncclResult_t result) noexcept;
  // Calls on nonblocking communicators that returned ncclInProgress: open until their
  // communicator's async state settles (or it is torn down). Rare: a lock is fine here.
  void keep_pending(ncclComm_t comm, OngoingCalls::Ticket ticket) noexcept;
  void complete_pending(ncclComm_t comm, ncclResult_t result) noexcept;
  void write_returned(trace::NcclCallRecord record, uint64_t exit_ns, ncclResult_t result) noexcept;
  // The communicator a split or shrink starts from, its details learned if NCCL can say them.
  Comm* parent_of_new_comm(ncclComm_t handle) noexcept;

  // After a creation call returned: registers the communicator, asks NCCL what the arguments
  // did not say when it can, and writes the creation record (or the failed call's).
  void created(ncclComm_t* out, CommFacts facts, ncclResult_t result) noexcept;
  void learn_details(Comm& comm) noexcept;
  void report_creation(Comm& comm) noexcept;
  void report_failed_creation(const CommFacts& facts) noexcept;
  void write_comm_record(trace::NcclCommEvent event, uint64_t start_ns, uint64_t end_ns, const Comm* comm,
                         const CommFacts* facts) noexcept;
  void learn_process_rank(int32_t rank, int32_t size) noexcept;
  int32_t global_rank() const noexcept;

  Session& session_;
  NcclLibrary& library_;
  CommRegistry& registry_;
  const std::optional<int32_t> launcher_rank_;
  struct PendingCall {
    uint64_t comm;
    OngoingCalls::Ticket ticket;
  };
  std::mutex pending_mutex_;
  std::vector<PendingCall> pending_;
  std::atomic<bool> any_pending_{false};
  std::atomic<int32_t> learned_rank_{-1};
  std::atomic<bool> rank_learned_{false};
};

}  // namespace pipescope::inject::nccl
