#include "stage_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace pipescope::analysis::layout {
namespace {

size_t at(int32_t rank) { return static_cast<size_t>(rank); }

template <class Pred>
std::vector<const Family*> select(const std::vector<const Family*>& in, Pred pred) {
  std::vector<const Family*> out;
  std::copy_if(in.begin(), in.end(), std::back_inserter(out), pred);
  return out;
}

}  // namespace

StageInference::StageInference(int32_t world_size, const std::vector<Group>& groups,
                               const std::optional<StatedLayout>& stated,
                               const std::vector<int32_t>& untraced, InferredLayout& out)
    : world_(world_size), groups_(groups), stated_(stated), out_(out), role_(groups.size()) {
  untraced_.assign(at(world_size), false);
  for (int32_t r : untraced)
    if (r >= 0 && r < world_size) untraced_[at(r)] = true;
}

void StageInference::note(std::string text) {
  if (std::find(out_.notes.begin(), out_.notes.end(), text) == out_.notes.end())
    out_.notes.push_back(std::move(text));
}

// Communicators of one role are pairwise disjoint and alike in traffic; those of another role
// and the same size overlap them. So a family grows from the busiest communicator left, taking
// the disjoint ones most like it first.
std::vector<Family> StageInference::families(int32_t stage, const std::vector<int32_t>& ranks) {
  std::vector<int32_t> stage_of(at(world_), -1);
  for (int32_t r : ranks) stage_of[at(r)] = stage;
  std::map<int32_t, std::vector<size_t>> by_size;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& group = groups_[g];
    if (group.size() < 2 || group.traffic.p2p_only()) continue;
    if (std::all_of(group.members.begin(), group.members.end(),
                    [&](int32_t m) { return stage_of[at(m)] == stage; })) {
      by_size[group.size()].push_back(g);
    }
  }
  auto lowest = [&](size_t g) {
    return *std::min_element(groups_[g].members.begin(), groups_[g].members.end());
  };
  std::vector<Family> out;
  for (auto& [size, left] : by_size) {
    while (!left.empty()) {
      const size_t seed = *std::max_element(left.begin(), left.end(), [&](size_t a, size_t b) {
        const double ba = groups_[a].traffic.collective_bytes(), bb = groups_[b].traffic.collective_bytes();
        return ba < bb || (ba == bb && lowest(a) > lowest(b));
      });
      std::vector<std::pair<double, size_t>> order;
      for (size_t g : left) order.emplace_back(distance(groups_[g].traffic, groups_[seed].traffic), g);
      std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return a.first < b.first || (a.first == b.first && lowest(a.second) < lowest(b.second));
      });
      Family f;
      f.size = size;
      f.group_of.assign(at(world_), -1);
      f.position.assign(at(world_), -1);
      std::vector<size_t> rest;
      for (const auto& [d, g] : order) {
        const auto& ms = groups_[g].members;
        if (g != seed &&
            std::any_of(ms.begin(), ms.end(), [&](int32_t m) { return f.group_of[at(m)] >= 0; })) {
          rest.push_back(g);
          continue;
        }
        for (int32_t m : ms) f.group_of[at(m)] = 0;  // taken; numbered below
        f.groups.push_back(g);
      }
      left = std::move(rest);
      std::sort(f.groups.begin(), f.groups.end(), [&](size_t a, size_t b) { return lowest(a) < lowest(b); });
      int32_t covered = 0;
      for (size_t k = 0; k < f.groups.size(); ++k) {
        const Group& g = groups_[f.groups[k]];
        for (size_t p = 0; p < g.members.size(); ++p) {
          f.group_of[at(g.members[p])] = static_cast<int32_t>(k);
          f.position[at(g.members[p])] = static_cast<int32_t>(p);
          ++covered;
        }
        const auto [lo, hi] = std::minmax_element(g.members.begin(), g.members.end());
        f.span = std::max(f.span, *hi - *lo);
        f.traffic.add(g.traffic);
      }
      // Groups whose members all died left no record: the family still partitions the stage
      // when what it misses is untraced ranks, whole groups of them.
      int32_t lost = 0;
      for (int32_t r : ranks) lost += f.group_of[at(r)] < 0 && untraced_[at(r)];
      for (int32_t r : ranks) f.traced += f.group_of[at(r)] >= 0 && !untraced_[at(r)];
      f.complete = covered + lost == static_cast<int32_t>(ranks.size()) && lost % size == 0 && covered > 0;
      out.push_back(std::move(f));
    }
  }
  return out;
}

