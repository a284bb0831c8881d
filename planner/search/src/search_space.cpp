#include "search_space.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace pipescope::planner::search_detail {
namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

bool allowed(const std::vector<ScheduleKind>& kinds, ScheduleKind kind) {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

}  // namespace

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<ScheduleVariant> SearchSpace::schedules(int64_t pp) const {
  std::vector<ScheduleVariant> out;
  const auto& kinds = constraints_.schedules;
  const std::optional<int64_t>& vpp = constraints_.vpp;  // pinned: that many chunks only
  const bool plain = !vpp || *vpp == 1;
  if (plain && allowed(kinds, ScheduleKind::kOneFOneB)) out.push_back({ScheduleKind::kOneFOneB, 1});
  if (pp > 1 && allowed(kinds, ScheduleKind::kInterleaved)) {
    if (vpp && *vpp > 1) {
      // Pinned: searched whether or not its chunks split the layers evenly (then on the layers
      // spread as evenly as they go, as a layout string gives them), up to a chunk for the
      // embedding and one for the output layer beside one per layer.
      if (pp * *vpp <= model_.num_layers + 2) out.push_back({ScheduleKind::kInterleaved, *vpp});
    } else if (!vpp) {
      for (int64_t v = 2; pp * v <= model_.num_layers; ++v) {
        if (model_.num_layers % (pp * v) == 0) out.push_back({ScheduleKind::kInterleaved, v});
      }
    }
  }
  // A single stage has no pipeline: GPipe and 1F1B are the same plan, searched once.
  if (plain && allowed(kinds, ScheduleKind::kGPipe) && (pp > 1 || !allowed(kinds, ScheduleKind::kOneFOneB))) {
    out.push_back({ScheduleKind::kGPipe, 1});
  }
  return out;
}

std::vector<ZeroVariant> SearchSpace::zero_variants(int64_t dp) const {
  std::vector<ZeroVariant> out;
  for (int zero : constraints_.zero_stages) {
    if (zero == 0) {
      out.push_back({0, 0});
      continue;
    }
    if (dp == 1) continue;
    out.push_back({zero, 0});
    if (!constraints_.shard_groups) continue;
    for (int64_t group = 2; group < dp; group *= 2) {
      if (dp % group == 0) out.push_back({zero, group});
    }
  }
  // DP of 1 with only stages >= 1 allowed: the one layout left is unsharded.
  if (out.empty() && dp == 1 && !constraints_.zero_stages.empty()) out.push_back({0, 0});
  return out;
}

std::vector<RecomputeChoice> SearchSpace::recompute(ScheduleKind kind) const {
  std::vector<RecomputeChoice> out;
  for (RecomputeChoice r : constraints_.recompute) {
    if (kind == ScheduleKind::kInterleaved && r == RecomputeChoice::kAuto) continue;
    out.push_back(r);
  }
  return out;
}

int64_t SearchSpace::configs_below_schedule(ScheduleKind kind, int64_t dp) const {
  return static_cast<int64_t>(zero_variants(dp).size() * recompute(kind).size());
}

int64_t SearchSpace::configs_below_micro_batch(int64_t pp, int64_t dp) const {
  int64_t n = 0;
  for (const ScheduleVariant& s : schedules(pp)) n += configs_below_schedule(s.kind, dp);
  return n;
}

int64_t SearchSpace::configs_below_pp(int64_t pp, int64_t dp) const {
  return static_cast<int64_t>(constraints_.micro_batches.size()) * configs_below_micro_batch(pp, dp);
}

int64_t SearchSpace::configs_below_tp(int64_t tp, int64_t gpus_per_replica) const {
  int64_t n = 0;
  for (int64_t pp : divisors(gpus_per_replica / tp)) {
    if (constraints_.pp && pp != *constraints_.pp) continue;
    n += configs_below_pp(pp, gpus_per_replica / (tp * pp));
  }
  return n;
}

void RejectionTally::add(const std::string& reason, int64_t configs) {
  if (configs <= 0) return;
  reasons_[reason] += configs;
  total_ += configs;
}

void RejectionTally::add_out_of_memory(int64_t tp, int64_t pp, bool interleaved, int64_t peak_bytes,
                                       int64_t capacity_bytes, const MemoryVariant& variant) {
  MemoryFamily& f = memory_[{tp, pp, interleaved}];
  f.least_peak_bytes = f.configs == 0 ? peak_bytes : std::min(f.least_peak_bytes, peak_bytes);
  f.capacity_bytes = capacity_bytes;
  f.micro_batches.insert(variant.micro_batch);
  f.zero_stages.insert(variant.zero_stage);
  f.recompute.insert(variant.recompute);
  ++f.configs;
  ++total_;
}

namespace {

template <class Set>
std::string values_text(const Set& values) {
  std::string text;
  for (const auto& v : values) {
    if (!text.empty()) text += ", ";
    if constexpr (std::is_same_v<typename Set::value_type, RecomputeChoice>) {
      text += to_string(v);
    } else {
      text += std::to_string(v);
    }
  }
  return text;
}

}  // namespace

std::vector<Rejection> RejectionTally::sorted() const {
  std::vector<Rejection> out;
  for (const auto& [reason, configs] : reasons_) out.push_back({reason, configs});
  for (const auto& [key, f] : memory_) {
    const auto& [tp, pp, interleaved] = key;
    // Which variants of the layout these are (others of it may fit): micro-batch, ZeRO stage and
    // recompute mode, each value that occurs among them.
    const std::string layout = "tp " + std::to_string(tp) + ", pp " + std::to_string(pp) +
                               (interleaved ? ", interleaved" : "") + " with mbs " +
                               values_text(f.micro_batches) + ", zero " + values_text(f.zero_stages) +
                               ", recompute " + values_text(f.recompute);
    // The peak quoted is the smallest any refused configuration of the layout reaches on its
    // uniform split (or chunks): how far the leanest of them is from fitting. An interleaved one
    // was refused because no layout within the planner's time limit can fit (layout_bound.h) or
    // because the planner's layout search found none.
    out.push_back({interleaved
                       ? layout + ": out of memory, the uniform chunks need at least " +
                             gib(f.least_peak_bytes) + " of " + gib(f.capacity_bytes) +
                             " usable and no other layout within the planner's time limit was found to fit"
                       : layout + ": out of memory on every split; the leanest uniform split needs " +
                             gib(f.least_peak_bytes) + " of " + gib(f.capacity_bytes) + " usable",
                   f.configs});
  }
  std::sort(out.begin(), out.end(), [](const Rejection& a, const Rejection& b) {
    return a.configs != b.configs ? a.configs > b.configs : a.reason < b.reason;
  });
  return out;
}

}  // namespace pipescope::planner::search_detail
