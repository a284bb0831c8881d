// With FAKE_NCCL_WAIT=1, the fake NCCL's collectives and send/recv really wait for their
// counterparts, so that traces taken under it show waiting the way a real job does (a straggler
// makes the others wait; a rank that never arrives leaves them hanging until the timeout).
// Members meet through marker files in FAKE_NCCL_RENDEZVOUS: a collective returns once every
// member entered the same collective (per-communicator sequence), a send once its recv was
// posted and the other way round (per communicator, peer and direction). Inside
// ncclGroupStart/End the markers are posted at once and the waits happen at the outermost
// ncclGroupEnd, as NCCL's grouped p2p needs. Communicator creation (ncclCommInitRank*) waits the
// same way for every member of the new communicator, as NCCL's bootstrap does.
// FAKE_NCCL_TIMEOUT_MS (default 30000) bounds a wait: the call then fails with ncclSystemError,
// naming the ranks that never came; 0 waits for ever, as real NCCL does.
#pragma once

#include <nccl.h>

struct ncclComm;

namespace pipescope::fake_nccl {

bool waiting_enabled();

// Both post this member's marker and, outside a group, wait for the counterparts.
ncclResult_t arrive_collective(ncclComm* comm, const char* function);
ncclResult_t arrive_p2p(ncclComm* comm, bool send, int peer, const char* function);
ncclResult_t arrive_creation(ncclComm* comm, const char* function);

// At the outermost ncclGroupEnd: the waits the group's calls deferred.
ncclResult_t finish_group_waits();

}  // namespace pipescope::fake_nccl