// Every group of b meets distinct groups of a (a tensor group meets each data group once).
bool StageInference::orthogonal(const Family& a, const Family& b) const {
  for (size_t g : b.groups) {
    std::set<int32_t> met;
    for (int32_t m : groups_[g].members) {
      if (a.group_of[at(m)] < 0 && untraced_[at(m)]) continue;  // its group of `a` left no record
      if (a.group_of[at(m)] < 0 || !met.insert(a.group_of[at(m)]).second) return false;
    }
  }
  return true;
}

// The data-parallel groups must meet each tensor-parallel group once; name two that do not.
Error StageInference::not_orthogonal(const Family& tp, const Family& other, int32_t dp) const {
  for (size_t g : other.groups) {
    std::map<int32_t, int32_t> met;  // tensor group -> first member met there
    for (int32_t m : groups_[g].members) {
      const int32_t t = tp.group_of[at(m)];
      const auto [it, added] = met.try_emplace(t, m);
      if (!added) {
        return Error{"communicators do not partition the ranks consistently: " +
                     layout::describe(groups_[tp.groups[at(t)]]) + " (tensor parallel) and " +
                     layout::describe(groups_[g]) + " share ranks " + std::to_string(it->second) + " and " +
                     std::to_string(m) + ", but the " + std::to_string(dp) +
                     "-rank groups beside tensor parallel must meet each tensor-parallel group once"};
      }
    }
  }
  return Error{"communicators of " + std::to_string(other.size) +
               " ranks do not fit beside the tensor-parallel ones"};
}

// Data-parallel groups hold ranks of one tensor-parallel rank each.
bool StageInference::one_tp_rank(const Family& tp, const Family& f) const {
  for (size_t g : f.groups) {
    const auto& ms = groups_[g].members;
    if (std::any_of(ms.begin(), ms.end(),
                    [&](int32_t m) { return tp.position[at(m)] != tp.position[at(ms[0])]; })) {
      return false;
    }
  }
  return true;
}

bool StageInference::nested(const Family& inner, const Family& outer) const {
  for (size_t g : inner.groups) {
    const auto& ms = groups_[g].members;
    const int32_t home = outer.group_of[at(ms[0])];
    if (home < 0 ||
        std::any_of(ms.begin(), ms.end(), [&](int32_t m) { return outer.group_of[at(m)] != home; })) {
      return false;
    }
  }
  return true;
}

