// `pipescope calibrate run|fit|show`: measure the GPU, fit, and read calibration profiles.
#include <memory>

#include "command.h"

namespace pipescope::cli {
namespace {

struct CalibrateArgs {
  std::string output;
  bool quick = false;
  std::vector<std::string> bench_files;
  std::string trace_dir;
  std::string profile;
  std::string html;
};

}  // namespace

Command add_calibrate_command(CLI::App& root) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* app = root.add_subcommand("calibrate", "Measure this GPU and fit calibration profiles");
  app->require_subcommand(1);

  CLI::App* run = app->add_subcommand("run", "Run the GPU benchmark suite and write a profile");
  run->add_option("-o,--output", a->output, "Profile to write");
  run->add_flag("--quick", a->quick, "A short run with fewer shapes");

  CLI::App* fit = app->add_subcommand("fit", "Fit a profile from saved benchmark results");
  fit->add_option("bench", a->bench_files, "Benchmark JSON files")->required()->check(CLI::ExistingFile);
  fit->add_option("--trace", a->trace_dir, "Refine with traces of a real run")->check(CLI::ExistingDirectory);
  fit->add_option("-o,--output", a->output, "Profile to write")->required();

  CLI::App* show = app->add_subcommand("show", "Summarize a calibration profile");
  show->add_option("profile", a->profile, "Profile JSON")->required()->check(CLI::ExistingFile);
  show->add_option("--html", a->html, "Also write plots to an HTML file");

  return {app, [a, run, fit] {
            if (run->parsed()) return not_built_yet("pipescope calibrate run");
            if (fit->parsed()) return not_built_yet("pipescope calibrate fit");
            return not_built_yet("pipescope calibrate show");
          }};
}

}  // namespace pipescope::cli
