// Clock alignment from NCCL collective ends. Three stages, each linear in the number of ends:
//   1. group the ends into instances (comm_id, sequence) and, per instance, difference every
//      member against the instance's lowest rank (a star, not all pairs: a 1,024-member world
//      collective gives 1,023 differences, not half a million);
//   2. reduce each (hub, member) pair to a robust measurement: the median of its differences,
//      with a standard error from the MAD, so one late kernel in ten does not move it;
//   3. solve for per-rank offsets over the communicator graph by Huber-weighted least squares
//      (IRLS on the graph Laplacian), so that a pair whose median is itself wrong (a broken
//      pairing, a rank paused in a debugger) is outvoted by the rest of the graph.
// The residuals are then measured against each instance's consensus (the median corrected end).
#include "pipescope/analysis/clock_alignment.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

namespace pipescope::analysis {
namespace {

// Timestamps come from untrusted files: differences and sums wrap instead of overflowing
// (garbage in, garbage out, but never undefined behaviour).
int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Nearest integer nanosecond, clamped to what int64 holds (llround is unspecified beyond it).
int64_t round_ns(double ns) {
  if (!std::isfinite(ns)) return 0;
  return static_cast<int64_t>(std::llround(std::clamp(ns, -9.0e18, 9.0e18)));
}

// Quantile by linear interpolation between order statistics (the "type 7" definition that
// numpy and R use by default); reorders `values`. q = 0.5 gives the usual median.
double quantile(std::span<double> values, double q) {
  if (values.empty()) return 0;
  const double position = q * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<size_t>(position);
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(lower), values.end());
  const double lower_value = values[lower];
  if (lower + 1 >= values.size()) return lower_value;
  const double upper_value =
      *std::min_element(values.begin() + static_cast<ptrdiff_t>(lower) + 1, values.end());
  return lower_value + (position - static_cast<double>(lower)) * (upper_value - lower_value);
}

// Instance identity -> dense index. Open addressing with linear probing: the node-based
// std::unordered_map cost a cache miss or two per end, and there is one lookup per end.
class InstanceIndex {
 public:
  // Returns the index of (comm_id, sequence), assigning the next one if it is new.
  uint32_t find_or_add(uint64_t comm_id, uint64_t sequence) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t at = hash(comm_id, sequence) & mask;; at = (at + 1) & mask) {
      Slot& slot = slots_[at];
      if (slot.index == kEmpty) {
        slot = {comm_id, sequence, static_cast<uint32_t>(size_++)};
        return slot.index;
      }
      if (slot.comm_id == comm_id && slot.sequence == sequence) return slot.index;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t comm_id = 0;
    uint64_t sequence = 0;
    uint32_t index = kEmpty;
  };
  static size_t hash(uint64_t comm_id, uint64_t sequence) {
    // splitmix64's finalizer over both words: sequences are small dense integers.
    uint64_t x = comm_id ^ (sequence * 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<size_t>(x ^ (x >> 31));
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(1024, 2 * old.size()), Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.index == kEmpty) continue;
      size_t at = hash(slot.comm_id, slot.sequence) & mask;
      while (slots_[at].index != kEmpty) at = (at + 1) & mask;
      slots_[at] = slot;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

InstanceEnds group_instances(uint32_t ranks, std::span<const CollectiveEnd> ends) {
  // Counting sort by instance: one hash lookup per end, no global sort.
  InstanceIndex index;
  std::vector<uint32_t> instance_of(ends.size(), UINT32_MAX);
  std::vector<size_t> count;
  for (size_t i = 0; i < ends.size(); ++i) {
    if (ends[i].rank >= ranks) continue;  // not a rank of this trace set
    const uint32_t instance = index.find_or_add(ends[i].comm_id, ends[i].sequence);
    if (instance == count.size()) count.push_back(0);
    instance_of[i] = instance;
    ++count[instance];
  }
  std::vector<size_t> start(count.size() + 1, 0);
  for (size_t i = 0; i < count.size(); ++i) start[i + 1] = start[i] + count[i];
  std::vector<MemberEnd> bucketed(start.back());
  std::vector<size_t> cursor(start.begin(), start.end() - 1);
  for (size_t i = 0; i < ends.size(); ++i) {
    if (instance_of[i] == UINT32_MAX) continue;
    bucketed[cursor[instance_of[i]]++] = {ends[i].rank, ends[i].end_ns};
  }
  InstanceEnds out(ranks);
  for (size_t i = 0; i < count.size(); ++i) {
    for (size_t k = start[i]; k < start[i + 1]; ++k) out.add(bucketed[k].rank, bucketed[k].end_ns);
    out.close();
  }
  return out;
}

// One measured pair: after correction, end_hub + x_hub ~ end_member + x_member, so
// x_member - x_hub ~ difference_ns (the median over shared instances of end_hub - end_member).
struct PairMeasurement {
  uint32_t hub;
  uint32_t member;
  size_t count;
  double difference_ns;
  double standard_error_ns;
};

// Calls visit(std::span<const MemberEnd>) for every instance of every part, in order.
template <class Visit>
void for_each_instance(std::span<const InstanceEnds> parts, Visit&& visit) {
  for (const InstanceEnds& part : parts)
    for (size_t i = 0; i < part.size(); ++i) visit(part.of(i));
}

size_t ends_in(std::span<const InstanceEnds> parts) {
  size_t ends = 0;
  for (const InstanceEnds& part : parts) ends += part.ends();
  return ends;
}

std::vector<PairMeasurement> measure_pairs(std::span<const InstanceEnds> parts) {
  std::unordered_map<uint64_t, uint32_t> index;
  std::vector<PairMeasurement> pairs;
  std::vector<uint32_t> pair_of;
  pair_of.reserve(ends_in(parts));
  // A communicator's instances usually have the same members one after another: their pairs
  // are looked up once.
  std::span<const MemberEnd> previous;
  for_each_instance(parts, [&](std::span<const MemberEnd> members) {
    const size_t first_pair = pair_of.size();
    const bool same = members.size() == previous.size() &&
                      std::equal(members.begin(), members.end(), previous.begin(),
                                 [](const MemberEnd& a, const MemberEnd& b) { return a.rank == b.rank; });
    if (same) {
      for (size_t j = 1; j < members.size(); ++j) {
        const uint32_t pair = pair_of[first_pair - (members.size() - 1) + (j - 1)];
        ++pairs[pair].count;
        pair_of.push_back(pair);
      }
      previous = members;
      return;
    }
    const uint32_t hub = members[0].rank;
    for (size_t j = 1; j < members.size(); ++j) {
      const uint64_t key = (static_cast<uint64_t>(hub) << 32) | members[j].rank;
      const auto [it, inserted] = index.try_emplace(key, static_cast<uint32_t>(pairs.size()));
      if (inserted) pairs.push_back({hub, members[j].rank, 0, 0, 0});
      ++pairs[it->second].count;
      pair_of.push_back(it->second);
    }
    previous = members;
  });
  std::vector<size_t> start(pairs.size() + 1, 0);
  for (size_t p = 0; p < pairs.size(); ++p) start[p + 1] = start[p] + pairs[p].count;
  std::vector<double> differences(start.back());
  std::vector<size_t> cursor(start.begin(), start.end() - 1);
  size_t next = 0;
  for_each_instance(parts, [&](std::span<const MemberEnd> members) {
    for (size_t j = 1; j < members.size(); ++j) {
      differences[cursor[pair_of[next++]]++] =
          static_cast<double>(wrapping_sub(members[0].end_ns, members[j].end_ns));
    }
  });

  // Per pair: median, and a robust sigma (1.4826 MAD, the normal-consistent scale).
  std::vector<double> sigma(pairs.size());
  for (size_t p = 0; p < pairs.size(); ++p) {
    std::span<double> values(differences.data() + start[p], pairs[p].count);
    const double median = quantile(values, 0.5);
    for (double& v : values) v = std::abs(v - median);
    pairs[p].difference_ns = median;
    sigma[p] = 1.4826 * quantile(values, 0.5);
  }
  // Pairs seen a handful of times have no usable MAD of their own (one sample: MAD 0, which
  // would make them the most trusted pair of all). Shrink each pair's variance toward the
  // pooled scale with the weight of kPriorSamples samples, and floor the scale at the 1 ns
  // resolution of the timestamps.
  constexpr double kPriorSamples = 4;
  constexpr size_t kPooledMinSamples = 5;
  constexpr double kResolutionNs = 1;
  std::vector<double> pool;
  for (size_t p = 0; p < pairs.size(); ++p) {
    if (pairs[p].count >= kPooledMinSamples) pool.push_back(sigma[p]);
  }
  if (pool.empty()) pool = sigma;
  const double pooled = std::max(kResolutionNs, quantile(pool, 0.5));
  for (size_t p = 0; p < pairs.size(); ++p) {
    const auto n = static_cast<double>(pairs[p].count);
    const double variance = (n * sigma[p] * sigma[p] + kPriorSamples * pooled * pooled) / (n + kPriorSamples);
    // The median's standard error is sqrt(pi/2) times the mean's for normal samples.
    pairs[p].standard_error_ns = 1.2533 * std::sqrt(std::max(variance, kResolutionNs)) / std::sqrt(n);
  }
  return pairs;
}

// Union-find over ranks, to split the communicator graph into connected components.
class Components {
 public:
  explicit Components(uint32_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0U); }
  uint32_t find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);  // the root is the lowest rank
  }

 private:
  std::vector<uint32_t> parent_;
};

