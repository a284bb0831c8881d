// Sampled p2p operations paired with their counterparts on the peer: a transfer is one sampled
// instance on both sides (communicator, direction and sequence pair them exactly). Read per rank,
// so that the report's workers can each take ranks of their own.
#pragma once

#include <algorithm>
#include <cstdint>

#include "report_context.h"

namespace pipescope::analysis {

// One sampled p2p operation of a traced rank, paired with its counterpart on the peer.
struct P2pTransfer {
  size_t rank, peer;  // indices into LoadedRun::ranks
  bool send;
  int64_t done_ns;        // aligned: kernel end, or the blocking call's return
  int64_t waited_ns;      // from its start until the peer's counterpart started, at most its length
  int64_t peer_start_ns;  // aligned: when the peer's counterpart started
  uint32_t stride;        // sampling: it stands for this many transfers
};

// Calls visit(const P2pTransfer&) for each of rank i's sampled p2p operations whose counterpart
// the peer's trace holds. An operation waited from its own start (its kernel's, or its blocking
// call's entry) until its counterpart started, at most for as long as it lasted.
template <class Visit>
void for_each_p2p_transfer_of(const ReportContext& ctx, size_t i, Visit&& visit) {
  const RankDigest& d = ctx.run.ranks[i];
  for (const P2pDigest& op : d.p2p) {
    const auto it = ctx.comm_by_id.find(op.comm_id);
    const CommDigest* mine = digest_of(d, op.comm_id);
    if (it == ctx.comm_by_id.end() || mine == nullptr) continue;
    const CommInfo& comm = ctx.comms[it->second];
    if (op.peer < 0 || op.peer >= comm.size || !comm.traced(static_cast<size_t>(op.peer))) continue;
    const auto peer = static_cast<size_t>(comm.members[op.peer]);
    const P2pDigest* other = p2p_of(ctx.run.ranks[peer], op.comm_id, mine->nccl_rank, !op.send);
    if (other == nullptr) continue;
    const uint32_t stride = std::max(op.sample_stride, other->sample_stride);
    // Both sides keep their samples in sequence order: pair them by walking both.
    auto t = other->samples.begin();
    for (const InstanceSample& s : op.samples) {
      if (!sampled(s.sequence, stride)) continue;
      while (t != other->samples.end() && t->sequence < s.sequence) ++t;
      if (t == other->samples.end()) break;
      if (t->sequence != s.sequence) continue;
      const int64_t start = ctx.kernel_mode ? s.start_ns : s.enter_ns;
      const int64_t end = ctx.kernel_mode ? s.end_ns : s.exit_ns;
      const int64_t peer_start = ctx.kernel_mode ? t->start_ns : t->enter_ns;
      if (start < 0 || end < start || peer_start < 0) continue;
      const int64_t wait = ctx.aligned(peer, peer_start) - ctx.aligned(i, start);
      visit(P2pTransfer{i, peer, op.send, ctx.aligned(i, end), std::clamp<int64_t>(wait, 0, end - start),
                        ctx.aligned(peer, peer_start), stride});
    }
  }
}

}  // namespace pipescope::analysis
