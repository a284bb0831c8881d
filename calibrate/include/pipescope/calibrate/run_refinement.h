// Refining a profile with what a real run measured: per stage, the forward and backward time per
// micro-batch and the peak memory from the profiler's traces, beside the planner's prediction
// for the same run and split. Compute efficiencies move by the ratio of measured to predicted
// stage time; the allocator's reserve fraction is refitted from reserved memory.
#pragma once

#include <string>
#include <vector>

#include "pipescope/common/expected.h"
#include "pipescope/planner/calibration_profile.h"

namespace pipescope::calibrate {

struct StageObservation {
  int stage = 0;
  double predicted_forward_s = 0, measured_forward_s = 0;  // per micro-batch; measured 0: unknown
  double predicted_backward_s = 0, measured_backward_s = 0;
  double predicted_allocated_bytes = 0;
  double predicted_reserved_bytes = 0;  // allocated * (1 + reserve fraction) + fixed overheads
  double measured_peak_bytes = 0;       // 0: the traces hold no memory records
};

struct RunObservation {
  std::vector<StageObservation> stages;
  std::string memory_figure = "none";  // what the traces hold: reserved, allocated or none
  std::string source;                  // e.g. "profiler traces in run7/"
};

// Relative errors of the prediction over the stages that were measured.
struct PredictionError {
  double compute = 0;  // (sum predicted forward + backward) / (sum measured) - 1
  double memory = 0;   // mean |predicted - measured| / measured over the stages with memory
  bool has_compute = false, has_memory = false;
};
PredictionError prediction_error(const RunObservation& run);

struct Refinement {
  planner::CalibrationProfile profile;
  double compute_scale = 1;  // measured / predicted stage time; efficiencies were divided by it
  bool compute_refined = false;
  bool memory_refined = false;
  std::vector<std::string> notes;
};

// One refinement step. Efficiencies are held at 1 at most (noted when that binds); the reserve
// fraction is refitted by least squares over the stages when the traces hold reserved memory.
// Refuses a run with no stage measured at all.
Expected<Refinement> refine_with_run(const planner::CalibrationProfile& profile, const RunObservation& run);

}  // namespace pipescope::calibrate
