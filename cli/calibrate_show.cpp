// `pipescope calibrate show PROFILE [--json] [--html FILE] [--results BENCH.json...]`
#include <iostream>

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/calibrate/profile_fit.h"
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
  if (!a.results.empty()) {
    // Plotting another GPU's points over this profile's curves is allowed, but never silently.
    const std::string device = results.context_value("gpu_name");
    auto measured_on = calibrate::results_gpu(results, "");
    if (!measured_on.ok() || measured_on->name != profile->gpu) {
      std::cerr << command << ": note: the results come from '"
                << (device.empty() ? "an unnamed GPU" : device) << "'"
                << (measured_on.ok() ? " (" + measured_on->name + ")" : "") << ", the profile describes "
                << profile->gpu << ": the plots put one GPU's points over another's curves\n";
    }
  }
  const calibrate::ProfileSummary summary = calibrate::summarize_profile(*profile, *gpu);
  if (a.json) {
    std::cout << calibrate::profile_summary_json(summary);
  } else {
    calibrate::write_profile_summary(std::cout, summary);
  }
  if (!a.html.empty()) {
    const std::string html = calibrate::profile_html(*profile, *gpu, a.results.empty() ? nullptr : &results);
    if (!write_output_file(command, a.html, html)) return kExitFailure;
    if (!a.json) std::cout << "\nplots written to " << a.html << '\n';
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitFailure;
}

}  // namespace pipescope::cli
