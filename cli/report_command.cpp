// `pipescope report DIR [--json] [--html FILE] [--plan PLAN.json [--plan-split suggested|baseline]]
//  [--layout tp=T,pp=P,dp=D]`
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "arg_specs.h"
#include "command.h"
#include "output_guard.h"
#include "pipescope/analysis/report_builder.h"
#include "pipescope/common/text_file.h"
#include "pipescope/export/output_file.h"
#include "pipescope/report/report_output.h"
#include "trace_dir.h"

namespace pipescope::cli {
namespace {

// Each earlier attempt of the run, diagnosed on its own: its failure class leads the findings.
Status add_earlier_attempts(const ChosenRun& chosen, analysis::LoadOptions load,
                            analysis::RunReport& report) {
  std::vector<std::string> lines;
  for (const int32_t attempt : chosen.run.other_attempts) {
    load.run_id = chosen.run.run_id;
    load.attempt = attempt;
    load.latest_attempt = false;
    auto run = analysis::load_run(chosen.traces.dir, load);
    if (!run) return run.error();
    auto earlier = analysis::build_run_report(*run, {});
    if (!earlier) return earlier.error();
    report.earlier_attempts.push_back({attempt, earlier->failure});
    lines.push_back("attempt " + std::to_string(attempt) + " (before this one, attempt " +
                    std::to_string(report.attempt) + "): " +
                    (earlier->failure
                         ? "failure (" + earlier->failure->kind + "): " + earlier->failure->detail
                         : std::string("the traces show no failure")) +
                    "; pipescope report --attempt " + std::to_string(attempt) + " for its report");
  }
  report.findings.insert(report.findings.begin(), lines.begin(), lines.end());
  return {};
}

struct ReportArgs {
  std::string dir;
  bool json = false;
  std::string html_file;
  std::string plan_file;
  std::optional<std::string> plan_split;  // given: --plan must be too
  std::string layout;
  std::string nvtx_step, nvtx_forward, nvtx_backward;
  std::optional<std::string> run_id;
  int64_t attempt = -1;
};

Status write_html(const std::string& path, const std::string& html) {
  auto output = exporter::OutputFile::create(path);
  if (!output) return Error("cannot write " + output.error().message);
  std::ofstream out(output->temp_path(), std::ios::binary | std::ios::trunc);
  out << html;
  out.close();
  if (!out) return Error("cannot write " + path + " (is the disk full?)");
  return output->commit();
}

int run_report(const ReportArgs& args) {
  const std::string command = "pipescope report";
  if (args.plan_split && args.plan_file.empty()) {
    return usage_error(command,
                       "--plan-split needs --plan PLAN.json (the output of 'pipescope plan --json')");
  }
  analysis::LoadOptions load;
  if (!args.nvtx_step.empty()) load.scan.nvtx.step = args.nvtx_step;
  if (!args.nvtx_forward.empty()) load.scan.nvtx.forward = args.nvtx_forward;
  if (!args.nvtx_backward.empty()) load.scan.nvtx.backward = args.nvtx_backward;
  auto traces = prepare_trace_dir(args.dir);
  if (!traces) return usage_error(command, traces.error().message);
  if (!args.html_file.empty()) {
    std::vector<std::string> inputs = traces->inputs;
    if (!args.plan_file.empty()) inputs.push_back(args.plan_file);
    if (Status s = check_output(args.html_file, inputs, "--html"); !s)
      return usage_error(command, s.error().message);
  }
  load.latest_attempt = true;  // a failed attempt and its restart: the restart, with the failure before it
  auto chosen = load_chosen_run(std::move(*traces), load, args.run_id, args.attempt);
  if (!chosen) return usage_error(command, chosen.error().message);
  const analysis::LoadedRun& run = chosen->run;

  analysis::ReportOptions options;
  if (!args.layout.empty()) {
    auto spec = parse_layout_spec(args.layout);
    if (!spec) return usage_error(command, spec.error().message);
    options.stated_layout = analysis::StatedLayout{
        static_cast<int32_t>(spec->tp), static_cast<int32_t>(spec->pp), static_cast<int32_t>(spec->dp)};
  }
  if (!args.plan_file.empty()) {
    auto text = read_text_file(args.plan_file, "plan");
    if (!text) return usage_error(command, text.error().message);
    options.plan_json = std::move(*text);
    options.plan_path = args.plan_file;
    if (args.plan_split == "baseline") options.plan_split = analysis::PlanSplit::kBaseline;
  }
  auto report = analysis::build_run_report(run, options);
  if (!report) return usage_error(command, report.error().message);
  report->source_format = chosen->traces.source_format;
  if (Status s = add_earlier_attempts(*chosen, load, *report); !s)
    return usage_error(command, s.error().message);

  if (!args.html_file.empty()) {
    if (Status s = write_html(args.html_file, report::report_html(*report)); !s) {
      std::cerr << command << ": " << s.error().message << '\n';
      return kExitFailure;
    }
  }
  if (args.json) {
    std::cout << report::report_json(*report);
  } else {
    report::write_report_text(std::cout, *report);
  }
  std::cout.flush();
  return std::cout ? kExitOk : kExitFailure;
}

}  // namespace

Command add_report_command(CLI::App& root) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* app = root.add_subcommand("report", "Merge every rank's trace and show where time and memory go");
  app->add_option("dir", args->dir,
                  "Directory of *.pst traces (or PyTorch profiler JSON traces), or one such trace file")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_flag("--json", args->json, "Print the report as JSON");
  app->add_option("--html", args->html_file, "Also write a self-contained HTML report to FILE");
  app->add_option("--plan", args->plan_file, "Compare with a plan (output of 'pipescope plan --json')")
      ->check(CLI::ExistingFile);
  app->add_option(
         "--plan-split", args->plan_split,
         "The plan's split to compare with: suggested (default) or baseline (its uniform or --split one)")
      ->check(CLI::IsMember({"suggested", "baseline"}));
  app->add_option("--layout", args->layout, "State the parallel layout, e.g. tp=8,pp=4,dp=2")
      ->check(CLI::Validator(validator_of(parse_layout_spec), "tp=T,pp=P,dp=D"));
  app->add_option("--nvtx-step", args->nvtx_step, "Regex of NVTX step ranges")
      ->check(CLI::Validator(validator_of(parse_regex), "REGEX"));
  app->add_option("--nvtx-forward", args->nvtx_forward, "Regex of NVTX forward ranges")
      ->check(CLI::Validator(validator_of(parse_regex), "REGEX"));
  app->add_option("--nvtx-backward", args->nvtx_backward, "Regex of NVTX backward ranges")
      ->check(CLI::Validator(validator_of(parse_regex), "REGEX"));
  app->add_option("--run", args->run_id, "Pick one run when DIR holds several");
  app->add_option("--attempt", args->attempt, "Pick one restart attempt")
      ->check(CLI::Validator(whole_number_at_least(0), "N"));
  return {app, [args] { return run_report(*args); }};
}

}  // namespace pipescope::cli
