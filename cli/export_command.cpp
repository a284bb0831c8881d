// `pipescope export DIR --format perfetto|sqlite [-o FILE] [--ranks SPEC] [--window T0:T1]`
#include <memory>

#include "arg_specs.h"
#include "command.h"

namespace pipescope::cli {
namespace {

struct ExportArgs {
  std::string dir;
  std::string format;
  std::string output;
  std::string ranks;
  std::string window;
};

}  // namespace

Command add_export_command(CLI::App& root) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* app = root.add_subcommand("export", "Convert traces for Perfetto UI or SQLite");
  app->add_option("dir", args->dir, "Directory of *.pst traces")->required()->check(CLI::ExistingDirectory);
  app->add_option("--format", args->format, "perfetto or sqlite")
      ->required()
      ->check(CLI::IsMember({"perfetto", "sqlite"}));
  app->add_option("-o,--output", args->output, "Output file");
  app->add_option("--ranks", args->ranks, "Ranks to keep, e.g. 0-7,12,16-31")
      ->check(CLI::Validator(validator_of(parse_rank_spec), "SPEC"));
  app->add_option("--window", args->window, "Keep START:END seconds from the run's first event")
      ->check(CLI::Validator(validator_of(parse_time_window), "T0:T1"));
  return {app, [args] { return not_built_yet("pipescope export"); }};
}

}  // namespace pipescope::cli