// Offsets of the component's ranks relative to `reference`, by iteratively reweighted least
// squares with Huber weights on the standardized pair residuals. `local` maps rank -> unknown
// index (the reference has none: its offset is 0 by definition).
std::vector<int64_t> solve_offsets(uint32_t ranks, uint32_t reference, const std::vector<int32_t>& local,
                                   size_t unknowns, std::span<const PairMeasurement> pairs) {
  // A coarse solution first, from a breadth-first walk of the pair graph, so that the
  // least-squares problem is posed on small corrections (microseconds) rather than on
  // offsets of seconds: the solve then loses no precision to magnitude.
  std::vector<std::vector<uint32_t>> adjacent(ranks);
  for (uint32_t p = 0; p < pairs.size(); ++p) {
    adjacent[pairs[p].hub].push_back(p);
    adjacent[pairs[p].member].push_back(p);
  }
  std::vector<int64_t> coarse(ranks, 0);
  std::vector<bool> seen(ranks, false);
  std::vector<uint32_t> queue{reference};
  seen[reference] = true;
  for (size_t head = 0; head < queue.size(); ++head) {
    const uint32_t r = queue[head];
    for (uint32_t p : adjacent[r]) {
      const PairMeasurement& m = pairs[p];
      const uint32_t other = m.hub == r ? m.member : m.hub;
      if (seen[other]) continue;
      seen[other] = true;
      const int64_t step = round_ns(m.hub == r ? m.difference_ns : -m.difference_ns);
      coarse[other] = wrapping_add(coarse[r], step);
      queue.push_back(other);
    }
  }

  // Residual measurement of each pair against the coarse solution.
  std::vector<double> target(pairs.size());
  for (size_t p = 0; p < pairs.size(); ++p) {
    target[p] = pairs[p].difference_ns -
                static_cast<double>(wrapping_sub(coarse[pairs[p].member], coarse[pairs[p].hub]));
  }

  // Huber's tuning constant: 95% efficiency under normal errors (Huber, Robust Statistics, 1981).
  constexpr double kHuber = 1.345;
  constexpr int kMaxIterations = 50;
  constexpr double kConvergedNs = 0.05;
  std::vector<double> huber(pairs.size(), 1.0);
  Eigen::VectorXd correction = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(unknowns));
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> solver;
  std::vector<Eigen::Triplet<double>> entries;
  bool analyzed = false;
  auto value = [&](uint32_t rank) { return local[rank] < 0 ? 0.0 : correction[local[rank]]; };
  for (int iteration = 0; iteration < kMaxIterations && unknowns > 0; ++iteration) {
    entries.clear();
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(unknowns));
    for (size_t p = 0; p < pairs.size(); ++p) {
      const double se = pairs[p].standard_error_ns;
      const double w = huber[p] / (se * se);
      const int32_t a = local[pairs[p].hub];
      const int32_t b = local[pairs[p].member];
      // Normal equations of sum w (x_b - x_a - target)^2 with the reference row removed.
      if (a >= 0) {
        entries.emplace_back(a, a, w);
        rhs[a] -= w * target[p];
      }
      if (b >= 0) {
        entries.emplace_back(b, b, w);
        rhs[b] += w * target[p];
      }
      if (a >= 0 && b >= 0) {
        entries.emplace_back(a, b, -w);
        entries.emplace_back(b, a, -w);
      }
    }
    Eigen::SparseMatrix<double> laplacian(static_cast<Eigen::Index>(unknowns),
                                          static_cast<Eigen::Index>(unknowns));
    laplacian.setFromTriplets(entries.begin(), entries.end());
    if (!analyzed) {
      solver.analyzePattern(laplacian);
      analyzed = true;
    }
    solver.factorize(laplacian);
    if (solver.info() != Eigen::Success) break;  // keep the last good solution
    const Eigen::VectorXd next = solver.solve(rhs);
    if (!next.allFinite()) break;
    const double moved = (next - correction).cwiseAbs().maxCoeff();
    correction = next;
    for (size_t p = 0; p < pairs.size(); ++p) {
      const double residual = value(pairs[p].member) - value(pairs[p].hub) - target[p];
      const double z = std::abs(residual) / pairs[p].standard_error_ns;
      huber[p] = z <= kHuber ? 1.0 : kHuber / z;
    }
    if (moved < kConvergedNs && iteration > 0) break;
  }

  std::vector<int64_t> offset(ranks, 0);
  for (uint32_t r = 0; r < ranks; ++r) {
    if (local[r] < 0) continue;
    offset[r] = wrapping_add(coarse[r], round_ns(value(r)));
  }
  return offset;
}

}  // namespace

