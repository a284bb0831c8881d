// Pipeline stages from p2p flows. Under 1F1B (and GPipe) the activations of a micro-batch flow
// stage k -> k+1 and its gradients flow back, so each pipeline is a chain of ranks linked both
// ways; the interleaved schedule also links the last stage to the first (a ring). Which end is
// stage 0 comes from, in order: flows that only go one way; the rank whose first p2p operation
// is a send (the first stage has no input to wait for); communicators inside a stage that tie
// a chain to one already oriented; and, failing all, the chain's lowest global rank.
#include "pipeline_stages.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <utility>

namespace pipescope::analysis::layout {
namespace {

// Stage of position `pos` of a chain laid out in its base order: stage = pos + shift, or
// shift - pos when reflected, modulo the length. A path has two orientations, a ring 2 * pp.
struct Orientation {
  bool reflect = false;
  int32_t shift = 0;
};

int32_t stage_at(const Orientation& o, int32_t pos, int32_t length) {
  const int32_t s = o.reflect ? o.shift - pos : pos + o.shift;
  return ((s % length) + length) % length;
}

struct Chain {
  std::vector<int32_t> ranks;  // base order: a path from its lower-ranked end, a ring from its lowest rank
  bool ring = false;
  std::vector<Orientation> candidates;  // orientations the evidence allows, base first
};

using FlowMap = std::map<std::pair<int32_t, int32_t>, P2pFlow>;

int64_t earliest(int64_t a, int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

// All-to-all done as grouped send/recv shows as p2p between every pair of a communicator.
bool all_to_all_group(const Group& g, const FlowMap& flows) {
  if (g.traffic.all_to_all_bytes > 0) return true;
  if (g.members.size() < 4) return false;  // a ring of 3 is complete too
  for (int32_t a : g.members) {
    for (int32_t b : g.members) {
      if (a != b && flows.find({a, b}) == flows.end()) return false;
    }
  }
  return true;
}

std::vector<int32_t> walk(int32_t start, const std::vector<std::vector<int32_t>>& peers) {
  std::vector<int32_t> order{start};
  int32_t previous = -1;
  int32_t current = start;
  while (true) {
    int32_t next = -1;
    for (int32_t p : peers[static_cast<size_t>(current)]) {
      if (p != previous && (next < 0 || p < next)) next = p;
    }
    if (next < 0 || next == start) break;
    order.push_back(next);
    previous = current;
    current = next;
  }
  return order;
}

std::vector<Orientation> all_orientations(bool ring, int32_t length) {
  if (!ring) return {{false, 0}, {true, length - 1}};
  std::vector<Orientation> out;
  for (int32_t shift = 0; shift < length; ++shift) out.push_back({false, (length - shift) % length});
  for (int32_t shift = 0; shift < length; ++shift) out.push_back({true, shift});
  return out;
}

template <class Pred>
std::vector<Orientation> keep(const std::vector<Orientation>& in, Pred pred) {
  std::vector<Orientation> out;
  std::copy_if(in.begin(), in.end(), std::back_inserter(out), pred);
  return out;
}

}  // namespace

Expected<PipelineStages> pipeline_from_flows(int32_t world_size, const std::vector<Group>& groups,
                                             const std::vector<P2pFlow>& flows,
                                             const std::unordered_set<uint64_t>& all_to_all_comms) {
  const auto world = static_cast<size_t>(world_size);
  PipelineStages out;
  out.stage.assign(world, 0);
  out.chain.assign(world, -1);

  FlowMap merged;
  for (const P2pFlow& f : flows) {
    if (f.src < 0 || f.src >= world_size || f.dst < 0 || f.dst >= world_size) {
      return Error{"p2p flow " + std::to_string(f.src) + " -> " + std::to_string(f.dst) +
                   " names a rank outside 0.." + std::to_string(world_size - 1)};
    }
    if (f.src == f.dst || (f.bytes == 0 && f.calls == 0)) continue;
    P2pFlow& m = merged.try_emplace({f.src, f.dst}, P2pFlow{f.src, f.dst, 0, 0, -1, -1}).first->second;
    m.bytes += f.bytes;
    m.calls += f.calls;
    m.first_send_ns = earliest(m.first_send_ns, f.first_send_ns);
    m.first_recv_ns = earliest(m.first_recv_ns, f.first_recv_ns);
    if (f.comm_id != 0 && all_to_all_comms.count(f.comm_id) == 0) m.comm_id = f.comm_id;  // surely not expert
  }

  std::vector<std::vector<size_t>> expert_groups_of(world);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() < 2 || !all_to_all_group(groups[g], merged)) continue;
    for (int32_t m : groups[g].members) expert_groups_of[static_cast<size_t>(m)].push_back(g);
  }
  size_t expert_flows = 0;
  for (auto it = merged.begin(); it != merged.end();) {
    const auto& a = expert_groups_of[static_cast<size_t>(it->first.first)];
    const auto& b = expert_groups_of[static_cast<size_t>(it->first.second)];
    const bool shared = it->second.comm_id == 0 && std::any_of(a.begin(), a.end(), [&](size_t g) {
                          return std::count(b.begin(), b.end(), g) > 0;
                        });
    if (shared) {
      ++expert_flows;
      it = merged.erase(it);
    } else {
      ++it;
    }
  }
  if (expert_flows > 0) {
    out.notes.push_back(std::to_string(expert_flows) +
                        " p2p flows inside all-to-all communicators count as expert traffic, not pipeline");
  }
  if (merged.empty()) return out;

