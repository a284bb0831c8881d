// Who the others waited on. Every sampled collective instance that all members reached costs
// each member (last arrival - its arrival); the members that came within a hair of the last are
// the late group and share that cost. A late member that had just been waiting for others (in
// collectives, or for its peer in a send or receive) during its own lateness only passed a delay
// on: its share goes to those it waited for, in proportion to the waiting. That is how a slow
// rank's delay, which reaches the next world-wide collective on all its peers at once, is still
// blamed on the slow rank, and how a pipeline stage late because its neighbour was late is not.
// Blame starts after the first step: its waits are start-up skew (processes launched one after
// another, NCCL connections made at first use), not a rank that is slow. The waits themselves
// are every rank's figures: in collectives, and in receives for the peer's send (p2p wait).
#include <algorithm>
#include <span>
#include <unordered_map>

#include "p2p_transfers.h"
#include "parallel_for.h"
#include "report_context.h"
#include "sample_merge.h"

namespace pipescope::analysis {
namespace {

// Arrivals closer than this are a tie: nobody waited for anybody.
constexpr int64_t kTieNs = 200'000;

struct Member {
  int32_t rank;  // index into LoadedRun::ranks
  int64_t arrive_ns;
  int64_t done_ns;  // kernel end, or the blocking call's return
};

struct Instance {
  size_t comm;  // index into ReportContext::comms
  int64_t stride;
  size_t members_begin, members_end;  // into Instances::members
  size_t late_begin, late_end;        // into Instances::late
  int64_t first_ns, last_ns, hair_ns;
};

// The sampled instances that every member reached, in flat arrays (one allocation each, not two
// per instance).
struct Instances {
  std::vector<Instance> list;
  std::vector<Member> members;
  std::vector<int32_t> late;

