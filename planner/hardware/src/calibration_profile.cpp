// The profile's query side: interpolation over the efficiency tables and the collective model.
#include "pipescope/planner/calibration_profile.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

namespace pipescope::planner {
namespace {

// Piecewise-linear y(x) through knots sorted by x, clamped to the end values outside them.
double interpolate_clamped(const std::vector<std::pair<double, double>>& knots, double x) {
  assert(!knots.empty());
  if (x <= knots.front().first) return knots.front().second;
  if (x >= knots.back().first) return knots.back().second;
  const auto upper = std::upper_bound(knots.begin(), knots.end(), x,
                                      [](double value, const auto& knot) { return value < knot.first; });
  const auto lower = upper - 1;
  const double t = (x - lower->first) / (upper->first - lower->first);
  return lower->second + t * (upper->second - lower->second);
}

}  // namespace

double CalibrationProfile::gemm_efficiency(int64_t m, int64_t n, int64_t k) const {
  assert(!gemm.empty() && m > 0 && n > 0 && k > 0);
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const GemmPoint& smallest = gemm.front();
  // Below the table a GEMM takes the smallest point's time: launch and tail costs dominate there,
  // so efficiency falls in proportion to the work instead of staying at the smallest value.
  if (flops < smallest.flops()) return smallest.efficiency * flops / smallest.flops();
  // GEMM efficiency grows roughly with the logarithm of the work (more waves, better tiles).
  std::vector<std::pair<double, double>> knots;
  knots.reserve(gemm.size());
  for (const auto& point : gemm) knots.emplace_back(std::log(point.flops()), point.efficiency);
  return interpolate_clamped(knots, std::log(flops));
}

double CalibrationProfile::attention_efficiency(int64_t seq_len, int64_t head_dim, AttentionPass pass) const {
  const auto& points = pass == AttentionPass::kForward ? attention_forward : attention_backward;
  assert(!points.empty() && seq_len > 0 && head_dim > 0);
  // One column per head_dim; within a column, efficiency against log(seq_len) (sequence lengths
  // are benchmarked in powers of two and the curve flattens as they grow).
  std::map<int64_t, std::vector<std::pair<double, double>>> columns;
  for (const auto& point : points) {
    columns[point.head_dim].emplace_back(std::log(static_cast<double>(point.seq_len)), point.efficiency);
  }
  std::vector<std::pair<double, double>> across_head_dims;
  for (auto& [dim, knots] : columns) {
    std::sort(knots.begin(), knots.end());
    across_head_dims.emplace_back(static_cast<double>(dim),
                                  interpolate_clamped(knots, std::log(static_cast<double>(seq_len))));
  }
  return interpolate_clamped(across_head_dims, static_cast<double>(head_dim));
}

const CollectiveCost& CalibrationProfile::collective(CollectiveKind kind, LinkTier tier) const {
  return collectives[static_cast<size_t>(tier)][static_cast<size_t>(kind)];
}

double CalibrationProfile::collective_time_s(CollectiveKind kind, double bytes, int ranks, LinkTier tier,
                                             double link_bytes_per_s) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  const CollectiveCost& cost = collective(kind, tier);
  const double bus_bytes_per_s = cost.bus_bandwidth_fraction > 0
                                     ? cost.bus_bandwidth_fraction * link_bytes_per_s
                                     : cost.bus_bandwidth_bytes_per_s;
  assert(bus_bytes_per_s > 0);
  return cost.latency_s + bytes * bus_bandwidth_factor(kind, ranks) / bus_bytes_per_s;
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

}  // namespace pipescope::planner
