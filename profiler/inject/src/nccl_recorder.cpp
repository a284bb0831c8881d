#include "nccl_recorder.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "external_correlation.h"
#include "launcher_env.h"

namespace pipescope::inject::nccl {
namespace {

using trace::NcclCommEvent;
using trace::NcclOpType;
using trace::RecordKind;

constexpr uint8_t kNoReduceOp = 0xFF;

bool succeeded(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }

uint8_t encode_reduce_op(ncclRedOp_t op) {
  // Built-in ops are 0..4; ncclRedOpCreatePreMulSum hands out small numbers after them.
  const auto value = static_cast<int64_t>(op);
  return value >= 0 && value < kNoReduceOp ? static_cast<uint8_t>(value) : uint8_t{0xFE};
}

uint8_t encode_datatype(ncclDataType_t datatype) {
  const auto value = static_cast<int64_t>(datatype);
  return value >= 0 && value <= 0xFF ? static_cast<uint8_t>(value) : uint8_t{0xFF};
}

uint64_t handle_value(ncclComm_t comm) { return reinterpret_cast<uintptr_t>(comm); }

void warn_once(std::atomic<bool>& said, const char* message) {
  if (!said.exchange(true)) std::fprintf(stderr, "pipescope: %s\n", message);
}

// Keeps the caller's errno around our own work, and hands back what the real call left.
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  void before_forward() const { errno = saved_; }
  void after_forward() { saved_ = errno; }
  ~ErrnoKeeper() { errno = saved_; }

 private:
  int saved_;
};

// The real call, with errno as the caller left it going in and as the call left it coming out,
// marked as NCCL's own time so that calls NCCL makes into its API are not recorded again.
template <class Call>
ncclResult_t forward(ErrnoKeeper& errno_keeper, GroupState& group, Call&& call) {
  ++group.forwarding;
  errno_keeper.before_forward();
  const ncclResult_t result = call();
  errno_keeper.after_forward();
  --group.forwarding;
  return result;
}

}  // namespace

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

template <class Fn>
Fn NcclRecorder::real(Fn NcclFunctions::*member, const char* name) noexcept {
  const NcclFunctions* functions = library_.functions();
  if (functions == nullptr) return nullptr;  // resolve() said so
  Fn function = functions->*member;
  if (function == nullptr) [[unlikely]] {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      const ErrnoKeeper errno_keeper;
      std::fprintf(stderr,
                   "pipescope: %s is not in the loaded NCCL library; the call returns ncclSystemError\n",
                   name);
    }
  }
  return function;
}

// ---------------------------------------------------------------------------------------------
// Operations

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

// ---------------------------------------------------------------------------------------------
// Creation

template <class Call, class After>
ncclResult_t NcclRecorder::record_creation(CommFacts facts, Call&& real_call, After&& after) noexcept {
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  if (group.forwarding > 0) return forward(errno_keeper, group, real_call);
  facts.start_ns = Session::now_ns();
  const OngoingCalls::Ticket ticket = enter_comm_call(facts.event, facts, facts.start_ns);
  const ncclResult_t result = forward(errno_keeper, group, real_call);
  facts.end_ns = Session::now_ns();
  if (ticket) left(ticket, facts.end_ns, result);
  after(facts, result);
  return result;
}

// ncclCommInitRank and its variants: the arguments say rank and size; the ids say which.
CommFacts NcclRecorder::described_init_rank(std::span<const std::byte> ids, int rank, int nranks) noexcept {
  CommFacts facts;
  facts.identity = identity_of_unique_ids(ids);
  facts.rank = rank;
  facts.size = nranks;
  facts.peer_capacity = nranks > 0 ? static_cast<uint32_t>(nranks) : 0;
  learn_process_rank(rank, nranks);
  return facts;
}

Comm* NcclRecorder::parent_of_new_comm(ncclComm_t handle) noexcept {
  GroupState& group = this_thread_group();
  if (group.forwarding > 0) return nullptr;
  Comm* parent = registry_.find(handle_value(handle));
  if (parent != nullptr && parent->details_pending() && !group.in_group()) learn_details(*parent);
  return parent;
}

