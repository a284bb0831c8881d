// Who the others waited on. Every sampled collective instance that all members reached costs
// each member (last arrival - its arrival); the members that came within a hair of the last are
// the late group and share that cost. A late member that had just been waiting for others (in
// collectives, or for its peer in a send or receive) during its own lateness only passed a delay
// on: its share goes to those it waited for, in proportion to the waiting, and on again from
// them when they too were late only for having waited (a chain down a pipeline: stage 3 waited
// for stage 2, which waited for stage 1, which waited for a slow stage 0). That is how a slow
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
  uint32_t instance;       // kP2p for a send or receive
  int32_t peer;            // index into LoadedRun::ranks, for a send or receive
  int64_t peer_arrive_ns;  // for a send or receive: when the peer's counterpart started
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

// A rank that arrived somewhere late (at `arrive_ns`, `lateness_ns` after the first), and the
// share of the blame that reaches it.
struct Lead {
  int32_t rank;
  int64_t arrive_ns;
  int64_t lateness_ns;
  int64_t hair_ns;
  uint32_t instance;  // where it arrived late (its own wait there explains nothing), or kP2p
  double weight;
  int depth;
  // When the group it arrived late to last met (INT64_MIN: unknown), and how long the group's
  // first arrival waited since then: waiting beyond that is what made it late. Without them,
  // the waits it came out of during its lateness are what count.
  int64_t since_ns = INT64_MIN;
  int64_t baseline_waits_ns = 0;
};

// How far blame is passed on, and how many leads one late arrival may follow: deep enough for a
// pipeline of 64 stages, bounded where every step splits among a whole late group.
constexpr int kMostPassesOn = 64;
constexpr size_t kMostLeads = 512;

class BlameResolver {
 public:
  BlameResolver(const Instances& instances, const std::vector<std::vector<Done>>& history)
      : instances_(instances), history_(history) {}

  // The ranks `first`'s lateness is blamed on, with their fractions (summing to 1): itself,
  // unless waits it came out of during its lateness explain at least half of it; then those it
  // waited for, each resolved the same way.
  const std::vector<std::pair<int32_t, double>>& resolve(const Lead& first) {
    roots_.clear();
    stack_.assign(1, first);
    size_t followed = 0;
    while (!stack_.empty()) {
      const Lead lead = stack_.back();
      stack_.pop_back();
      if (lead.depth >= kMostPassesOn || ++followed > kMostLeads || !explained(lead)) {
        roots_.emplace_back(lead.rank, lead.weight);
        continue;
      }
      double weights = 0;
      for (const Culprit& c : culprits_) weights += c.weight;
      for (const Culprit& c : culprits_) {
        stack_.push_back(Lead{c.rank, c.arrive_ns, c.lateness_ns,
                              std::max<int64_t>(kTieNs, c.lateness_ns / 20), c.instance,
                              lead.weight * c.weight / weights, lead.depth + 1});
      }
    }
    std::sort(roots_.begin(), roots_.end());
    size_t merged = 0;  // one entry per culprit
    for (size_t k = 0; k < roots_.size(); ++k) {
      if (merged > 0 && roots_[merged - 1].first == roots_[k].first) {
        roots_[merged - 1].second += roots_[k].second;
      } else {
        roots_[merged++] = roots_[k];
      }
    }
    roots_.resize(merged);
    return roots_;
  }

 private:
  struct Culprit {
    int32_t rank;
    int64_t arrive_ns, lateness_ns;
    uint32_t instance;
    double weight;  // the wait that points at it
  };

  // Fills culprits_ with whom `lead` waited for during its lateness; true when those waits
  // explain at least half of it.
  bool explained(const Lead& lead) {
    // The waits it came out of during its lateness; failing that, for an arrival at a group,
    // how much longer it waited than the group's first arrival since the group last met.
    if (explained_by_waits_since(lead, INT64_MIN, 0)) return true;
    return lead.since_ns != INT64_MIN &&
           explained_by_waits_since(lead, lead.since_ns, lead.baseline_waits_ns);
  }

  // Waits that ended after since_ns (INT64_MIN: within the lateness), less baseline_ns, against
  // half the lateness; culprits_ lists whom they were for.
  bool explained_by_waits_since(const Lead& lead, int64_t since_ns, int64_t baseline_ns) {
    culprits_.clear();
    const auto& h = history_[static_cast<size_t>(lead.rank)];
    auto it = std::upper_bound(h.begin(), h.end(), lead.arrive_ns,
                               [](int64_t t, const Done& d) { return t < d.done_ns; });
    int64_t explained_ns = -baseline_ns;
    while (it != h.begin()) {
      const Done& before = *--it;
      if (since_ns != INT64_MIN ? before.done_ns <= since_ns
                                : lead.arrive_ns - before.done_ns > lead.lateness_ns + lead.hair_ns)
        break;
      if (before.waited_ns <= 0 || (before.instance != kP2p && before.instance == lead.instance)) continue;
      const auto weight = static_cast<double>(before.waited_ns);
      if (before.instance == kP2p) {
        culprits_.push_back(Culprit{before.peer, before.peer_arrive_ns, before.waited_ns, kP2p, weight});
        explained_ns += before.waited_ns;
        continue;
      }
      const Instance& waited_at = instances_.list[before.instance];
      const auto late = instances_.late_of(waited_at);
      const auto others = static_cast<double>(
          late.size() - static_cast<size_t>(std::count(late.begin(), late.end(), lead.rank)));
      if (others == 0) continue;
      for (const Member& m : instances_.members_of(waited_at)) {
        if (m.rank == lead.rank || std::find(late.begin(), late.end(), m.rank) == late.end()) continue;
        culprits_.push_back(
            Culprit{m.rank, m.arrive_ns, m.arrive_ns - waited_at.first_ns, before.instance, weight / others});
      }
      explained_ns += before.waited_ns;
    }
    return !culprits_.empty() && 2 * explained_ns >= lead.lateness_ns;
  }

