// From the suite's results to a calibration profile: every fit, what it replaced in the base
// profile, and how well each reproduces its measurements.
#pragma once

#include <string>
#include <vector>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/calibrate/fit_quality.h"
#include "pipescope/calibrate/profile_base.h"
#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::calibrate {

struct FitOptions {
  std::string gpu;      // --gpu NAME; empty: the bundled GPU the results' gpu_name identifies
  std::string base;     // --base NAME|FILE; empty: resolve_base's choice (profile_base.h)
  std::string command;  // the command line, for the provenance
  std::string tool;     // e.g. "pipescope 0.1.0"
};

struct FitSection {
  std::string what;     // e.g. "gemm bf16", "all_reduce intra_node 8 ranks"
  std::string summary;  // the fitted numbers in words
  FitQuality quality;
  bool in_profile = true;  // false: fitted and shown, but the profile has no place for it
};

struct ProfileFit {
  planner::Gpu gpu;
  planner::CalibrationProfile profile;
  std::vector<FitSection> sections;
  std::vector<std::string> kept_from_base;  // parts nothing measured, kept with their sources
  BaseKind base_kind = BaseKind::kSameGpu;
  std::string base_origin;  // where the kept parts come from, in words
  std::vector<std::string> notes;
};

// The GPU the results were measured on: `name` when given, else the bundled GPU that
// planner::identify_gpu finds for the results' gpu_name.
Expected<planner::Gpu> results_gpu(const BenchResults& results, const std::string& name);

// Refuses results that fit nothing the profile has a place for (e.g. one-rank collectives only),
// and, for a GPU with no profile of its own and no --base, results that leave a GPU-specific
// part (gpu_specific_parts()) unmeasured.
Expected<ProfileFit> fit_profile(const BenchResults& results, const FitOptions& options);

}  // namespace pipescope::calibrate