void InstanceEnds::close() {
  if (members_.size() - first_.back() == 2) {  // a p2p transfer, the most common instance
    MemberEnd& a = members_[first_.back()];
    MemberEnd& b = members_[first_.back() + 1];
    if (a.rank == b.rank) {
      members_.resize(first_.back());
    } else {
      if (b.rank < a.rank) std::swap(a, b);
      first_.push_back(members_.size());
    }
    return;
  }
  const auto begin = members_.begin() + static_cast<ptrdiff_t>(first_.back());
  std::sort(begin, members_.end(), [](const MemberEnd& a, const MemberEnd& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.end_ns < b.end_ns;
  });
  // A rank listed twice in one instance (a duplicated record) counts once, with its earliest end.
  members_.erase(std::unique(begin, members_.end(),
                             [](const MemberEnd& a, const MemberEnd& b) { return a.rank == b.rank; }),
                 members_.end());
  if (members_.size() - first_.back() < 2) {
    members_.resize(first_.back());
    return;
  }
  first_.push_back(members_.size());
}

ClockAlignment align_clocks(uint32_t ranks, std::span<const CollectiveEnd> ends) {
  const InstanceEnds instances = group_instances(ranks, ends);
  return align_clocks(std::span<const InstanceEnds>(&instances, 1));
}

