// `pipescope record [-o DIR] [--kinds LIST] [...] -- CMD ...`: runs CMD with the injection
// library preloaded; every flag maps one to one onto a PIPESCOPE_* variable (DESIGN.md).
#include <memory>

#include "arg_specs.h"
#include "command.h"

namespace pipescope::cli {
namespace {

struct RecordArgs {
  std::string output_dir = "./pipescope-traces";
  std::string kinds = "default";
  int64_t flush_ms = 1000;
  int64_t buffer_mb = 0;
  std::string window;
  std::string steps;
  std::string nvtx_step;
  std::vector<std::string> command;
};

}  // namespace

Command add_record_command(CLI::App& root) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* app =
      root.add_subcommand("record", "Run a command with the profiler preloaded into every process");
  app->add_option("-o,--output", args->output_dir, "Trace directory (PIPESCOPE_OUTPUT)")
      ->capture_default_str();
  app->add_option("--kinds", args->kinds, "Kinds to record, comma-separated (PIPESCOPE_KINDS)")
      ->check(CLI::Validator(validator_of(parse_kind_list), "LIST"))
      ->capture_default_str();
  app->add_option("--flush-ms", args->flush_ms, "Flush period in ms (PIPESCOPE_FLUSH_MS)")
      ->check(CLI::Range(int64_t{1}, int64_t{3'600'000}))
      ->capture_default_str();
  app->add_option("--buffer-mb", args->buffer_mb, "Record buffer per thread in MiB (PIPESCOPE_BUFFER_MB)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  app->add_option("--window", args->window,
                  "Capture only START:END seconds from process start (PIPESCOPE_WINDOW)")
      ->check(CLI::Validator(validator_of(parse_time_window), "START:END"));
  app->add_option("--steps", args->steps, "Capture only steps N:M of the step range (PIPESCOPE_STEPS)")
      ->check(CLI::Validator(validator_of(parse_step_range), "N:M"));
  app->add_option("--nvtx-step", args->nvtx_step, "Regex of the NVTX step range (PIPESCOPE_NVTX_STEP)");
  app->add_option("command", args->command, "The command to run, after --")->required();
  return {app, [args] { return not_built_yet("pipescope record"); }};
}

}  // namespace pipescope::cli
