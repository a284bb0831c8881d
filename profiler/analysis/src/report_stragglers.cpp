// Who the others waited on. Every sampled collective instance that all members reached costs
// each member (last arrival - its arrival); the members that came within a hair of the last are
// the late group and share that cost. A late member that had just been waiting for others (in
// collectives, or for its peer in a send or receive) during its own lateness only passed a delay
// on: its share goes to those it waited for, in proportion to the waiting. That is how a slow
// rank's delay, which reaches the next world-wide collective on all its peers at once, is still
// blamed on the slow rank, and how a pipeline stage late because its neighbour was late is not.
// Blame starts after the first step: its waits are start-up skew (processes launched one after
// another, NCCL connections made at first use), not a rank that is slow.
#include <algorithm>
#include <unordered_map>

#include "report_context.h"

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
  std::vector<Member> members;
  int64_t first_ns = 0, last_ns = 0, hair_ns = 0;
  std::vector<int32_t> late;
};

// One rank's finished waits, to find what it did just before arriving somewhere late: a
// collective instance (whose late group it waited for), or a p2p operation (its peer).
struct Done {
  int64_t done_ns;
  int64_t waited_ns;
  size_t instance;  // kP2p for a send or receive
  int32_t peer;     // index into LoadedRun::ranks, for a send or receive
};
constexpr size_t kP2p = SIZE_MAX;

std::vector<Instance> collect_instances(const ReportContext& ctx) {
  std::vector<Instance> out;
  for (size_t c = 0; c < ctx.comms.size(); ++c) {
    const CommInfo& comm = ctx.comms[c];
    if (comm.size < 2 ||
        std::any_of(comm.members.begin(), comm.members.end(), [](int32_t m) { return m < 0; }))
      continue;
    std::unordered_map<uint64_t, Instance> by_sequence;
    for (int32_t m : comm.members) {
      for (const CommDigest& d : ctx.run.ranks[m].comms) {
        if (d.comm_id != comm.comm_id) continue;
        for (const InstanceSample& s : d.samples) {
          if (s.sequence % comm.sample_stride != 0) continue;
          const int64_t arrive = ctx.kernel_mode ? s.start_ns : s.enter_ns;
          const int64_t done = ctx.kernel_mode ? s.end_ns : s.exit_ns;
          if (arrive < 0 || done < 0) continue;
          Instance& instance = by_sequence[s.sequence];
          instance.comm = c;
          instance.stride = comm.sample_stride;
          instance.members.push_back(Member{m, ctx.aligned(m, arrive), ctx.aligned(m, done)});
        }
      }
    }
    for (auto& [sequence, instance] : by_sequence) {
      if (static_cast<int32_t>(instance.members.size()) != comm.size) continue;
      const auto [first, last] =
          std::minmax_element(instance.members.begin(), instance.members.end(),
                              [](const Member& a, const Member& b) { return a.arrive_ns < b.arrive_ns; });
      instance.first_ns = first->arrive_ns;
      instance.last_ns = last->arrive_ns;
      instance.hair_ns = std::max<int64_t>(kTieNs, (instance.last_ns - instance.first_ns) / 20);
      for (const Member& member : instance.members)
        if (instance.last_ns - member.arrive_ns <= instance.hair_ns) instance.late.push_back(member.rank);
      out.push_back(std::move(instance));
    }
  }
  return out;
}

// A rank is a straggler on a communicator when it came last more than once and the waiting it
// caused there is most of the waiting anyone caused (at least half), at least 1 ms in all, and
// more than 4x what the average other member caused.
bool caused_most(int64_t cost_ns, int64_t total_ns, int64_t others_mean_ns) {
  return cost_ns >= 1'000'000 && 2 * cost_ns >= total_ns && cost_ns > 4 * others_mean_ns;
}

}  // namespace

