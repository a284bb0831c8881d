// NVTX step, forward and backward ranges of one rank folded into its steps (rank_digest.h's
// StepDigest): forward/backward ranges wait until the step range around them closes, a step
// range inside another is part of the outer one, and past the cap steps still count in the
// pipeline figures, not one by one. Fed by the rank scan as ranges close.
#pragma once

#include <cstdint>
#include <vector>

#include "pipescope/analysis/rank_digest.h"

namespace pipescope::analysis {

class NvtxSteps {
 public:
  // Keeps the first `max_steps` steps one by one (ScanOptions::max_steps).
  NvtxSteps(RankDigest& digest, size_t max_steps) : d_(digest), max_steps_(max_steps) {}

  // `failed_at_ns`: the entry of the latest NCCL call that failed (INT64_MIN: none).
  void on_step(int64_t start_ns, int64_t end_ns, int64_t failed_at_ns);
  void on_pipeline_range(int64_t start_ns, int64_t end_ns, bool forward);
  // Ranges no step range closed around go to RankDigest::unstepped.
  void finish();

 private:
  struct Range {
    int64_t start_ns;
    int64_t end_ns;
    bool forward;
  };
  // Adds `count` ranges of `total_ns` spanning r (one range: r itself) to the step.
  static void fold(StepDigest& step, const Range& r, uint32_t count, int64_t total_ns);
  static void fold(StepDigest& step, const Range& r) { fold(step, r, 1, r.end_ns - r.start_ns); }

  RankDigest& d_;
  size_t max_steps_;
  std::vector<Range> pending_;
};

}  // namespace pipescope::analysis
