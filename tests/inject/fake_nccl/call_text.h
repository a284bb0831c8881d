// One NCCL call as a line of text: the function, its arguments, what it returned. The fake
// libnccl writes these lines to its call log (FAKE_NCCL_LOG) as calls arrive, and the test
// programs write the same lines for the calls they make; a test that compares the two files
// proves that whatever sat between them (libpipescope.so's interposer) forwarded every call
// once, unchanged. Header-only so that both sides format with the very same code.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace pipescope::fake_nccl {

// FNV-1a: a short, stable name for a 128-byte unique id in logs and file names.
inline uint64_t hash_bytes(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = seed;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

inline std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

class CallText {
 public:
  explicit CallText(const char* function) : text_(function) {}

  CallText& ptr(const char* name, const void* value) {
    char text[32];
    std::snprintf(text, sizeof(text), "0x%llx",
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(value)));
    return field(name, text);
  }
  CallText& num(const char* name, long long value) { return field(name, std::to_string(value)); }
  CallText& id(const char* name, const ncclUniqueId& id) {
    return field(name, hex64(hash_bytes(id.internal, sizeof(id.internal))));
  }
  // Marks the end of the arguments and gives the result; output values follow it.
  CallText& result(ncclResult_t rc) {
    text_ += " -> ";
    text_ += std::to_string(static_cast<int>(rc));
    return *this;
  }
  const std::string& str() const { return text_; }

 private:
  CallText& field(const char* name, const std::string& value) {
    text_ += ' ';
    text_ += name;
    text_ += '=';
    text_ += value;
    return *this;
  }
  std::string text_;
};

// ---- One formatter per entry point the fake implements. Output values are given only when
// ---- the call succeeded (an out-parameter is undefined otherwise).

inline std::string describe_get_version(const int* version, ncclResult_t rc) {
  CallText call("ncclGetVersion");
  call.ptr("version", version).result(rc);
  if (rc == ncclSuccess) call.num("out", *version);
  return call.str();
}

inline std::string describe_get_unique_id(const ncclUniqueId* id, ncclResult_t rc) {
  CallText call("ncclGetUniqueId");
  call.ptr("id", id).result(rc);
  if (rc == ncclSuccess) call.id("out", *id);
  return call.str();
}

inline std::string describe_comm_init_rank(const ncclComm_t* comm, int nranks, const ncclUniqueId& id,
                                           int rank, ncclResult_t rc) {
  CallText call("ncclCommInitRank");
  call.ptr("comm", comm).num("nranks", nranks).id("commId", id).num("rank", rank).result(rc);
  if (rc == ncclSuccess) call.ptr("out", *comm);
  return call.str();
}

inline std::string describe_comm_init_rank_config(const ncclComm_t* comm, int nranks, const ncclUniqueId& id,
                                                  int rank, const ncclConfig_t* config, ncclResult_t rc) {
  CallText call("ncclCommInitRankConfig");
  call.ptr("comm", comm).num("nranks", nranks).id("commId", id).num("rank", rank).ptr("config", config);
  call.result(rc);
  if (rc == ncclSuccess) call.ptr("out", *comm);
  return call.str();
}

inline std::string describe_comm_init_rank_scalable(const ncclComm_t* comm, int nranks, int rank, int nids,
                                                    const ncclUniqueId* ids, const ncclConfig_t* config,
                                                    ncclResult_t rc) {
  CallText call("ncclCommInitRankScalable");
  call.ptr("comm", comm).num("nranks", nranks).num("rank", rank).num("nId", nids).ptr("commIds", ids);
  if (ids != nullptr && nids > 0) call.id("commId0", ids[0]);
  call.ptr("config", config).result(rc);
  if (rc == ncclSuccess) call.ptr("out", *comm);
  return call.str();
}

inline std::string describe_comm_init_all(const ncclComm_t* comms, int ndev, const int* devlist,
                                          ncclResult_t rc) {
  CallText call("ncclCommInitAll");
  call.ptr("comm", comms).num("ndev", ndev).ptr("devlist", devlist).result(rc);
  if (rc == ncclSuccess) {
    for (int i = 0; i < ndev; ++i) call.ptr("out", comms[i]);
  }
  return call.str();
}

inline std::string describe_comm_split(ncclComm_t comm, int color, int key, const ncclComm_t* newcomm,
                                       const ncclConfig_t* config, ncclResult_t rc) {
  CallText call("ncclCommSplit");
  call.ptr("comm", comm).num("color", color).num("key", key).ptr("newcomm", newcomm).ptr("config", config);
  call.result(rc);
  if (rc == ncclSuccess) call.ptr("out", *newcomm);
  return call.str();
}

