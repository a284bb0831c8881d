// Internal to layout inference: communicators merged by member set, and the traffic tests that
// name what a set of communicators is for. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipescope::analysis::layout {

struct Traffic {
  uint64_t all_reduce_bytes = 0;
  uint64_t all_gather_bytes = 0;
  uint64_t reduce_scatter_bytes = 0;
  uint64_t all_to_all_bytes = 0;
  uint64_t rooted_bytes = 0;  // broadcast and reduce
  uint64_t p2p_bytes = 0;
  uint64_t collective_calls = 0;
  uint64_t p2p_calls = 0;

  void add(const Traffic& other);
  double collective_bytes() const;
  // Communicators used only for send/recv carry pipeline (or context-parallel) traffic; they
  // are not members of a collective family.
  bool p2p_only() const { return p2p_calls > 0 && collective_calls == 0 && collective_bytes() == 0; }
  bool all_to_all_dominated() const;
  bool parameter_gather_dominated() const;
};

// Every communicator with the same members (PyTorch may create several for one group).
struct Group {
  std::vector<int32_t> members;  // NCCL-rank order of the busiest communicator with these members
  std::vector<size_t> comms;     // indices of those communicators in the input
  uint64_t comm_id = 0;          // of that communicator, to name the group in messages
  Traffic traffic;

  int32_t size() const { return static_cast<int32_t>(members.size()); }
};

// Communicators of one size within a stage that are pairwise disjoint.
struct Family {
  std::vector<size_t> groups;  // by lowest member
  int32_t size = 0;
  bool complete = false;  // covers the stage
  Traffic traffic;
  int32_t span = 0;    // widest distance between a group's lowest and highest global rank
  int32_t traced = 0;  // members that left a trace (their records are the family's traffic)
  std::vector<int32_t> group_of, position;  // per global rank: index in `groups`, NCCL rank; -1 outside
};

// How far apart two communicators' traffic is (bytes on a log scale; a different main
// collective is far), to grow a family from communicators alike.
double distance(const Traffic& a, const Traffic& b);
// The family with the most collective bytes (ties: the narrower rank span, then the smaller).
const Family* most_traffic(const std::vector<const Family*>& candidates);
// Collectives per traced member.
double call_rate(const Family& f);
// The tensor-parallel family among candidates (layout_inference.h states the rule); `close`
// says that bytes had to decide between families that call about as often.
const Family* tensor_family(const std::vector<const Family*>& candidates, bool& close);

// "communicator 0x1f (ranks 0,1,2,3)", members cut short after a few.
std::string describe(const Group& group);
// "0,1,2, ... (12 ranks)"
std::string rank_list(const std::vector<int32_t>& ranks);

}  // namespace pipescope::analysis::layout
