// `pipescope report DIR [--json] [--html FILE] [--plan PLAN.json] [--layout tp=T,pp=P,dp=D]`
#include <memory>

#include "arg_specs.h"
#include "command.h"

namespace pipescope::cli {
namespace {

const CLI::Validator kCount(whole_number_at_least(1), "N");
const CLI::Validator kIndex(whole_number_at_least(0), "N");

struct ReportArgs {
  std::string dir;
  bool json = false;
  std::string html_file;
  std::string plan_file;
  std::string layout;
  std::string nvtx_step, nvtx_forward, nvtx_backward;
  std::string run_id;
  int64_t attempt = -1;
};

}  // namespace

Command add_report_command(CLI::App& root) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* app = root.add_subcommand("report", "Merge every rank's trace and show where time and memory go");
  app->add_option("dir", args->dir, "Directory of *.pst traces")->required()->check(CLI::ExistingDirectory);
  app->add_flag("--json", args->json, "Print the report as JSON");
  app->add_option("--html", args->html_file, "Also write a self-contained HTML report to FILE");
  app->add_option("--plan", args->plan_file, "Compare with a plan (output of 'pipescope plan --json')")
      ->check(CLI::ExistingFile);
  app->add_option("--layout", args->layout, "State the parallel layout, e.g. tp=8,pp=4,dp=2")
      ->check(CLI::Validator(validator_of(parse_layout_spec), "tp=T,pp=P,dp=D"));
  app->add_option("--nvtx-step", args->nvtx_step, "Regex of NVTX step ranges");
  app->add_option("--nvtx-forward", args->nvtx_forward, "Regex of NVTX forward ranges");
  app->add_option("--nvtx-backward", args->nvtx_backward, "Regex of NVTX backward ranges");
  app->add_option("--run", args->run_id, "Pick one run when DIR holds several");
  app->add_option("--attempt", args->attempt, "Pick one restart attempt")->check(kIndex);
  return {app, [args] { return not_built_yet("pipescope report"); }};
}

}  // namespace pipescope::cli
