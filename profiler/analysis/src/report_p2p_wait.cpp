// Time each rank spent blocked in p2p receives, waiting for the sender. A transfer is one
// sampled instance on both sides (communicator, direction and sequence pair them exactly); the
// receive waited from its own start (its kernel's, or its blocking call's entry) until the send
// started, at most for as long as it lasted. What the transfer itself took is not waiting.
#include <algorithm>
#include <unordered_map>

#include "report_context.h"

namespace pipescope::analysis {

void add_p2p_waits(const ReportContext& ctx, RunReport& report) {
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const RankDigest& d = ctx.run.ranks[i];
    int64_t waited = 0;
    for (const P2pDigest& recv : d.p2p) {
      if (recv.send) continue;
      const auto it = ctx.comm_by_id.find(recv.comm_id);
      const CommDigest* mine = digest_of(d, recv.comm_id);
      if (it == ctx.comm_by_id.end() || mine == nullptr) continue;
      const CommInfo& comm = ctx.comms[it->second];
      if (recv.peer < 0 || recv.peer >= comm.size || !comm.traced(static_cast<size_t>(recv.peer))) continue;
      const auto sender = static_cast<size_t>(comm.members[recv.peer]);
      const P2pDigest* send = p2p_of(ctx.run.ranks[sender], recv.comm_id, mine->nccl_rank, true);
      if (send == nullptr) continue;
      const uint32_t stride = std::max(recv.sample_stride, send->sample_stride);
      std::unordered_map<uint64_t, const InstanceSample*> sent;
      for (const InstanceSample& s : send->samples)
        if (s.sequence % stride == 0) sent.emplace(s.sequence, &s);
      for (const InstanceSample& r : recv.samples) {
        if (r.sequence % stride != 0) continue;
        const auto s = sent.find(r.sequence);
        if (s == sent.end()) continue;
        const int64_t r_start = ctx.kernel_mode ? r.start_ns : r.enter_ns;
        const int64_t r_end = ctx.kernel_mode ? r.end_ns : r.exit_ns;
        const int64_t s_start = ctx.kernel_mode ? s->second->start_ns : s->second->enter_ns;
        if (r_start < 0 || r_end < r_start || s_start < 0) continue;
        const int64_t wait = ctx.aligned(sender, s_start) - ctx.aligned(i, r_start);
        waited += std::clamp<int64_t>(wait, 0, r_end - r_start) * stride;
      }
    }
    report.ranks[i].p2p_wait_ns = waited;
    if (ctx.kernel_mode) report.ranks[i].gpu.comm_wait_ns += waited;
  }
}

}  // namespace pipescope::analysis