  std::span<const Member> members_of(const Instance& i) const {
    return {members.data() + i.members_begin, i.members_end - i.members_begin};
  }
  std::span<const int32_t> late_of(const Instance& i) const {
    return {late.data() + i.late_begin, i.late_end - i.late_begin};
  }
  void append(const Instances& other) {
    for (Instance i : other.list) {
      i.members_begin += members.size();
      i.members_end += members.size();
      i.late_begin += late.size();
      i.late_end += late.size();
      list.push_back(i);
    }
    members.insert(members.end(), other.members.begin(), other.members.end());
    late.insert(late.end(), other.late.begin(), other.late.end());
  }
};

// One rank's finished waits, to find what it did just before arriving somewhere late: a
// collective instance (whose late group it waited for), or a p2p operation (its peer).
struct Done {
  int64_t done_ns;
  int64_t waited_ns;
  uint32_t instance;  // kP2p for a send or receive
  int32_t peer;       // index into LoadedRun::ranks, for a send or receive
};
constexpr uint32_t kP2p = UINT32_MAX;

// Communicator c's instances, when every member left a trace.
Instances instances_of(const ReportContext& ctx, size_t c) {
  Instances out;
  const CommInfo& comm = ctx.comms[c];
  if (comm.size < 2 || !comm.all_traced()) return out;
  const std::vector<MemberSamples> lists = traced_member_samples(ctx.run, comm);
  std::vector<MemberSample> group;
  std::vector<size_t> at;
  merge_by_sequence(
      lists, comm.sample_stride, group, at, [&](uint64_t, std::span<const MemberSample> samples) {
        Instance instance{c, comm.sample_stride, out.members.size(), 0, out.late.size(), 0, 0, 0, 0};
        for (const MemberSample& s : samples) {
          const int64_t arrive = ctx.kernel_mode ? s.sample->start_ns : s.sample->enter_ns;
          const int64_t done = ctx.kernel_mode ? s.sample->end_ns : s.sample->exit_ns;
          if (arrive < 0 || done < 0) continue;
          const auto m = static_cast<size_t>(s.member);
          out.members.push_back(Member{s.member, ctx.aligned(m, arrive), ctx.aligned(m, done)});
        }
        instance.members_end = out.members.size();
        if (static_cast<int32_t>(instance.members_end - instance.members_begin) != comm.size) {
          out.members.resize(instance.members_begin);
          return;
        }
        const auto members = out.members_of(instance);
        const auto [first, last] =
            std::minmax_element(members.begin(), members.end(),
                                [](const Member& a, const Member& b) { return a.arrive_ns < b.arrive_ns; });
        instance.first_ns = first->arrive_ns;
        instance.last_ns = last->arrive_ns;
        instance.hair_ns = std::max<int64_t>(kTieNs, (instance.last_ns - instance.first_ns) / 20);
        for (const Member& member : members)
          if (instance.last_ns - member.arrive_ns <= instance.hair_ns) out.late.push_back(member.rank);
        instance.late_end = out.late.size();
        out.list.push_back(instance);
      });
  return out;
}

// A rank is a straggler on a communicator when it came last more than once and the waiting it
// caused there is most of the waiting anyone caused (at least half), at least 1 ms in all, and
// more than 4x what the average other member caused.
bool caused_most(int64_t cost_ns, int64_t total_ns, int64_t others_mean_ns) {
  return cost_ns >= 1'000'000 && 2 * cost_ns >= total_ns && cost_ns > 4 * others_mean_ns;
}

// Who one communicator's instances blame, after passing on what was only passed on.
struct Blame {
  std::unordered_map<int32_t, int64_t> cost;
  std::unordered_map<int32_t, int64_t> worst;  // largest single part
  std::unordered_map<int32_t, uint64_t> last;  // instances it came last at (someone really waited)
};

void blame_instances(const ReportContext& ctx, const Instances& instances, size_t begin, size_t end,
                     const std::vector<std::vector<Done>>& history, Blame& blame) {
  std::vector<std::pair<int32_t, int64_t>> waited_for;
  std::vector<int32_t> them;
  for (size_t self = begin; self < end; ++self) {
    const Instance& instance = instances.list[self];
    if (instance.first_ns < ctx.warmup_end_ns) continue;  // the first step's waits are start-up skew
    const auto members = instances.members_of(instance);
    const auto late = instances.late_of(instance);
    int64_t caused = 0;
    for (const Member& m : members) caused += (instance.last_ns - m.arrive_ns) * instance.stride;
    const int64_t share = caused / static_cast<int64_t>(late.size());
    for (const Member& m : members) {
      if (std::find(late.begin(), late.end(), m.rank) == late.end()) continue;
      if (instance.last_ns - instance.first_ns > kTieNs) ++blame.last[m.rank];  // someone really waited
      // Did it arrive late because it had waited for others shortly before? The waits it came
      // out of during its own lateness explain as much of it as they add up to.
      const int64_t lateness = m.arrive_ns - instance.first_ns;
      const auto& h = history[static_cast<size_t>(m.rank)];
      auto it = std::upper_bound(h.begin(), h.end(), m.arrive_ns,
                                 [](int64_t t, const Done& d) { return t < d.done_ns; });
      waited_for.clear();  // (culprit, the wait that points at it)
      int64_t explained = 0;
      while (it != h.begin()) {
        const Done& before = *--it;
        if (m.arrive_ns - before.done_ns > lateness + instance.hair_ns) break;
        if (before.instance == self || before.waited_ns <= 0) continue;
        them.clear();
        if (before.instance == kP2p) {
          them.push_back(before.peer);
        } else {
          for (int32_t r : instances.late_of(instances.list[before.instance]))
            if (r != m.rank) them.push_back(r);
        }
        for (int32_t r : them)
          waited_for.emplace_back(r, before.waited_ns / static_cast<int64_t>(them.size()));
        if (!them.empty()) explained += before.waited_ns;
      }
      if (2 * explained < lateness || waited_for.empty()) waited_for.assign(1, {m.rank, 1});
      std::sort(waited_for.begin(), waited_for.end());
      size_t merged = 0;  // one entry per culprit
      for (size_t k = 0; k < waited_for.size(); ++k) {
        if (merged > 0 && waited_for[merged - 1].first == waited_for[k].first) {
          waited_for[merged - 1].second += waited_for[k].second;
        } else {
          waited_for[merged++] = waited_for[k];
        }
      }
      waited_for.resize(merged);
      int64_t weights = 0;
      for (const auto& [r, w] : waited_for) weights += w;
      for (const auto& [r, w] : waited_for) {
        const int64_t part = static_cast<int64_t>(static_cast<double>(share) * static_cast<double>(w) /
                                                  static_cast<double>(weights));
        blame.cost[r] += part;
        int64_t& worst = blame.worst[r];
        worst = std::max(worst, part);
      }
    }
  }
}

}  // namespace

// Instances are collected and blamed per communicator on the workers, histories sorted per rank;
// every total is a sum of integers, so the result does not depend on which worker did what.
void add_stragglers(const ReportContext& ctx, RunReport& report) {
  const size_t n = ctx.run.ranks.size();
  const size_t comms = ctx.comms.size();
  const unsigned threads = ctx.options.threads;
  std::vector<Instances> by_comm(comms);
  parallel_for(comms, threads, [&](size_t c) { by_comm[c] = instances_of(ctx, c); });
  Instances instances;
  size_t listed = 0, members = 0, late = 0;
  for (const Instances& part : by_comm) {
    listed += part.list.size();
    members += part.members.size();
    late += part.late.size();
  }
  instances.list.reserve(listed);
  instances.members.reserve(members);
  instances.late.reserve(late);
  std::vector<size_t> comm_begin(comms + 1, 0);
  for (size_t c = 0; c < comms; ++c) {
    instances.append(by_comm[c]);
    comm_begin[c + 1] = instances.list.size();
    by_comm[c] = {};
  }

  // Histories hold the waits only: what waited for nothing explains no lateness.
  std::vector<int64_t> waited(n, 0);
  std::vector<size_t> entries(n, 0);
  for (const Instance& instance : instances.list)
    for (const Member& m : instances.members_of(instance))
      entries[static_cast<size_t>(m.rank)] += m.arrive_ns < instance.last_ns;
  std::vector<std::vector<Done>> history(n);
  for (size_t i = 0; i < n; ++i) history[i].reserve(entries[i]);
  for (size_t i = 0; i < instances.list.size(); ++i) {
    const Instance& instance = instances.list[i];
    for (const Member& m : instances.members_of(instance)) {
      const int64_t wait = instance.last_ns - m.arrive_ns;
      waited[static_cast<size_t>(m.rank)] += wait * instance.stride;
      if (wait > 0)
        history[static_cast<size_t>(m.rank)].push_back(Done{m.done_ns, wait, static_cast<uint32_t>(i), -1});
    }
  }
  // A receive's wait is the rank's p2p wait (p2p_transfers.h); a send's counts for blame only.
  parallel_for(n, threads, [&](size_t i) {
    int64_t p2p_waited = 0;
    std::vector<Done> transfers;
    for_each_p2p_transfer_of(ctx, i, [&](const P2pTransfer& t) {
      if (!t.send) p2p_waited += t.waited_ns * t.stride;
      if (t.waited_ns > 0)
        transfers.push_back(Done{t.done_ns, t.waited_ns, kP2p, static_cast<int32_t>(t.peer)});
    });
    report.ranks[i].p2p_wait_ns = p2p_waited;
    history[i].reserve(history[i].size() + transfers.size());
    history[i].insert(history[i].end(), transfers.begin(), transfers.end());
    std::sort(history[i].begin(), history[i].end(),
              [](const Done& a, const Done& b) { return a.done_ns < b.done_ns; });
  });

  std::vector<Blame> blame(comms);
  parallel_for(comms, threads, [&](size_t c) {
    blame_instances(ctx, instances, comm_begin[c], comm_begin[c + 1], history, blame[c]);
  });
  std::vector<int64_t> cost(n, 0);
  std::vector<uint64_t> last_count(n, 0);
  for (const Blame& b : blame) {
    for (const auto& [r, v] : b.cost) cost[static_cast<size_t>(r)] += v;
    for (const auto& [r, v] : b.last) last_count[static_cast<size_t>(r)] += v;
  }

  std::vector<std::vector<std::string>> roles(n);
  for (size_t c = 0; c < comms; ++c) {
    int64_t total = 0;
    for (const auto& [m, v] : blame[c].cost) total += v;
    const int32_t size = ctx.comms[c].size;
    for (const auto& [m, v] : blame[c].cost) {
      const int64_t others_mean = size > 1 ? (total - v) / (size - 1) : 0;
      const auto last = blame[c].last.count(m) ? blame[c].last.at(m) : 0;
      // A straggler is late again and again: one hiccup (a process descheduled, a page fault
      // storm) is not one, so the rule must hold without its costliest instance too.
      const int64_t worst = blame[c].worst.count(m) ? blame[c].worst.at(m) : 0;
      if (last >= 2 && caused_most(v, total, others_mean) &&
          caused_most(v - worst, total - worst, others_mean)) {
        auto& r = roles[static_cast<size_t>(m)];
        if (std::find(r.begin(), r.end(), ctx.comms[c].role) == r.end()) r.push_back(ctx.comms[c].role);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    report.ranks[i].collective_wait_ns = waited[i];
    if (ctx.kernel_mode) report.ranks[i].gpu.comm_wait_ns = waited[i] + report.ranks[i].p2p_wait_ns;
    // A rank that spent about as long waiting for others as it made others wait passed a
    // delay on rather than causing it.
    if (!roles[i].empty() && 2 * waited[i] < cost[i])
      report.stragglers.push_back(Straggler{ctx.run.global_rank[i], last_count[i], cost[i], roles[i]});
  }
  std::sort(report.stragglers.begin(), report.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.cost_ns > b.cost_ns; });
}

}  // namespace pipescope::analysis