ncclResult_t NcclRecorder::comm_init_rank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id,
                                          int rank) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_init_rank, "ncclCommInitRank");
  return record_creation(
      described_init_rank(std::as_bytes(std::span(comm_id.internal)), rank, nranks),
      [&] { return function(comm, nranks, comm_id, rank); },
      [&](CommFacts& facts, ncclResult_t result) { created(comm, facts, result); });
}

ncclResult_t NcclRecorder::comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank,
                                                 ncclConfig_t* config) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_init_rank_config, "ncclCommInitRankConfig");
  return record_creation(
      described_init_rank(std::as_bytes(std::span(comm_id.internal)), rank, nranks),
      [&] { return function(comm, nranks, comm_id, rank, config); },
      [&](CommFacts& facts, ncclResult_t result) { created(comm, facts, result); });
}

ncclResult_t NcclRecorder::comm_init_rank_scalable(ncclComm_t* comm, int nranks, int rank, int id_count,
                                                   ncclUniqueId* comm_ids, ncclConfig_t* config) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_init_rank_scalable, "ncclCommInitRankScalable");
  const size_t ids = comm_ids != nullptr && id_count > 0 ? static_cast<size_t>(id_count) : 0;
  return record_creation(
      described_init_rank(std::as_bytes(std::span(comm_ids, ids)), rank, nranks),
      [&] { return function(comm, nranks, rank, id_count, comm_ids, config); },
      [&](CommFacts& facts, ncclResult_t result) { created(comm, facts, result); });
}

ncclResult_t NcclRecorder::comm_init_all(ncclComm_t* comms, int ndev, const int* devlist) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_init_all, "ncclCommInitAll");
  // One process holds every member: it waits on nobody, so no flight record (identity 0).
  return record_creation(
      CommFacts{}, [&] { return function(comms, ndev, devlist); },
      [&](CommFacts& facts, ncclResult_t result) {
        char host[256] = {};
        if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
        facts.identity = identity_of_init_all(host, getpid(), registry_.next_init_all_index());
        facts.size = ndev;
        facts.peer_capacity = ndev > 0 ? static_cast<uint32_t>(ndev) : 0;
        if (!succeeded(result) || comms == nullptr) {
          created(comms, facts, result);
          return;
        }
        // One process holds every member: member i is rank i, on devlist[i] (or device i).
        for (int i = 0; i < ndev; ++i) {
          CommFacts member = facts;
          member.rank = i;
          member.device = static_cast<uint32_t>(devlist != nullptr ? devlist[i] : i);
          created(&comms[i], member, result);
        }
      });
}

ncclResult_t NcclRecorder::comm_split(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                      ncclConfig_t* config) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_split, "ncclCommSplit");
  Comm* parent = parent_of_new_comm(comm);
  // Every member calls split on the parent, NOCOLOR members too: all count it.
  const uint32_t split_index = parent != nullptr ? parent->next_split_index() : 0;
  CommFacts split;
  split.event = NcclCommEvent::kSplit;
  split.parent_identity = parent != nullptr ? parent->identity() : 0;
  // NOCOLOR members take part in the split but get no communicator: identity 0 in the flight record.
  split.identity =
      color == NCCL_SPLIT_NOCOLOR ? 0 : identity_of_split(split.parent_identity, color, split_index);
  split.color = color == NCCL_SPLIT_NOCOLOR ? -1 : color;
  split.split_index = split_index;
  split.peer_capacity = parent != nullptr ? parent->peer_capacity() : 0;
  return record_creation(
      split, [&] { return function(comm, color, key, newcomm, config); },
      [&](CommFacts& facts, ncclResult_t result) {
        if (color == NCCL_SPLIT_NOCOLOR) return;  // no communicator in this process
        created(newcomm, facts, result);
      });
}

