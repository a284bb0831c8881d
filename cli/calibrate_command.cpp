// `pipescope calibrate run|fit|show`: measure the GPU, fit, and read calibration profiles.
#include <fstream>
#include <iostream>
#include <memory>

#include "calibrate_commands.h"
#include "command.h"

namespace pipescope::cli {

bool write_output_file(const std::string& command, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::cerr << command << ": cannot write " << path << '\n';
    return false;
  }
  return true;
}

Command add_calibrate_command(CLI::App& root) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* app = root.add_subcommand("calibrate", "Measure this GPU and fit calibration profiles");
  app->require_subcommand(1);

  CLI::App* run = app->add_subcommand("run", "Run the GPU benchmark suite and write a profile");
  run->add_option("-o,--output", a->output, "Profile to write (default: calibration.json)");
  run->add_flag("--quick", a->quick, "A short run with fewer shapes");
  run->add_option("--gpu", a->gpu, "The bundled GPU the device is (default: from its name)");
  run->add_option("--base", a->base,
                  "Profile (NAME|FILE, any GPU) for what the run does not measure (default: the GPU's "
                  "bundled profile; without one the run must measure every GPU-specific part)");
  run->add_flag("--dry-run", a->dry_run,
                "Check the device, the GPU it is and where unmeasured parts come from; measure nothing");

  CLI::App* fit = app->add_subcommand(
      "fit", "Fit a profile from saved benchmark results, and refine it with a real run's traces");
  fit->add_option("bench", a->bench_files, "Benchmark JSON files")->check(CLI::ExistingFile);
  fit->add_option("--trace", a->trace_dir,
                  "Refine with the profiler traces of a real run (needs --plan: traces do not hold the "
                  "model, batch and parallel layout the planner needs)")
      ->check(CLI::ExistingDirectory);
  fit->add_option("--plan", a->plan_file,
                  "Required with --trace: the 'pipescope plan --json' of the run the traces came from")
      ->check(CLI::ExistingFile);
  fit->add_option("--gpu", a->gpu, "The bundled GPU the results come from (default: from their gpu_name)");
  fit->add_option("--base", a->base,
                  "Profile (NAME|FILE, any GPU) for what the results do not measure (default: the GPU's "
                  "bundled profile; without one the results must measure every GPU-specific part)");
  fit->add_option("-o,--output", a->output, "Profile to write")->required();
  fit->add_flag("--json", a->json, "Report the fit (and refinement) as JSON on stdout");

  CLI::App* show = app->add_subcommand("show", "Summarize a calibration profile");
  show->add_option("profile", a->profile, "Profile JSON, or a bundled profile name")->required();
  show->add_flag("--json", a->json, "The summary as JSON");
  show->add_option("--html", a->html, "Also write plots of the fitted curves to an HTML file");
  show->add_option("--results", a->results, "Benchmark JSON files whose points the plots show")
      ->check(CLI::ExistingFile);

  return {app, [a, run, fit] {
            if (run->parsed()) return run_calibrate_run(*a);
            if (fit->parsed()) return run_calibrate_fit(*a);
            return run_calibrate_show(*a);
          }};
}

}  // namespace pipescope::cli
