// Fused-attention efficiency over (sequence length, head dim), per pass, as the profile's grid.
#pragma once

#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/fit_quality.h"
#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {

struct AttentionFit {
  std::vector<planner::AttentionPoint> forward, backward;
  FitQuality quality;   // every sample against its grid value (spread over batch, heads, mask)
  std::string kernels;  // the kernels measured, from the samples' labels
  std::vector<std::string> notes;
};

// Causal samples are preferred where both exist (the planner prices causal attention). A pass
// without samples is left empty (noted); refuses a pass with fewer than two sequence lengths and
// efficiencies above the datasheet peak.
Expected<AttentionFit> fit_attention(const std::vector<AttentionSample>& samples, double peak_flops_per_s,
                                     const std::string& source);

}  // namespace pipescope::calibrate