ncclResult_t NcclRecorder::comm_shrink(ncclComm_t comm, int* exclude_ranks, int exclude_count,
                                       ncclComm_t* newcomm, ncclConfig_t* config, int shrink_flags) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_shrink, "ncclCommShrink");
  Comm* parent = parent_of_new_comm(comm);
  const uint32_t shrink_index = parent != nullptr ? parent->next_shrink_index() : 0;
  const size_t excluded =
      exclude_ranks != nullptr && exclude_count > 0 ? static_cast<size_t>(exclude_count) : 0;
  CommFacts shrink;
  shrink.event = NcclCommEvent::kShrink;
  shrink.parent_identity = parent != nullptr ? parent->identity() : 0;
  shrink.identity = identity_of_shrink(shrink.parent_identity,
                                       std::span<const int32_t>(exclude_ranks, excluded), shrink_index);
  shrink.split_index = shrink_index;
  shrink.peer_capacity = parent != nullptr ? parent->peer_capacity() : 0;
  return record_creation(
      shrink, [&] { return function(comm, exclude_ranks, exclude_count, newcomm, config, shrink_flags); },
      [&](CommFacts& facts, ncclResult_t result) { created(newcomm, facts, result); });
}

void NcclRecorder::created(ncclComm_t* out, CommFacts facts, ncclResult_t result) noexcept {
  library_.find_driver();  // CUDA is initialized once NCCL made a communicator
  if (!succeeded(result)) {
    report_failed_creation(facts);
    return;
  }
  const ncclComm_t handle = out != nullptr ? *out : nullptr;
  if (handle == nullptr) return;
  facts.handle = handle_value(handle);
  Comm* comm = registry_.add(facts);
  if (comm == nullptr) {
    static std::atomic<bool> said{false};
    warn_once(said, "too many NCCL communicators to track; calls on newer ones are not recorded");
    return;
  }
  GroupState& group = this_thread_group();
  if (group.in_group()) {
    group.add_pending(comm);  // NCCL completes it at the group's end
  } else if (result == ncclSuccess) {
    learn_details(*comm);  // blocking: ready now
  }
}

void NcclRecorder::learn_details(Comm& comm) noexcept {
  if (!comm.claim_details()) return;  // known already, or another thread is asking
  const NcclFunctions* functions = library_.functions();
  const auto handle = reinterpret_cast<ncclComm_t>(comm.handle());
  if (functions == nullptr || functions->comm_get_async_error == nullptr ||
      functions->comm_user_rank == nullptr || functions->comm_count == nullptr ||
      functions->comm_cu_device == nullptr) {
    comm.complete_details(-1, -1, trace::kUnknownDevice);  // what the arguments said is all there is
    report_creation(comm);
    return;
  }
  // The same check NCCL makes before each operation; asking for the rank earlier would make
  // NCCL complain that the communicator is not ready.
  ncclResult_t state = ncclSuccess;
  if (functions->comm_get_async_error(handle, &state) == ncclSuccess && state == ncclInProgress) {
    comm.release_details_claim();
    return;
  }
  int rank = -1;
  int size = -1;
  int device = -1;
  if (state == ncclSuccess) {
    if (functions->comm_user_rank(handle, &rank) != ncclSuccess) rank = -1;
    if (functions->comm_count(handle, &size) != ncclSuccess) size = -1;
    if (functions->comm_cu_device(handle, &device) != ncclSuccess) device = -1;
  }
  comm.complete_details(rank, size, device >= 0 ? static_cast<uint32_t>(device) : trace::kUnknownDevice);
  report_creation(comm);
}

void NcclRecorder::report_creation(Comm& comm) noexcept {
  if (!comm.take_creation_report()) return;
  write_comm_record(comm.creation_event(), comm.created_start_ns(), comm.created_end_ns(), &comm, nullptr);
}

void NcclRecorder::report_failed_creation(const CommFacts& facts) noexcept {
  write_comm_record(facts.event, facts.start_ns, facts.end_ns, nullptr, &facts);
}

