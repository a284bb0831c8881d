// `pipescope calibrate fit [BENCH.json...] [--trace DIR --plan PLAN.json] -o FILE`: fits a profile
// from the suite's saved results and, given a real run's traces and its plan, refines it until
// the planner's prediction for that run meets the measurement.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "calibrate_commands.h"
#include "command.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/calibrate/profile_fit.h"
#include "pipescope/calibrate/run_refinement.h"
#include "plan_options.h"
#include "trace_dir.h"

namespace pipescope::cli {
namespace {

const char* const kFit = "pipescope calibrate fit";
constexpr int kMaxRefinements = 4;

std::string printf_text(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

std::string percent(double fraction) { return printf_text("%.1f%%", fraction * 100); }
std::string signed_percent(double fraction) { return printf_text("%+.1f%%", fraction * 100); }

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
      std::cout << "  " << p.name << ": measured " << printf_text("%.4g", p.measured) << ", fit "
                << printf_text("%.4g", p.predicted) << " (" << signed_percent(p.relative_error()) << ")\n";
    }
  }
  if (!fit.kept_from_base.empty()) {
    std::cout << "kept from the base profile (not measured):";
    for (const std::string& part : fit.kept_from_base) std::cout << ' ' << part;
    std::cout << '\n';
  }
  for (const std::string& note : fit.notes) std::cout << "note: " << note << '\n';
}

Expected<nlohmann::json> read_plan(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path};
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("suggested") || !doc.contains("inputs")) {
    return Error{path + " is not the output of 'pipescope plan --json'"};
  }
  if (!doc["inputs"].contains("arguments")) {
    return Error{
        path + " has no inputs.arguments (written by an older pipescope); run 'pipescope plan --json' again"};
  }
  return doc;
}

// The run's measured stages beside the plan's prediction for the same split.
Expected<calibrate::RunObservation> observe(const analysis::RunReport& report,
                                            const planner::PlanReport& plan, const std::string& source) {
  if (report.stages.size() != plan.stages.size()) {
    return Error{"the plan has " + std::to_string(plan.stages.size()) +
                 " pipeline stages but the traces in " + source + " show " +
                 std::to_string(report.stages.size()) + "; give the plan of this run"};
  }
  calibrate::RunObservation run;
  run.source = source;
  for (const analysis::RankReport& r : report.ranks) {
    if (r.memory_figure != "none") run.memory_figure = r.memory_figure;
  }
  for (size_t k = 0; k < plan.stages.size(); ++k) {
    const planner::StageReport& p = plan.stages[k];
    const analysis::StageReport& m = report.stages[k];
    calibrate::StageObservation s;
    s.stage = static_cast<int>(k);
    s.predicted_forward_s = p.forward_s;
    s.predicted_backward_s = p.backward_s;
    s.measured_forward_s = static_cast<double>(m.forward_mean_ns.value_or(0)) * 1e-9;  // 0: not measured
    s.measured_backward_s = static_cast<double>(m.backward_mean_ns.value_or(0)) * 1e-9;
    s.predicted_allocated_bytes = static_cast<double>(p.allocated_bytes);
    s.predicted_reserved_bytes = static_cast<double>(p.peak_memory_bytes);
    s.measured_peak_bytes = static_cast<double>(m.peak_memory_bytes);
    run.stages.push_back(s);
  }
  return run;
}

void print_refinement(const calibrate::RunObservation& before, const calibrate::RunObservation& after) {
  const bool memory = before.memory_figure != "none";
  std::cout << "  " << pad("stage", 7) << pad("fwd ms: run", 12) << pad("before", 9) << pad("after", 9)
            << pad("bwd ms: run", 12) << pad("before", 9) << pad("after", 9);
  if (memory) std::cout << pad("GiB " + before.memory_figure + ": run", 18) << pad("before", 9) << "after";
  std::cout << '\n';
  auto ms = [](double s) { return printf_text("%.2f", s * 1e3); };
  auto gib = [](double b) { return printf_text("%.2f", b / (1ull << 30)); };
  for (size_t k = 0; k < before.stages.size(); ++k) {
    const auto& b = before.stages[k];
    const auto& a = after.stages[k];
    std::cout << "  " << pad(std::to_string(k), 7) << pad(ms(b.measured_forward_s), 12)
              << pad(ms(b.predicted_forward_s), 9) << pad(ms(a.predicted_forward_s), 9)
              << pad(ms(b.measured_backward_s), 12) << pad(ms(b.predicted_backward_s), 9)
              << pad(ms(a.predicted_backward_s), 9);
    if (memory) {
      const bool allocated = before.memory_figure == "allocated";
      std::cout << pad(gib(b.measured_peak_bytes), 18)
                << pad(gib(allocated ? b.predicted_allocated_bytes : b.predicted_reserved_bytes), 9)
                << gib(allocated ? a.predicted_allocated_bytes : a.predicted_reserved_bytes);
    }
    std::cout << '\n';
  }
  const calibrate::PredictionError e0 = calibrate::prediction_error(before),
                                   e1 = calibrate::prediction_error(after);
  if (e0.has_compute) {
    std::cout << "  predicted forward + backward vs the run: " << signed_percent(e0.compute) << " -> "
              << signed_percent(e1.compute) << '\n';
  }
  if (e0.has_memory) {
    std::cout << "  predicted peak memory vs the run (mean |error|): " << percent(e0.memory) << " -> "
              << percent(e1.memory) << '\n';
  }
}

