// Puts every rank's timestamps on one clock. The header anchors give a first estimate (each
// host's CLOCK_REALTIME at a known trace-clock instant); NCCL collectives refine it, because
// every member of a collective finishes its kernel at nearly the same moment. Pure logic over
// observations, so it is tested on synthetic runs with known offsets and jitter.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pipescope::analysis {

// One member's end of one collective, on that rank's clock after its first estimate.
struct CollectiveEnd {
  uint32_t rank;      // dense index 0..ranks-1 of the trace, not the NCCL rank
  uint64_t comm_id;   // communicator identity (equal on every member)
  uint64_t sequence;  // per-communicator sequence number
  int64_t end_ns;     // when this member's collective kernel ended
};

// One member's end of one instance.
struct MemberEnd {
  uint32_t rank;
  int64_t end_ns;
};

// Ends grouped by instance, for a caller that meets each instance's members together (the
// report walks each communicator's members' samples in sequence order): no instance map needed.
class InstanceEnds {
 public:
  explicit InstanceEnds(uint32_t ranks) : ranks_(ranks) {}
  // An end of the instance being added; ends of ranks >= `ranks` are ignored.
  void add(uint32_t rank, int64_t end_ns) {
    if (rank < ranks_) members_.push_back(MemberEnd{rank, end_ns});
  }
  // Closes the instance being added: each rank once, with its earliest end, in rank order. An
  // instance of fewer than two ranks ties no clocks and is dropped.
  void close();
  void reserve(size_t instances, size_t ends) {
    first_.reserve(instances + 1);
    members_.reserve(ends);
  }

  uint32_t ranks() const { return ranks_; }
  size_t size() const { return first_.size() - 1; }
  size_t ends() const { return first_.back(); }
  std::span<const MemberEnd> of(size_t i) const {
    return {members_.data() + first_[i], first_[i + 1] - first_[i]};
  }

 private:
  uint32_t ranks_;
  std::vector<size_t> first_{0};  // instance i: members_[first_[i] .. first_[i + 1])
  std::vector<MemberEnd> members_;
};

struct ClockAlignment {
  // Correction to add to each rank's timestamps (after the first estimate). Ranks that share no
  // collective with the reference's component keep 0 and are marked unaligned.
  std::vector<int64_t> offset_ns;
  // True for every rank of the reference's component (the reference included) when that
  // component has two ranks or more: its offset comes from the collectives.
  std::vector<bool> refined;
  // Offset 0 by definition: the lowest rank of the largest connected component of the
  // communicator graph (ties: the component holding the lowest rank). 0 without collectives.
  uint32_t reference_rank = 0;
  uint64_t instances_used = 0;  // instances (>= 2 distinct members) in the reference's component
  // |end_r + offset_r - consensus end| over all used ends, where the consensus is the median of
  // the instance's corrected ends. Quantiles interpolate between order statistics (numpy's
  // default). Late outliers are kept: they are the skew a reader should see.
  double residual_median_ns = 0;
  double residual_p99_ns = 0;
  double residual_max_ns = 0;
};

// Robust: a straggler entering late still finishes with the others, but a member whose kernel
// ended far from the rest (a broken pairing, a rank paused by the debugger) must not pull the
// solution; the estimator discounts such outliers (per-pair medians, then Huber-weighted least
// squares over the communicator graph). Ends of ranks >= `ranks` are ignored; a rank listed
// twice in one instance counts once, with its earliest end. Linear in the number of ends.
ClockAlignment align_clocks(uint32_t ranks, std::span<const CollectiveEnd> ends);
// The same over ends already grouped by instance, in parts of as many ranks (the report's
// workers make one per communicator and one per rank): the instances of parts[0], then those of
// parts[1], and so on. Their order decides only the order in which equations are summed.
ClockAlignment align_clocks(std::span<const InstanceEnds> parts);

}  // namespace pipescope::analysis
