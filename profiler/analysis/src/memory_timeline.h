// The rank scan's device memory: allocations and releases put back in time order through a
// reorder window, then folded into the reserved (driver) and allocated (framework pool) levels,
// their peaks and checkpoints. Fed by rank_scan.cpp.
#pragma once

#include <cstdint>

#include "interval_sweep.h"
#include "memory_level.h"
#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/records.h"
#include "rank_scan_detail.h"

namespace pipescope::analysis::detail {

class MemoryTimeline {
 public:
  MemoryTimeline(ScanClock& clock, const ScanOptions& options)
      : clock_(clock), d_(clock.d), window_(options.reorder_window_ns) {}

  void on_record(const trace::MemoryRecord& r);
  // Drains the window; the figure of the pool when the trace has one, else the driver's.
  void finish();

 private:
  struct Event {
    int64_t start_ns;  // the event's time (named for ReorderWindow)
    int64_t delta_bytes;
    bool from_pool;
  };

  void apply(const Event& e);

  ScanClock& clock_;
  RankDigest& d_;
  ReorderWindow<Event> window_;
  MemoryLevel reserved_, allocated_;
};

}  // namespace pipescope::analysis::detail
