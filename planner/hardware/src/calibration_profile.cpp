// The profile's query side: interpolation over the efficiency tables and the collective model.
#include "pipescope/planner/calibration_profile.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "pipescope/planner/nccl_tuning.h"

namespace pipescope::planner {
namespace {

// Piecewise-linear y(x) through `count` knots sorted by x (knot i at (x_of(i), y_of(i))), clamped to
// the end values outside them. Reads the table in place: the planner prices many GEMMs.
template <class X, class Y>
double interpolate_clamped(size_t count, double x, X x_of, Y y_of) {
  assert(count > 0);
  if (x <= x_of(0)) return y_of(0);
  if (x >= x_of(count - 1)) return y_of(count - 1);
  size_t lower = 0, upper = count - 1;  // x_of(lower) <= x < x_of(upper)
  while (upper - lower > 1) {
    const size_t middle = lower + (upper - lower) / 2;
    (x_of(middle) <= x ? lower : upper) = middle;
  }
  const double t = (x - x_of(lower)) / (x_of(upper) - x_of(lower));
  return y_of(lower) + t * (y_of(upper) - y_of(lower));
}

// The knots around a target, found by one scan over knots in any order (the attention table is not
// sorted): the lowest and the highest, and the nearest at or below the target and above it.
struct Knot {
  double x = 0, y = 0;
  bool found = false;
};
struct Knots {
  Knot lowest, highest, below, above;  // below: largest x <= target; above: smallest x > target

  void add(double knot_x, double knot_y, double target) {
    if (!lowest.found || knot_x < lowest.x) lowest = {knot_x, knot_y, true};
    if (!highest.found || knot_x > highest.x) highest = {knot_x, knot_y, true};
    if (knot_x <= target && (!below.found || knot_x > below.x)) below = {knot_x, knot_y, true};
    if (knot_x > target && (!above.found || knot_x < above.x)) above = {knot_x, knot_y, true};
  }
  double at(double target) const {
    assert(lowest.found);
    if (target <= lowest.x) return lowest.y;
    if (target >= highest.x) return highest.y;
    return below.y + (target - below.x) / (above.x - below.x) * (above.y - below.y);
  }
};

}  // namespace

double GemmWaves::factor(int64_t m, int64_t n) const {
  if (!enabled()) return 1;
  const double tiles = std::ceil(static_cast<double>(m) / static_cast<double>(tile_m)) *
                       std::ceil(static_cast<double>(n) / static_cast<double>(tile_n));
  const double waves = tiles / static_cast<double>(sm_count);
  return waves / std::ceil(waves);
}

namespace {

// A full grid in (m, n, k) lexicographic order (the reader sorts it): point (i, j, l) sits at
// (i * ns + j) * ks + l. Walked in place, without allocating: the planner prices many GEMMs.
class GemmGrid {
 public:
  explicit GemmGrid(const std::vector<GemmPoint>& points) : p_(points) {
    while (ks_ < p_.size() && p_[ks_].m == p_[0].m && p_[ks_].n == p_[0].n) ++ks_;
    size_t same_m = 0;
    while (same_m < p_.size() && p_[same_m].m == p_[0].m) ++same_m;
    ns_ = same_m / ks_;
    ms_ = p_.size() / same_m;
  }

  double efficiency(double ln_m, double ln_n, double ln_k) const {
    const Bracket bm = bracket(ms_, ln_m, [&](size_t i) { return p_[i * ns_ * ks_].m; });
    const Bracket bn = bracket(ns_, ln_n, [&](size_t j) { return p_[j * ks_].n; });
    const Bracket bk = bracket(ks_, ln_k, [&](size_t l) { return p_[l].k; });
    double sum = 0;
    for (int di = 0; di < 2; ++di) {
      for (int dj = 0; dj < 2; ++dj) {
        for (int dl = 0; dl < 2; ++dl) {
          const double w = (di ? bm.t : 1 - bm.t) * (dj ? bn.t : 1 - bn.t) * (dl ? bk.t : 1 - bk.t);
          if (w == 0) continue;
          const size_t i = di ? bm.upper : bm.lower, j = dj ? bn.upper : bn.lower,
                       l = dl ? bk.upper : bk.lower;
          sum += w * p_[(i * ns_ + j) * ks_ + l].efficiency;
        }
      }
    }
    return sum;
  }