  std::vector<std::vector<int32_t>> peers(world);
  std::vector<int64_t> first_send(world, -1), first_recv(world, -1);
  std::vector<int32_t> first_send_dst(world, -1);
  for (const auto& [key, f] : merged) {
    auto& ps = peers[static_cast<size_t>(f.src)];
    if (std::find(ps.begin(), ps.end(), f.dst) == ps.end()) {
      ps.push_back(f.dst);
      peers[static_cast<size_t>(f.dst)].push_back(f.src);
    }
    const auto s = static_cast<size_t>(f.src);
    if (f.first_send_ns >= 0 && (first_send[s] < 0 || f.first_send_ns < first_send[s])) {
      first_send[s] = f.first_send_ns;
      first_send_dst[s] = f.dst;
    }
    first_recv[static_cast<size_t>(f.dst)] =
        earliest(first_recv[static_cast<size_t>(f.dst)], f.first_recv_ns);
  }

  std::vector<int32_t> idle;
  for (int32_t r = 0; r < world_size; ++r) {
    const auto& ps = peers[static_cast<size_t>(r)];
    if (ps.size() > 2) {
      std::vector<int32_t> sorted = ps;
      std::sort(sorted.begin(), sorted.end());
      return Error{"p2p flows do not form pipeline chains: rank " + std::to_string(r) + " exchanges with " +
                   std::to_string(ps.size()) + " peers (" + rank_list(sorted) +
                   "); a pipeline stage talks to its two neighbours only"};
    }
    if (ps.empty()) idle.push_back(r);
  }
  if (!idle.empty()) {
    return Error{"ranks " + rank_list(idle) +
                 " have no p2p traffic while the other ranks form pipeline chains (traces missing?)"};
  }

  std::vector<Chain> chains;
  std::vector<int32_t> pos(world, -1);
  for (int32_t r = 0; r < world_size; ++r) {
    if (out.chain[static_cast<size_t>(r)] >= 0) continue;
    // Collect the component, then lay it out from an end (path) or its lowest rank (ring).
    std::vector<int32_t> component{r};
    out.chain[static_cast<size_t>(r)] = static_cast<int32_t>(chains.size());
    for (size_t i = 0; i < component.size(); ++i) {
      for (int32_t p : peers[static_cast<size_t>(component[i])]) {
        if (out.chain[static_cast<size_t>(p)] < 0) {
          out.chain[static_cast<size_t>(p)] = static_cast<int32_t>(chains.size());
          component.push_back(p);
        }
      }
    }
    std::vector<int32_t> ends;
    for (int32_t m : component) {
      if (peers[static_cast<size_t>(m)].size() == 1) ends.push_back(m);
    }
    Chain chain;
    chain.ring = ends.empty();
    chain.ranks = walk(chain.ring ? *std::min_element(component.begin(), component.end())
                                  : *std::min_element(ends.begin(), ends.end()),
                       peers);
    for (size_t i = 0; i < chain.ranks.size(); ++i)
      pos[static_cast<size_t>(chain.ranks[i])] = static_cast<int32_t>(i);
    chains.push_back(std::move(chain));
  }
  const auto length = static_cast<int32_t>(chains[0].ranks.size());
  for (const Chain& c : chains) {
    if (static_cast<int32_t>(c.ranks.size()) != length) {
      return Error{"pipeline chains differ in length: ranks " + rank_list(chains[0].ranks) +
                   " form a chain of " + std::to_string(length) + " stages, ranks " + rank_list(c.ranks) +
                   " one of " + std::to_string(c.ranks.size())};
    }
  }
  out.pp = length;