// Plans the run again with `profile`, its split pinned to the one the plan suggested (the split the
// run used), and reads the prediction for that split.
Expected<planner::PlanReport> predict(const PlanArguments& plan, const planner::CalibrationProfile& profile) {
  auto run = run_planner(plan.args, plan.schedule_given, &profile);
  if (!run.ok()) return run.error();
  return run->outcome.uniform;  // with --split, the baseline is the given split
}

int refine(const CalibrateArgs& a, planner::CalibrationProfile& profile) {
  auto doc = read_plan(a.plan_file);
  if (!doc.ok()) return usage_error(kFit, doc.error().message);
  auto plan = plan_arguments_from_json((*doc)["inputs"]["arguments"]);
  if (!plan.ok()) return usage_error(kFit, a.plan_file + ": " + plan.error().message);
  plan->args.split.clear();
  for (const auto& stage : (*doc)["suggested"]["stages"])
    plan->args.split.push_back(stage.value("layers", 0));

  auto chosen = load_chosen_run(a.trace_dir, analysis::LoadOptions{}, "", -1);
  if (!chosen.ok()) return usage_error(kFit, chosen.error().message);
  auto report = analysis::build_run_report(chosen->run, analysis::ReportOptions{});
  if (!report.ok()) return usage_error(kFit, report.error().message);
  const std::string source = "the traces in " + a.trace_dir;

  auto predicted = predict(*plan, profile);
  if (!predicted.ok()) return usage_error(kFit, predicted.error().message);
  auto first = observe(*report, *predicted, source);
  if (!first.ok()) return usage_error(kFit, first.error().message);
  calibrate::RunObservation current = *first;
  std::vector<std::string> notes;
  for (int round = 0; round < kMaxRefinements; ++round) {
    auto step = calibrate::refine_with_run(profile, current);
    if (!step.ok()) return usage_error(kFit, step.error().message);
    if (round == 0) notes = step->notes;
    profile = step->profile;
    predicted = predict(*plan, profile);
    if (!predicted.ok()) return usage_error(kFit, predicted.error().message);
    current = *observe(*report, *predicted, source);
    const calibrate::PredictionError e = calibrate::prediction_error(current);
    if (!e.has_compute || std::abs(e.compute) < 0.002) break;  // the compute scale has converged
  }
  std::cout << "\nrefined with " << source << " against the plan " << a.plan_file << " (its suggested split, "
            << (*doc)["suggested"]["stages"].size() << " stages):\n";
  print_refinement(*first, current);
  for (const std::string& note : notes) std::cout << "note: " << note << '\n';
  return kExitOk;
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
  if (a.bench_files.empty() && a.trace_dir.empty()) {
    return usage_error(kFit,
                       "give benchmark result files, or --trace DIR --plan PLAN.json to refine a profile");
  }
  if (a.trace_dir.empty() != a.plan_file.empty()) {
    return usage_error(kFit, "--trace and --plan go together: the traces of a run and the plan it ran");
  }
  planner::CalibrationProfile profile;
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
    print_fit(*fit, results);
    profile = fit->profile;
  } else {
    // Refining alone: start from --base, or from the profile the plan used.
    auto doc = read_plan(a.plan_file);
    if (!doc.ok()) return usage_error(kFit, doc.error().message);
    auto plan = plan_arguments_from_json((*doc)["inputs"]["arguments"]);
    if (!plan.ok()) return usage_error(kFit, a.plan_file + ": " + plan.error().message);
    Expected<planner::CalibrationProfile> start = planner::CalibrationProfile{};
    if (!a.base.empty()) {
      start = planner::load_calibration_profile(a.base);
    } else {
      auto cluster = cluster_of(plan->args);
      if (!cluster.ok()) return usage_error(kFit, cluster.error().message);
      start = profile_of(plan->args, cluster->gpu);
    }
    if (!start.ok()) return usage_error(kFit, start.error().message);
    profile = *start;
    profile.provenance.command = command_line(a);
    profile.provenance.tool = std::string("pipescope ") + PIPESCOPE_VERSION;
  }
  if (!a.trace_dir.empty()) {
    if (int rc = refine(a, profile); rc != kExitOk) return rc;
  }
  if (!write_output_file(kFit, a.output, planner::write_calibration_profile(profile))) return kExitFailure;
  std::cout << "wrote " << a.output << '\n';
  std::cout.flush();
  return std::cout ? kExitOk : kExitFailure;
}

}  // namespace pipescope::cli
