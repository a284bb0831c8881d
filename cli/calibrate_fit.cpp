// `pipescope calibrate fit [BENCH.json...] [--trace DIR --plan PLAN.json] -o FILE`: fits a profile
// from the suite's saved results and, given a real run's traces and its plan, refines it until
// the planner's prediction for that run meets the measurement (calibrate_refine.cpp).
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/calibrate/profile_fit.h"
#include "pipescope/calibrate/profile_summary.h"
#include "plan_options.h"
#include "text_format.h"

namespace pipescope::cli {
namespace {

const char* const kFit = "pipescope calibrate fit";

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

void print_fit(const calibrate::ProfileFit& fit, const calibrate::BenchResults& results) {
  std::cout << "fitted " << results.files.size() << " result file(s) from " << fit.gpu.device_name << " ("
            << fit.gpu.name << ")\n";
  std::cout << "  " << pad("fit", 34) << pad("points", 8) << pad("rms err", 9) << pad("max err", 9)
            << pad("flagged", 9) << "result\n";
  for (const calibrate::FitSection& s : fit.sections) {
    std::cout << "  " << pad(s.what + (s.in_profile ? "" : " *"), 34)
              << pad(std::to_string(s.quality.points), 8) << pad(percent(s.quality.rms_relative_error), 9)
              << pad(percent(s.quality.max_relative_error), 9)
              << pad(std::to_string(s.quality.flagged.size()), 9) << s.summary << '\n';
  }
  bool any_outside = false;
  for (const auto& s : fit.sections) any_outside |= !s.in_profile;
  if (any_outside) std::cout << "  * fitted and shown, but the profile has no place for it\n";
  bool header = false;
  for (const calibrate::FitSection& s : fit.sections) {
    for (const calibrate::FlaggedPoint& p : s.quality.flagged) {
      if (!header) {
        std::cout << "points that do not fit (relative error above " << percent(calibrate::kFlagRelativeError)
                  << "):\n";
        header = true;
      }
      std::cout << "  " << p.name << ": measured " << printf_string("%.4g", p.measured) << ", fit "
                << printf_string("%.4g", p.predicted) << " (" << signed_percent(p.relative_error()) << ")\n";
    }
  }
  if (!fit.kept_from_base.empty()) {
    std::cout << "kept from " << fit.base_origin << " (not measured): ";
    for (size_t i = 0; i < fit.kept_from_base.size(); ++i)
      std::cout << (i ? ", " : "") << fit.kept_from_base[i];
    std::cout << '\n';
  }
  for (const std::string& note : fit.notes) std::cout << "note: " << note << '\n';
}

const char* base_kind_name(calibrate::BaseKind kind) {
  switch (kind) {
    case calibrate::BaseKind::kSameGpu: return "same_gpu";
    case calibrate::BaseKind::kOtherGpu: return "other_gpu";
    case calibrate::BaseKind::kDefaults: return "defaults";
  }
  return "?";
}

nlohmann::ordered_json fit_json(const calibrate::ProfileFit& fit, const calibrate::BenchResults& results) {
  nlohmann::ordered_json sections = nlohmann::ordered_json::array();
  for (const calibrate::FitSection& s : fit.sections) {
    nlohmann::ordered_json flagged = nlohmann::ordered_json::array();
    for (const calibrate::FlaggedPoint& p : s.quality.flagged) {
      flagged.push_back({{"name", p.name},
                         {"measured", p.measured},
                         {"fitted", p.predicted},
                         {"relative_error", p.relative_error()}});
    }
    sections.push_back({{"what", s.what},
                        {"in_profile", s.in_profile},
                        {"points", s.quality.points},
                        {"rms_relative_error", s.quality.rms_relative_error},
                        {"max_relative_error", s.quality.max_relative_error},
                        {"flagged", flagged},
                        {"summary", s.summary}});
  }
  return {{"files", results.files},
          {"gpu", fit.gpu.name},
          {"device_name", results.context_value("gpu_name")},
          {"base", {{"kind", base_kind_name(fit.base_kind)}, {"origin", fit.base_origin}}},
          {"sections", sections},
          {"kept_from_base", fit.kept_from_base},
          {"notes", fit.notes}};
}

std::string command_line(const CalibrateArgs& a) {
  std::string text = "pipescope calibrate fit";
  for (const std::string& f : a.bench_files) text += " " + f;
  if (!a.trace_dir.empty()) text += " --trace " + a.trace_dir + " --plan " + a.plan_file;
  if (!a.gpu.empty()) text += " --gpu " + a.gpu;
  if (!a.base.empty()) text += " --base " + a.base;
  return text + " -o " + a.output;
}

}  // namespace

int run_calibrate_fit(const CalibrateArgs& a) {
  if (!a.trace_dir.empty() && a.plan_file.empty()) {
    return usage_error(kFit,
                       "--trace needs --plan PLAN.json: the plan of the run the traces came from "
                       "('pipescope plan ... --json' with that run's flags)");
  }
  if (a.trace_dir.empty() && !a.plan_file.empty()) {
    return usage_error(kFit, "--plan needs --trace DIR: the traces of the run that plan describes");
  }
  if (a.bench_files.empty() && a.trace_dir.empty()) {
    return usage_error(kFit,
                       "give benchmark result files, or --trace DIR --plan PLAN.json to refine a profile");
  }
  planner::CalibrationProfile profile;
  nlohmann::ordered_json report = {{"schema_version", calibrate::kCalibrateJsonSchemaVersion},
                                   {"output", a.output},
                                   {"fit", nullptr},
                                   {"refinement", nullptr}};
  if (!a.bench_files.empty()) {
    calibrate::BenchResults results;
    for (const std::string& file : a.bench_files) {
      if (Status s = calibrate::read_bench_file(file, results); !s.ok())
        return usage_error(kFit, s.error().message);
    }
    auto fit = calibrate::fit_profile(
        results, {a.gpu, a.base, a.command_line.empty() ? command_line(a) : a.command_line,
                  std::string("pipescope ") + PIPESCOPE_VERSION});
    if (!fit.ok()) return usage_error(kFit, fit.error().message);
    if (a.json) {
      report["fit"] = fit_json(*fit, results);
    } else {
      print_fit(*fit, results);
    }
    profile = fit->profile;
  } else {
    // Refining alone: start from --base, or from the profile the plan used.
    auto doc = read_plan_json(a.plan_file);
    if (!doc.ok()) return usage_error(kFit, doc.error().message);
    auto plan = plan_arguments_from_json(nlohmann::json::parse(doc->arguments), a.plan_file);
    if (!plan.ok()) return usage_error(kFit, plan.error().message);
    auto cluster = cluster_of(plan->args);
    if (!cluster.ok()) return usage_error(kFit, cluster.error().message);
    Expected<planner::CalibrationProfile> start =
        a.base.empty() ? profile_of(plan->args, cluster->gpu) : planner::load_calibration_profile(a.base);
    if (!start.ok()) return usage_error(kFit, start.error().message);
    if (Status same = planner::check_profile_matches(*start, cluster->gpu); !same.ok())
      return usage_error(kFit, "--base: " + same.error().message);
    profile = *start;
    profile.provenance.command = command_line(a);
    profile.provenance.tool = std::string("pipescope ") + PIPESCOPE_VERSION;
  }
  if (!a.trace_dir.empty()) {
    auto refined = refine_with_traces(a, profile);
    if (!refined.ok()) return usage_error(kFit, refined.error().message);
    if (a.json) {
      report["refinement"] = refinement_json(*refined);
    } else {
      print_refinement(*refined);
    }
  }
  if (!write_output_file(kFit, a.output, planner::write_calibration_profile(profile))) return kExitFailure;
  if (a.json) {
    std::cout << report.dump(2) << '\n';
  } else {
    std::cout << "wrote " << a.output << '\n';
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitFailure;
}

}  // namespace pipescope::cli
