// Refining a profile with what a real run measured, per pipeline stage, beside the planner's
// prediction for the same run and split: the run's GEMM, attention and memory-bound kernel time per
// micro-batch against the planner's time of each kind (GEMM and attention efficiencies, and the
// achieved fraction of HBM bandwidth, move by their own ratios), the forward + backward time
// where kernels are not known, and the reserved memory peak against the predicted one (the
// allocator's reserve fraction is refitted).
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
  // Per micro-batch, forward and backward together: the planner's time in GEMMs and in fused
  // attention for this stage, and the run's kernel time in each category on the stage's ranks.
  // Measured 0: the traces hold no kernel of the category.
  double predicted_gemm_s = 0, measured_gemm_s = 0;
  double predicted_attention_s = 0, measured_attention_s = 0;
  // Memory-bound work (norms, activations, residuals, the loss, the optimizer step's share of a
  // micro-batch) against the run's elementwise, embedding, other and copy time.
  double predicted_memory_bound_s = 0, measured_memory_bound_s = 0;
  double predicted_allocated_bytes = 0;
  // Held once the first step ran (the plan's reserved_bytes): allocated * (1 + reserve fraction) +
  // fixed overheads, plus the optimizer step's segments where its recipe has them.
  double predicted_reserved_bytes = 0;
  double measured_peak_bytes = 0;  // 0: the traces hold no memory records
};

struct RunObservation {
  std::vector<StageObservation> stages;
  std::string memory_figure = "none";  // what the traces hold: reserved, allocated or none
  std::string source;                  // where the traces are, e.g. "run7/"
};

// Relative errors of the prediction over the stages that were measured: signed
// (sum predicted / sum measured - 1) for times, mean |predicted - measured| / measured for memory.
struct PredictionError {
  double compute = 0, gemm = 0, attention = 0, memory_bound = 0, memory = 0;
  bool has_compute = false, has_gemm = false, has_attention = false, has_memory_bound = false,
       has_memory = false;
};
PredictionError prediction_error(const RunObservation& run);

struct Refinement {
  planner::CalibrationProfile profile;
  // Measured / predicted time of the category; its efficiencies were divided by it (1: unchanged).
  double gemm_scale = 1, attention_scale = 1;
  // Measured / predicted memory-bound time; the HBM bandwidth fraction was divided by it.
  double memory_bound_scale = 1;
  // "kernels": each category from its own kernel time; "stage times": GEMM and attention scaled
  // together so that the forward + backward times match, the rest of the prediction held; empty:
  // compute was not refined.
  std::string compute_basis;
  bool memory_refined = false;
  std::vector<std::string> notes;
};

// One refinement step. Efficiencies are held at 1 at most (noted when that binds). The reserve
// fraction is refitted by least squares over the stages when the traces hold reserved memory;
// a fit outside (0, 1) keeps the profile's value and says why. Refuses a run with no stage
// measured at all.
Expected<Refinement> refine_with_run(const planner::CalibrationProfile& profile, const RunObservation& run);

}  // namespace pipescope::calibrate
