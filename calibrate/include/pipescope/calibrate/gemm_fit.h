// GEMM efficiency from measured shapes: a full m x n x k grid read trilinearly in log space,
// with the wave-quantization term fitted on the shapes off the grid (the planner's own shapes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/fit_quality.h"
#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {

struct GemmFit {
  planner::GemmInterpolation interpolation = planner::GemmInterpolation::kLogFlops;
  std::vector<planner::GemmPoint> points;  // as the profile stores them
  planner::GemmWaves waves;                // enabled only when it lowered the residual
  FitQuality quality;  // on the shapes the table does not hold (all shapes for the 1-D table)
  size_t shapes = 0;   // distinct measured shapes
  std::vector<std::string> notes;
};

struct GemmFitInputs {
  double peak_flops_per_s = 0;  // the datasheet's dense peak for the dtype
  int64_t sm_count = 0;         // 0: no wave term is tried
  std::string dtype = "bf16";
  std::string source;  // what produced the samples, e.g. "gpu_benchmark on NVIDIA H100 ... 2026-11-22"
};

// Refuses: no sample of the dtype, fewer than two distinct shapes, a non-finite or non-positive
// time, and a shape measured faster than the datasheet peak.
Expected<GemmFit> fit_gemm(const std::vector<GemmSample>& samples, const GemmFitInputs& in);

}  // namespace pipescope::calibrate
