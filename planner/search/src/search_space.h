// The configurations a search enumerates, level by level (TP, PP, micro-batch, schedule with its
// virtual stages, ZeRO stage with its shard group, recompute), and the tally of the ones refused.
// A family refused at one level takes every configuration below it along, so each reason is
// reported once with the number of configurations it removed.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "pipescope/planner/search.h"

namespace pipescope::planner::search_detail {

// Divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n);

struct ScheduleVariant {
  ScheduleKind kind = ScheduleKind::kOneFOneB;
  int64_t vpp = 1;
};

struct ZeroVariant {
  int zero = 0;
  int64_t shard = 0;  // 0: all of DP
};

class SearchSpace {
 public:
  SearchSpace(const models::ModelDesc& model, const SearchConstraints& constraints)
      : model_(model), constraints_(constraints) {}

  // 1F1B and GPipe as allowed, and the interleaved schedule with every vpp >= 2 whose chunks
  // split the layers evenly (Megatron-LM's condition without a layout string), or the pinned vpp
  // whether or not they do; none of it for a single stage.
  std::vector<ScheduleVariant> schedules(int64_t pp) const;
  // ZeRO 0, and each allowed stage >= 1 over all of DP and, with shard groups, over every power
  // of two 2 <= g < DP dividing it. Only stage 0 when DP is 1 (sharding over one rank is none).
  std::vector<ZeroVariant> zero_variants(int64_t dp) const;
  // Recompute choices searched with a schedule (no kAuto with the interleaved one).
  std::vector<RecomputeChoice> recompute(ScheduleKind kind) const;

  // Configurations below one level, for tallying a family refused there.
  int64_t configs_below_schedule(ScheduleKind kind, int64_t dp) const;
  int64_t configs_below_micro_batch(int64_t pp, int64_t dp) const;
  int64_t configs_below_pp(int64_t pp, int64_t dp) const;
  int64_t configs_below_tp(int64_t tp, int64_t gpus_per_replica) const;  // gpus / cp

 private:
  const models::ModelDesc& model_;
  const SearchConstraints& constraints_;
};

// What set one refused configuration apart from the others of its layout.
struct MemoryVariant {
  int64_t micro_batch = 1;
  int zero_stage = 0;
  RecomputeChoice recompute = RecomputeChoice::kNone;
};

// Refused configurations, one entry per distinct reason. Memory refusals are grouped by layout
// and carry the least peak seen and the variants refused, which go into their reason when the
// tally is read.
class RejectionTally {
 public:
  void add(const std::string& reason, int64_t configs);
  void add_out_of_memory(int64_t tp, int64_t pp, bool interleaved, int64_t peak_bytes, int64_t capacity_bytes,
                         const MemoryVariant& variant);
  int64_t total() const { return total_; }
  std::vector<Rejection> sorted() const;  // most configurations first, then by reason

 private:
  struct MemoryFamily {
    int64_t configs = 0;
    int64_t least_peak_bytes = 0;
    int64_t capacity_bytes = 0;
    std::set<int64_t> micro_batches;
    std::set<int> zero_stages;
    std::set<RecomputeChoice> recompute;
  };
  std::map<std::string, int64_t> reasons_;
  std::map<std::tuple<int64_t, int64_t, bool>, MemoryFamily> memory_;
  int64_t total_ = 0;
};

}  // namespace pipescope::planner::search_detail
