// What the parts of the rank scan (rank_scan.cpp: gpu_timeline, memory_timeline, nccl_scan,
// nvtx_scan) share: the trace's time span as the records show it, the latest time seen (the NCCL
// join's clock), and how a string id is read.
#pragma once

#include <algorithm>
#include <cstdint>

#include "pipescope/analysis/rank_digest.h"
#include "pipescope/trace/trace_summary.h"

namespace pipescope::analysis::detail {

// Trace times are unsigned; a damaged record's beyond INT64_MAX is clamped, never wrapped.
inline int64_t as_ns(uint64_t t) { return static_cast<int64_t>(std::min<uint64_t>(t, INT64_MAX)); }

struct ScanClock {
  explicit ScanClock(RankDigest& digest) : d(digest) {}

  void see(int64_t t) {
    d.first_ns = std::min(d.first_ns, t);
    d.last_ns = std::max(d.last_ns, t);
    now_ns = std::max(now_ns, t);
  }

  RankDigest& d;
  int64_t now_ns = INT64_MIN;
};

// A name id the string table never defined (a damaged record) counts as no name, so that no
// table grows to the id's size.
inline uint32_t known_name(const trace::StringTable& strings, uint32_t name_id) {
  return name_id <= strings.size() ? name_id : 0;
}

}  // namespace pipescope::analysis::detail
