// The rank scan's GPU side: kernels, copies and memsets as intervals, put back in start order
// through a reorder window (CUPTI delivers them in buffers, late), then swept into the unions of
// busy time by kind of work, the compute islands, and the figures before the first step, before
// the last step (HTA's set) and before an unflushed tail. Fed by rank_scan.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "interval_sweep.h"
#include "pipescope/analysis/rank_digest.h"

namespace pipescope::analysis::detail {

enum class IntervalClass : uint8_t { kCompute, kComm, kCopy };

struct GpuInterval {
  int64_t start_ns;
  int64_t end_ns;
  IntervalClass cls;
  int64_t launch_ns = INT64_MIN;  // when its launch began, where an API record says
};

// The unions of GPU time by kind of work (compute and communication kernels, copies and memsets),
// each alone and with each other: with inclusion and exclusion, every overlap of the three.
struct KindUnions {
  UnionLength compute, comm, compute_or_comm, any, copy, compute_or_copy, comm_or_copy;
  int64_t first_ns = INT64_MAX, last_end_ns = INT64_MIN;

  // Adds `i`; returns how much the union of all kinds grew, from `*any_from` on.
  int64_t add(const GpuInterval& i, int64_t* any_from = nullptr);
  // The unions up to `at_ns`, valid while every interval added so far started before it.
  RankDigest::UnionsBefore before(int64_t at_ns) const;
};

class GpuTimeline {
 public:
  GpuTimeline(RankDigest& digest, const ScanOptions& options)
      : d_(digest), options_(options), window_(options.reorder_window_ns) {}

  // A launch (an API record) of the GPU work of `correlation`.
  void on_launch(uint32_t correlation, int64_t launch_ns) {
    if (correlation != 0) launch_by_correlation_[correlation] = launch_ns;
    api_records_seen_ = true;
  }

  void add(int64_t start_ns, int64_t end_ns, IntervalClass cls, uint32_t correlation) {
    const GpuInterval interval{start_ns, end_ns, cls, launch_of(correlation)};
    d_.gpu_captured = true;
    d_.gpu_first_ns = std::min(d_.gpu_first_ns, start_ns);
    d_.gpu_last_ns = std::max(d_.gpu_last_ns, end_ns);
    if (!window_.push(interval, [this](const GpuInterval& i) { sweep(i); })) ++d_.out_of_order_intervals;
  }

  // A step starts at `t` (the outermost NVTX step range).
  void on_step_start(int64_t t);

  // Drains the window and writes the unions, islands and step figures into the digest.
  void finish();

 private:
  // When the GPU work of `correlation` was launched, where an API record said (each is asked
  // for once: the entry goes).
  int64_t launch_of(uint32_t correlation) {
    if (launch_by_correlation_.empty() || correlation == 0) return INT64_MIN;
    const auto it = launch_by_correlation_.find(correlation);
    if (it == launch_by_correlation_.end()) return INT64_MIN;
    const int64_t launch = it->second;
    launch_by_correlation_.erase(it);
    return launch;
  }

  void sweep(const GpuInterval& i);
  void add_to_island(const GpuInterval& i);
  void close_island();
  void take_unions_before_first_step();
  void take_unions_before_last_step();
  void take_unions_before_tail();

  RankDigest& d_;
  const ScanOptions& options_;
  ReorderWindow<GpuInterval> window_;
  bool api_records_seen_ = false;
  std::unordered_map<uint32_t, int64_t> launch_by_correlation_;
  bool step_start_seen_ = false, before_first_step_pending_ = false;
  int64_t first_step_ns_ = 0;
  int64_t last_swept_start_ns_ = INT64_MIN;
  bool last_step_pending_ = false;
  int64_t last_step_ns_ = INT64_MIN;
  int64_t tail_cut_ns_ = 0;
  bool tail_pending_ = false;
  KindUnions all_;  // every GPU interval swept
  // The same unions over HTA's set (sweep()), valid while no step started after the sweep began.
  KindUnions hta_unions_;
  bool hta_by_launch_valid_ = true;
  ComputeIsland island_{INT64_MIN, INT64_MIN};  // the open one
};

}  // namespace pipescope::analysis::detail
