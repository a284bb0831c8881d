// `calibrate fit --trace DIR --plan PLAN.json`: the run's traces beside the planner's prediction
// for the same run and split, per stage, and the profile refined until the prediction meets them.
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

#include "calibrate_commands.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/common/json_document.h"
#include "pipescope/common/text_file.h"
#include "plan_options.h"
#include "text_format.h"
#include "trace_dir.h"

namespace pipescope::cli {
namespace {

constexpr int kMaxRefinements = 4;
constexpr double kConverged = 0.002;  // |scale - 1| below which another round changes nothing

// The planner's prediction for the run, and per stage the part of it in GEMMs, in attention and
// in memory-bound work (the plan's own split of each stage's time by kind of work).
struct Prediction {
  planner::PlanReport plan;
  // Per stage and micro-batch, forward + backward; memory-bound with the optimizer step's share.
  std::vector<double> gemm_s, attention_s, memory_bound_s;
};

Expected<Prediction> predict(const PlanArguments& plan, const planner::CalibrationProfile& profile) {
  auto run = run_planner(plan.args, plan.schedule_given, &profile);
  if (!run.ok()) return run.error();
  Prediction p;
  p.plan = std::move(run->outcome.uniform);  // with --split, the baseline is the given split
  const auto micro_batches = static_cast<double>(run->outcome.config.micro_batches());
  auto pass_s = [](const planner::PassWork& w, planner::WorkKind kind) {
    return w.forward[kind] + w.backward[kind];
  };
  for (const planner::StageReport& s : p.plan.stages) {
    p.gemm_s.push_back(pass_s(s.work, planner::WorkKind::kGemm));
    p.attention_s.push_back(pass_s(s.work, planner::WorkKind::kAttention));
    p.memory_bound_s.push_back(pass_s(s.work, planner::WorkKind::kMemoryBound) +
                               s.optimizer_s / micro_batches);
  }
  return p;
}

// Per stage of the report, the run's GEMM, attention and memory-bound (elementwise, embedding,
// other, copies) GPU time per micro-batch: each rank's kernel time by category over the forward
// ranges it ran, the mean over the stage's ranks. A stage without forward ranges or kernels
// (traces of host records only) is left at 0: its stage times stand in.
struct StageKernels {
  double gemm_s = 0, attention_s = 0, memory_bound_s = 0;
};

std::vector<StageKernels> stage_kernels(const analysis::RunReport& report) {
  std::vector<StageKernels> out(report.stages.size());
  for (size_t k = 0; k < report.stages.size(); ++k) {
    int ranks = 0;
    for (const analysis::RankReport& r : report.ranks) {
      if (r.stage != report.stages[k].stage || r.forward_ranges == 0 || r.kernel_ns_by_category.empty())
        continue;
      auto seconds = [&](std::initializer_list<const char*> categories) {
        int64_t ns = 0;
        for (const char* c : categories) {
          const auto it = r.kernel_ns_by_category.find(c);
          if (it != r.kernel_ns_by_category.end()) ns += it->second;
        }
        return static_cast<double>(ns) * 1e-9 / static_cast<double>(r.forward_ranges);
      };
      out[k].gemm_s += seconds({"gemm"});
      out[k].attention_s += seconds({"attention"});
      out[k].memory_bound_s += seconds({"elementwise", "embedding", "other", "copy"});
      ++ranks;
    }
    if (ranks > 1) {
      out[k].gemm_s /= ranks;
      out[k].attention_s /= ranks;
      out[k].memory_bound_s /= ranks;
    }
  }
  return out;
}

// The run's measured stages beside the prediction for the same split.
calibrate::RunObservation observe(const analysis::RunReport& report, const std::vector<StageKernels>& kernels,
                                  const Prediction& predicted, const std::string& source) {
  calibrate::RunObservation run;
  run.source = source;
  for (const analysis::RankReport& r : report.ranks) {
    if (r.memory_figure != "none") run.memory_figure = r.memory_figure;
  }
  for (size_t k = 0; k < predicted.plan.stages.size(); ++k) {
    const planner::StageReport& p = predicted.plan.stages[k];
    const analysis::StageReport& m = report.stages[k];
    calibrate::StageObservation s;
    s.stage = static_cast<int>(k);
    s.predicted_forward_s = p.forward_s;
    s.predicted_backward_s = p.backward_s;
    s.measured_forward_s = static_cast<double>(m.forward_mean_ns.value_or(0)) * 1e-9;  // 0: not measured
    s.measured_backward_s = static_cast<double>(m.backward_mean_ns.value_or(0)) * 1e-9;
    s.predicted_gemm_s = predicted.gemm_s[k];
    s.predicted_attention_s = predicted.attention_s[k];
    s.measured_gemm_s = kernels[k].gemm_s;
    s.measured_attention_s = kernels[k].attention_s;
    s.predicted_memory_bound_s = predicted.memory_bound_s[k];
    s.measured_memory_bound_s = kernels[k].memory_bound_s;
    s.predicted_allocated_bytes = static_cast<double>(p.allocated_bytes);
    s.predicted_reserved_bytes = static_cast<double>(p.reserved_bytes);            // held, as traces see it
    s.measured_peak_bytes = static_cast<double>(m.peak_memory_bytes.value_or(0));  // 0: not measured
    run.stages.push_back(s);
  }
  return run;
}

}  // namespace

Expected<plan_schema::PlanSide> read_plan_json(const std::string& path) {
  auto text = read_text_file(path, "plan");
  if (!text) return text.error();
  Expected<plan_schema::PlanSide> plan =
      plan_schema::read_plan_side(*text, path, plan_schema::kSuggestedSide);
  if (!plan) return plan.error();
  if (plan->arguments.empty()) {
    return Error{
        path + " has no inputs.arguments (written by an older pipescope); run 'pipescope plan --json' again"};
  }
  return plan;
}

Expected<TraceRefinement> refine_with_traces(const CalibrateArgs& a, planner::CalibrationProfile& profile) {
  auto doc = read_plan_json(a.plan_file);
  if (!doc.ok()) return doc.error();
  auto plan = plan_arguments_from_json(nlohmann::json::parse(doc->arguments), a.plan_file);
  if (!plan.ok()) return plan.error();
  plan->args.split.clear();
  for (const plan_schema::StageFigures& stage : doc->figures.stages) plan->args.split.push_back(stage.layers);

  auto chosen = load_chosen_run(a.trace_dir, analysis::LoadOptions{}, "", -1);
  if (!chosen.ok()) return chosen.error();
  analysis::ReportOptions options;
  options.top_kernels = std::numeric_limits<size_t>::max();  // every kernel name with its category
  auto report = analysis::build_run_report(chosen->run, options);
  if (!report.ok()) return report.error();
  const std::vector<StageKernels> kernels = stage_kernels(*report);

  auto predicted = predict(*plan, profile);
  if (!predicted.ok()) return predicted.error();
  if (report->stages.size() != predicted->plan.stages.size()) {
    return Error{"the plan has " + std::to_string(predicted->plan.stages.size()) +
                 " pipeline stages but the traces in " + a.trace_dir + " show " +
                 std::to_string(report->stages.size()) + "; give the plan of the run the traces came from"};
  }
  TraceRefinement out;
  out.plan_file = a.plan_file;
  out.before = observe(*report, kernels, *predicted, a.trace_dir);
  calibrate::RunObservation current = out.before;
  for (int round = 0; round < kMaxRefinements; ++round) {
    auto step = calibrate::refine_with_run(profile, current);
    if (!step.ok()) return step.error();
    if (round == 0) {
      out.notes.insert(out.notes.end(), step->notes.begin(), step->notes.end());
      out.compute_basis = step->compute_basis;
      out.memory_refined = step->memory_refined;
    }
    profile = step->profile;
    out.gemm_scale *= step->gemm_scale;
    out.attention_scale *= step->attention_scale;
    out.memory_bound_scale *= step->memory_bound_scale;
    predicted = predict(*plan, profile);
    if (!predicted.ok()) return predicted.error();
    current = observe(*report, kernels, *predicted, a.trace_dir);
    // Efficiencies enter the prediction as 1 / efficiency, so one round is exact unless the cap
    // at 1 bound; further rounds only mop up.
    if (std::abs(step->gemm_scale - 1) < kConverged && std::abs(step->attention_scale - 1) < kConverged &&
        std::abs(step->memory_bound_scale - 1) < kConverged)
      break;
  }
  out.after = current;
  return out;
}

void print_refinement(const TraceRefinement& r) {
  std::cout << "\nrefined with the traces in " << r.before.source << " against the plan " << r.plan_file
            << " (" << r.before.stages.size()
            << " stages), per micro-batch: the run / the plan before / after\n";
  const bool memory = r.before.memory_figure != "none";
  auto ms = [](double s) { return printf_string("%.2f", s * 1e3); };
  auto gib = [](double b) { return printf_string("%.2f", b / (1ull << 30)); };
  auto pad = [](std::string text) {
    if (text.size() < 24) text.append(24 - text.size(), ' ');
    return text;
  };
  auto cell = [&](const std::string& run, const std::string& before, const std::string& after) {
    return pad(run + " / " + before + " / " + after);
  };
  std::cout << "  stage  " << pad("fwd+bwd ms") << pad("GEMM ms") << pad("attention ms")
            << pad("memory-bound ms") << (memory ? "GiB " + r.before.memory_figure : "") << '\n';
  for (size_t k = 0; k < r.before.stages.size(); ++k) {
    const calibrate::StageObservation& b = r.before.stages[k];
    const calibrate::StageObservation& a = r.after.stages[k];
    const bool allocated = r.before.memory_figure == "allocated";
    std::string stage = std::to_string(k);
    stage.append(7 - stage.size(), ' ');
    std::cout << "  " << stage
              << cell(ms(b.measured_forward_s + b.measured_backward_s),
                      ms(b.predicted_forward_s + b.predicted_backward_s),
                      ms(a.predicted_forward_s + a.predicted_backward_s))
              << cell(ms(b.measured_gemm_s), ms(b.predicted_gemm_s), ms(a.predicted_gemm_s))
              << cell(ms(b.measured_attention_s), ms(b.predicted_attention_s), ms(a.predicted_attention_s))
              << cell(ms(b.measured_memory_bound_s), ms(b.predicted_memory_bound_s),
                      ms(a.predicted_memory_bound_s));
    if (memory) {
      std::cout << gib(b.measured_peak_bytes) << " / "
                << gib(allocated ? b.predicted_allocated_bytes : b.predicted_reserved_bytes) << " / "
                << gib(allocated ? a.predicted_allocated_bytes : a.predicted_reserved_bytes);
    }
    std::cout << '\n';
  }
  const calibrate::PredictionError e0 = calibrate::prediction_error(r.before),
                                   e1 = calibrate::prediction_error(r.after);
  auto line = [](const std::string& what, double before, double after, const std::string& tail) {
    std::cout << "  " << what << printf_string("%+.1f%%", before * 100) << " -> "
              << printf_string("%+.1f%%", after * 100) << tail << '\n';
  };
  if (e0.has_gemm) {
    line("GEMM time, planner vs the run: ", e0.gemm, e1.gemm,
         printf_string(" (efficiencies / %.4f)", r.gemm_scale));
  }
  if (e0.has_attention) {
    line("attention time, planner vs the run: ", e0.attention, e1.attention,
         printf_string(" (efficiencies / %.4f)", r.attention_scale));
  }
  if (e0.has_memory_bound) {
    line("memory-bound time, planner vs the run: ", e0.memory_bound, e1.memory_bound,
         printf_string(" (HBM bandwidth fraction / %.4f)", r.memory_bound_scale));
  }
  if (e0.has_compute) line("forward + backward, planner vs the run: ", e0.compute, e1.compute, "");
  if (e0.has_memory) {
    std::cout << "  peak memory (" << r.before.memory_figure
              << "), mean |error| of the planner: " << printf_string("%.1f%%", e0.memory * 100) << " -> "
              << printf_string("%.1f%%", e1.memory * 100) << '\n';
  }
  for (const std::string& note : r.notes) std::cout << "note: " << note << '\n';
}

nlohmann::ordered_json refinement_json(const TraceRefinement& r) {
  using nlohmann::ordered_json;
  auto figures = [&](const calibrate::StageObservation& s, bool measured) {
    const bool allocated = r.before.memory_figure == "allocated";
    if (measured) {
      return ordered_json{{"forward_s", s.measured_forward_s},
                          {"backward_s", s.measured_backward_s},
                          {"gemm_s", s.measured_gemm_s},
                          {"attention_s", s.measured_attention_s},
                          {"memory_bound_s", s.measured_memory_bound_s},
                          {"peak_memory_bytes", s.measured_peak_bytes}};
    }
    return ordered_json{
        {"forward_s", s.predicted_forward_s},
        {"backward_s", s.predicted_backward_s},
        {"gemm_s", s.predicted_gemm_s},
        {"attention_s", s.predicted_attention_s},
        {"memory_bound_s", s.predicted_memory_bound_s},
        {"peak_memory_bytes", allocated ? s.predicted_allocated_bytes : s.predicted_reserved_bytes}};
  };
  ordered_json stages = ordered_json::array();
  for (size_t k = 0; k < r.before.stages.size(); ++k) {
    stages.push_back({{"stage", k},
                      {"run", figures(r.before.stages[k], true)},
                      {"before", figures(r.before.stages[k], false)},
                      {"after", figures(r.after.stages[k], false)}});
  }
  auto errors = [](const calibrate::RunObservation& run) {
    const calibrate::PredictionError e = calibrate::prediction_error(run);
    auto value = [](bool has, double v) { return has ? ordered_json(v) : ordered_json(nullptr); };
    return ordered_json{{"compute", value(e.has_compute, e.compute)},
                        {"gemm", value(e.has_gemm, e.gemm)},
                        {"attention", value(e.has_attention, e.attention)},
                        {"memory_bound", value(e.has_memory_bound, e.memory_bound)},
                        {"memory", value(e.has_memory, e.memory)}};
  };
  return {{"traces", r.before.source},
          {"plan", r.plan_file},
          {"memory_figure", r.before.memory_figure},
          {"compute_basis", r.compute_basis.empty() ? ordered_json(nullptr) : ordered_json(r.compute_basis)},
          {"gemm_scale", r.gemm_scale},
          {"attention_scale", r.attention_scale},
          {"memory_bound_scale", r.memory_bound_scale},
          {"memory_refined", r.memory_refined},
          {"stages", stages},
          {"error_before", errors(r.before)},
          {"error_after", errors(r.after)},
          {"notes", r.notes}};
}

}  // namespace pipescope::cli