inline std::string describe_comm_shrink(ncclComm_t comm, const int* exclude, int exclude_count,
                                        const ncclComm_t* newcomm, const ncclConfig_t* config, int flags,
                                        ncclResult_t rc) {
  CallText call("ncclCommShrink");
  call.ptr("comm", comm).ptr("excludeRanksList", exclude).num("excludeRanksCount", exclude_count);
  call.ptr("newcomm", newcomm).ptr("config", config).num("shrinkFlags", flags).result(rc);
  if (rc == ncclSuccess) call.ptr("out", *newcomm);
  return call.str();
}

// Finalize, Destroy, Abort: a communicator in, nothing out.
inline std::string describe_comm_call(const char* function, ncclComm_t comm, ncclResult_t rc) {
  CallText call(function);
  call.ptr("comm", comm).result(rc);
  return call.str();
}

inline std::string describe_comm_revoke(ncclComm_t comm, int flags, ncclResult_t rc) {
  CallText call("ncclCommRevoke");
  call.ptr("comm", comm).num("revokeFlags", flags).result(rc);
  return call.str();
}

// CommCount, CommUserRank, CommCuDevice: a communicator in, one int out.
inline std::string describe_comm_query(const char* function, ncclComm_t comm, const int* out,
                                       ncclResult_t rc) {
  CallText call(function);
  call.ptr("comm", comm).ptr("value", out).result(rc);
  if (rc == ncclSuccess) call.num("out", *out);
  return call.str();
}

inline std::string describe_all_reduce(const void* send, const void* recv, size_t count, ncclDataType_t type,
                                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                       ncclResult_t rc) {
  CallText call("ncclAllReduce");
  call.ptr("sendbuff", send).ptr("recvbuff", recv).num("count", static_cast<long long>(count));
  call.num("datatype", type).num("op", op).ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

// AllGather, AlltoAll: (send, recv, count, type, comm, stream).
inline std::string describe_unrooted(const char* function, const void* send, const void* recv, size_t count,
                                     ncclDataType_t type, ncclComm_t comm, cudaStream_t stream,
                                     ncclResult_t rc) {
  CallText call(function);
  call.ptr("sendbuff", send).ptr("recvbuff", recv).num("count", static_cast<long long>(count));
  call.num("datatype", type).ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

inline std::string describe_reduce_scatter(const void* send, const void* recv, size_t count,
                                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                           cudaStream_t stream, ncclResult_t rc) {
  CallText call("ncclReduceScatter");
  call.ptr("sendbuff", send).ptr("recvbuff", recv).num("recvcount", static_cast<long long>(count));
  call.num("datatype", type).num("op", op).ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

// Broadcast, Gather, Scatter: (send, recv, count, type, root, comm, stream).
inline std::string describe_rooted(const char* function, const void* send, const void* recv, size_t count,
                                   ncclDataType_t type, int root, ncclComm_t comm, cudaStream_t stream,
                                   ncclResult_t rc) {
  CallText call(function);
  call.ptr("sendbuff", send).ptr("recvbuff", recv).num("count", static_cast<long long>(count));
  call.num("datatype", type).num("root", root).ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

inline std::string describe_reduce(const void* send, const void* recv, size_t count, ncclDataType_t type,
                                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                                   ncclResult_t rc) {
  CallText call("ncclReduce");
  call.ptr("sendbuff", send).ptr("recvbuff", recv).num("count", static_cast<long long>(count));
  call.num("datatype", type).num("op", op).num("root", root).ptr("comm", comm).ptr("stream", stream);
  call.result(rc);
  return call.str();
}

inline std::string describe_bcast(const void* buff, size_t count, ncclDataType_t type, int root,
                                  ncclComm_t comm, cudaStream_t stream, ncclResult_t rc) {
  CallText call("ncclBcast");
  call.ptr("buff", buff).num("count", static_cast<long long>(count)).num("datatype", type).num("root", root);
  call.ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

// Send, Recv: (buff, count, type, peer, comm, stream).
inline std::string describe_p2p(const char* function, const void* buff, size_t count, ncclDataType_t type,
                                int peer, ncclComm_t comm, cudaStream_t stream, ncclResult_t rc) {
  CallText call(function);
  call.ptr("buff", buff).num("count", static_cast<long long>(count)).num("datatype", type).num("peer", peer);
  call.ptr("comm", comm).ptr("stream", stream).result(rc);
  return call.str();
}

// GroupStart, GroupEnd.
inline std::string describe_group(const char* function, ncclResult_t rc) {
  CallText call(function);
  call.result(rc);
  return call.str();
}

}  // namespace pipescope::fake_nccl