Expected<Dims> StageInference::analyze(int32_t stage, const std::vector<int32_t>& ranks,
                                       const std::vector<Family>& families) {
  const auto per_stage = static_cast<int32_t>(ranks.size());
  const std::string where = "stage " + std::to_string(stage) + ": ";
  Dims dims;
  std::vector<const Family*> complete;
  for (const Family& f : families) {
    if (f.complete) {
      complete.push_back(&f);
    } else {
      set_role(f, CommRole::kOther);
      note(std::to_string(f.groups.size()) + " communicators of " + std::to_string(f.size) +
           " ranks cover only part of a stage; named other (first: " +
           layout::describe(groups_[f.groups[0]]) + ")");
    }
  }
  const auto no_all_to_all =
      select(complete, [](const Family* f) { return !f->traffic.all_to_all_dominated(); });

  if (const Family* expert =
          most_traffic(select(complete, [](const Family* f) { return f->traffic.all_to_all_dominated(); }))) {
    dims.ep = expert->size;
    set_role(*expert, CommRole::kExpert);
  }

  const Family* tp = nullptr;
  if (stated_) {
    dims.tp = stated_->tp;
    if (dims.tp > 1) {
      auto sized = select(complete, [&](const Family* f) { return f->size == dims.tp; });
      auto plain = select(sized, [](const Family* f) {
        return !f->traffic.all_to_all_dominated() && !f->traffic.parameter_gather_dominated();
      });
      bool close = false;
      tp = tensor_family(plain.empty() ? sized : plain, close);
      if (tp == nullptr)
        note(where + "no communicators of tp = " + std::to_string(dims.tp) + " ranks partition it");
    }
  } else {
    // Hierarchical ZeRO: parameter-gathering shard groups times the (lighter) groups across them
    // make up the whole stage, and no family is left for tensor parallelism.
    bool hierarchical = false;
    for (const Family* shard : no_all_to_all) {
      for (const Family* across : no_all_to_all) {
        hierarchical |= shard != across && shard->traffic.parameter_gather_dominated() &&
                        shard->size * across->size == per_stage &&
                        shard->traffic.collective_bytes() > across->traffic.collective_bytes() &&
                        orthogonal(*shard, *across);
      }
    }
    auto candidates = select(no_all_to_all, [&](const Family* f) {
      return !f->traffic.parameter_gather_dominated() && f->size < per_stage;
    });
    bool close = false;
    if (!hierarchical) tp = tensor_family(candidates, close);
    if (tp != nullptr) {
      dims.tp = tp->size;
      for (const Family* f : candidates) {
        if (close && f != tp && 2 * call_rate(*f) >= call_rate(*tp)) {
          char rates[96];
          std::snprintf(rates, sizeof rates, "%.1f and %.1f collectives per rank", call_rate(*tp),
                        call_rate(*f));
          note(where + "communicators of " + std::to_string(tp->size) + " ranks and others of " +
               std::to_string(f->size) + " ranks run about as often (" + rates +
               "); tensor parallel taken as the one with more bytes (" + std::to_string(tp->size) +
               " ranks; tensor-parallel groups are usually within a node); state --layout if that is wrong");
        }
      }
    } else if (!hierarchical && per_stage > 1 && no_all_to_all.size() == 1 &&
               no_all_to_all[0]->size == per_stage) {
      note(
          "one communicator family spans each stage; taken as data parallel (state --layout tp=... if it is "
          "tensor parallel)");
    }
  }
  if (tp != nullptr) set_role(*tp, CommRole::kTensor);

  dims.dp = per_stage / dims.tp;
  const Family* dp = nullptr;
  const Family *inner = nullptr, *outer = nullptr;  // data parallel as two levels
  if (dims.dp > 1) {
    auto sized = select(complete, [&](const Family* f) {
      return f != tp && f->size == dims.dp && (tp == nullptr || orthogonal(*tp, *f));
    });
    auto plain = select(sized, [](const Family* f) { return !f->traffic.all_to_all_dominated(); });
    dp = most_traffic(plain.empty() ? sized : plain);
  }
  if (dp != nullptr) {
    const bool flat_zero = dp->traffic.parameter_gather_dominated();
    set_role(*dp, flat_zero ? CommRole::kShard : CommRole::kData);
    if (flat_zero) dims.shard = dims.dp;
    const Family* shard = nullptr;
    for (const Family* f : no_all_to_all) {
      if (f == tp || f == dp || f->size >= dims.dp || !nested(*f, *dp)) continue;
      if (f->traffic.parameter_gather_dominated()) {
        if (shard == nullptr || f->traffic.collective_bytes() > shard->traffic.collective_bytes()) shard = f;
      } else {
        set_role(*f, CommRole::kData);
        note(where + "communicators of " + std::to_string(f->size) +
             " ranks inside the data-parallel groups carry reductions; named data parallel");
      }
    }
    if (shard != nullptr) {
      set_role(*shard, CommRole::kShard);
      dims.shard = shard->size;
    }
    for (int32_t r : ranks) {
      out_.ranks[at(r)].dp_rank = dp->position[at(r)];
      out_.ranks[at(r)].shard_rank = shard ? shard->position[at(r)] : flat_zero ? dp->position[at(r)] : 0;
    }
  } else if (dims.dp > 1 && (tp != nullptr || dims.tp == 1)) {
    // No communicator spans the data-parallel dimension: look for shard groups times the groups
    // across them (hierarchical ZeRO, FSDP hybrid sharding).
    for (const Family* a : no_all_to_all) {
      for (const Family* b : no_all_to_all) {
        if (a == b || a == tp || b == tp || a->size * b->size != dims.dp || !orthogonal(*a, *b)) continue;
        if (tp != nullptr && !(one_tp_rank(*tp, *a) && one_tp_rank(*tp, *b))) continue;
        // The sharded level gathers parameters; without one, the busier level is the inner one.
        const bool a_inner =
            a->traffic.parameter_gather_dominated() != b->traffic.parameter_gather_dominated()
                ? a->traffic.parameter_gather_dominated()
                : a->traffic.collective_bytes() >= b->traffic.collective_bytes();
        if (!a_inner) continue;
        if (inner == nullptr || a->traffic.collective_bytes() + b->traffic.collective_bytes() >
                                    inner->traffic.collective_bytes() + outer->traffic.collective_bytes()) {
          inner = a;
          outer = b;
        }
      }
    }
    if (inner != nullptr) {
      const bool sharded = inner->traffic.parameter_gather_dominated();
      dims.shard = sharded ? inner->size : 1;
      set_role(*inner, sharded ? CommRole::kShard : CommRole::kData);
      set_role(*outer, CommRole::kData);
      for (int32_t r : ranks) {
        out_.ranks[at(r)].dp_rank = outer->position[at(r)] * inner->size + inner->position[at(r)];
        out_.ranks[at(r)].shard_rank = sharded ? inner->position[at(r)] : 0;
      }
      note("data parallel seen as groups of " + std::to_string(inner->size) + " times groups of " +
           std::to_string(outer->size) + " across them: dp_rank = (rank across) * " +
           std::to_string(inner->size) + " + (rank within)");
      if (!sharded) {
        note(
            "two data-parallel levels without parameter all-gathers: if the stages of a pipeline talk "
            "through "
            "something other than NCCL, state --layout tp=T,pp=P,dp=D");
      }
    }
  }
  if (dims.dp > 1 && dp == nullptr && inner == nullptr && tp != nullptr) {
    for (const Family* f : no_all_to_all) {
      if (f != tp && f->size == dims.dp) return not_orthogonal(*tp, *f, dims.dp);
    }
  }
  if (tp != nullptr) {
    for (int32_t r : ranks) out_.ranks[at(r)].tp_rank = tp->position[at(r)];
  }
  if (tp != nullptr && dp != nullptr) fill_uncovered(ranks, *tp, *dp);
  fallback(ranks, tp, dp, dp != nullptr || inner != nullptr, dims);
  return dims;
}

