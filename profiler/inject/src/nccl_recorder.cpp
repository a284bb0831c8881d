#include "nccl_recorder.h"

#include <unistd.h>

#include <cstdlib>

#include "launcher_env.h"
#include "nccl_recorder_detail.h"

namespace pipescope::inject::nccl {

using namespace detail;  // the helpers of nccl_recorder_detail.h

uint32_t datatype_bytes(ncclDataType_t datatype) noexcept {
  switch (datatype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

NcclRecorder& NcclRecorder::instance() noexcept {
  // Never destroyed: NCCL calls may come from threads that outlive static destruction.
  static NcclRecorder* recorder = [] {
    const EnvLookup env = [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
    std::optional<int32_t> rank;
    try {
      rank = detect_launcher(env).rank;
    } catch (...) {
    }
    return new NcclRecorder(Session::instance(), NcclLibrary::instance(), *new CommRegistry(), rank);
  }();
  return *recorder;
}

NcclRecorder::NcclRecorder(Session& session, NcclLibrary& library, CommRegistry& registry,
                           std::optional<int32_t> launcher_rank) noexcept
    : session_(session), library_(library), registry_(registry), launcher_rank_(launcher_rank) {
  if (launcher_rank_) session_.ongoing_calls().set_global_rank(*launcher_rank_);
}

OngoingCalls::Ticket NcclRecorder::enter_operation(const OpCall& call, const Comm* comm, uint8_t flags,
                                                   const GroupState& group, uint64_t enter_ns, uint64_t bytes,
                                                   uint8_t datatype) noexcept {
  // The trace opens at the first call, so that a rank blocked in it still leaves one.
  if (!session_.is_open() && session_.thread_buffer(Activation::kNccl) == nullptr) return {};
  CallFacts facts;
  facts.kind = trace::NcclCallKind::kOperation;
  facts.what = static_cast<uint8_t>(call.op);
  facts.flags = flags;
  if (comm == nullptr) {
    facts.sequence = kNcclUnknownSequence;
  } else {
    facts.comm_id = comm->identity();
    facts.rank = comm->rank();
    facts.size = comm->size();
    if (call.op == NcclOpType::kSend || call.op == NcclOpType::kRecv) {
      facts.sequence =
          comm->peek_p2p(call.peer, call.op == NcclOpType::kSend ? P2pDirection::kSend : P2pDirection::kRecv);
    } else {
      facts.sequence = comm->peek_collective();
    }
  }
  facts.bytes = bytes;
  facts.enter_ns = enter_ns;
  facts.peer = call.peer;
  facts.group_id = group.group_id();
  facts.datatype = datatype;
  facts.reduce_op = call.reduce_op;
  // Grouped operations run at the group's end: they stay open until it returns.
  return session_.ongoing_calls().enter(facts, group.in_group());
}

OngoingCalls::Ticket NcclRecorder::enter_comm_call(NcclCommEvent event, const CommFacts& comm,
                                                   uint64_t enter_ns) noexcept {
  if (event == NcclCommEvent::kInit && comm.identity == 0) return {};  // ncclCommInitAll: waits on nobody
  if (!session_.wants(RecordKind::kNcclCall) || session_.thread_buffer(Activation::kNccl) == nullptr)
    return {};
  CallFacts facts;
  facts.kind = trace::NcclCallKind::kCommunicator;
  facts.what = static_cast<uint8_t>(event);
  facts.comm_id = comm.identity;
  facts.parent_comm_id = comm.parent_identity;
  facts.sequence = comm.split_index;
  facts.enter_ns = enter_ns;
  facts.peer = comm.color;
  facts.rank = comm.rank;
  facts.size = comm.size;
  const GroupState& group = this_thread_group();
  facts.group_id = group.group_id();
  if (group.in_group()) facts.flags = trace::kNcclFlagInGroup;
  // Communicators made in a group are made at its end.
  return session_.ongoing_calls().enter(facts, group.in_group());
}

void NcclRecorder::keep_pending(ncclComm_t comm, OngoingCalls::Ticket ticket) noexcept {
  try {
    std::lock_guard lock(pending_mutex_);
    pending_.push_back(PendingCall{handle_value(comm), ticket});
    any_pending_.store(true, std::memory_order_release);
  } catch (...) {
    left(ticket, 0, ncclInProgress);  // out of memory: closed now, as a call that returned
  }
}

void NcclRecorder::complete_pending(ncclComm_t comm, ncclResult_t result) noexcept {
  if (!any_pending_.load(std::memory_order_acquire)) return;
  std::vector<OngoingCalls::Ticket> done;
  {
    std::lock_guard lock(pending_mutex_);
    const uint64_t handle = handle_value(comm);
    for (const PendingCall& p : pending_)
      if (p.comm == handle) done.push_back(p.ticket);
    std::erase_if(pending_, [&](const PendingCall& p) { return p.comm == handle; });
    any_pending_.store(!pending_.empty(), std::memory_order_release);
  }
  const uint64_t now = Session::now_ns();
  for (const OngoingCalls::Ticket& ticket : done) {
    trace::NcclCallRecord returned;
    if (session_.ongoing_calls().release(ticket, returned)) write_returned(returned, now, result);
  }
}

ncclResult_t NcclRecorder::comm_get_async_error(ncclComm_t comm, ncclResult_t* async_error) noexcept {
  const NcclFunctions* functions = library_.functions();
  if (functions == nullptr || functions->comm_get_async_error == nullptr) return ncclSystemError;
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  const ncclResult_t result =
      forward(errno_keeper, group, [&] { return functions->comm_get_async_error(comm, async_error); });
  if (group.forwarding == 0 && result == ncclSuccess && async_error != nullptr &&
      *async_error != ncclInProgress)
    complete_pending(comm, *async_error);
  return result;
}

// `exit_ns`: when the call returned, 0 when the clock was not read (it is read only if needed).
void NcclRecorder::left(OngoingCalls::Ticket ticket, uint64_t exit_ns, ncclResult_t result) noexcept {
  trace::NcclCallRecord returned;
  if (session_.ongoing_calls().leave(ticket, returned))
    write_returned(returned, exit_ns != 0 ? exit_ns : Session::now_ns(), result);
}

void NcclRecorder::write_returned(trace::NcclCallRecord record, uint64_t exit_ns,
                                  ncclResult_t result) noexcept {
  trace::ThreadBuffer* buffer = session_.thread_buffer_if_open();
  if (buffer == nullptr) return;
  record.state = static_cast<uint8_t>(trace::NcclCallState::kReturned);
  record.at_ns = exit_ns;
  record.result = static_cast<int32_t>(result);
  buffer->append(record);
}

}  // namespace pipescope::inject::nccl