 private:
  struct Bracket {
    size_t lower = 0, upper = 0;
    double t = 0;  // weight of the upper value
  };
  template <class Value>
  static Bracket bracket(size_t count, double x, Value value) {
    auto ln = [&](size_t i) { return std::log(static_cast<double>(value(i))); };
    if (x <= ln(0)) return {0, 0, 0};
    if (x >= ln(count - 1)) return {count - 1, count - 1, 0};
    size_t upper = 1;
    while (ln(upper) < x) ++upper;
    return {upper - 1, upper, (x - ln(upper - 1)) / (ln(upper) - ln(upper - 1))};
  }

  const std::vector<GemmPoint>& p_;
  size_t ms_ = 0, ns_ = 0, ks_ = 0;
};

}  // namespace

double CalibrationProfile::gemm_efficiency(int64_t m, int64_t n, int64_t k) const {
  assert(!gemm.empty() && m > 0 && n > 0 && k > 0);
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (gemm_interpolation == GemmInterpolation::kLogShapeGrid) {
    const GemmPoint& corner = gemm.front();  // the reader puts the smallest corner first
    // Below the whole grid, hold the smallest corner's time, as for the 1-D table.
    if (m <= corner.m && n <= corner.n && k <= corner.k) {
      return corner.efficiency * gemm_waves.factor(corner.m, corner.n) * flops / corner.flops();
    }
    const double e = GemmGrid(gemm).efficiency(
        std::log(static_cast<double>(m)), std::log(static_cast<double>(n)), std::log(static_cast<double>(k)));
    return std::min(1.0, e * gemm_waves.factor(m, n));
  }
  const GemmPoint& smallest = gemm.front();
  // Below the table a GEMM takes the smallest point's time: launch and tail costs dominate there,
  // so efficiency falls in proportion to the work instead of staying at the smallest value.
  if (flops < smallest.flops()) return smallest.efficiency * flops / smallest.flops();
  // GEMM efficiency grows roughly with the logarithm of the work (more waves, better tiles).
  return interpolate_clamped(
      gemm.size(), std::log(flops), [&](size_t i) { return std::log(gemm[i].flops()); },
      [&](size_t i) { return gemm[i].efficiency; });
}

double CalibrationProfile::attention_efficiency(int64_t seq_len, int64_t head_dim, AttentionPass pass) const {
  const auto& points = pass == AttentionPass::kForward ? attention_forward : attention_backward;
  assert(!points.empty() && seq_len > 0 && head_dim > 0);
  // One column per head_dim; within a column, efficiency against log(seq_len) (sequence lengths
  // are benchmarked in powers of two and the curve flattens as they grow); across the columns,
  // linear in head_dim between the two that bracket it.
  const double ln_seq = std::log(static_cast<double>(seq_len));
  const auto column = [&](int64_t dim) {
    Knots knots;
    for (const AttentionPoint& point : points) {
      if (point.head_dim == dim)
        knots.add(std::log(static_cast<double>(point.seq_len)), point.efficiency, ln_seq);
    }
    return knots.at(ln_seq);
  };
  Knots dims;  // y unused: the columns are read only for the (at most two) dims that count
  const auto dim_target = static_cast<double>(head_dim);
  for (const AttentionPoint& point : points) dims.add(static_cast<double>(point.head_dim), 0, dim_target);
  if (dim_target <= dims.lowest.x) return column(static_cast<int64_t>(dims.lowest.x));
  if (dim_target >= dims.highest.x) return column(static_cast<int64_t>(dims.highest.x));
  const double below = column(static_cast<int64_t>(dims.below.x)),
               above = column(static_cast<int64_t>(dims.above.x));
  return below + (dim_target - dims.below.x) / (dims.above.x - dims.below.x) * (above - below);
}

const CollectiveCost& CalibrationProfile::collective(CollectiveKind kind, LinkTier tier) const {
  return collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
}

std::string_view copy_kind_name(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return "host_to_device";
    case CopyKind::kDeviceToHost: return "device_to_host";
    case CopyKind::kDeviceToDevice: return "device_to_device";
  }
  return "?";
}

