// Communicator life cycle of the fake NCCL: unique ids, init, split, shrink, finalize,
// destroy, abort, revoke, the queries, error strings and groups. No data ever moves; what is
// real is every member's rank and size, which is all an interposer can observe.
#include <sys/random.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_state.h"
#include "op_rendezvous.h"
#include "split_rendezvous.h"

namespace pipescope::fake_nccl {
namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's magic
constexpr int kDefaultRendezvousTimeoutMs = 30000;

std::string world_name(const ncclUniqueId* ids, int count) {
  return "w" + hex64(hash_bytes(ids, sizeof(ncclUniqueId) * static_cast<size_t>(count)));
}

// A child's identity follows from its parent's, the kind of derivation, and its color.
std::string child_name(const ncclComm* parent, const char* how, uint32_t index, int color) {
  const std::string seed = parent->name + "/" + how + std::to_string(index) + "/" + std::to_string(color);
  return "c" + hex64(hash_bytes(seed.data(), seed.size()));
}

// The device a communicator made in this process is on: a GPU per local rank, as torchrun
// jobs arrange it (the fake has no CUDA to ask).
int current_device() { return std::max(0, env_int("LOCAL_RANK", 0)); }

ncclResult_t check_config(const ncclConfig_t* config) {
  if (config != nullptr && config->magic != kConfigMagic) {
    return fail(ncclInvalidArgument, "config not initialized with NCCL_CONFIG_INITIALIZER");
  }
  return ncclSuccess;
}

ncclResult_t init_rank(ncclComm_t* comm, int nranks, const ncclUniqueId* ids, int nids, int rank) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "comm out-pointer is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument, "rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  }
  *comm = make_comm(world_name(ids, nids), rank, nranks, current_device());
  if (!waiting_enabled() || nranks == 1) return ncclSuccess;
  const ncclResult_t rc = arrive_creation(*comm, "ncclCommInitRank");
  if (rc != ncclSuccess) {
    forget_comm(*comm);
    *comm = nullptr;
  }
  return rc;
}

struct PendingSplit {
  ncclComm* parent;
  uint32_t index;
  int color;
  int key;
  ncclComm_t* out;
};
thread_local std::vector<PendingSplit> t_pending_splits;

// Meets the other members of each split and makes this member's new communicator. Splits of
// one group are all published before any is waited on, so one thread may hold several members.
ncclResult_t complete_splits(const std::vector<PendingSplit>& splits) {
  const char* dir = std::getenv("FAKE_NCCL_RENDEZVOUS");
  const int timeout_ms = env_int("FAKE_NCCL_TIMEOUT_MS", kDefaultRendezvousTimeoutMs);
  std::string error;
  for (const PendingSplit& split : splits) {
    if (split.parent->size == 1) continue;
    if (dir == nullptr || dir[0] == '\0') {
      return fail(ncclInvalidUsage, "set FAKE_NCCL_RENDEZVOUS to split a communicator of more than one rank");
    }
    if (!publish_split({dir, split.parent->name, split.index}, split.parent->rank, {split.color, split.key},
                       error)) {
      return fail(ncclSystemError, error);
    }
  }
  for (const PendingSplit& split : splits) {
    std::vector<SplitEntry> entries{{split.color, split.key}};
    if (split.parent->size > 1 && !gather_split({dir, split.parent->name, split.index}, split.parent->size,
                                                timeout_ms, entries, error)) {
      return fail(ncclSystemError, error);
    }
    if (split.color == NCCL_SPLIT_NOCOLOR) {
      *split.out = nullptr;
      continue;
    }
    const SplitPlace place = place_in_split(entries, split.parent->rank);
    *split.out = make_comm(child_name(split.parent, "split", split.index, split.color), place.rank,
                           place.size, split.parent->device);
  }
  return ncclSuccess;
}

ncclResult_t split(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  if (ncclResult_t rc = check_usable(comm, "ncclCommSplit"); rc != ncclSuccess) return rc;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "newcomm out-pointer is NULL");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) return fail(ncclInvalidArgument, "negative color");
  if (ncclResult_t rc = check_config(config); rc != ncclSuccess) return rc;
  const PendingSplit pending{comm, comm->splits++, color, key, newcomm};
  *newcomm = nullptr;
  if (group_depth() > 0) {
    t_pending_splits.push_back(pending);  // completed by ncclGroupEnd, as NCCL does
    return ncclSuccess;
  }
  return complete_splits({pending});
}

