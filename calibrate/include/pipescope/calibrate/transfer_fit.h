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

// One hbm/* or memcpy/* variant: a single line (memory-bound kernels and copies have no regimes
// worth their parameters at the sizes the suite runs).
struct BandwidthFit {
  std::string family, variant;
  LineFit line;
  FitQuality quality;
  double bytes_per_s() const { return 1 / line.seconds_per_unit; }
};

Expected<std::vector<BandwidthFit>> fit_bandwidths(const std::vector<BandwidthSample>& samples);

}  // namespace pipescope::calibrate
