// The run's common clock (report_builder.h's RunTimebase): header anchors first, then the ends
// of collectives and p2p transfers that two or more traced ranks share, gathered per
// communicator and per rank on the workers and handed to align_clocks.
#include <algorithm>

#include "parallel_for.h"
#include "pipescope/analysis/clock_alignment.h"
#include "report_context.h"
#include "sample_merge.h"

namespace pipescope::analysis {
namespace {

// Raw trace clock to wall time, from the header's anchors (the first estimate).
int64_t anchor_shift_ns(const RankDigest& d) {
  if (d.anchor)
    return static_cast<int64_t>(d.anchor->realtime_ns) - static_cast<int64_t>(d.anchor->trace_clock_ns);
  if (d.header.trace_clock == trace::TraceClock::kRealtime) return 0;
  return static_cast<int64_t>(d.header.start_realtime_ns) - static_cast<int64_t>(d.header.start_monotonic_ns);
}

int64_t end_of(const InstanceSample& s, bool kernel_mode) { return kernel_mode ? s.end_ns : s.exit_ns; }

// Collective ends, one communicator's instances at a time (members' samples merged by sequence).
void add_collective_ends(const LoadedRun& run, const CommInfo& comm, const std::vector<int64_t>& first,
                         bool kernel_mode, InstanceEnds& ends) {
  if (comm.size < 2) return;  // members without a trace leave the others' equations valid
  const std::vector<MemberSamples> lists = traced_member_samples(run, comm);
  size_t samples = 0, longest = 0;
  for (const MemberSamples& l : lists) {
    samples += l.samples.size();
    longest = std::max(longest, l.samples.size());
  }
  ends.reserve(longest, samples);
  std::vector<MemberSample> group;
  std::vector<size_t> at;
  merge_by_sequence(lists, comm.sample_stride, group, at,
                    [&](uint64_t, std::span<const MemberSample> members) {
                      for (const MemberSample& s : members) {
                        const int64_t end = end_of(*s.sample, kernel_mode);
                        if (end >= 0) ends.add(static_cast<uint32_t>(s.member), end + first[s.member]);
                      }
                      ends.close();
                    });
}

// The earliest end (>= 0) among the samples of one sequence, from `at` on (a damaged trace may
// repeat a sequence); -1 when none has one. Leaves `at` past them.
int64_t earliest_end(std::vector<InstanceSample>::const_iterator& at,
                     std::vector<InstanceSample>::const_iterator last, bool kernel_mode) {
  const uint64_t sequence = at->sequence;
  int64_t earliest = -1;
  for (; at != last && at->sequence == sequence; ++at) {
    const int64_t end = end_of(*at, kernel_mode);
    if (end >= 0 && (earliest < 0 || end < earliest)) earliest = end;
  }
  return earliest;
}

// A p2p transfer as a two-member collective: the sender's and the receiver's samples of one
// direction pair by sequence. Each transfer is taken from its lower-indexed side.
void add_transfer_ends(const ReportContext& ctx, size_t i, const std::vector<int64_t>& first,
                       bool kernel_mode, InstanceEnds& ends) {
  const LoadedRun& run = ctx.run;
  struct Direction {
    const P2pDigest* mine;
    const P2pDigest* theirs;
    size_t peer;
  };
  std::vector<Direction> directions;
  size_t most = 0;
  for (const P2pDigest& p : run.ranks[i].p2p) {
    const auto it = ctx.comm_by_id.find(p.comm_id);
    if (it == ctx.comm_by_id.end()) continue;
    const CommInfo& comm = ctx.comms[it->second];
    const CommDigest* mine = digest_of(run.ranks[i], p.comm_id);
    if (mine == nullptr || p.peer < 0 || p.peer >= comm.size || comm.members[p.peer] < 0) continue;
    const auto j = static_cast<size_t>(comm.members[p.peer]);
    if (j <= i) continue;
    if (const P2pDigest* q = p2p_of(run.ranks[j], p.comm_id, mine->nccl_rank, !p.send)) {
      directions.push_back(Direction{&p, q, j});
      most += std::min(p.samples.size(), q->samples.size());
    }
  }
  ends.reserve(most, 2 * most);
  for (const Direction& d : directions) {
    const uint32_t stride = std::max(d.mine->sample_stride, d.theirs->sample_stride);
    auto a = d.mine->samples.begin(), b = d.theirs->samples.begin();
    const auto a_last = d.mine->samples.end(), b_last = d.theirs->samples.end();
    while (a != a_last && b != b_last) {
      if (a->sequence < b->sequence) {
        ++a;
        continue;
      }
      if (b->sequence < a->sequence) {
        ++b;
        continue;
      }
      const bool kept = sampled(a->sequence, stride);
      const int64_t my_end = earliest_end(a, a_last, kernel_mode);
      const int64_t peer_end = earliest_end(b, b_last, kernel_mode);
      if (!kept || my_end < 0 || peer_end < 0) continue;
      ends.add(static_cast<uint32_t>(i), my_end + first[i]);
      ends.add(static_cast<uint32_t>(d.peer), peer_end + first[d.peer]);
      ends.close();
    }
  }
}

// Instances are gathered per communicator and per rank on the workers; taken in that order, the
// order in which their equations are summed.
}  // namespace

RunTimebase align(const ReportContext& ctx) {
  const LoadedRun& run = ctx.run;
  const size_t n = run.ranks.size();
  const auto ranks = static_cast<uint32_t>(n);
  const unsigned threads = ctx.options.threads;
  RunTimebase base;
  std::vector<int64_t> first(n);
  for (size_t i = 0; i < n; ++i) first[i] = anchor_shift_ns(run.ranks[i]);
  base.kernel_mode = std::any_of(run.ranks.begin(), run.ranks.end(),
                                 [](const RankDigest& d) { return d.nccl_kernels_seen; });
  const bool kernel_mode = base.kernel_mode;
  // One part per communicator, then one per rank (its p2p transfers).
  std::vector<InstanceEnds> parts(ctx.comms.size() + n, InstanceEnds(ranks));
  parallel_for(parts.size(), threads, [&](size_t k) {
    if (k < ctx.comms.size()) {
      add_collective_ends(run, ctx.comms[k], first, kernel_mode, parts[k]);
    } else {
      add_transfer_ends(ctx, k - ctx.comms.size(), first, kernel_mode, parts[k]);
    }
  });
  const ClockAlignment a = align_clocks(parts);
  base.shift_ns.resize(n);
  for (size_t i = 0; i < n; ++i) base.shift_ns[i] = first[i] + a.offset_ns[i];
  ClockReport& clock = base.clock;
  clock.source = a.instances_used == 0 ? "anchors" : base.kernel_mode ? "nccl kernels" : "nccl calls";
  clock.reference_rank = n > 0 ? run.global_rank[a.reference_rank] : 0;
  clock.instances_used = a.instances_used;
  if (a.instances_used > 0) {
    clock.residual_median_ns = a.residual_median_ns;
    clock.residual_p99_ns = a.residual_p99_ns;
    clock.residual_max_ns = a.residual_max_ns;
  }
  for (size_t i = 0; i < n && n > 1; ++i)  // a trace with no record has no clock to align
    if (!a.refined[i] && run.ranks[i].first_ns != INT64_MAX)
      clock.unaligned_ranks.push_back(run.global_rank[i]);
  int64_t origin = INT64_MAX;
  for (size_t i = 0; i < n; ++i)
    if (run.ranks[i].first_ns != INT64_MAX)
      origin = std::min(origin, run.ranks[i].first_ns + base.shift_ns[i]);
  base.origin_ns = origin == INT64_MAX ? 0 : origin;
  return base;
}

}  // namespace pipescope::analysis
