// NCCL communicators: creation (init, split, shrink) and teardown, and what is learned of them.

#include "nccl_recorder.h"

#include <unistd.h>

#include "nccl_recorder_detail.h"

namespace pipescope::inject::nccl {

using namespace detail;  // the helpers of nccl_recorder_detail.h

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
  // The table keys communicators by their handle's value; this hands it back to NCCL.
  const auto handle = reinterpret_cast<ncclComm_t>(comm.handle());  // NOLINT(performance-no-int-to-ptr)
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
