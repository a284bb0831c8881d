// The three `pipescope calibrate` subcommands, one file each: run (the GPU suite, then fit),
// fit (saved results, optionally refined with a real run's traces), show (a profile's summary).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipescope/calibrate/run_refinement.h"
#include "pipescope/common/expected.h"
#include "pipescope/common/plan_schema.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::cli {

struct CalibrateArgs {
  std::string output;
  bool quick = false;
  bool dry_run = false;  // run --dry-run: the start checks only
  bool json = false;     // fit and show: one JSON document on stdout instead of text
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

// calibrate_refine.cpp: a real run's traces beside its plan, and the profile refined with them.
struct TraceRefinement {
  std::string plan_file;
  calibrate::RunObservation before, after;     // the plan's prediction before and after refining
  double gemm_scale = 1, attention_scale = 1;  // over all rounds: efficiencies were divided by them
  double memory_bound_scale = 1;               // over all rounds: the HBM bandwidth fraction, likewise
  std::string compute_basis;                   // as calibrate::Refinement's
  bool memory_refined = false;
  std::vector<std::string> notes;
};
// `plan --json`'s document, with the arguments it was planned with.
Expected<plan_schema::PlanSide> read_plan_json(const std::string& path);
// Refines `profile` in place with the traces in a.trace_dir of the run planned in a.plan_file.
Expected<TraceRefinement> refine_with_traces(const CalibrateArgs& a, planner::CalibrationProfile& profile);
void print_refinement(const TraceRefinement& refinement);
nlohmann::ordered_json refinement_json(const TraceRefinement& refinement);

// Writes `text` to `path` (replacing it); false with a message on stderr when it cannot.
bool write_output_file(const std::string& command, const std::string& path, const std::string& text);

}  // namespace pipescope::cli