// A rank whose tensor- (or data-) parallel group died whole has no place in that family; the
// other family's group gives it, as a data-parallel group holds one tp_rank and a tensor-parallel
// group one dp_rank.
void StageInference::fill_uncovered(const std::vector<int32_t>& ranks, const Family& tp, const Family& dp) {
  auto from_group = [&](const Family& along, int32_t r, const Family& of) {
    const int32_t g = along.group_of[at(r)];
    if (g < 0) return -1;
    for (int32_t m : groups_[along.groups[at(g)]].members)
      if (m != r && of.position[at(m)] >= 0) return of.position[at(m)];
    return -1;
  };
  for (int32_t r : ranks) {
    RankCoordinates& c = out_.ranks[at(r)];
    if (tp.group_of[at(r)] < 0) c.tp_rank = std::max(0, from_group(dp, r, tp));
    if (dp.group_of[at(r)] < 0) c.dp_rank = std::max(0, from_group(tp, r, dp));
  }
}

// Coordinates of a dimension no communicator shows: from the other dimension's groups, or from
// the rank order (Megatron's, tensor-parallel fastest) when neither shows.
void StageInference::fallback(const std::vector<int32_t>& ranks, const Family* tp, const Family* dp,
                              bool dp_found, const Dims& dims) {
  const bool tp_missing = dims.tp > 1 && tp == nullptr;
  const bool dp_missing = dims.dp > 1 && !dp_found;
  if (!tp_missing && !dp_missing) return;
  if (tp_missing && dp != nullptr) {
    for (int32_t r : ranks) out_.ranks[at(r)].tp_rank = std::max(0, dp->group_of[at(r)]);
    note("tp_rank: the index of the rank's data-parallel group (no tensor-parallel communicator)");
  } else if (dp_missing && !tp_missing && tp != nullptr) {
    for (int32_t r : ranks) out_.ranks[at(r)].dp_rank = std::max(0, tp->group_of[at(r)]);
    note("dp_rank: the index of the rank's tensor-parallel group (no data-parallel communicator of " +
         std::to_string(dims.dp) + " ranks)");
  } else {
    for (size_t i = 0; i < ranks.size(); ++i) {
      const auto index = static_cast<int32_t>(i);
      out_.ranks[at(ranks[i])].tp_rank = index % dims.tp;
      out_.ranks[at(ranks[i])].dp_rank = index / dims.tp;
    }
    note("tp_rank and dp_rank assumed from the rank order within each stage (tensor parallel fastest)");
  }
}

}  // namespace pipescope::analysis::layout
