// Pipeline figures from the p2p pattern, for runs without NVTX forward/backward ranges. Each
// p2p kernel of a stage is one of four kinds by its peer's stage: activations in (from stage
// s-1) and out (to s+1), gradients in (from s+1) and out (to s-1). Forward compute lies between
// an activation coming in and going out, backward between a gradient coming in and going out;
// the first stage's first forward and last backward are the compute islands next to its first
// send and last receive. Steps are where the first stage's micro-batches in flight (activations
// sent minus gradients received) come back to zero; the other stages of its pipeline take the
// same windows on the aligned clock, as their work in a step happens between the first stage's
// first send and last receive.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "report_context.h"

namespace pipescope::analysis {

struct P2pPipelineFigures {
  uint64_t steps = 0;  // steps measured
  double bubble_sum = 0;
  // Warm-up / steady / cool-down: not told on the last stage (its forward and backward of one
  // micro-batch run back to back, with no p2p between them).
  uint64_t phase_steps = 0;
  int64_t warmup_ns = 0, steady_ns = 0, cooldown_ns = 0;
  uint64_t forwards = 0, backwards = 0, pairs = 0;  // pairs: forward + backward, not split
  int64_t forward_ns = 0, backward_ns = 0, pair_ns = 0;
  uint64_t microbatches = 0;  // activations that came in (the first stage: went out), all steps
  // When the rank's first forward started (aligned clock): the first stage's first step window,
  // the others' first activation arriving; -1 when not seen.
  int64_t first_forward_ns = -1;
};

// Per rank (LoadedRun order); empty figures where the rank has no p2p kernels, no compute
// islands, or the layout has no pipeline.
std::vector<P2pPipelineFigures> p2p_pipeline_figures(const ReportContext& ctx);

}  // namespace pipescope::analysis