ncclResult_t shrink(ncclComm_t comm, const int* exclude, int exclude_count, ncclComm_t* newcomm,
                    ncclConfig_t* config, int flags) {
  if (ncclResult_t rc = check_usable(comm, "ncclCommShrink"); rc != ncclSuccess) return rc;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "newcomm out-pointer is NULL");
  if (exclude_count < 0 || (exclude_count > 0 && exclude == nullptr)) {
    return fail(ncclInvalidArgument, "bad exclude list");
  }
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return fail(ncclInvalidArgument, "bad flags");
  if (ncclResult_t rc = check_config(config); rc != ncclSuccess) return rc;
  std::vector<int> excluded(exclude, exclude + exclude_count);
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  if (std::binary_search(excluded.begin(), excluded.end(), comm->rank)) {
    return fail(ncclInvalidArgument, "an excluded rank called ncclCommShrink");
  }
  // Every survivor sees the same list, so ranks close the gaps without meeting.
  const auto below = std::lower_bound(excluded.begin(), excluded.end(), comm->rank) - excluded.begin();
  const uint32_t index = comm->shrinks++;
  *newcomm = make_comm(child_name(comm, "shrink", index, 0), comm->rank - static_cast<int>(below),
                       comm->size - static_cast<int>(excluded.size()), comm->device);
  return ncclSuccess;
}

// Destroy and abort: nothing is in flight to abort. NCCL accepts NULL and does nothing.
ncclResult_t release(ncclComm* comm, const char* function) {
  if (comm == nullptr) return ncclSuccess;
  if (!is_live(comm)) return fail(ncclInvalidArgument, std::string(function) + ": not a live communicator");
  forget_comm(comm);
  return ncclSuccess;
}

ncclResult_t query(const ncclComm* comm, int* out, const char* function, int ncclComm::*field) {
  if (!is_live(comm)) return fail(ncclInvalidArgument, std::string(function) + ": not a live communicator");
  if (out == nullptr) return fail(ncclInvalidArgument, std::string(function) + ": NULL out-pointer");
  *out = comm->*field;
  return ncclSuccess;
}

}  // namespace
}  // namespace pipescope::fake_nccl

using namespace pipescope::fake_nccl;

// Lets a program tell the fake from the real library (dlsym); not part of NCCL.
FAKE_NCCL_API int fake_nccl_is_fake(void) { return 1; }

