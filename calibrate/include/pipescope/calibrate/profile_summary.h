// What `pipescope calibrate show` prints: achieved against peak for each category of a profile,
// where its numbers come from, and (HTML) the fitted curves over the measured points.
#pragma once

#include <ostream>
#include <string>

#include "pipescope/calibrate/bench_results.h"
#include "pipescope/planner/calibration_profile.h"
#include "pipescope/planner/gpu.h"

namespace pipescope::calibrate {

void write_profile_summary(std::ostream& out, const planner::CalibrationProfile& profile,
                           const planner::Gpu& gpu);

// One self-contained HTML page with inline SVG plots. `measured`, when given, adds the raw
// benchmark points over the profile's curves.
std::string profile_html(const planner::CalibrationProfile& profile, const planner::Gpu& gpu,
                         const BenchResults* measured);

}  // namespace pipescope::calibrate