void NcclRecorder::write_comm_record(NcclCommEvent event, uint64_t start_ns, uint64_t end_ns,
                                     const Comm* comm, const CommFacts* facts) noexcept {
  // Communicator records are kept outside a capture window too: a window's operations are
  // paired and placed through them.
  if (!session_.wants(RecordKind::kNcclComm)) return;
  trace::ThreadBuffer* buffer = session_.thread_buffer(Activation::kNccl);
  if (buffer == nullptr) return;
  auto record = trace::make_record<trace::NcclCommRecord>();
  record.event = static_cast<uint8_t>(event);
  record.start_ns = start_ns;
  record.end_ns = end_ns;
  record.global_rank = global_rank();
  if (comm != nullptr) {
    record.comm_id = comm->identity();
    record.parent_comm_id = comm->parent_identity();
    record.comm_handle = comm->handle();
    record.rank = comm->rank();
    record.size = comm->size();
    record.color = comm->color();
    record.split_index = comm->split_index();
    record.device = comm->device();
  } else {
    record.comm_id = facts->identity;
    record.parent_comm_id = facts->parent_identity;
    record.comm_handle = facts->handle;  // 0 for a failed creation: no communicator came of it
    record.rank = facts->rank;
    record.size = facts->size;
    record.color = facts->color;
    record.split_index = facts->split_index;
    record.device = facts->device;
  }
  buffer->append(record);
}

void NcclRecorder::learn_process_rank(int32_t rank, int32_t size) noexcept {
  if (launcher_rank_ || rank < 0 || size <= 0) return;
  if (rank_learned_.exchange(true)) return;  // the first communicator's rank stands for the process
  learned_rank_.store(rank, std::memory_order_relaxed);
  session_.ongoing_calls().set_global_rank(rank);
  session_.learn_rank_from_nccl(rank, size);
}

int32_t NcclRecorder::global_rank() const noexcept {
  return launcher_rank_ ? *launcher_rank_ : learned_rank_.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// Teardown

template <class Call>
ncclResult_t NcclRecorder::record_teardown(NcclCommEvent event, ncclComm_t handle,
                                           Call&& real_call) noexcept {
  ErrnoKeeper errno_keeper;
  GroupState& group = this_thread_group();
  if (group.forwarding > 0) return forward(errno_keeper, group, real_call);
  Comm* comm = registry_.find(handle_value(handle));
  if (comm != nullptr) {
    // Last chance to say what the communicator was: NCCL frees it in this call.
    if (comm->details_pending() && !group.in_group()) learn_details(*comm);
    report_creation(*comm);
  }
  const uint64_t start_ns = Session::now_ns();
  OngoingCalls::Ticket ticket;
  if (comm != nullptr) {
    CommFacts facts;
    facts.identity = comm->identity();
    facts.rank = comm->rank();
    facts.size = comm->size();
    ticket = enter_comm_call(event, facts, start_ns);
  }
  const ncclResult_t result = forward(errno_keeper, group, real_call);
  const uint64_t end_ns = Session::now_ns();
  if (ticket) left(ticket, end_ns, result);
  complete_pending(handle, result);  // what was still running on it ends with it
  if (!succeeded(result)) return result;
  if (comm != nullptr) {
    comm->mark(event);
    write_comm_record(event, start_ns, end_ns, comm, nullptr);
  } else {
    CommFacts unknown;
    unknown.handle = handle_value(handle);
    write_comm_record(event, start_ns, end_ns, nullptr, &unknown);
  }
  return result;
}

ncclResult_t NcclRecorder::comm_finalize(ncclComm_t comm) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_finalize, "ncclCommFinalize");
  return record_teardown(NcclCommEvent::kFinalize, comm, [&] { return function(comm); });
}

ncclResult_t NcclRecorder::comm_destroy(ncclComm_t comm) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_destroy, "ncclCommDestroy");
  return record_teardown(NcclCommEvent::kDestroy, comm, [&] { return function(comm); });
}

ncclResult_t NcclRecorder::comm_abort(ncclComm_t comm) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_abort, "ncclCommAbort");
  return record_teardown(NcclCommEvent::kAbort, comm, [&] { return function(comm); });
}

ncclResult_t NcclRecorder::comm_revoke(ncclComm_t comm, int revoke_flags) noexcept {
  PIPESCOPE_REAL_OR_FAIL(comm_revoke, "ncclCommRevoke");
  return record_teardown(NcclCommEvent::kRevoke, comm, [&] { return function(comm, revoke_flags); });
}

#undef PIPESCOPE_REAL_OR_FAIL

}  // namespace pipescope::inject::nccl