void add_stragglers(const ReportContext& ctx, RunReport& report) {
  const size_t n = ctx.run.ranks.size();
  const std::vector<Instance> instances = collect_instances(ctx);
  std::vector<int64_t> waited(n, 0);
  std::vector<std::vector<Done>> history(n);
  for (size_t i = 0; i < instances.size(); ++i) {
    for (const Member& m : instances[i].members) {
      const int64_t wait = instances[i].last_ns - m.arrive_ns;
      waited[static_cast<size_t>(m.rank)] += wait * instances[i].stride;
      history[static_cast<size_t>(m.rank)].push_back(Done{m.done_ns, wait, i, -1});
    }
  }
  for_each_p2p_transfer(ctx, [&](const P2pTransfer& t) {
    if (t.waited_ns > 0)
      history[t.rank].push_back(Done{t.done_ns, t.waited_ns, kP2p, static_cast<int32_t>(t.peer)});
  });
  for (auto& h : history)
    std::sort(h.begin(), h.end(), [](const Done& a, const Done& b) { return a.done_ns < b.done_ns; });

  // Blame per (communicator, rank), after passing on what was only passed on.
  std::vector<std::unordered_map<int32_t, int64_t>> comm_cost(ctx.comms.size());
  std::vector<std::unordered_map<int32_t, int64_t>> comm_worst(ctx.comms.size());  // largest single part
  std::vector<std::unordered_map<int32_t, uint64_t>> comm_last(ctx.comms.size());
  std::vector<int64_t> cost(n, 0);
  std::vector<uint64_t> last_count(n, 0);
  std::vector<std::pair<int32_t, int64_t>> waited_for;
  std::vector<int32_t> them;
  for (const Instance& instance : instances) {
    if (instance.first_ns < ctx.warmup_end_ns) continue;  // the first step's waits are start-up skew
    int64_t caused = 0;
    for (const Member& m : instance.members) caused += (instance.last_ns - m.arrive_ns) * instance.stride;
    const int64_t share = caused / static_cast<int64_t>(instance.late.size());
    for (const Member& m : instance.members) {
      if (std::find(instance.late.begin(), instance.late.end(), m.rank) == instance.late.end()) continue;
      if (instance.last_ns - instance.first_ns > kTieNs) {  // someone really waited
        ++comm_last[instance.comm][m.rank];
        ++last_count[static_cast<size_t>(m.rank)];
      }
      // Did it arrive late because it had waited for others shortly before? The waits it came
      // out of during its own lateness explain as much of it as they add up to.
      const int64_t lateness = m.arrive_ns - instance.first_ns;
      const auto& h = history[static_cast<size_t>(m.rank)];
      auto it = std::upper_bound(h.begin(), h.end(), m.arrive_ns,
                                 [](int64_t t, const Done& d) { return t < d.done_ns; });
      waited_for.clear();  // (culprit, the wait that points at it)
      int64_t explained = 0;
      const auto self = static_cast<size_t>(&instance - instances.data());
      while (it != h.begin()) {
        const Done& before = *--it;
        if (m.arrive_ns - before.done_ns > lateness + instance.hair_ns) break;
        if (before.instance == self || before.waited_ns <= 0) continue;
        them.clear();
        if (before.instance == kP2p) {
          them.push_back(before.peer);
        } else {
          for (int32_t r : instances[before.instance].late)
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
        comm_cost[instance.comm][r] += part;
        int64_t& worst = comm_worst[instance.comm][r];
        worst = std::max(worst, part);
        cost[static_cast<size_t>(r)] += part;
      }
    }
  }

  std::vector<std::vector<std::string>> roles(n);
  for (size_t c = 0; c < ctx.comms.size(); ++c) {
    int64_t total = 0;
    for (const auto& [m, v] : comm_cost[c]) total += v;
    const int32_t size = ctx.comms[c].size;
    for (const auto& [m, v] : comm_cost[c]) {
      const int64_t others_mean = size > 1 ? (total - v) / (size - 1) : 0;
      const auto last = comm_last[c].count(m) ? comm_last[c].at(m) : 0;
      // A straggler is late again and again: one hiccup (a process descheduled, a page fault
      // storm) is not one, so the rule must hold without its costliest instance too.
      const int64_t worst = comm_worst[c].count(m) ? comm_worst[c].at(m) : 0;
      if (last >= 2 && caused_most(v, total, others_mean) &&
          caused_most(v - worst, total - worst, others_mean)) {
        auto& r = roles[static_cast<size_t>(m)];
        if (std::find(r.begin(), r.end(), ctx.comms[c].role) == r.end()) r.push_back(ctx.comms[c].role);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    report.ranks[i].collective_wait_ns = waited[i];
    if (ctx.kernel_mode) report.ranks[i].gpu.comm_wait_ns = waited[i];
    // A rank that spent about as long waiting for others as it made others wait passed a
    // delay on rather than causing it.
    if (!roles[i].empty() && 2 * waited[i] < cost[i])
      report.stragglers.push_back(Straggler{ctx.run.global_rank[i], last_count[i], cost[i], roles[i]});
  }
  std::sort(report.stragglers.begin(), report.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.cost_ns > b.cost_ns; });
}

}  // namespace pipescope::analysis