  const Instances& instances_;
  const std::vector<std::vector<Done>>& history_;
  std::vector<Lead> stack_;
  std::vector<Culprit> culprits_;
  std::vector<std::pair<int32_t, double>> roots_;
};

// What a rank waited in all (its waits in `h` that ended after since_ns and by until_ns), except
// at instance `skip`.
int64_t waits_between(const std::vector<Done>& h, int64_t since_ns, int64_t until_ns, uint32_t skip) {
  int64_t total = 0;
  auto it =
      std::upper_bound(h.begin(), h.end(), until_ns, [](int64_t t, const Done& d) { return t < d.done_ns; });
  while (it != h.begin()) {
    const Done& before = *--it;
    if (before.done_ns <= since_ns) break;
    if (before.instance == kP2p || before.instance != skip) total += before.waited_ns;
  }
  return total;
}

void blame_instances(const ReportContext& ctx, const Instances& instances, size_t begin, size_t end,
                     const std::vector<std::vector<Done>>& history, Blame& blame) {
  BlameResolver resolver(instances, history);
  for (size_t self = begin; self < end; ++self) {
    const Instance& instance = instances.list[self];
    if (instance.first_ns < ctx.warmup_end_ns) continue;  // the first step's waits are start-up skew
    const auto members = instances.members_of(instance);
    const auto late = instances.late_of(instance);
    int64_t caused = 0;
    for (const Member& m : members) caused += (instance.last_ns - m.arrive_ns) * instance.stride;
    const int64_t share = caused / static_cast<int64_t>(late.size());
    // The group last met at its previous instance (instances of a communicator are in sequence
    // order): the first to arrive now waited this much since then.
    const int64_t since_ns = self > begin ? instances.list[self - 1].last_ns : INT64_MIN;
    const Member& first =
        *std::min_element(members.begin(), members.end(),
                          [](const Member& a, const Member& b) { return a.arrive_ns < b.arrive_ns; });
    const int64_t baseline_ns = since_ns == INT64_MIN
                                    ? 0
                                    : waits_between(history[static_cast<size_t>(first.rank)], since_ns,
                                                    first.arrive_ns, static_cast<uint32_t>(self));
    for (const Member& m : members) {
      if (std::find(late.begin(), late.end(), m.rank) == late.end()) continue;
      if (instance.last_ns - instance.first_ns > kTieNs) ++blame.last[m.rank];  // someone really waited
      const Lead arrival{m.rank,
                         m.arrive_ns,
                         m.arrive_ns - instance.first_ns,
                         instance.hair_ns,
                         static_cast<uint32_t>(self),
                         1.0,
                         0,
                         since_ns,
                         baseline_ns};
      for (const auto& [r, fraction] : resolver.resolve(arrival)) {
        const auto part = static_cast<int64_t>(static_cast<double>(share) * fraction);
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
  std::vector<char> measured(n, 0);  // took part in an instance every member reached
  for (const Instance& instance : instances.list)
    for (const Member& m : instances.members_of(instance)) {
      entries[static_cast<size_t>(m.rank)] += m.arrive_ns < instance.last_ns;
      measured[static_cast<size_t>(m.rank)] = 1;
    }
  std::vector<std::vector<Done>> history(n);
  for (size_t i = 0; i < n; ++i) history[i].reserve(entries[i]);
  for (size_t i = 0; i < instances.list.size(); ++i) {
    const Instance& instance = instances.list[i];
    for (const Member& m : instances.members_of(instance)) {
      const int64_t wait = instance.last_ns - m.arrive_ns;
      waited[static_cast<size_t>(m.rank)] += wait * instance.stride;
      if (wait > 0)
        history[static_cast<size_t>(m.rank)].push_back(
            Done{m.done_ns, wait, static_cast<uint32_t>(i), -1, 0});
    }
  }
  // A receive's wait is the rank's p2p wait (p2p_transfers.h); a send's counts for blame only.
  parallel_for(n, threads, [&](size_t i) {
    int64_t p2p_waited = 0;
    std::vector<Done> transfers;
    for_each_p2p_transfer_of(ctx, i, [&](const P2pTransfer& t) {
      if (!t.send) p2p_waited += t.waited_ns * t.stride;
      if (t.waited_ns > 0)
        transfers.push_back(
            Done{t.done_ns, t.waited_ns, kP2p, static_cast<int32_t>(t.peer), t.peer_start_ns});
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
    RankReport& r = report.ranks[i];
    if (measured[i]) r.collective_wait_ns = waited[i];
    if (ctx.kernel_mode && (measured[i] || r.p2p_ns)) r.gpu.comm_wait_ns = waited[i] + r.p2p_wait_ns;
    // A rank that spent about as long waiting for others as it made others wait passed a
    // delay on rather than causing it.
    if (!roles[i].empty() && 2 * waited[i] < cost[i])
      report.stragglers.push_back(Straggler{ctx.run.global_rank[i], last_count[i], cost[i], roles[i]});
  }
  std::sort(report.stragglers.begin(), report.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.cost_ns > b.cost_ns; });
}

}  // namespace pipescope::analysis