  // Evidence of each chain's direction, from its own flows.
  size_t by_direction = 0, by_timing = 0, by_alignment = 0, assumed = 0, conflicting = 0;
  std::vector<bool> oriented(chains.size(), false);
  for (size_t c = 0; c < chains.size(); ++c) {
    Chain& chain = chains[c];
    chain.candidates = all_orientations(chain.ring, length);
    const size_t links = chain.ring ? chain.ranks.size() : chain.ranks.size() - 1;
    size_t forward_only = 0, backward_only = 0;
    for (size_t i = 0; i < links; ++i) {
      const int32_t a = chain.ranks[i], b = chain.ranks[(i + 1) % chain.ranks.size()];
      const bool ab = merged.count({a, b}) > 0, ba = merged.count({b, a}) > 0;
      forward_only += ab && !ba;
      backward_only += ba && !ab;
    }
    if (forward_only == links || backward_only == links) {
      const bool reflect = backward_only == links;
      chain.candidates = keep(chain.candidates, [&](const Orientation& o) { return o.reflect == reflect; });
    }
    bool timing_decided = false;
    std::vector<int32_t> senders_first;
    for (int32_t r : chain.ranks) {
      const auto s = static_cast<size_t>(r);
      if (first_send[s] >= 0 && (first_recv[s] < 0 || first_send[s] < first_recv[s]))
        senders_first.push_back(r);
    }
    if (senders_first.size() == 1) {
      const int32_t first = senders_first[0];
      const int32_t next = first_send_dst[static_cast<size_t>(first)];
      auto timed = keep(chain.candidates, [&](const Orientation& o) {
        return stage_at(o, pos[static_cast<size_t>(first)], length) == 0 &&
               (!chain.ring || stage_at(o, pos[static_cast<size_t>(next)], length) == 1);
      });
      if (timed.empty()) {
        ++conflicting;
      } else {
        timing_decided = timed.size() == 1 && chain.candidates.size() > 1;
        chain.candidates = std::move(timed);
      }
    }
    if (chain.candidates.size() == 1) {
      oriented[c] = true;
      ++(timing_decided ? by_timing : by_direction);
    }
  }

