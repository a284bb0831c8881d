#include "pipescope/calibrate/run_refinement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pipescope::calibrate {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace

PredictionError prediction_error(const RunObservation& run) {
  PredictionError e;
  double predicted = 0, measured = 0, memory_sum = 0;
  int memory_stages = 0;
  for (const StageObservation& s : run.stages) {
    if (s.measured_forward_s > 0 && s.measured_backward_s > 0) {
      predicted += s.predicted_forward_s + s.predicted_backward_s;
      measured += s.measured_forward_s + s.measured_backward_s;
    }
    const double predicted_memory =
        run.memory_figure == "allocated" ? s.predicted_allocated_bytes : s.predicted_reserved_bytes;
    if (run.memory_figure != "none" && s.measured_peak_bytes > 0) {
      memory_sum += std::abs(predicted_memory - s.measured_peak_bytes) / s.measured_peak_bytes;
      ++memory_stages;
    }
  }
  if (measured > 0) {
    e.compute = predicted / measured - 1;
    e.has_compute = true;
  }
  if (memory_stages > 0) {
    e.memory = memory_sum / memory_stages;
    e.has_memory = true;
  }
  return e;
}

Expected<Refinement> refine_with_run(const planner::CalibrationProfile& profile, const RunObservation& run) {
  Refinement out;
  out.profile = profile;
  double predicted = 0, measured = 0;
  for (const StageObservation& s : run.stages) {
    if (s.measured_forward_s > 0 && s.measured_backward_s > 0 && s.predicted_forward_s > 0) {
      predicted += s.predicted_forward_s + s.predicted_backward_s;
      measured += s.measured_forward_s + s.measured_backward_s;
    }
  }
  if (measured > 0) {
    const double scale = measured / predicted;
    out.compute_scale = scale;
    out.compute_refined = true;
    const std::string why = "; divided by " + fixed(scale, 4) +
                            ", the measured / predicted forward + backward " + "time per micro-batch in " +
                            run.source;
    bool capped = false;
    auto rescale = [&](double& efficiency, std::string& source) {
      const double next = efficiency / scale;
      capped |= next > 1;
      efficiency = std::min(1.0, next);
      source += why;
    };
    for (auto& p : out.profile.gemm) rescale(p.efficiency, p.source);
    for (auto& p : out.profile.attention_forward) rescale(p.efficiency, p.source);
    for (auto& p : out.profile.attention_backward) rescale(p.efficiency, p.source);
    if (capped) {
      out.notes.push_back(
          "the run was faster than even peak efficiency explains at some shapes; those were held "
          "at 1 (check the plan's configuration against the run's)");
    }
  } else {
    out.notes.push_back("the traces hold no forward/backward NVTX ranges per stage: compute not refined");
  }

  if (run.memory_figure == "reserved") {
    // reserved = allocated * (1 + f) + fixed, with fixed as the profile prices it; least squares
    // for f over the stages.
    const double f_old = profile.overheads.allocator_reserve_fraction.value;
    double numerator = 0, denominator = 0;
    for (const StageObservation& s : run.stages) {
      if (s.measured_peak_bytes <= 0 || s.predicted_allocated_bytes <= 0) continue;
      const double fixed_bytes = s.predicted_reserved_bytes - s.predicted_allocated_bytes * (1 + f_old);
      numerator +=
          s.predicted_allocated_bytes * (s.measured_peak_bytes - fixed_bytes - s.predicted_allocated_bytes);
      denominator += s.predicted_allocated_bytes * s.predicted_allocated_bytes;
    }
    if (denominator > 0) {
      double f = numerator / denominator;
      if (f < 0.001 || f > 0.999) {
        out.notes.push_back("the reserved memory measured needs a reserve fraction of " + fixed(f, 3) +
                            ", outside (0, 1): the model's allocated memory itself is off; held at " +
                            fixed(std::clamp(f, 0.001, 0.999), 3));
        f = std::clamp(f, 0.001, 0.999);
      }
      out.profile.overheads.allocator_reserve_fraction = {
          f, "fitted: least squares of the measured reserved peak per stage in " + run.source +
                 " against the predicted allocated memory (was " + fixed(f_old, 4) + ")"};
      out.memory_refined = true;
    }
  } else if (run.memory_figure == "allocated") {
    out.notes.push_back(
        "the traces hold allocated memory, which the planner computes from the model alone: nothing "
        "in the profile to refine (compared only)");
  } else {
    out.notes.push_back("the traces hold no memory records: memory not refined");
  }
  if (!out.compute_refined && !out.memory_refined) {
    return Error{"the traces in " + run.source +
                 " show neither forward/backward ranges nor reserved memory per stage: nothing to refine the "
                 "profile with"};
  }
  return out;
}

}  // namespace pipescope::calibrate
