// The three `pipescope calibrate` subcommands, one file each: run (the GPU suite, then fit),
// fit (saved results, optionally refined with a real run's traces), show (a profile's summary).
#pragma once

#include <string>
#include <vector>

namespace pipescope::cli {

struct CalibrateArgs {
  std::string output;
  bool quick = false;
  bool dry_run = false;  // run --dry-run: the start checks only
  std::vector<std::string> bench_files;
  std::string trace_dir;
  std::string plan_file;
  std::string gpu;
  std::string base;
  std::string profile;
  std::string html;
  std::vector<std::string> results;  // show --results: raw points for the plots
  std::string command_line;          // for the profile's provenance
};

int run_calibrate_run(const CalibrateArgs& args);
int run_calibrate_fit(const CalibrateArgs& args);
int run_calibrate_show(const CalibrateArgs& args);

// Writes `text` to `path` (replacing it); false with a message on stderr when it cannot.
bool write_output_file(const std::string& command, const std::string& path, const std::string& text);

}  // namespace pipescope::cli