  // Communicators whose members sit in distinct chains lie within one stage (tensor, data
  // parallel): they align the chains the flows left undecided, and must agree with all.
  std::vector<size_t> links;
  std::vector<std::vector<size_t>> links_of(chains.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() < 2) continue;
    std::vector<int32_t> seen;
    for (int32_t m : groups[g].members) seen.push_back(out.chain[static_cast<size_t>(m)]);
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) continue;
    links.push_back(g);
    for (int32_t c : seen) links_of[static_cast<size_t>(c)].push_back(g);
  }
  auto stage_of = [&](int32_t r) {
    const auto c = static_cast<size_t>(out.chain[static_cast<size_t>(r)]);
    return stage_at(chains[c].candidates[0], pos[static_cast<size_t>(r)], length);
  };
  std::vector<size_t> queue;
  for (size_t c = 0; c < chains.size(); ++c) {
    if (oriented[c]) queue.push_back(c);
  }
  auto propagate = [&]() -> Status {
    while (!queue.empty()) {
      const size_t from = queue.back();
      queue.pop_back();
      for (size_t g : links_of[from]) {
        for (int32_t member : groups[g].members) {
          const auto c = static_cast<size_t>(out.chain[static_cast<size_t>(member)]);
          if (oriented[c]) continue;
          Chain& chain = chains[c];
          for (size_t h : links_of[c]) {
            const auto& ms = groups[h].members;
            const auto anchor = std::find_if(ms.begin(), ms.end(), [&](int32_t m) {
              return oriented[static_cast<size_t>(out.chain[static_cast<size_t>(m)])];
            });
            const auto mine = std::find_if(ms.begin(), ms.end(), [&](int32_t m) {
              return out.chain[static_cast<size_t>(m)] == static_cast<int32_t>(c);
            });
            if (anchor == ms.end()) continue;
            const int32_t want = stage_of(*anchor);
            auto kept = keep(chain.candidates, [&](const Orientation& o) {
              return stage_at(o, pos[static_cast<size_t>(*mine)], length) == want;
            });
            if (kept.empty()) {
              return Error{describe(groups[h]) + " ties rank " + std::to_string(*mine) + " to rank " +
                           std::to_string(*anchor) + " at pipeline stage " + std::to_string(want) +
                           ", which no order of rank " + std::to_string(*mine) + "'s pipeline chain (" +
                           rank_list(chain.ranks) + ") allows"};
            }
            chain.candidates = std::move(kept);
          }
          if (chain.candidates.size() == 1) {
            oriented[c] = true;
            ++by_alignment;
            queue.push_back(c);
          }
        }
      }
    }
    return Status::Ok();
  };
  for (size_t c = 0; c < chains.size(); ++c) {
    if (Status s = propagate(); !s.ok()) return s.error();
    if (oriented[c]) continue;
    // The base orientation (first candidate) puts the lowest-ranked end or rank at stage 0.
    chains[c].candidates.resize(1);
    oriented[c] = true;
    ++assumed;
    queue.push_back(c);
  }
  if (Status s = propagate(); !s.ok()) return s.error();

  for (int32_t r = 0; r < world_size; ++r) out.stage[static_cast<size_t>(r)] = stage_of(r);
  for (size_t g : links) {
    const auto& ms = groups[g].members;
    for (int32_t m : ms) {
      if (stage_of(m) != stage_of(ms[0])) {
        return Error{describe(groups[g]) + " joins rank " + std::to_string(ms[0]) + " (pipeline stage " +
                     std::to_string(stage_of(ms[0])) + ") and rank " + std::to_string(m) + " (stage " +
                     std::to_string(stage_of(m)) + "): the p2p flows order their pipelines differently"};
      }
    }
  }

  const size_t rings =
      static_cast<size_t>(std::count_if(chains.begin(), chains.end(), [](const Chain& c) { return c.ring; }));
  out.notes.push_back(
      "pipeline: " + std::to_string(chains.size()) + " p2p chains of " + std::to_string(length) + " stages" +
      (rings > 0 ? " (" + std::to_string(rings) + " closed into rings: interleaved schedule)" : ""));
  out.notes.push_back("stage order: " + std::to_string(by_direction) + " chains from one-way flows, " +
                      std::to_string(by_timing) + " from the rank whose first p2p operation is a send, " +
                      std::to_string(by_alignment) + " aligned through communicators within a stage, " +
                      std::to_string(assumed) + " assumed (lowest global rank first)");
  if (conflicting > 0) {
    out.notes.push_back(std::to_string(conflicting) +
                        " chains have a first-sending rank that cannot be stage 0; that timing was ignored");
  }
  return out;
}