FAKE_NCCL_API ncclResult_t pncclGetVersion(int* version) {
  ncclResult_t rc = ncclSuccess;
  if (version == nullptr) {
    rc = fail(ncclInvalidArgument, "version is NULL");
  } else {
    *version = NCCL_VERSION_CODE;
  }
  log_call(describe_get_version(version, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  ncclResult_t rc = ncclSuccess;
  if (id == nullptr) {
    rc = fail(ncclInvalidArgument, "uniqueId is NULL");
  } else if (getrandom(id->internal, sizeof(id->internal), 0) != static_cast<ssize_t>(sizeof(id->internal))) {
    rc = fail(ncclSystemError, "getrandom failed");
  }
  log_call(describe_get_unique_id(id, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  const ncclResult_t rc = init_rank(comm, nranks, &commId, 1, rank);
  log_call(describe_comm_init_rank(comm, nranks, commId, rank, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                   int rank, ncclConfig_t* config) {
  ncclResult_t rc = check_config(config);
  if (rc == ncclSuccess) rc = init_rank(comm, nranks, &commId, 1, rank);
  log_call(describe_comm_init_rank_config(comm, nranks, commId, rank, config, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommInitRankScalable(ncclComm_t* comm, int nranks, int myrank, int nId,
                                                     ncclUniqueId* commIds, ncclConfig_t* config) {
  ncclResult_t rc = check_config(config);
  if (rc == ncclSuccess && (nId < 1 || commIds == nullptr)) rc = fail(ncclInvalidArgument, "no unique ids");
  if (rc == ncclSuccess) rc = init_rank(comm, nranks, commIds, nId, myrank);
  log_call(describe_comm_init_rank_scalable(comm, nranks, myrank, nId, commIds, config, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  ncclResult_t rc = ncclSuccess;
  ncclUniqueId id;
  if (comms == nullptr || ndev < 1) {
    rc = fail(ncclInvalidArgument, "comms is NULL or ndev < 1");
  } else if (getrandom(id.internal, sizeof(id.internal), 0) != static_cast<ssize_t>(sizeof(id.internal))) {
    rc = fail(ncclSystemError, "getrandom failed");
  } else {
    for (int i = 0; i < ndev; ++i)
      comms[i] = make_comm(world_name(&id, 1), i, ndev, devlist ? devlist[i] : i);
  }
  log_call(describe_comm_init_all(comms, ndev, devlist, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  const ncclResult_t rc = split(comm, color, key, newcomm, config);
  log_call(describe_comm_split(comm, color, key, newcomm, config, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                           ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const ncclResult_t rc = shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  log_call(describe_comm_shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  const ncclResult_t rc = check_usable(comm, "ncclCommFinalize");
  if (rc == ncclSuccess) comm->finalized = true;
  log_call(describe_comm_call("ncclCommFinalize", comm, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  const ncclResult_t rc = release(comm, "ncclCommDestroy");
  log_call(describe_comm_call("ncclCommDestroy", comm, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  const ncclResult_t rc = release(comm, "ncclCommAbort");
  log_call(describe_comm_call("ncclCommAbort", comm, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  ncclResult_t rc = check_usable(comm, "ncclCommRevoke");
  if (rc == ncclSuccess && revokeFlags != NCCL_REVOKE_DEFAULT)
    rc = fail(ncclInvalidArgument, "revokeFlags != 0");
  if (rc == ncclSuccess) comm->revoked = true;
  log_call(describe_comm_revoke(comm, revokeFlags, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  const ncclResult_t rc = query(comm, count, "ncclCommCount", &ncclComm::size);
  log_call(describe_comm_query("ncclCommCount", comm, count, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  const ncclResult_t rc = query(comm, rank, "ncclCommUserRank", &ncclComm::rank);
  log_call(describe_comm_query("ncclCommUserRank", comm, rank, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  const ncclResult_t rc = query(comm, device, "ncclCommCuDevice", &ncclComm::device);
  log_call(describe_comm_query("ncclCommCuDevice", comm, device, rc));
  return rc;
}

FAKE_NCCL_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  ncclResult_t rc = ncclSuccess;
  if (!is_live(comm) || asyncError == nullptr) {
    rc = fail(ncclInvalidArgument, "ncclCommGetAsyncError: bad arguments");
  } else {
    *asyncError = ncclSuccess;
  }
  log_call(
      CallText("ncclCommGetAsyncError").ptr("comm", comm).ptr("asyncError", asyncError).result(rc).str());
  return rc;
}

FAKE_NCCL_API const char* pncclGetErrorString(ncclResult_t result) {
  static const char* const kText[] = {"no error",       "unhandled cuda error", "unhandled system error",
                                      "internal error", "invalid argument",     "invalid usage",
                                      "remote error",   "in progress"};
  const auto index = static_cast<unsigned>(result);
  log_call(CallText("ncclGetErrorString").num("result", result).str());
  return index < sizeof(kText) / sizeof(kText[0]) ? kText[index] : "unknown result code";
}

FAKE_NCCL_API const char* pncclGetLastError(ncclComm_t comm) {
  log_call(CallText("ncclGetLastError").ptr("comm", comm).str());
  return last_error();
}

FAKE_NCCL_API ncclResult_t pncclGroupStart() {
  ++group_depth();
  log_call(describe_group("ncclGroupStart", ncclSuccess));
  return ncclSuccess;
}

FAKE_NCCL_API ncclResult_t pncclGroupEnd() {
  ncclResult_t rc = ncclSuccess;
  if (group_depth() == 0) {
    rc = fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  } else if (--group_depth() == 0) {
    if (!t_pending_splits.empty()) {
      const std::vector<PendingSplit> splits = std::move(t_pending_splits);
      t_pending_splits.clear();
      rc = complete_splits(splits);
    }
    if (rc == ncclSuccess) rc = finish_group_waits();
  }
  log_call(describe_group("ncclGroupEnd", rc));
  return rc;
}

FAKE_NCCL_WEAK_ALIAS(ncclGetVersion);
FAKE_NCCL_WEAK_ALIAS(ncclGetUniqueId);
FAKE_NCCL_WEAK_ALIAS(ncclCommInitRank);
FAKE_NCCL_WEAK_ALIAS(ncclCommInitRankConfig);
FAKE_NCCL_WEAK_ALIAS(ncclCommInitRankScalable);
FAKE_NCCL_WEAK_ALIAS(ncclCommInitAll);
FAKE_NCCL_WEAK_ALIAS(ncclCommSplit);
FAKE_NCCL_WEAK_ALIAS(ncclCommShrink);
FAKE_NCCL_WEAK_ALIAS(ncclCommFinalize);
FAKE_NCCL_WEAK_ALIAS(ncclCommDestroy);
FAKE_NCCL_WEAK_ALIAS(ncclCommAbort);
FAKE_NCCL_WEAK_ALIAS(ncclCommRevoke);
FAKE_NCCL_WEAK_ALIAS(ncclCommCount);
FAKE_NCCL_WEAK_ALIAS(ncclCommUserRank);
FAKE_NCCL_WEAK_ALIAS(ncclCommCuDevice);
FAKE_NCCL_WEAK_ALIAS(ncclCommGetAsyncError);
FAKE_NCCL_WEAK_ALIAS(ncclGetErrorString);
FAKE_NCCL_WEAK_ALIAS(ncclGetLastError);
FAKE_NCCL_WEAK_ALIAS(ncclGroupStart);
FAKE_NCCL_WEAK_ALIAS(ncclGroupEnd);
