#include "pipescope/calibrate/run_refinement.h"

#include <algorithm>
#include <cmath>

#include "fit_numbers.h"

namespace pipescope::calibrate {
namespace {

using detail::fixed;

// Sums of predicted and measured over the stages where both are known.
struct Totals {
  double predicted = 0, measured = 0;
  void add(double p, double m) {
    if (p <= 0 || m <= 0) return;
    predicted += p;
    measured += m;
  }
  bool known() const { return measured > 0; }
  double scale() const { return measured / predicted; }  // measured / predicted
};

Totals stage_times(const RunObservation& run) {
  Totals t;
  for (const StageObservation& s : run.stages) {
    if (s.measured_forward_s > 0 && s.measured_backward_s > 0)
      t.add(s.predicted_forward_s + s.predicted_backward_s, s.measured_forward_s + s.measured_backward_s);
  }
  return t;
}

Totals category(const RunObservation& run, double StageObservation::*predicted,
                double StageObservation::*measured) {
  Totals t;
  for (const StageObservation& s : run.stages) t.add(s.*predicted, s.*measured);
  return t;
}

// Divides every efficiency of `points` by `scale`, at most 1; true when the cap bound.
template <class Points>
bool rescale(Points& points, double scale, const std::string& why) {
  bool capped = false;
  for (auto& p : points) {
    const double next = p.efficiency / scale;
    capped |= next > 1;
    p.efficiency = std::min(1.0, next);
    p.source += "; divided by " + fixed(scale, 4) + why;
  }
  return capped;
}

// The achieved fraction of HBM bandwidth that prices memory-bound work, by the run's memory-bound
// kernel time over the planner's. A framework that does not fuse what the planner's byte counts
// assume fused (eager PyTorch) gets a lower effective fraction: the profile then prices that
// framework, and the source says how it came about.
void refine_memory_bound(const RunObservation& run, const std::string& where, Refinement& out) {
  const Totals memory_bound =
      category(run, &StageObservation::predicted_memory_bound_s, &StageObservation::measured_memory_bound_s);
  if (!memory_bound.known()) {
    out.notes.emplace_back("the traces show no memory-bound kernel time: memory-bound work not refined");
    return;
  }
  out.memory_bound_scale = memory_bound.scale();
  planner::SourcedValue& fraction = out.profile.hbm_bandwidth_fraction;
  const double next = fraction.value / out.memory_bound_scale;
  if (next > 1) {
    out.notes.emplace_back(
        "memory-bound kernels ran faster than the GPU's HBM bandwidth explains; held at 1");
  }
  fraction.value = std::min(1.0, next);
  fraction.source += "; divided by " + fixed(out.memory_bound_scale, 4) +
                     ", the run's memory-bound kernel time (elementwise, embedding, other, copies) over the "
                     "planner's memory-bound time per micro-batch" +
                     where;
}

void refine_compute(const RunObservation& run, Refinement& out) {
  const Totals gemm = category(run, &StageObservation::predicted_gemm_s, &StageObservation::measured_gemm_s);
  const Totals attention =
      category(run, &StageObservation::predicted_attention_s, &StageObservation::measured_attention_s);
  const std::string where = " in the traces in " + run.source;
  if (gemm.known() || attention.known()) {
    out.compute_basis = "kernels";
    if (gemm.known()) {
      out.gemm_scale = gemm.scale();
      if (rescale(out.profile.gemm, out.gemm_scale,
                  ", the run's GEMM kernel time over the planner's GEMM time per micro-batch" + where)) {
        out.notes.emplace_back(
            "GEMM kernels ran faster than even peak efficiency explains at some shapes; those were held at "
            "1");
      }
    } else {
      out.notes.emplace_back(
          "the traces show no GEMM kernel on a stage the planner gives GEMM time: GEMM not refined");
    }
    if (attention.known()) {
      out.attention_scale = attention.scale();
      const std::string why =
          ", the run's attention kernel time over the planner's attention time per micro-batch" + where;
      // Both rescaled, whatever the first one says.
      const bool forward_capped = rescale(out.profile.attention_forward, out.attention_scale, why);
      const bool backward_capped = rescale(out.profile.attention_backward, out.attention_scale, why);
      if (forward_capped || backward_capped)
        out.notes.emplace_back("attention kernels ran faster than even peak efficiency explains; held at 1");
    } else {
      out.notes.emplace_back(
          "the traces show no fused-attention kernel on a stage the planner gives attention time: attention "
          "not "
          "refined");
    }
    refine_memory_bound(run, where, out);
    return;
  }
  const Totals stages = stage_times(run);
  if (!stages.known()) {
    out.notes.emplace_back("the traces hold no forward/backward NVTX ranges per stage: compute not refined");
    return;
  }
  // Only the stage times: GEMM and attention scaled together so that they match, the rest of
  // the prediction (memory-bound kernels, communication) held as the profile prices it.
  double compute_s = 0;  // predicted GEMM + attention on the measured stages
  for (const StageObservation& s : run.stages) {
    if (s.measured_forward_s > 0 && s.measured_backward_s > 0)
      compute_s += s.predicted_gemm_s + s.predicted_attention_s;
  }
  double scale = stages.scale();  // without the split, everything is taken to scale alike
  if (compute_s > 0) {
    const double rest_s = stages.predicted - compute_s;
    if (stages.measured <= rest_s) {
      out.notes.emplace_back(
          "the run's forward + backward is shorter than the planner's time outside GEMMs and "
          "attention alone: compute not refined (check the plan's configuration against the run's)");
      return;
    }
    scale = (stages.measured - rest_s) / compute_s;
  }
  out.compute_basis = "stage times";
  out.gemm_scale = out.attention_scale = scale;
  const std::string why =
      ", so that the planner's forward + backward per micro-batch matches the traces in " + run.source +
      " (they show no GEMM or attention kernels to refine each by its own)";
  const bool gemm_capped = rescale(out.profile.gemm, scale, why);
  const bool forward_capped = rescale(out.profile.attention_forward, scale, why);
  const bool backward_capped = rescale(out.profile.attention_backward, scale, why);
  if (gemm_capped || forward_capped || backward_capped) {
    out.notes.emplace_back(
        "the run was faster than even peak efficiency explains at some shapes; those were held at 1 (check "
        "the plan's "
        "configuration against the run's)");
  }
}

void refine_memory(const planner::CalibrationProfile& profile, const RunObservation& run, Refinement& out) {
  if (run.memory_figure == "allocated") {
    out.notes.emplace_back(
        "the traces hold allocated memory, which the planner computes from the model alone: nothing in the "
        "profile "
        "to refine (compared only)");
    return;
  }
  if (run.memory_figure != "reserved") {
    out.notes.emplace_back("the traces hold no memory records: memory not refined");
    return;
  }
  // reserved = allocated * (1 + f) + fixed, the fixed part (CUDA context, NCCL buffers, the
  // optimizer step's segments) as the plan prices it; least squares for f over the stages.
  const double f_old = profile.overheads.allocator_reserve_fraction.value;
  double numerator = 0, denominator = 0;
  for (const StageObservation& s : run.stages) {
    if (s.measured_peak_bytes <= 0 || s.predicted_allocated_bytes <= 0) continue;
    const double fixed_bytes = s.predicted_reserved_bytes - s.predicted_allocated_bytes * (1 + f_old);
    numerator +=
        s.predicted_allocated_bytes * (s.measured_peak_bytes - fixed_bytes - s.predicted_allocated_bytes);
    denominator += s.predicted_allocated_bytes * s.predicted_allocated_bytes;
  }
  if (denominator <= 0) {
    out.notes.emplace_back(
        "the traces hold no reserved memory on a stage the plan gives allocated memory: memory not refined");
    return;
  }
  const double f = numerator / denominator;
  if (!(f > 0 && f < 1)) {
    out.notes.push_back(
        "the reserved memory measured needs an allocator reserve fraction of " + fixed(f, 3) +
        ", outside (0, 1): the planner's allocated memory itself is off (or memory outside the "
        "allocator grew); the profile's " +
        fixed(f_old, 3) + " is kept");
    return;
  }
  out.profile.overheads.allocator_reserve_fraction = {
      f, "fitted: least squares of the measured reserved peak per stage in the traces in " + run.source +
             " against the predicted allocated memory (was " + fixed(f_old, 4) + ")"};
  out.memory_refined = true;
}

}  // namespace

PredictionError prediction_error(const RunObservation& run) {
  PredictionError e;
  const Totals stages = stage_times(run);
  if (stages.known()) {
    e.compute = 1 / stages.scale() - 1;
    e.has_compute = true;
  }
  const Totals gemm = category(run, &StageObservation::predicted_gemm_s, &StageObservation::measured_gemm_s);
  if (gemm.known()) {
    e.gemm = 1 / gemm.scale() - 1;
    e.has_gemm = true;
  }
  const Totals attention =
      category(run, &StageObservation::predicted_attention_s, &StageObservation::measured_attention_s);
  if (attention.known()) {
    e.attention = 1 / attention.scale() - 1;
    e.has_attention = true;
  }
  const Totals memory_bound =
      category(run, &StageObservation::predicted_memory_bound_s, &StageObservation::measured_memory_bound_s);
  if (memory_bound.known()) {
    e.memory_bound = 1 / memory_bound.scale() - 1;
    e.has_memory_bound = true;
  }
  double memory_sum = 0;
  int memory_stages = 0;
  for (const StageObservation& s : run.stages) {
    const double predicted =
        run.memory_figure == "allocated" ? s.predicted_allocated_bytes : s.predicted_reserved_bytes;
    if (run.memory_figure != "none" && s.measured_peak_bytes > 0) {
      memory_sum += std::abs(predicted - s.measured_peak_bytes) / s.measured_peak_bytes;
      ++memory_stages;
    }
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
  refine_compute(run, out);
  refine_memory(profile, run, out);
  if (out.compute_basis.empty() && !out.memory_refined) {
    std::string why;
    for (const std::string& note : out.notes) why += "; " + note;
    return Error{"nothing in the traces in " + run.source + " could refine the profile" + why};
  }
  return out;
}

}  // namespace pipescope::calibrate