namespace {

// The measured entry nearest `ranks` in log2, then its size regime holding `bytes`; null when the
// tier has no measurement of `kind`.
const CollectiveSegment* measured_regime(const std::vector<MeasuredCollective>& measured, double bytes,
                                         int ranks) {
  if (measured.empty()) return nullptr;
  const MeasuredCollective* nearest = &measured.front();
  for (const auto& entry : measured) {
    if (std::abs(std::log2(static_cast<double>(entry.ranks) / ranks)) <
        std::abs(std::log2(static_cast<double>(nearest->ranks) / ranks)))
      nearest = &entry;
  }
  for (const auto& segment : nearest->segments) {
    if (segment.max_bytes > 0 && bytes <= segment.max_bytes) return &segment;
  }
  return &nearest->segments.back();
}

}  // namespace

CollectiveTime CalibrationProfile::collective_cost(CollectiveKind kind, double bytes, int ranks, int nodes,
                                                   LinkTier tier, double link_bytes_per_s) const {
  if (ranks <= 1 || bytes <= 0) return {};
  const auto& measured = measured_collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
  if (const CollectiveSegment* regime = measured_regime(measured, bytes, ranks)) {
    return {regime->latency_s, bytes * bus_bandwidth_factor(kind, ranks) / regime->bus_bandwidth_bytes_per_s};
  }
  const CollectiveCost& cost = collective(kind, tier);
  const double bus_bytes_per_s = cost.bus_bandwidth_fraction > 0
                                     ? cost.bus_bandwidth_fraction * link_bytes_per_s
                                     : cost.bus_bandwidth_bytes_per_s;
  assert(bus_bytes_per_s > 0);
  const NcclGroupShape group{ranks, nodes};
  const NcclGroupShape measured_on{cost.latency_ranks, cost.latency_nodes};
  if (tier == LinkTier::kInterNode && nccl_tuning_applies(kind, group) &&
      nccl_tuning_applies(kind, measured_on)) {
    // What the measurement shows beyond NCCL's own latency (the framework's launch, the
    // network's real hops) is taken at every scale; NCCL's part grows with the group.
    const double beyond_nccl_s = std::max(0.0, cost.latency_s - nccl_least_latency_s(kind, measured_on));
    const NcclChoice choice = nccl_fastest_choice(kind, bytes, group, bus_bytes_per_s, beyond_nccl_s);
    return {choice.latency_s, choice.transfer_s};
  }
  return {cost.latency_s, bytes * bus_bandwidth_factor(kind, ranks) / bus_bytes_per_s};
}

double CalibrationProfile::collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                                             const Cluster& cluster) const {
  const double link =
      tier == LinkTier::kIntraNode ? cluster.intra_node_bytes_per_s : cluster.inter_node_bytes_per_s;
  return collective_time_s(kind, bytes, ranks, tier, link);
}

double CalibrationProfile::memory_bound_bytes_per_s(const Gpu& device) const {
  return hbm_bandwidth_fraction.value * device.hbm_bytes_per_s;
}

double CalibrationProfile::unfused_attention_gemm_s(double flops_per_s, double matrices, double q, double kv,
                                                    double d, bool backward) const {
  auto gemm_s = [&](double m, double n, double k) {
    if (m < 1 || n < 1 || k < 1) return 0.0;
    return 2 * m * n * k / (flops_per_s * gemm_efficiency(std::llround(m), std::llround(n), std::llround(k)));
  };
  // Q K^T: q x kv over d; P V: q x d over kv. The backward redoes both shapes (dP = dO V^T,
  // dQ = dS K) and adds kv x d over q twice (dV = P^T dO, dK = dS^T Q).
  const double forward = gemm_s(matrices * q, kv, d) + gemm_s(matrices * q, d, kv);
  return backward ? forward + 2 * gemm_s(matrices * kv, d, q) : forward;
}

}  // namespace pipescope::planner
