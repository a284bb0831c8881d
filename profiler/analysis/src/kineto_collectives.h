// What a PyTorch profiler trace says about one collective call, and how the Kineto reader turns
// that into a pipescope NCCL record: the bytes in the profiler's own convention (this rank's
// buffer as NCCL counts it) and the communicator it ran on.
//
// Sources, richest first: `record_param_comms` arguments (PyTorch 2.1 and later: in/out element
// counts, dtype, group size, process group name and ranks), the tensor dims of the enclosing
// `c10d::` operator (`_allgather_base_`, `_reduce_scatter_base_` and `alltoall_base_` list the
// output tensor, then the input), and the `nccl:<op>` annotation's first input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kineto_event.h"
#include "pipescope/trace/records.h"

namespace pipescope::analysis::kineto {

struct CollectiveFacts {
  std::optional<uint64_t> in_bytes;   // the whole input buffer
  std::optional<uint64_t> out_bytes;  // the whole output buffer
  int32_t group_size = 0;             // 0: not stated
  std::string group_name;             // the process group's name, "" when not stated
  std::vector<int32_t> group_ranks;   // global ranks in group order; empty unless complete
};

// Bytes of one tensor from its element count and PyTorch type name ("float", "c10::BFloat16",
// or a ScalarType name such as "BFloat16"); nullopt when either is not usable.
std::optional<uint64_t> tensor_bytes(std::optional<uint64_t> elements, std::string_view type);

// Facts carried by a `record_param_comms` event's arguments.
CollectiveFacts facts_of_param_comms(const EventArgs& args);
// Facts carried by a `c10d::<op>` event (its name without the prefix, and its arguments).
CollectiveFacts facts_of_c10d(std::string_view op_name, const EventArgs& args);
// Facts carried by an `nccl:<op>` annotation: its first input.
CollectiveFacts facts_of_annotation(const EventArgs& args);

// `outer` filled in with what `inner` states and `outer` does not.
CollectiveFacts merged(CollectiveFacts outer, const CollectiveFacts& inner);

// The group size the facts imply: stated, else an all-gather's out/in or a reduce-scatter's
// in/out when that is a whole number dividing the world; 0 when none of them tells.
int32_t group_size_of(trace::NcclOpType op, const CollectiveFacts& facts, int32_t world_size);

// Payload bytes in the profiler's convention (NCCL's count x datatype: a rank's input for
// all-gather, its output for reduce-scatter, one peer's share for all-to-all, the buffer
// otherwise), for a group of `group_size` ranks. nccl-tests' size S is these bytes times the rank
// count for all-gather, reduce-scatter and all-to-all; an all-to-all with uneven splits counts
// the larger of what the rank sends and receives (the longer direction bounds its time).
uint64_t recorded_bytes(trace::NcclOpType op, const CollectiveFacts& facts, int32_t group_size);

// The communicator a call ran on, identified the same way on every rank of the job.
struct CommSlot {
  uint64_t comm_id = 0;
  int32_t rank = 0;  // this rank's place in the communicator
  int32_t size = 0;
};

// The world when the group is the world or not stated; the named group when its ranks are
// listed; otherwise a communicator of the right size of this rank's own (its members unknown, so
// its calls are priced right but not paired with other ranks').
CommSlot comm_slot_of(const CollectiveFacts& facts, int32_t group_size, const std::string& run_id,
                      int32_t rank, int32_t world_size);

}  // namespace pipescope::analysis::kineto
