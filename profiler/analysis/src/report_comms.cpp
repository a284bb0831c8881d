// Communicators across ranks: each member's own record gives its NCCL rank; a member that left
// no trace is placed from the others' records (untraced_members.h). Then what layout inference
// reads of them: traffic per communicator and p2p flows between global ranks.
#include <algorithm>

#include "pipescope/analysis/untraced_members.h"
#include "report_context.h"

namespace pipescope::analysis {

const CommDigest* digest_of(const RankDigest& d, uint64_t comm_id) {
  for (const CommDigest& c : d.comms)
    if (c.comm_id == comm_id) return &c;
  return nullptr;
}

const P2pDigest* p2p_of(const RankDigest& d, uint64_t comm_id, int32_t peer, bool send) {
  for (const P2pDigest& p : d.p2p)
    if (p.comm_id == comm_id && p.peer == peer && p.send == send) return &p;
  return nullptr;
}

std::vector<MemberSamples> traced_member_samples(const LoadedRun& run, const CommInfo& comm,
                                                 std::vector<const CommDigest*>* digests) {
  std::vector<MemberSamples> lists;
  for (int32_t m : comm.members) {
    const CommDigest* c = m >= 0 ? digest_of(run.ranks[m], comm.comm_id) : nullptr;
    if (c == nullptr) continue;
    lists.push_back(MemberSamples{m, c->samples});
    if (digests != nullptr) digests->push_back(c);
  }
  return lists;
}

std::vector<int32_t> silent_ranks(const LoadedRun& run) {
  std::vector<int32_t> out = run.missing_ranks;
  for (size_t i = 0; i < run.ranks.size(); ++i)
    if (run.ranks[i].comms.empty()) out.push_back(run.global_rank[i]);
  std::sort(out.begin(), out.end());
  return out;
}

void collect_comms(const LoadedRun& run, std::vector<CommInfo>& comms,
                   std::unordered_map<uint64_t, size_t>& comm_by_id) {
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    for (const CommDigest& c : run.ranks[i].comms) {
      auto [it, fresh] = comm_by_id.try_emplace(c.comm_id, comms.size());
      if (fresh) {
        CommInfo info;
        info.comm_id = c.comm_id;
        info.size = c.size;
        info.members.assign(static_cast<size_t>(std::max(c.size, 0)), -1);
        comms.push_back(std::move(info));
      }
      CommInfo& info = comms[it->second];
      if (c.size > info.size) {
        info.size = c.size;
        info.members.resize(c.size, -1);
      }
      if (c.nccl_rank >= 0 && c.nccl_rank < info.size) info.members[c.nccl_rank] = static_cast<int32_t>(i);
      info.sample_stride = std::max(info.sample_stride, c.sample_stride);
    }
  }
  const std::vector<int32_t> silent = silent_ranks(run);
  std::vector<std::vector<int32_t>> ranks, candidates;
  for (CommInfo& comm : comms) {
    comm.ranks.clear();
    for (int32_t m : comm.members) comm.ranks.push_back(m >= 0 ? run.global_rank[m] : -1);
    ranks.push_back(comm.ranks);
    candidates.push_back(comm.all_traced() ? std::vector<int32_t>{} : silent);
  }
  if (silent.empty()) return;
  fill_untraced_members(ranks, candidates, run.world_size);
  for (size_t c = 0; c < comms.size(); ++c) comms[c].ranks = std::move(ranks[c]);
}

std::vector<CommunicatorTraffic> layout_traffic(const ReportContext& ctx) {
  using T = trace::NcclOpType;
  std::vector<CommunicatorTraffic> traffic;
  for (const CommInfo& comm : ctx.comms) {
    if (!comm.known()) continue;
    CommunicatorTraffic t;
    t.comm_id = comm.comm_id;
    t.members = comm.ranks;
    for (int32_t m : comm.members) {
      if (m < 0) continue;  // no trace: the others' records carry the traffic
      const CommDigest* c = digest_of(ctx.run.ranks[m], comm.comm_id);
      if (c == nullptr) continue;
      auto bytes = [&](T op) { return c->ops[static_cast<size_t>(op)].bytes; };
      auto calls = [&](T op) { return c->ops[static_cast<size_t>(op)].calls; };
      t.all_reduce_bytes += bytes(T::kAllReduce);
      t.all_gather_bytes += bytes(T::kAllGather);
      t.reduce_scatter_bytes += bytes(T::kReduceScatter);
      t.all_to_all_bytes += bytes(T::kAllToAll);
      t.broadcast_bytes += bytes(T::kBroadcast) + bytes(T::kReduce);
      t.p2p_bytes += bytes(T::kSend) + bytes(T::kRecv);
      t.p2p_calls += calls(T::kSend) + calls(T::kRecv);
      for (size_t op = 1; op < c->ops.size(); ++op)
        if (op != static_cast<size_t>(T::kSend) && op != static_cast<size_t>(T::kRecv))
          t.collective_calls += c->ops[op].calls;
    }
    traffic.push_back(std::move(t));
  }
  return traffic;
}

// Sends give the flows; a recv from a member without a trace stands in for its send.
std::vector<P2pFlow> layout_flows(const ReportContext& ctx) {
  std::vector<P2pFlow> flows;
  for (size_t i = 0; i < ctx.run.ranks.size(); ++i) {
    const int32_t me = ctx.run.global_rank[i];
    for (const P2pDigest& p : ctx.run.ranks[i].p2p) {
      const auto it = ctx.comm_by_id.find(p.comm_id);
      if (it == ctx.comm_by_id.end()) continue;
      const CommInfo& comm = ctx.comms[it->second];
      if (p.peer < 0 || p.peer >= comm.size || comm.ranks[p.peer] < 0) continue;
      const int32_t peer = comm.ranks[p.peer];
      if (!p.send) {
        if (!comm.traced(p.peer))
          flows.push_back(P2pFlow{peer, me, p.bytes, p.calls, -1, p.first_enter_ns, p.comm_id});
        continue;
      }
      P2pFlow flow{me, peer, p.bytes, p.calls, p.first_enter_ns, -1, p.comm_id};
      const CommDigest* mine = digest_of(ctx.run.ranks[i], p.comm_id);
      if (comm.traced(p.peer) && mine != nullptr)
        if (const P2pDigest* q =
                p2p_of(ctx.run.ranks[comm.members[p.peer]], p.comm_id, mine->nccl_rank, false))
          flow.first_recv_ns = q->first_enter_ns;
      flows.push_back(flow);
    }
  }
  return flows;
}

}  // namespace pipescope::analysis