ClockAlignment align_clocks(std::span<const InstanceEnds> parts) {
  const uint32_t ranks = parts.empty() ? 0 : parts.front().ranks();
  ClockAlignment result;
  result.offset_ns.assign(ranks, 0);
  result.refined.assign(ranks, false);
  if (ranks == 0) return result;

  const std::vector<PairMeasurement> pairs = measure_pairs(parts);

  // The reference is the lowest rank of the largest connected component (ties: the component
  // holding the lowest rank); ranks outside that component keep their first estimate.
  Components components(ranks);
  for (const PairMeasurement& m : pairs) components.join(m.hub, m.member);
  std::vector<uint32_t> size(ranks, 0);
  for (uint32_t r = 0; r < ranks; ++r) ++size[components.find(r)];
  uint32_t reference = 0;
  for (uint32_t r = 0; r < ranks; ++r) {
    if (size[r] > size[reference]) reference = r;  // roots are their component's lowest rank
  }
  result.reference_rank = reference;
  if (size[reference] < 2) return result;

  std::vector<int32_t> local(ranks, -1);
  size_t unknowns = 0;
  for (uint32_t r = 0; r < ranks; ++r) {
    if (components.find(r) != reference) continue;
    result.refined[r] = true;
    if (r != reference) local[r] = static_cast<int32_t>(unknowns++);
  }
  std::vector<PairMeasurement> used;
  for (const PairMeasurement& m : pairs) {
    if (components.find(m.hub) == reference) used.push_back(m);
  }
  result.offset_ns = solve_offsets(ranks, reference, local, unknowns, used);

  // Residual skew: every used end against its instance's consensus, the median corrected end.
  std::vector<double> residuals;
  residuals.reserve(ends_in(parts));
  std::vector<int64_t> corrected;
  for_each_instance(parts, [&](std::span<const MemberEnd> members) {
    if (components.find(members[0].rank) != reference) return;
    ++result.instances_used;
    corrected.clear();
    for (const MemberEnd& m : members) corrected.push_back(wrapping_add(m.end_ns, result.offset_ns[m.rank]));
    // Median of integers without leaving int64: lower middle plus half the gap to the upper.
    const size_t half = corrected.size() / 2;
    std::nth_element(corrected.begin(), corrected.begin() + static_cast<ptrdiff_t>(half), corrected.end());
    const int64_t upper = corrected[half];
    int64_t lower = upper;
    if (corrected.size() % 2 == 0) {
      lower = *std::max_element(corrected.begin(), corrected.begin() + static_cast<ptrdiff_t>(half));
    }
    const double gap = static_cast<double>(wrapping_sub(upper, lower)) / 2;
    for (int64_t c : corrected)
      residuals.push_back(std::abs(static_cast<double>(wrapping_sub(c, lower)) - gap));
  });
  result.residual_max_ns = residuals.empty() ? 0 : *std::max_element(residuals.begin(), residuals.end());
  result.residual_p99_ns = quantile(residuals, 0.99);
  result.residual_median_ns = quantile(residuals, 0.5);
  return result;
}

}  // namespace pipescope::analysis
