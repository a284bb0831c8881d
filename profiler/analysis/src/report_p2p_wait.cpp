// Time each rank spent blocked in p2p operations, waiting for its peer. A transfer is one sampled
// instance on both sides (communicator, direction and sequence pair them exactly); an operation
// waited from its own start (its kernel's, or its blocking call's entry) until its counterpart
// started, at most for as long as it lasted. What the transfer itself took is not waiting.
#include <algorithm>

#include "report_context.h"

namespace pipescope::analysis {

void for_each_p2p_transfer(const ReportContext& ctx, const std::function<void(const P2pTransfer&)>& visit) {
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
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
        if (s.sequence % stride != 0) continue;
        while (t != other->samples.end() && t->sequence < s.sequence) ++t;
        if (t == other->samples.end()) break;
        if (t->sequence != s.sequence) continue;
        const int64_t start = ctx.kernel_mode ? s.start_ns : s.enter_ns;
        const int64_t end = ctx.kernel_mode ? s.end_ns : s.exit_ns;
        const int64_t peer_start = ctx.kernel_mode ? t->start_ns : t->enter_ns;
        if (start < 0 || end < start || peer_start < 0) continue;
        const int64_t wait = ctx.aligned(peer, peer_start) - ctx.aligned(i, start);
        visit(P2pTransfer{i, peer, op.send, ctx.aligned(i, end), std::clamp<int64_t>(wait, 0, end - start),
                          stride});
      }
    }
  }
}

void add_p2p_waits(const ReportContext& ctx, RunReport& report) {
  std::vector<int64_t> waited(ctx.run.ranks.size(), 0);
  for_each_p2p_transfer(ctx, [&](const P2pTransfer& t) {
    if (!t.send) waited[t.rank] += t.waited_ns * t.stride;
  });
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    report.ranks[i].p2p_wait_ns = waited[i];
    if (ctx.kernel_mode) report.ranks[i].gpu.comm_wait_ns += waited[i];
  }
}

}  // namespace pipescope::analysis
