// The fake libnccl.so.2's process state: live communicators, the last error, group depth and
// the call log. Shared by the entry points in fake_comms.cpp and fake_ops.cpp.
//
// Each entry point is defined once as the strong `pnccl*` symbol and exported again as a weak
// `nccl*` alias of it, the way the real library does; an interposer may forward to either.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "call_text.h"

// The opaque communicator of nccl.h, as the fake sees it.
struct ncclComm {
  uint64_t magic = 0;
  std::string name;  // identity every member derives the same: from the unique id, or the parent
  int rank = 0;
  int size = 1;
  int device = 0;
  uint32_t splits = 0;  // ncclCommSplit calls on this communicator so far
  uint32_t shrinks = 0;
  bool finalized = false;
  bool revoked = false;
  // For FAKE_NCCL_WAIT (op_rendezvous.h): the next collective, and next send/recv per (peer, direction).
  uint64_t collectives = 0;
  std::map<std::pair<int, int>, uint64_t> p2p_sequences;
};

#define FAKE_NCCL_API extern "C" __attribute__((visibility("default")))
#define FAKE_NCCL_WEAK_ALIAS(name)                                         \
  extern "C" __attribute__((visibility("default"))) decltype(p##name) name \
      __attribute__((weak, alias("p" #name)))

namespace pipescope::fake_nccl {

// Registry of communicators made and not yet destroyed; calls on anything else are refused.
ncclComm* make_comm(std::string name, int rank, int size, int device);
bool is_live(const ncclComm* comm);
void forget_comm(ncclComm* comm);  // and delete it

// Sets the message ncclGetLastError returns and hands back `rc`.
ncclResult_t fail(ncclResult_t rc, const std::string& message);
const char* last_error();

// A usable communicator (live, not finalized or revoked), or the error to return.
ncclResult_t check_usable(const ncclComm* comm, const char* function);

// Group nesting of the calling thread (ncclGroupStart/End).
int& group_depth();

// Appends one line to this process's call log when FAKE_NCCL_LOG names a directory:
// <dir>/calls.<RANK>.<pid>.log (RANK from the environment, "x" when unset).
void log_call(const std::string& line);

// Environment helpers.
int env_int(const char* name, int fallback);

}  // namespace pipescope::fake_nccl
