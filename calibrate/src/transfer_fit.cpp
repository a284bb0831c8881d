#include "pipescope/calibrate/transfer_fit.h"

#include <map>
#include <tuple>

#include "pipescope/planner/collective_model.h"

namespace pipescope::calibrate {

Expected<std::vector<CollectiveFit>> fit_collectives(const std::vector<CollectiveSample>& samples,
                                                     std::vector<std::string>& notes) {
  std::map<std::tuple<std::string, int, int>, std::vector<const CollectiveSample*>> groups;
  for (const CollectiveSample& s : samples) groups[{s.kind, s.ranks, s.nodes}].push_back(&s);
  std::vector<CollectiveFit> fits;
  for (const auto& [key, list] : groups) {
    const auto& [kind, ranks, nodes] = key;
    if (ranks <= 1) {
      notes.push_back(kind +
                      " over one rank skipped: it moves nothing over a link (run the suite on all the "
                      "node's GPUs for collective costs)");
      continue;
    }
    const auto parsed = planner::parse_collective_kind(kind);
    if (!parsed && kind != "broadcast") {
      return Error{"cannot fit NCCL results: unknown collective '" + kind + "' in '" + list.front()->id.name +
                   "'"};
    }
    // nccl-tests: broadcast's busbw equals its algbw.
    const double factor = parsed ? planner::bus_bandwidth_factor(*parsed, ranks) : 1.0;
    std::vector<TimedSize> points;
    for (const CollectiveSample* s : list) points.push_back({s->bytes * factor, s->seconds, s->id.name});
    const std::string what = kind + " over " + std::to_string(ranks) + " ranks on " + std::to_string(nodes) +
                             (nodes == 1 ? " node" : " nodes");
    auto regimes = fit_regimes(points, what);
    if (!regimes.ok()) return regimes.error();
    CollectiveFit fit{
        kind,   ranks,    nodes, nodes > 1 ? planner::LinkTier::kInterNode : planner::LinkTier::kIntraNode,
        factor, *regimes, {}};
    for (const TimedSize& p : points) {
      const Regime* regime = &fit.regimes.back();
      for (const Regime& r : fit.regimes) {
        if (r.max_x > 0 && p.x <= r.max_x) {
          regime = &r;
          break;
        }
      }
      fit.quality.add(p.name, p.seconds, regime->line.predict(p.x));
    }
    fit.quality.finish();
    fits.push_back(std::move(fit));
  }
  return fits;
}

std::string BandwidthFit::name() const {
  return family + " " + variant + (hidden > 0 ? " hidden " + std::to_string(hidden) : "");
}

Expected<std::vector<BandwidthFit>> fit_bandwidths(const std::vector<BandwidthSample>& samples,
                                                   double l2_cache_bytes) {
  std::map<std::tuple<std::string, std::string, int64_t>, std::pair<std::vector<TimedSize>, size_t>> groups;
  for (const BandwidthSample& s : samples) {
    auto& [points, cached] = groups[{s.family, s.variant, s.hidden}];
    const bool through_hbm = s.family == "hbm" || (s.family == "memcpy" && s.variant == "d2d");
    if (through_hbm && l2_cache_bytes > 0 && s.operand_bytes > 0 &&
        static_cast<double>(s.operand_bytes) <= 2 * l2_cache_bytes) {
      ++cached;
      continue;
    }
    points.push_back({s.bytes, s.seconds, s.id.name});
  }
  std::vector<BandwidthFit> fits;
  for (const auto& [key, group] : groups) {
    const auto& [family, variant, hidden] = key;
    const auto& [points, cached] = group;
    BandwidthFit fit{family, variant, hidden, {}, {}, cached};
    std::string what = family + "/" + variant + (hidden > 0 ? " hidden " + std::to_string(hidden) : "");
    if (cached > 0) what += " (" + std::to_string(cached) + " sizes within twice the L2 cache left out)";
    auto line = fit_line(points, what);
    if (!line.ok()) return line.error();
    fit.line = *line;
    for (const TimedSize& p : points) fit.quality.add(p.name, p.seconds, line->predict(p.x));
    fit.quality.finish();
    fits.push_back(std::move(fit));
  }
  return fits;
}

}  // namespace pipescope::calibrate
