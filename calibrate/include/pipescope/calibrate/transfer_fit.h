// Collectives, copies and memory-bound kernels: latency + size / bandwidth, per size regime.
#pragma once

#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/fit_quality.h"
#include "pipescope/calibrate/latency_bandwidth_fit.h"
#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {

// One collective kind over one rank count and node count.
struct CollectiveFit {
  std::string kind;  // as in the results; broadcast is fitted but has no place in the profile
  int ranks = 0;
  int nodes = 1;
  planner::LinkTier tier = planner::LinkTier::kIntraNode;
  double bus_factor = 1;        // nccl-tests' busbw factor for kind and ranks
  std::vector<Regime> regimes;  // x = bytes * bus_factor, so 1 / seconds_per_unit is busbw
  FitQuality quality;           // in seconds, per measured size
  // Where a regime ends in nccl-tests' bytes (the unit the profile and the planner use); 0 on
  // the last regime.
  double max_bytes(const Regime& regime) const { return regime.max_x / bus_factor; }
};

// Every (kind, ranks, nodes) with more than one rank. One-rank runs are skipped with a note
// (a collective over one rank moves nothing over a link).
Expected<std::vector<CollectiveFit>> fit_collectives(const std::vector<CollectiveSample>& samples,
                                                     std::vector<std::string>& notes);

// One hbm/* or memcpy/* variant (a norm per row width): a single line (memory-bound kernels and
// copies have no regimes worth their parameters at the sizes the suite runs).
struct BandwidthFit {
  std::string family, variant;
  int64_t hidden = 0;
  LineFit line;
  FitQuality quality;
  size_t cached_sizes = 0;  // sizes left out: their operands fit in twice the L2 cache
  double bytes_per_s() const { return 1 / line.seconds_per_unit; }
  std::string name() const;  // "hbm copy", "hbm norm hidden 4096", "memcpy h2d"
};

// `l2_cache_bytes` > 0: hbm and device-to-device sizes whose operand is at most twice the L2
// are left out, since the cache rather than HBM serves them (H100's L2 is 50 MB; the suite
// starts at 1 MiB). 0: nothing is left out.
Expected<std::vector<BandwidthFit>> fit_bandwidths(const std::vector<BandwidthSample>& samples,
                                                   double l2_cache_bytes = 0);

}  // namespace pipescope::calibrate
