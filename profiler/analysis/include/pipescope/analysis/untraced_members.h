// Which global rank sits at a communicator slot whose member left no trace. A rank that died
// before its first flush (SIGKILL, a segfault, an out-of-memory kill) leaves a 0-byte or
// header-only file, yet it is a member of every communicator its peers recorded: their records
// give the communicator's size and their own NCCL ranks, not the dead rank's global rank. That
// rank is worked out from how the known members are laid out, so the layout, the pipeline chain
// and the hang view can still name it. Pure logic, tested without traces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pipescope::analysis {

// `comms[c][nccl_rank]` is a global rank, or -1 where no trace recorded the member.
// `candidates[c]` (sorted) are the ranks that may fill communicator c's empty slots: those without
// a trace, or whose trace stops early and holds no record of c. Rules, per communicator, first
// that applies:
// - world-sized, and its known members have NCCL rank = global rank: slot k is k;
// - known members in increasing order (ncclCommSplit keyed by rank, as Megatron's and PyTorch's
//   groups are): the empty slots between two known members (or an end) take the candidates
//   between them, when there are exactly as many;
// - known members in an arithmetic progression (global = a + d * nccl_rank, d > 0, at least two
//   known): slot k is a + d * k;
// - a stride d of the complete communicators of the same size (a family laid out a + d * k):
//   when exactly one such d fills every empty slot with candidates, it does;
// - one empty slot and one candidate.
// A slot stays -1 when no rule decides or the rank it would take is no candidate or already a
// member. Returns how many slots were filled.
size_t fill_untraced_members(std::vector<std::vector<int32_t>>& comms,
                             const std::vector<std::vector<int32_t>>& candidates, int32_t world_size);

}  // namespace pipescope::analysis
