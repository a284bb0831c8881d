// How the fake NCCL tells every member of ncclCommSplit its true new rank and size without a
// network: each member of the parent writes its (color, key) to a file in a shared directory
// (FAKE_NCCL_RENDEZVOUS), waits until every member of the parent has written, and ranks
// itself within its color by (key, old rank) — NCCL's own rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipescope::fake_nccl {

struct SplitEntry {
  int color = 0;
  int key = 0;
};

// Where one split of one communicator meets: `comm_name` is the identity all members share,
// `split_index` counts the splits of that communicator before this one.
struct SplitMeeting {
  std::string dir;
  std::string comm_name;
  uint32_t split_index = 0;
};

// Writes this member's entry atomically (write, then rename). False with `error` set on failure.
bool publish_split(const SplitMeeting& meeting, int rank, SplitEntry entry, std::string& error);

// Waits up to `timeout_ms` until members 0..size-1 have all published, then returns their
// entries in old-rank order. False with `error` naming the missing members on timeout.
bool gather_split(const SplitMeeting& meeting, int size, int timeout_ms, std::vector<SplitEntry>& entries,
                  std::string& error);

struct SplitPlace {
  int rank = 0;
  int size = 0;
};

// `rank`'s place among the members that chose its color: sorted by (key, old rank).
SplitPlace place_in_split(const std::vector<SplitEntry>& entries, int rank);

}  // namespace pipescope::fake_nccl
