// `pipescope calibrate show PROFILE [--html FILE] [--results BENCH.json...]`
#include <iostream>

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/calibrate/profile_summary.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::cli {

int run_calibrate_show(const CalibrateArgs& a) {
  const std::string command = "pipescope calibrate show";
  auto profile = planner::load_calibration_profile(a.profile);
  if (!profile.ok()) return usage_error(command, profile.error().message);
  auto gpu = planner::find_gpu(profile->gpu);
  if (!gpu.ok())
    return usage_error(command, "the profile is for GPU '" + profile->gpu + "': " + gpu.error().message);
  calibrate::BenchResults results;
  for (const std::string& file : a.results) {
    if (Status s = calibrate::read_bench_file(file, results); !s.ok())
      return usage_error(command, s.error().message);
  }
  calibrate::write_profile_summary(std::cout, *profile, *gpu);
  if (!a.html.empty()) {
    const std::string html = calibrate::profile_html(*profile, *gpu, a.results.empty() ? nullptr : &results);
    if (!write_output_file(command, a.html, html)) return kExitFailure;
    std::cout << "\nplots written to " << a.html << '\n';
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitFailure;
}

}  // namespace pipescope::cli
