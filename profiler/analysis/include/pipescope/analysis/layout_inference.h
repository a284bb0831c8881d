// Infers the parallel layout of a run from its communicators and point-to-point traffic: which
// communicators are tensor-, pipeline-, data-parallel, ZeRO shard groups or expert-parallel,
// the TP x PP x DP (x shard group) sizes, and every rank's coordinates. Pure logic over what the
// traces say, tested on randomized layouts and rank orders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipescope/common/expected.h"

namespace pipescope::analysis {

// What the traces show of one communicator (its members by global rank, in NCCL-rank order)
// and what went through it. Bytes and calls are added over every member's records, so a family
// of communicators is compared by the traffic of all its ranks together.
struct CommunicatorTraffic {
  uint64_t comm_id = 0;
  std::vector<int32_t> members;  // members[nccl_rank] = global rank
  uint64_t all_reduce_bytes = 0;
  uint64_t all_gather_bytes = 0;
  uint64_t reduce_scatter_bytes = 0;
  uint64_t all_to_all_bytes = 0;
  uint64_t broadcast_bytes = 0;  // broadcast and reduce, rooted
  uint64_t p2p_bytes = 0;        // send + recv through this communicator
  uint64_t collective_calls = 0;
  uint64_t p2p_calls = 0;
};

// Directed point-to-point traffic between two global ranks (from send records). The two times
// order each rank's own first p2p operations, so they are compared only on one rank's clock and
// need no clock alignment: a pipeline's first stage starts with a send (it has no input), every
// other stage starts by receiving its input.
struct P2pFlow {
  int32_t src = 0;
  int32_t dst = 0;
  uint64_t bytes = 0;
  uint64_t calls = 0;
  int64_t first_send_ns = -1;  // host time of src's first send to dst, on src's clock; -1 unknown
  int64_t first_recv_ns = -1;  // host time of dst's first recv from src, on dst's clock; -1 unknown
  // The communicator it went through; 0 when unknown. A flow through a communicator that carries
  // no all-to-all is never expert traffic, even between members of an all-to-all communicator.
  uint64_t comm_id = 0;
};

enum class CommRole : uint8_t {
  kWorld,     // every rank (it may also carry the data-parallel reduction: dp = world_size)
  kTensor,    // tensor parallel (large all-reduces / all-gathers+reduce-scatters inside a node)
  kPipeline,  // carries p2p between adjacent stages
  kData,      // data parallel (gradient all-reduce or reduce-scatter / all-gather)
  kShard,     // ZeRO / hierarchical ZeRO shard group (parameter all-gathers)
  kExpert,    // expert parallel (all-to-all)
  kContext,   // context parallel (p2p ring or all-gather of KV inside a group)
  kOther,
};
const char* comm_role_name(CommRole role);

struct RankCoordinates {
  int32_t rank = 0;
  int32_t stage = 0;  // 0-based pipeline stage, forward order; 0 without a pipeline
  int32_t tp_rank = 0;
  int32_t dp_rank = 0;
  int32_t shard_rank = 0;  // within its shard group; 0 when parameters are not sharded
};

// world_size = tp * pp * dp. dp counts every data-parallel replica, sharded or not; zero_shard
// is the group over which parameters are sharded (it divides dp): hierarchical ZeRO over 2,048
// ranks in shard groups of 64 is dp = 2048, zero_shard = 64; flat ZeRO-3 is zero_shard = dp.
// dp_rank is the rank's NCCL rank in its data-parallel communicator; when the data-parallel
// dimension shows only as shard groups and the groups across them, it is
// (index across groups) * zero_shard + shard_rank. ep (expert parallel) lies inside dp.
struct InferredLayout {
  int32_t world_size = 0;
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t dp = 1;
  int32_t zero_shard = 1;  // 1 when parameters are not sharded
  int32_t ep = 1;
  std::vector<std::pair<uint64_t, CommRole>> roles;  // per communicator id
  std::vector<RankCoordinates> ranks;                // index = global rank
  std::vector<std::string> notes;                    // what was assumed, what was ambiguous
};

// Layout the user states (`--layout tp=T,pp=P,dp=D`) when traffic cannot show it.
struct StatedLayout {
  int32_t tp = 1;
  int32_t pp = 1;
  int32_t dp = 1;
};

// What else the traces tell, beside communicators and flows.
struct LayoutEvidence {
  std::optional<StatedLayout> stated;  // --layout
  // Ranks that left no trace (sorted): their communicators are known from the others' records,
  // but a group whose members all died is not; families that miss only such ranks still
  // partition their stage, and a stage none of whose ranks left a trace takes the others' sizes.
  std::vector<int32_t> untraced;
  // Per global rank, the pipeline stage its trace declares (an NVTX range or mark named
  // stage=<k>, docs/design.md), -1 where none does. Used when no p2p flow shows the pipeline; a rank
  // without a declaration takes the stage of the members of its smallest communicator.
  std::vector<int32_t> declared_stage;
};

// `world_size` ranks 0..world_size-1. Fails with a message when the communicators contradict
// each other or cover no rank. With `stated`, the sizes are taken from it and the traffic only
// orders the stages and names the groups.
//
// How (the notes say which step decided what):
// - Pipeline: p2p flows link each rank to its neighbour stages; every connected set must be a
//   chain (1F1B, GPipe) or a ring (interleaved), all of one length pp. Stage 0 is the end whose
//   flows all point away from it, else the rank whose first p2p operation is a send (see
//   P2pFlow); chains without either are aligned with oriented ones through communicators that
//   lie within a stage, and failing that start at their lowest global rank (noted). Without
//   p2p flows, the stages the ranks declare (evidence.declared_stage) make the pipeline; else,
//   with stated sizes, the rank sets the tensor- and data-parallel communicators join. Flows inside
//   an all-to-all communicator are expert traffic. A rank with p2p to more than two peers
//   (context-parallel rings beside a pipeline) is an error for now.
// - Within each stage, communicators of one size that are pairwise disjoint and alike in
//   traffic form a family; families that do not cover the stage are named other (noted).
//   All-to-all families are expert parallel. A family dominated by all-gathers (parameters
//   gathered for forward and backward: all-gather >= 1.5 x reduce-scatter + all-reduce) is a
//   ZeRO shard group. Tensor parallel is the other family that runs the most collectives per rank
//   (every layer of every micro-batch, where data parallelism reduces gradients a few times a
//   step); among families within 2x of that rate the one with most collective bytes (ties: the
//   narrower rank span), noted as close. Unless a shard family times a lighter family across it
//   makes up the stage (hierarchical ZeRO, tp = 1). Data parallel is the family of the remaining size
//   that meets each tensor group once, or shard groups times the groups across them. A lone
//   family spanning a whole stage is taken as data parallel (noted: tp = stage is possible).
// - Contradictions are errors: p2p that is no chain, chains of unequal length, a communicator
//   whose members the flows put in different stages, groups of the data-parallel size that meet
//   a tensor group twice, stages whose sizes differ, stated sizes the traffic or world refute.
Expected<InferredLayout> infer_layout(int32_t world_size, const std::vector<CommunicatorTraffic>& comms,
                                      const std::vector<P2pFlow>& flows, const LayoutEvidence& evidence);
Expected<InferredLayout> infer_layout(int32_t world_size, const std::vector<CommunicatorTraffic>& comms,
                                      const std::vector<P2pFlow>& flows,
                                      const std::optional<StatedLayout>& stated = std::nullopt);

}  // namespace pipescope::analysis