PipelineStages pipeline_from_groups(int32_t world_size, int32_t pp, int32_t tp, int32_t dp,
                                    const std::vector<Group>& groups) {
  const auto world = static_cast<size_t>(world_size);
  const int32_t per_stage = world_size / pp;
  PipelineStages out;
  out.pp = pp;
  out.chain.assign(world, -1);
  out.stage.assign(world, 0);

  const std::vector<std::vector<int32_t>> attempts = {{tp, dp}, {tp}, {dp}};
  for (const auto& sizes : attempts) {
    std::vector<int32_t> parent(world);
    std::iota(parent.begin(), parent.end(), 0);
    auto root = [&](int32_t x) {
      while (parent[static_cast<size_t>(x)] != x)
        x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      return x;
    };
    for (const Group& g : groups) {
      if (g.size() < 2 || g.size() > per_stage || g.traffic.p2p_only()) continue;
      if (std::find(sizes.begin(), sizes.end(), g.size()) == sizes.end()) continue;
      for (int32_t m : g.members) parent[static_cast<size_t>(root(m))] = root(g.members[0]);
    }
    // Components in order of their lowest rank: scanning ranks upward meets each root's set first at its
    // minimum.
    std::map<int32_t, int32_t> stage_of_root;
    std::vector<int32_t> count;
    for (int32_t r = 0; r < world_size; ++r) {
      const auto [it, added] = stage_of_root.try_emplace(root(r), static_cast<int32_t>(count.size()));
      if (added) count.push_back(0);
      ++count[static_cast<size_t>(it->second)];
      out.stage[static_cast<size_t>(r)] = it->second;
    }
    if (static_cast<int32_t>(count.size()) == pp &&
        std::all_of(count.begin(), count.end(), [&](int32_t n) { return n == per_stage; })) {
      out.notes.push_back("no p2p traffic shows the pipeline: the " + std::to_string(pp) +
                          " stages are the rank sets joined by the tensor- and data-parallel communicators, "
                          "ordered by their lowest global rank");
      return out;
    }
  }
  for (int32_t r = 0; r < world_size; ++r) out.stage[static_cast<size_t>(r)] = r / per_stage;
  out.notes.push_back("no p2p traffic and no communicators separate the " + std::to_string(pp) +
                      " stages: assumed stage = rank / " + std::to_string(per_stage) + " (Megatron order)");
  return out;
}

Expected<PipelineStages> pipeline_from_declarations(int32_t world_size, const std::vector<int32_t>& declared,
                                                    const std::vector<Group>& groups) {
  const auto world = static_cast<size_t>(world_size);
  PipelineStages out;
  out.chain.assign(world, -1);
  out.stage.assign(world, -1);
  for (size_t r = 0; r < world && r < declared.size(); ++r) out.stage[r] = declared[r];
  std::vector<size_t> by_size(groups.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return groups[a].size() < groups[b].size(); });
  size_t inherited = 0;
  for (int32_t r = 0; r < world_size; ++r) {
    if (out.stage[static_cast<size_t>(r)] >= 0) continue;
    for (size_t g : by_size) {
      const auto& ms = groups[g].members;
      if (groups[g].size() < 2 || std::find(ms.begin(), ms.end(), r) == ms.end()) continue;
      const auto declaring = std::find_if(ms.begin(), ms.end(), [&](int32_t m) {
        return static_cast<size_t>(m) < declared.size() && declared[static_cast<size_t>(m)] >= 0;
      });
      if (declaring == ms.end()) continue;
      out.stage[static_cast<size_t>(r)] = declared[static_cast<size_t>(*declaring)];
      ++inherited;
      break;
    }
    if (out.stage[static_cast<size_t>(r)] < 0)
      return Error{"rank " + std::to_string(r) +
                   " declares no pipeline stage (NVTX stage=<k>) and shares no communicator with a rank "
                   "that does"};
  }
  out.pp = *std::max_element(out.stage.begin(), out.stage.end()) + 1;
  std::vector<int32_t> count(static_cast<size_t>(out.pp), 0);
  for (int32_t s : out.stage) ++count[static_cast<size_t>(s)];
  for (int32_t s = 0; s < out.pp; ++s) {
    if (count[static_cast<size_t>(s)] != count[0]) {
      return Error{"the NVTX stage=<k> declarations make stages of unequal size: stage 0 has " +
                   std::to_string(count[0]) + " ranks, stage " + std::to_string(s) + " has " +
                   std::to_string(count[static_cast<size_t>(s)])};
    }
  }
  out.notes.push_back("pipeline: " + std::to_string(out.pp) +
                      " stages from NVTX ranges or marks named stage=<k> (no p2p traffic shows them)" +
                      (inherited > 0 ? "; " + std::to_string(inherited) +
                                           " rank(s) without a declaration took their communicator's stage"
                                     : ""));
  return out;
}

}  // namespace pipescope::analysis::layout
