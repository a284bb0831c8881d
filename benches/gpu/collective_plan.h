// What nccl_benchmark runs and how it reports it, in nccl-tests' terms
// (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md): the size of an operation, the element
// count passed to NCCL, and the bus-bandwidth factor. Pure logic: no NCCL.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace pipescope::benches {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kSendRecv, kAllToAll };

inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                                 Collective::kReduceScatter, Collective::kBroadcast,
                                                 Collective::kSendRecv,      Collective::kAllToAll};

// The variant in the benchmark name: all_reduce, all_gather, ...
std::string_view collective_name(Collective op);

struct CollectivePlan {
  // Elements as NCCL takes them: per rank for all_gather (send) and reduce_scatter (receive),
  // per peer for all_to_all.
  int64_t count = 0;
  int64_t bytes = 0;       // nccl-tests' size: the whole buffer (all_gather: the output)
  int64_t send_bytes = 0;  // the buffers this rank needs
  int64_t recv_bytes = 0;
};

// The operation on `size_bytes` (rounded down to whole elements per rank); empty when that
// leaves no element for a rank (8 bytes over 8 ranks of 2-byte elements).
std::optional<CollectivePlan> plan_collective(Collective op, int64_t size_bytes, int ranks,
                                              int element_bytes);

// busbw = algbw x factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
// all-to-all, 1 for broadcast and send/recv. What a link carries, comparable across rank counts.
double bus_bandwidth_factor(Collective op, int ranks);

// 8 B .. 1 GiB doubling; quick: 8 B x16 steps, then 256 MiB.
std::vector<int64_t> collective_sizes(bool quick);

// Operations timed back to back in one iteration, so that small ones are not dominated by the
// event and synchronization overhead: about 64 MiB of traffic, 1 to 100 operations. The same on
// every rank (it depends only on the size), as collectives need.
int operations_per_iteration(int64_t bytes);

}  // namespace pipescope::benches
