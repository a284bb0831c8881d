#include "nvtx_steps.h"

#include <algorithm>

namespace pipescope::analysis {
namespace {

// Forward/backward ranges waiting for a step range; older ones count as outside any step.
constexpr size_t kMaxPending = 100'000;

}  // namespace

void NvtxSteps::fold(StepDigest& step, const Range& r, uint32_t count, int64_t total_ns) {
  if (r.forward) {
    step.forwards += count;
    step.forward_ns += total_ns;
    if (step.first_forward_ns < 0 || r.start_ns < step.first_forward_ns) step.first_forward_ns = r.start_ns;
    step.last_forward_end_ns = std::max(step.last_forward_end_ns, r.end_ns);
  } else {
    step.backwards += count;
    step.backward_ns += total_ns;
    if (step.first_backward_ns < 0 || r.start_ns < step.first_backward_ns)
      step.first_backward_ns = r.start_ns;
    step.last_backward_end_ns = std::max(step.last_backward_end_ns, r.end_ns);
  }
}

void NvtxSteps::on_pipeline_range(int64_t start_ns, int64_t end_ns, bool forward) {
  if (forward && (d_.first_forward_ns < 0 || start_ns < d_.first_forward_ns)) d_.first_forward_ns = start_ns;
  pending_.push_back(Range{start_ns, end_ns, forward});
  if (pending_.size() > kMaxPending) {
    fold(d_.unstepped, pending_.front());
    pending_.erase(pending_.begin());
  }
}

void NvtxSteps::on_step(int64_t start_ns, int64_t end_ns, int64_t failed_at_ns) {
  StepDigest step;
  step.start_ns = start_ns;
  step.end_ns = end_ns;
  step.failed = failed_at_ns >= start_ns && failed_at_ns <= end_ns;
  std::vector<Range> keep;
  for (const Range& r : pending_) {
    if (r.start_ns >= start_ns && r.end_ns <= end_ns) {
      fold(step, r);
    } else if (r.end_ns < start_ns) {
      fold(d_.unstepped, r);
    } else {
      keep.push_back(r);
    }
  }
  pending_.swap(keep);
  // A step range inside another (Optimizer.step inside ProfilerStep#N) is part of it: the
  // outermost range is the step.
  while (!d_.steps.empty() && d_.steps.back().start_ns >= start_ns && d_.steps.back().end_ns <= end_ns) {
    const StepDigest inner = d_.steps.back();
    d_.steps.pop_back();
    step.failed |= inner.failed;
    if (inner.forwards > 0)
      fold(step, Range{inner.first_forward_ns, inner.last_forward_end_ns, true}, inner.forwards,
           inner.forward_ns);
    if (inner.backwards > 0)
      fold(step, Range{inner.first_backward_ns, inner.last_backward_end_ns, false}, inner.backwards,
           inner.backward_ns);
  }
  if (d_.steps.size() < max_steps_) {
    // Exactly the cap, not a doubling vector's slack.
    if (d_.steps.size() == d_.steps.capacity())
      d_.steps.reserve(std::min(std::max<size_t>(8, 2 * d_.steps.size()), max_steps_));
    d_.steps.push_back(step);
  } else {  // past the cap, steps still count in the pipeline figures, not one by one
    fold(d_.unstepped, Range{step.first_forward_ns, step.last_forward_end_ns, true}, step.forwards,
         step.forward_ns);
    fold(d_.unstepped, Range{step.first_backward_ns, step.last_backward_end_ns, false}, step.backwards,
         step.backward_ns);
    ++d_.steps_beyond_cap;
  }
}

void NvtxSteps::finish() {
  for (const Range& r : pending_) fold(d_.unstepped, r);
  pending_.clear();
}

}  // namespace pipescope::analysis
