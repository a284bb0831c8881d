#include "pipescope/analysis/untraced_members.h"

#include <algorithm>
#include <map>
#include <set>

namespace pipescope::analysis {
namespace {

using Members = std::vector<int32_t>;

bool is_member(const Members& members, int32_t rank) {
  return std::find(members.begin(), members.end(), rank) != members.end();
}

std::vector<int32_t> known_slots(const Members& members) {
  std::vector<int32_t> slots;
  for (size_t k = 0; k < members.size(); ++k)
    if (members[k] >= 0) slots.push_back(static_cast<int32_t>(k));
  return slots;
}

// Fills every empty slot k with rank_at(k), or nothing when one of them is no candidate or
// already a member: a rule either explains all the gaps or none.
template <class RankAt>
size_t fill_all(Members& members, const std::vector<int32_t>& candidates, RankAt rank_at) {
  Members filled = members;
  size_t count = 0;
  for (size_t k = 0; k < filled.size(); ++k) {
    if (filled[k] >= 0) continue;
    const int32_t rank = rank_at(static_cast<int32_t>(k));
    if (!std::binary_search(candidates.begin(), candidates.end(), rank) || is_member(filled, rank)) return 0;
    filled[k] = rank;
    ++count;
  }
  members = std::move(filled);
  return count;
}

// The stride d of members laid out as a + d * k (d > 0), or 0.
int32_t stride_of(const Members& members, const std::vector<int32_t>& slots) {
  if (slots.size() < 2) return 0;
  auto at = [&](int32_t k) { return members[static_cast<size_t>(k)]; };
  const int32_t span = at(slots.back()) - at(slots.front());
  const int32_t steps = slots.back() - slots.front();
  const int32_t stride = span / steps;
  if (stride <= 0 || stride * steps != span) return 0;
  for (int32_t k : slots)
    if (at(k) != at(slots.front()) + stride * (k - slots.front())) return 0;
  return stride;
}

size_t fill_gaps_in_order(Members& members, const std::vector<int32_t>& candidates, int32_t world_size) {
  const std::vector<int32_t> slots = known_slots(members);
  for (size_t i = 1; i < slots.size(); ++i)
    if (members[static_cast<size_t>(slots[i])] <= members[static_cast<size_t>(slots[i - 1])]) return 0;
  size_t filled = 0;
  for (size_t k = 0; k < members.size();) {
    if (members[k] >= 0) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < members.size() && members[end] < 0) ++end;
    const int32_t low = k > 0 ? members[k - 1] : -1;
    const int32_t high = end < members.size() ? members[end] : world_size;
    const auto first = std::upper_bound(candidates.begin(), candidates.end(), low);
    const auto last = std::lower_bound(candidates.begin(), candidates.end(), high);
    if (last - first == static_cast<std::ptrdiff_t>(end - k)) {
      std::copy(first, last, members.begin() + static_cast<std::ptrdiff_t>(k));
      filled += end - k;
    }
    k = end;
  }
  return filled;
}

// Whether `members` (laid out with stride d) would share a rank with another communicator of
// its size and stride: the groups of one family are disjoint.
bool overlaps_family(const std::vector<Members>& comms, size_t self, const Members& members, int32_t d) {
  for (size_t c = 0; c < comms.size(); ++c) {
    if (c == self || comms[c].size() != members.size() || stride_of(comms[c], known_slots(comms[c])) != d)
      continue;
    for (int32_t r : members)
      if (r >= 0 && is_member(comms[c], r)) return true;
  }
  return false;
}

size_t fill_one(std::vector<Members>& comms, size_t c, const std::vector<int32_t>& cands,
                const std::map<size_t, std::set<int32_t>>& strides, int32_t world_size) {
  Members& members = comms[c];
  const std::vector<int32_t> slots = known_slots(members);
  if (slots.size() == members.size() || cands.empty() || slots.empty()) return 0;
  auto at = [&](int32_t k) { return members[static_cast<size_t>(k)]; };
  if (static_cast<int32_t>(members.size()) == world_size &&
      std::all_of(slots.begin(), slots.end(), [&](int32_t k) { return at(k) == k; }))
    return fill_all(members, cands, [](int32_t k) { return k; });
  size_t filled = fill_gaps_in_order(members, cands, world_size);
  const std::vector<int32_t> now = known_slots(members);
  if (now.size() == members.size()) return filled;
  if (const int32_t d = stride_of(members, now); d > 0) {
    const int32_t base = at(now.front()) - d * now.front();
    return filled + fill_all(members, cands, [&](int32_t k) { return base + d * k; });
  }
  if (now.size() == 1 && strides.count(members.size()) > 0) {  // one known member: the family's strides
    size_t fits = 0;
    Members chosen;
    for (int32_t d : strides.at(members.size())) {
      Members trial = members;
      const int32_t base = at(now.front()) - d * now.front();
      if (fill_all(trial, cands, [&](int32_t k) { return base + d * k; }) > 0 &&
          !overlaps_family(comms, c, trial, d)) {
        ++fits;
        chosen = std::move(trial);
      }
    }
    if (fits == 1) {
      members = std::move(chosen);
      return filled + members.size() - 1;
    }
  }
  if (members.size() - now.size() == 1 && cands.size() == 1)
    filled += fill_all(members, cands, [&](int32_t) { return cands[0]; });
  return filled;
}

}  // namespace

size_t fill_untraced_members(std::vector<Members>& comms, const std::vector<std::vector<int32_t>>& candidates,
                             int32_t world_size) {
  // Strides of the complete communicators, by size.
  std::map<size_t, std::set<int32_t>> strides;
  for (const Members& m : comms) {
    const std::vector<int32_t> slots = known_slots(m);
    if (slots.size() == m.size()) {
      if (const int32_t d = stride_of(m, slots); d > 0) strides[m.size()].insert(d);
    }
  }
  // A communicator placed can decide another (families are disjoint): until nothing changes.
  size_t filled = 0;
  for (size_t round = 0; round < comms.size() + 1; ++round) {
    size_t now = 0;
    for (size_t c = 0; c < comms.size(); ++c) now += fill_one(comms, c, candidates[c], strides, world_size);
    filled += now;
    if (now == 0) break;
  }
  return filled;
}

}  // namespace pipescope::analysis
