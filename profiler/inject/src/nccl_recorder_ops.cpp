// The NCCL operations (collectives and point-to-point) and groups: what each records.

#include "nccl_recorder.h"

#include "external_correlation.h"
#include "nccl_recorder_detail.h"

namespace pipescope::inject::nccl {

using namespace detail;  // the helpers of nccl_recorder_detail.h

template <class Call>
ncclResult_t NcclRecorder::record_op(const OpCall& call, Call&& real_call) noexcept {
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  // NCCL calling its own API: the outer call is the one recorded.
  if (group.forwarding > 0) return forward(errno_keeper, group, real_call);
  Comm* comm = registry_.find(handle_value(call.comm));
  if (comm != nullptr && comm->details_pending() && !group.in_group()) [[unlikely]] {
    learn_details(*comm);
  }
  const bool record = session_.wants(RecordKind::kNcclOp) && session_.capturing();
  uint8_t flags = group.in_group() ? trace::kNcclFlagInGroup : 0;
  uint64_t external_id = group.external_id();
  ExternalCorrelationHooks& hooks = external_correlation_hooks();
  bool pushed = false;
  if (record) {
    if (library_.stream_capture(call.stream) == Capture::kYes) flags |= trace::kNcclFlagGraphCapture;
    // Outside a group the kernels launch inside this call; inside one, mostly at ncclGroupEnd,
    // but what NCCL runs at once (a one-rank communicator's copy) launches here: the group's
    // id covers both.
    if (hooks.active.load(std::memory_order_acquire)) {
      if (!group.in_group()) external_id = next_external_correlation_id();
      if (external_id != 0) {
        hooks.push(external_id);
        pushed = true;
      }
    }
  }

  // The clock is read only for a record: it is most of the interposer's cost. Outside one the
  // flight recorder leaves the entry time 0: its first sighting by a flush bounds it.
  const uint64_t enter_ns = record ? Session::now_ns() : 0;
  // What both the flight record and the nccl_op record say of the call.
  const uint64_t bytes = static_cast<uint64_t>(call.count) * datatype_bytes(call.datatype);
  const uint8_t datatype = encode_datatype(call.datatype);
  OngoingCalls::Ticket ticket;
  if (session_.wants(RecordKind::kNcclCall))
    ticket = enter_operation(call, comm, flags, group, enter_ns, bytes, datatype);
  const ncclResult_t result = forward(errno_keeper, group, real_call);
  const uint64_t exit_ns = record ? Session::now_ns() : 0;
  if (pushed) hooks.pop();
  if (ticket) {
    if (result == ncclInProgress && !group.in_group()) {
      keep_pending(call.comm, ticket);  // a nonblocking communicator's: still running
    } else {
      left(ticket, exit_ns, result);
    }
  }

  // Numbers advance whether or not this call is recorded, so that a later capture window still
  // pairs; a call NCCL refused did not happen on the wire and takes none.
  const bool ok = succeeded(result);
  uint64_t sequence = kNcclUnknownSequence;
  if (comm != nullptr) {
    if (call.op == NcclOpType::kSend || call.op == NcclOpType::kRecv) {
      const P2pDirection direction = call.op == NcclOpType::kSend ? P2pDirection::kSend : P2pDirection::kRecv;
      sequence = ok ? comm->next_p2p(call.peer, direction) : comm->peek_p2p(call.peer, direction);
    } else {
      sequence = ok ? comm->next_collective() : comm->peek_collective();
    }
  }
  if (!record) return result;
  trace::ThreadBuffer* buffer = session_.thread_buffer(Activation::kNccl);
  if (buffer == nullptr) return result;

  auto op = trace::make_record<trace::NcclOpRecord>();
  op.device = comm != nullptr ? comm->device() : trace::kUnknownDevice;
  op.comm_id = comm != nullptr ? comm->identity() : 0;
  op.sequence = sequence;
  op.count = call.count;
  op.bytes = bytes;
  op.stream = reinterpret_cast<uintptr_t>(call.stream);
  op.host_enter_ns = enter_ns;
  op.host_exit_ns = exit_ns;
  op.external_correlation_id = external_id;
  op.peer = call.peer;
  op.thread_id = Session::thread_id();
  op.op = static_cast<uint8_t>(call.op);
  op.datatype = datatype;
  op.reduce_op = call.reduce_op;
  op.flags = static_cast<uint8_t>(flags | (ok ? 0 : trace::kNcclFlagFailed));
  op.group_id = group.group_id();
  buffer->append(op);
  return result;
}

#define PIPESCOPE_REAL_OR_FAIL(member, name)                \
  const auto function = real(&NcclFunctions::member, name); \
  if (function == nullptr) return ncclSystemError

ncclResult_t NcclRecorder::all_reduce(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(all_reduce, "ncclAllReduce");
  return record_op(
      {NcclOpType::kAllReduce, comm, stream, count, datatype, encode_reduce_op(op), trace::kNoPeer},
      [&] { return function(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

ncclResult_t NcclRecorder::all_gather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      ncclDataType_t datatype, ncclComm_t comm,
                                      cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(all_gather, "ncclAllGather");
  return record_op({NcclOpType::kAllGather, comm, stream, sendcount, datatype, kNoReduceOp, trace::kNoPeer},
                   [&] { return function(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

ncclResult_t NcclRecorder::reduce_scatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(reduce_scatter, "ncclReduceScatter");
  return record_op(
      {NcclOpType::kReduceScatter, comm, stream, recvcount, datatype, encode_reduce_op(op), trace::kNoPeer},
      [&] { return function(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

ncclResult_t NcclRecorder::broadcast(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(broadcast, "ncclBroadcast");
  return record_op({NcclOpType::kBroadcast, comm, stream, count, datatype, kNoReduceOp, root},
                   [&] { return function(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t NcclRecorder::bcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(bcast, "ncclBcast");
  return record_op({NcclOpType::kBroadcast, comm, stream, count, datatype, kNoReduceOp, root},
                   [&] { return function(buff, count, datatype, root, comm, stream); });
}

ncclResult_t NcclRecorder::reduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(reduce, "ncclReduce");
  return record_op({NcclOpType::kReduce, comm, stream, count, datatype, encode_reduce_op(op), root},
                   [&] { return function(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

ncclResult_t NcclRecorder::all_to_all(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclComm_t comm,
                                      cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(all_to_all, "ncclAlltoAll");
  return record_op({NcclOpType::kAllToAll, comm, stream, count, datatype, kNoReduceOp, trace::kNoPeer},
                   [&] { return function(sendbuff, recvbuff, count, datatype, comm, stream); });
}

ncclResult_t NcclRecorder::gather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(gather, "ncclGather");
  return record_op({NcclOpType::kGather, comm, stream, count, datatype, kNoReduceOp, root},
                   [&] { return function(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t NcclRecorder::scatter(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(scatter, "ncclScatter");
  return record_op({NcclOpType::kScatter, comm, stream, count, datatype, kNoReduceOp, root},
                   [&] { return function(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t NcclRecorder::send(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(send, "ncclSend");
  return record_op({NcclOpType::kSend, comm, stream, count, datatype, kNoReduceOp, peer},
                   [&] { return function(sendbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t NcclRecorder::recv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream) noexcept {
  PIPESCOPE_REAL_OR_FAIL(recv, "ncclRecv");
  return record_op({NcclOpType::kRecv, comm, stream, count, datatype, kNoReduceOp, peer},
                   [&] { return function(recvbuff, count, datatype, peer, comm, stream); });
}

// ---------------------------------------------------------------------------------------------
// Groups

ncclResult_t NcclRecorder::group_start() noexcept {
  PIPESCOPE_REAL_OR_FAIL(group_start, "ncclGroupStart");
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  const bool nested = group.forwarding > 0;
  const ncclResult_t result = forward(errno_keeper, group, function);
  if (nested || result != ncclSuccess) return result;
  uint64_t external_id = 0;
  ExternalCorrelationHooks& hooks = external_correlation_hooks();
  if (!group.in_group() && session_.wants(RecordKind::kNcclOp) &&
      hooks.active.load(std::memory_order_acquire)) {
    external_id = next_external_correlation_id();
  }
  group.started(external_id);
  return result;
}

ncclResult_t NcclRecorder::group_end() noexcept {
  PIPESCOPE_REAL_OR_FAIL(group_end, "ncclGroupEnd");
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  if (group.forwarding > 0) return forward(errno_keeper, group, function);
  // The grouped calls launch their kernels here: under the group's external id.
  const bool outermost = group.ending_outermost();
  ExternalCorrelationHooks& hooks = external_correlation_hooks();
  const bool push = outermost && group.external_id() != 0 && hooks.active.load(std::memory_order_acquire);
  if (push) hooks.push(group.external_id());
  const ncclResult_t result = forward(errno_keeper, group, function);
  if (push) hooks.pop();
  group.ended();
  if (outermost && session_.ongoing_calls().holds_calls()) {
    const uint64_t end_ns = Session::now_ns();
    session_.ongoing_calls().leave_held(
        [&](const trace::NcclCallRecord& call) { write_returned(call, end_ns, result); });
  }
  if (outermost) {
    // Communicators created in the group are complete once it ended (blocking ones); others
    // are asked at their first use.
    if (result == ncclSuccess) {
      for (Comm* comm : group.pending()) learn_details(*comm);
    }
    group.clear_pending();
  }
  return result;
}

}  // namespace pipescope::inject::nccl
