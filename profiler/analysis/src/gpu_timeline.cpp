#include "gpu_timeline.h"

namespace pipescope::analysis::detail {

int64_t KindUnions::add(const GpuInterval& i, int64_t* any_from) {
  first_ns = std::min(first_ns, i.start_ns);
  last_end_ns = std::max(last_end_ns, i.end_ns);
  if (i.cls == IntervalClass::kCompute) compute.add(i.start_ns, i.end_ns);
  if (i.cls == IntervalClass::kComm) comm.add(i.start_ns, i.end_ns);
  if (i.cls != IntervalClass::kCopy) compute_or_comm.add(i.start_ns, i.end_ns);
  if (i.cls == IntervalClass::kCopy) copy.add(i.start_ns, i.end_ns);
  if (i.cls != IntervalClass::kComm) compute_or_copy.add(i.start_ns, i.end_ns);
  if (i.cls != IntervalClass::kCompute) comm_or_copy.add(i.start_ns, i.end_ns);
  return any.add(i.start_ns, i.end_ns, any_from);
}

RankDigest::UnionsBefore KindUnions::before(int64_t at_ns) const {
  RankDigest::UnionsBefore b;
  b.known = true;
  b.at_ns = at_ns;
  b.compute_ns = compute.total_before(at_ns);
  b.comm_ns = comm.total_before(at_ns);
  b.compute_or_comm_ns = compute_or_comm.total_before(at_ns);
  b.any_ns = any.total_before(at_ns);
  b.copy_ns = copy.total_before(at_ns);
  b.compute_or_copy_ns = compute_or_copy.total_before(at_ns);
  b.comm_or_copy_ns = comm_or_copy.total_before(at_ns);
  b.last_end_ns = last_end_ns;
  return b;
}

// The first step's start: the unions up to it are taken when the sweep gets there, unless it
// is there already (GPU work that started later was read first), when they are not known.
void GpuTimeline::on_step_start(int64_t t) {
  // The latest step's start: HTA leaves out the GPU work from the last step's start on.
  if (t > last_step_ns_) {
    last_step_ns_ = t;
    last_step_pending_ = last_swept_start_ns_ < t;
    d_.before_last_step = {};
    // GPU work was already judged against an earlier last step: the launch-ordered figures
    // no longer hold.
    if (last_swept_start_ns_ != INT64_MIN) hta_by_launch_valid_ = false;
  }
  if (step_start_seen_) return;
  step_start_seen_ = true;
  first_step_ns_ = t;
  if (last_swept_start_ns_ >= t) return;
  before_first_step_pending_ = true;
}

void GpuTimeline::take_unions_before_last_step() {
  last_step_pending_ = false;
  d_.before_last_step = all_.before(last_step_ns_);
}

void GpuTimeline::take_unions_before_first_step() {
  before_first_step_pending_ = false;
  d_.before_first_step = all_.before(first_step_ns_);
}

void GpuTimeline::take_unions_before_tail() {
  tail_pending_ = false;
  d_.before_unflushed_tail = all_.before(tail_cut_ns_);
}

void GpuTimeline::sweep(const GpuInterval& i) {
  if (before_first_step_pending_ && i.start_ns >= first_step_ns_) take_unions_before_first_step();
  if (tail_pending_ && i.start_ns >= tail_cut_ns_) take_unions_before_tail();
  if (last_step_pending_ && i.start_ns >= last_step_ns_) take_unions_before_last_step();
  last_swept_start_ns_ = std::max(last_swept_start_ns_, i.start_ns);
  if (i.cls != IntervalClass::kComm) add_to_island(i);
  int64_t from = 0;
  if (all_.add(i, &from) > 0) d_.busy.add_span(from, i.end_ns);
  // HTA's set: what was launched before the last step's start; in a trace with launches in it,
  // GPU work that no launch accounts for is left out, as HTA leaves it out; in one without,
  // what started before the last step's start.
  const bool launched_before = i.launch_ns != INT64_MIN ? i.launch_ns < last_step_ns_
                                                        : !api_records_seen_ && i.start_ns < last_step_ns_;
  if (last_step_ns_ == INT64_MIN || launched_before) hta_unions_.add(i);
}

// Islands in start order (the sweep's); one that arrived out of order only stretches the open one.
void GpuTimeline::add_to_island(const GpuInterval& i) {
  if (island_.end_ns > INT64_MIN && i.start_ns <= island_.end_ns + options_.island_gap_ns) {
    island_.end_ns = std::max(island_.end_ns, i.end_ns);
    return;
  }
  close_island();
  island_ = {i.start_ns, i.end_ns};
}

void GpuTimeline::close_island() {
  if (island_.end_ns == INT64_MIN) return;
  if (d_.islands.size() < options_.pipeline_events) {
    d_.islands.push_back(island_);
  } else {
    d_.islands_complete = false;
  }
  island_ = {INT64_MIN, INT64_MIN};
}

void GpuTimeline::finish() {
  // Not closed: where the GPU records stop being complete, known only now.
  if (!d_.end && d_.gpu_captured) {
    tail_cut_ns_ = std::max(d_.gpu_last_ns - options_.reorder_window_ns, last_swept_start_ns_);
    if (last_swept_start_ns_ >= tail_cut_ns_) {
      take_unions_before_tail();
    } else {
      tail_pending_ = true;
    }
  }
  window_.drain([this](const GpuInterval& i) { sweep(i); });
  if (before_first_step_pending_) take_unions_before_first_step();
  if (tail_pending_) take_unions_before_tail();
  if (last_step_pending_) take_unions_before_last_step();
  close_island();
  d_.compute_union_ns = all_.compute.total();
  d_.comm_union_ns = all_.comm.total();
  d_.compute_or_comm_union_ns = all_.compute_or_comm.total();
  d_.any_union_ns = all_.any.total();
  d_.copy_union_ns = all_.copy.total();
  d_.compute_or_copy_union_ns = all_.compute_or_copy.total();
  d_.comm_or_copy_union_ns = all_.comm_or_copy.total();
  if (hta_by_launch_valid_ && hta_unions_.any.total() > 0) {
    d_.hta_launched_before_last_step = hta_unions_.before(INT64_MAX);
    d_.hta_launched_before_last_step.at_ns = hta_unions_.first_ns;
  }
  d_.launch_times_known = api_records_seen_;
}

}  // namespace pipescope::analysis::detail
